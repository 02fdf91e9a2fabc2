/*
 * handshake.h - mutual authentication of every TCP connection, bootstrap and data alike.
 *
 * Protocol (all fields fixed-size, so nothing from the peer is interpreted before its MAC checks):
 *   acceptor  -> connector : HELLO  = magic "TUTI", version, 16-byte nonce_a
 *   connector -> acceptor  : PROVE  = magic, version, comm id, 16-byte nonce_c, 32-byte payload,
 *                                     HMAC-SHA-256(secret, "tutti-c" | nonce_a | nonce_c | comm id
 *                                                   | payload)
 *   acceptor  -> connector : ACCEPT = HMAC-SHA-256(secret, "tutti-a" | nonce_c | nonce_a | comm id
 *                                                   | payload)
 * The nonces are fresh random bytes (libsodium), so a recorded exchange cannot be replayed; both
 * sides prove that they hold the 128-bit secret of the job; the comm id keeps communicators of
 * one job apart. MACs are compared in constant time. The payload carries what the connection is
 * for (rank, channel, socket index...), authenticated but not secret.
 */
#ifndef TUTTI_HANDSHAKE_H
#define TUTTI_HANDSHAKE_H

#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

#define TUTTI_SECRET_BYTES 16
#define TUTTI_HS_PAYLOAD   32
#define TUTTI_HS_MAGIC     0x49545554u /* "TUTI" little-endian */
#define TUTTI_HS_VERSION   1u

enum tutti_hs_role { TUTTI_HS_ACCEPTOR, TUTTI_HS_CONNECTOR };

/** One handshake in progress on a non-blocking socket. Plain data: embed it, no cleanup. */
struct tutti_hs {
    int fd;
    int role;
    int state;
    uint64_t comm_id;
    uint8_t key[TUTTI_SECRET_BYTES];
    uint8_t nonce_a[16], nonce_c[16];
    uint8_t payload[TUTTI_HS_PAYLOAD];
    uint8_t buf[128]; /* the message being sent or received */
    size_t want, done;
    int64_t deadline_ns; /* tutti__now_ns() clock */
};

/** Prepare the acceptor side; nothing is sent yet. */
void tutti__hs_init_accept(struct tutti_hs *hs, int fd, const uint8_t key[TUTTI_SECRET_BYTES],
                           uint64_t comm_id, int64_t deadline_ns);

/** Prepare the connector side with the payload to prove. */
void tutti__hs_init_connect(struct tutti_hs *hs, int fd, const uint8_t key[TUTTI_SECRET_BYTES],
                            uint64_t comm_id, const void *payload, size_t payload_len,
                            int64_t deadline_ns);

/**
 * Move the handshake forward without blocking.
 * @return TUTTI_OK when authenticated (the acceptor then finds the connector's payload in
 *         hs->payload); TUTTI_IN_PROGRESS; TUTTI_ERR_AUTH for a wrong magic, version, comm id or
 *         MAC; TUTTI_ERR_REMOTE when the peer closed or reset; TUTTI_ERR_TIMEOUT past the
 *         deadline. Errors are not logged here: the caller knows what the connection was for and
 *         logs once.
 */
tutti_status_t tutti__hs_progress(struct tutti_hs *hs);

/**
 * What the handshake waits for now, for poll(): POLLOUT while it has a message to send, else
 * POLLIN. (Polling for both would spin: a connected socket is almost always writable.)
 */
short tutti__hs_events(const struct tutti_hs *hs);

/** Fill buf with cryptographically random bytes (libsodium randombytes_buf). */
void tutti__random_bytes(void *buf, size_t len);

/**
 * HMAC-SHA-256 of the concatenation of n parts, with a 16-byte key. Used by the handshake and to
 * derive child secrets in tutti_comm_split.
 */
void tutti__hmac(const uint8_t key[TUTTI_SECRET_BYTES], const void *const *parts,
                 const size_t *lens, int n, uint8_t out[32]);

#endif /* TUTTI_HANDSHAKE_H */
