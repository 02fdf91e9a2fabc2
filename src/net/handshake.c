/*
 * handshake.c - the mutual-authentication handshake of handshake.h as a non-blocking state
 * machine, and the libsodium primitives it rests on (random bytes, HMAC-SHA-256).
 *
 * Every message has a fixed size and is read with exactly that many bytes, so a handshake never
 * consumes data that follows it on the stream, and garbage can at worst fill one message. The
 * acceptor checks the connector's MAC before it looks at any field the connector sent.
 * Integers on the wire are little-endian.
 */
#include "net/handshake.h"
#include "base/check.h"
#include "net/sock.h"
#include "base/util.h"

#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define HELLO_LEN  24 /* magic, version, nonce_a */
#define PROVE_LEN  96 /* magic, version, comm id, nonce_c, payload, mac */
#define ACCEPT_LEN 32 /* mac */
#define MAC_LEN    32
#define NONCE_LEN  16

_Static_assert(PROVE_LEN <= sizeof(((struct tutti_hs *)0)->buf), "messages fit hs->buf");
_Static_assert(crypto_auth_hmacsha256_BYTES == MAC_LEN, "HMAC-SHA-256 is 32 bytes");

/* Offsets inside PROVE. */
enum { PROVE_COMM = 8, PROVE_NONCE = 16, PROVE_PAYLOAD = 32, PROVE_MAC = 64 };

/* States; a negative state is the sticky error the handshake failed with. */
enum {
    HS_A_SEND_HELLO,
    HS_A_RECV_PROVE,
    HS_A_SEND_ACCEPT,
    HS_C_RECV_HELLO,
    HS_C_SEND_PROVE,
    HS_C_RECV_ACCEPT,
    HS_DONE,
};

static void sodium_once(void)
{
    /* Without a working random source the nonces would be predictable: refuse to go on. */
    if (sodium_init() < 0) {
        tutti_error("libsodium failed to initialise; cannot make handshake nonces");
        abort();
    }
}

static void ensure_sodium(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* sodium_init() runs once per process */
    pthread_once(&once, sodium_once);
}

void tutti__random_bytes(void *buf, size_t len)
{
    ensure_sodium();
    randombytes_buf(buf, len);
}

void tutti__hmac(const uint8_t key[TUTTI_SECRET_BYTES], const void *const *parts,
                 const size_t *lens, int n, uint8_t out[32])
{
    crypto_auth_hmacsha256_state st;
    ensure_sodium();
    crypto_auth_hmacsha256_init(&st, key, TUTTI_SECRET_BYTES);
    for (int i = 0; i < n; i++) {
        crypto_auth_hmacsha256_update(&st, parts[i], lens[i]);
    }
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
}

/*
 * MAC of one direction: label | first nonce | second nonce | comm id | payload. The connector
 * signs "tutti-c" with (nonce_a, nonce_c), the acceptor "tutti-a" with (nonce_c, nonce_a), so
 * neither proof can be reflected back as the other.
 */
static void direction_mac(const struct tutti_hs *hs, const char *label, const uint8_t *first,
                          const uint8_t *second, const uint8_t *payload, uint8_t out[MAC_LEN])
{
    uint8_t comm[8];
    put_le64(comm, hs->comm_id);
    const void *parts[] = {label, first, second, comm, payload};
    const size_t lens[] = {7, NONCE_LEN, NONCE_LEN, sizeof(comm), TUTTI_HS_PAYLOAD};
    tutti__hmac(hs->key, parts, lens, 5, out);
}

static void expect(struct tutti_hs *hs, int state, size_t len)
{
    hs->state = state;
    hs->want = len;
    hs->done = 0;
}

static void put_head(uint8_t *p)
{
    put_le32(p, TUTTI_HS_MAGIC);
    put_le32(p + 4, TUTTI_HS_VERSION);
}

static int head_ok(const uint8_t *p)
{
    return get_le32(p) == TUTTI_HS_MAGIC && get_le32(p + 4) == TUTTI_HS_VERSION;
}

/* What both roles start with. */
static void hs_init(struct tutti_hs *hs, int fd, int role, const uint8_t key[TUTTI_SECRET_BYTES],
                    uint64_t comm_id, int64_t deadline_ns)
{
    memset(hs, 0, sizeof(*hs));
    hs->fd = fd;
    hs->role = role;
    hs->comm_id = comm_id;
    hs->deadline_ns = deadline_ns;
    memcpy(hs->key, key, TUTTI_SECRET_BYTES);
}

void tutti__hs_init_accept(struct tutti_hs *hs, int fd, const uint8_t key[TUTTI_SECRET_BYTES],
                           uint64_t comm_id, int64_t deadline_ns)
{
    hs_init(hs, fd, TUTTI_HS_ACCEPTOR, key, comm_id, deadline_ns);
    tutti__random_bytes(hs->nonce_a, NONCE_LEN);
    put_head(hs->buf);
    memcpy(hs->buf + 8, hs->nonce_a, NONCE_LEN);
    expect(hs, HS_A_SEND_HELLO, HELLO_LEN);
}

void tutti__hs_init_connect(struct tutti_hs *hs, int fd, const uint8_t key[TUTTI_SECRET_BYTES],
                            uint64_t comm_id, const void *payload, size_t payload_len,
                            int64_t deadline_ns)
{
    hs_init(hs, fd, TUTTI_HS_CONNECTOR, key, comm_id, deadline_ns);
    memcpy(hs->payload, payload, TUTTI_MIN(payload_len, (size_t)TUTTI_HS_PAYLOAD));
    tutti__random_bytes(hs->nonce_c, NONCE_LEN);
    expect(hs, HS_C_RECV_HELLO, HELLO_LEN);
}

