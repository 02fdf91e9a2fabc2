/*
 * ib_wire.c - the set-up messages of verbs connections (ib_wire.h).
 */
#include "ib_wire.h"

#include <stdio.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void tutti__ib_qp_addr_encode(const struct tutti_ib_qp_addr *a, uint8_t p[32])
{
    memcpy(p, a->gid, 16);
    put32(p + 16, a->qpn);
    put32(p + 20, a->psn);
    p[24] = (uint8_t)a->lid;
    p[25] = (uint8_t)(a->lid >> 8);
    p[26] = a->gid_index;
    p[27] = a->link;
    put32(p + 28, a->mtu);
}

void tutti__ib_qp_addr_decode(const uint8_t p[32], struct tutti_ib_qp_addr *a)
{
    memcpy(a->gid, p, 16);
    a->qpn = get32(p + 16);
    a->psn = get32(p + 20);
    a->lid = (uint16_t)(p[24] | p[25] << 8);
    a->gid_index = p[26];
    a->link = p[27];
    a->mtu = get32(p + 28);
}

size_t tutti__ib_hello_encode(const struct ib_hello *h, uint8_t *p)
{
    put32(p, IB_MSG_HELLO);
    put32(p + 4, h->nqps);
    put32(p + 8, h->nslots);
    put32(p + 12, h->slot_size);
    put32(p + 16, (uint32_t)h->addr);
    put32(p + 20, (uint32_t)(h->addr >> 32));
    put32(p + 24, h->rkey);
    put32(p + 28, 0);
    for (uint32_t q = 0; q < h->nqps && q < IB_WIRE_MAX_QPS; q++) {
        tutti__ib_qp_addr_encode(&h->qp[q], p + IB_HELLO_HEAD + 32 * q);
    }
    return IB_HELLO_HEAD + 32 * (size_t)h->nqps;
}

int tutti__ib_hello_decode(const uint8_t *p, size_t len, uint32_t nqps, uint32_t nslots,
                           uint32_t slot_size, struct ib_hello *h, char *why, size_t wlen)
{
    if (len < IB_HELLO_HEAD || get32(p) != IB_MSG_HELLO) {
        snprintf(why, wlen, "not a set-up message (%zu bytes)", len);
        return -1;
    }
    uint32_t n = get32(p + 4), ns = get32(p + 8), ss = get32(p + 12);
    if (n != nqps || ns != nslots || ss != slot_size) {
        snprintf(why, wlen,
                 "it uses %u queue pairs, %u slots of %u bytes; this rank %u, %u of %u "
                 "(TUTTI_IB_QPS, TUTTI_IB_NSLOTS, TUTTI_IB_SLOT_SIZE must agree)",
                 n, ns, ss, nqps, nslots, slot_size);
        return -1;
    }
    if (n < 1 || n > IB_WIRE_MAX_QPS || len != IB_HELLO_HEAD + 32 * (size_t)n ||
        get32(p + 28) != 0) {
        snprintf(why, wlen, "malformed set-up message (%zu bytes for %u queue pairs)", len, n);
        return -1;
    }
    memset(h, 0, sizeof(*h));
    h->nqps = n;
    h->nslots = ns;
    h->slot_size = ss;
    h->addr = get32(p + 16) | (uint64_t)get32(p + 20) << 32;
    h->rkey = get32(p + 24);
    for (uint32_t q = 0; q < n; q++) {
        tutti__ib_qp_addr_decode(p + IB_HELLO_HEAD + 32 * q, &h->qp[q]);
    }
    return 0;
}

uint32_t tutti__ib_msg_kind(const uint8_t *p, size_t len)
{
    if (len != 4) {
        return 0;
    }
    uint32_t k = get32(p);
    return k == IB_MSG_READY || k == IB_MSG_BYE ? k : 0;
}

void tutti__ib_msg_encode(uint32_t kind, uint8_t p[4])
{
    put32(p, kind);
}
