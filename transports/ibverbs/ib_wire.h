/*
 * ib_wire.h - the messages verbs connections exchange over their side connection while they
 * set up and close (pure functions, so they can be unit-tested and fuzzed without a device).
 *
 *   hello = u32 magic "IBH1", u32 nqps, u32 nslots, u32 slot_size, u64 FIFO address, u32 rkey,
 *           u32 zero, then nqps queue pair addresses of 32 bytes (ib_qp.h); little-endian
 *   ready = u32 "IBR1": this side's queue pairs are ready to receive
 *   bye   = u32 "IBB1": this side closes on purpose (destroy), not because its process died
 */
#ifndef TUTTI_IB_WIRE_H
#define TUTTI_IB_WIRE_H

#include "ib_qp.h"

#include <stddef.h>
#include <stdint.h>

#define IB_WIRE_MAX_QPS 8
#define IB_HELLO_HEAD   32
#define IB_HELLO_MAX    (IB_HELLO_HEAD + 32 * IB_WIRE_MAX_QPS)

enum { IB_MSG_HELLO = 0x31484249u, IB_MSG_READY = 0x31524249u, IB_MSG_BYE = 0x31424249u };

struct ib_hello {
    uint32_t nqps, nslots, slot_size;
    uint64_t addr; /* the sender's receive FIFO */
    uint32_t rkey;
    struct tutti_ib_qp_addr qp[IB_WIRE_MAX_QPS];
};

/** A queue pair's address in its wire form (little-endian, 32 bytes) and back. */
void tutti__ib_qp_addr_encode(const struct tutti_ib_qp_addr *a, uint8_t p[32]);
void tutti__ib_qp_addr_decode(const uint8_t p[32], struct tutti_ib_qp_addr *a);

/** Encode h into p (IB_HELLO_MAX bytes of room); returns the length. nqps must be 1..8. */
size_t tutti__ib_hello_encode(const struct ib_hello *h, uint8_t *p);

/**
 * Decode and check a hello of `len` bytes against what this side expects (the same nqps,
 * nslots and slot_size: every rank reads them from the same environment). Returns 0 with *h
 * filled, or -1 with the reason in why.
 */
int tutti__ib_hello_decode(const uint8_t *p, size_t len, uint32_t nqps, uint32_t nslots,
                           uint32_t slot_size, struct ib_hello *h, char *why, size_t wlen);

/** A 4-byte message's kind: IB_MSG_READY, IB_MSG_BYE, or 0 when it is not one. */
uint32_t tutti__ib_msg_kind(const uint8_t *p, size_t len);

/** Write a 4-byte message into p. */
void tutti__ib_msg_encode(uint32_t kind, uint8_t p[4]);

#endif /* TUTTI_IB_WIRE_H */