/*
 * Refuse a PROVE: answer with an ACCEPT-sized message that is no MAC (zeros), best effort, so
 * a connector with the wrong secret learns "authentication failed" (TUTTI_ERR_AUTH) rather
 * than a bare hang-up. It reveals nothing: anyone can see that the connection was refused.
 */
static tutti_status_t refuse(struct tutti_hs *hs)
{
    uint8_t no[ACCEPT_LEN] = {0};
    int err = 0;
    (void)tutti__sock_send(hs->fd, no, sizeof(no), &err);
    return TUTTI_ERR_AUTH;
}

/* The acceptor has the whole PROVE: verify the MAC first, then the plain fields. */
static tutti_status_t on_prove(struct tutti_hs *hs)
{
    uint8_t mac[MAC_LEN];
    const uint8_t *b = hs->buf;
    direction_mac(hs, "tutti-c", hs->nonce_a, b + PROVE_NONCE, b + PROVE_PAYLOAD, mac);
    if (sodium_memcmp(mac, b + PROVE_MAC, MAC_LEN) != 0) {
        return refuse(hs); /* wrong secret, wrong comm id, a replay or garbage */
    }
    uint8_t comm[8];
    put_le64(comm, hs->comm_id);
    if (!head_ok(b) || memcmp(b + PROVE_COMM, comm, sizeof(comm)) != 0) {
        return refuse(hs);
    }
    memcpy(hs->nonce_c, b + PROVE_NONCE, NONCE_LEN);
    memcpy(hs->payload, b + PROVE_PAYLOAD, TUTTI_HS_PAYLOAD);
    direction_mac(hs, "tutti-a", hs->nonce_c, hs->nonce_a, hs->payload, hs->buf);
    expect(hs, HS_A_SEND_ACCEPT, ACCEPT_LEN);
    return TUTTI_IN_PROGRESS;
}

/* The connector has the HELLO: answer with PROVE. */
static tutti_status_t on_hello(struct tutti_hs *hs)
{
    uint8_t *b = hs->buf;
    if (!head_ok(b)) {
        return TUTTI_ERR_AUTH;
    }
    memcpy(hs->nonce_a, b + 8, NONCE_LEN);
    put_head(b);
    put_le64(b + PROVE_COMM, hs->comm_id);
    memcpy(b + PROVE_NONCE, hs->nonce_c, NONCE_LEN);
    memcpy(b + PROVE_PAYLOAD, hs->payload, TUTTI_HS_PAYLOAD);
    direction_mac(hs, "tutti-c", hs->nonce_a, hs->nonce_c, hs->payload, b + PROVE_MAC);
    expect(hs, HS_C_SEND_PROVE, PROVE_LEN);
    return TUTTI_IN_PROGRESS;
}

static tutti_status_t on_accept(struct tutti_hs *hs)
{
    uint8_t mac[MAC_LEN];
    direction_mac(hs, "tutti-a", hs->nonce_c, hs->nonce_a, hs->payload, mac);
    if (sodium_memcmp(mac, hs->buf, MAC_LEN) != 0) {
        return TUTTI_ERR_AUTH;
    }
    hs->state = HS_DONE;
    return TUTTI_OK;
}

/* A message is complete: act on it and set up the next one. */
static tutti_status_t advance(struct tutti_hs *hs)
{
    switch (hs->state) {
    case HS_A_SEND_HELLO:
        expect(hs, HS_A_RECV_PROVE, PROVE_LEN);
        return TUTTI_IN_PROGRESS;
    case HS_A_RECV_PROVE:
        return on_prove(hs);
    case HS_A_SEND_ACCEPT:
        hs->state = HS_DONE;
        return TUTTI_OK;
    case HS_C_RECV_HELLO:
        return on_hello(hs);
    case HS_C_SEND_PROVE:
        expect(hs, HS_C_RECV_ACCEPT, ACCEPT_LEN);
        return TUTTI_IN_PROGRESS;
    case HS_C_RECV_ACCEPT:
        return on_accept(hs);
    default:
        return TUTTI_ERR_INTERNAL;
    }
}

static int is_sending(int state)
{
    return state == HS_A_SEND_HELLO || state == HS_A_SEND_ACCEPT || state == HS_C_SEND_PROVE;
}

short tutti__hs_events(const struct tutti_hs *hs)
{
    return is_sending(hs->state) ? POLLOUT : POLLIN;
}

tutti_status_t tutti__hs_progress(struct tutti_hs *hs)
{
    tutti_status_t status = TUTTI_IN_PROGRESS;
    if (hs->state < 0) {
        return (tutti_status_t)hs->state;
    }
    if (hs->state == HS_DONE) {
        return TUTTI_OK;
    }
    while (status == TUTTI_IN_PROGRESS) {
        int err = 0;
        ssize_t n = is_sending(hs->state)
                        ? tutti__sock_send(hs->fd, hs->buf + hs->done, hs->want - hs->done, &err)
                        : tutti__sock_recv(hs->fd, hs->buf + hs->done, hs->want - hs->done, &err);
        if (n < 0) {
            /* EOF, reset or broken pipe: the peer is gone (or refused us). */
            status = err == 0 ? TUTTI_ERR_REMOTE : tutti__sys_status(err);
            break;
        }
        hs->done += (size_t)n;
        if (hs->done < hs->want) {
            break; /* would block */
        }
        status = advance(hs);
    }
    if (status == TUTTI_IN_PROGRESS && hs->deadline_ns > 0 && tutti__now_ns() >= hs->deadline_ns) {
        status = TUTTI_ERR_TIMEOUT;
    }
    if (status < 0) {
        hs->state = status;
    }
    if (status != TUTTI_IN_PROGRESS) {
        sodium_memzero(hs->key, sizeof(hs->key)); /* no longer needed: do not leave it around */
    }
    return status;
}
