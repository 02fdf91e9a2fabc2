/*
 * boot_wire.c - what the bootstrap root and its clients check in each other's messages
 * (boot_wire.h): headers, the hello of a joining rank, statuses and error messages. Pure
 * functions over bytes, kept apart from the sockets so the fuzz harness runs exactly them.
 */
#include "comm/boot_wire.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

void tutti__boot_hdr_encode(uint32_t type, uint32_t len, uint8_t out[BOOT_HDR_BYTES])
{
    uint32_t v[2] = {htonl(type), htonl(len)};
    memcpy(out, v, sizeof(v));
}

void tutti__boot_hdr_decode(const uint8_t in[BOOT_HDR_BYTES], struct boot_hdr *h)
{
    uint32_t v[2];
    memcpy(v, in, sizeof(v));
    h->type = ntohl(v[0]);
    h->len = ntohl(v[1]);
}

int tutti__boot_hello_check(const struct boot_hello *h, int known_nranks, char *why, size_t len)
{
    if (h->kind != BOOT_KIND) {
        snprintf(why, len, "not a bootstrap connection");
        return -1;
    }
    if (h->nranks < 1 || h->rank < 0 || h->rank >= h->nranks) {
        snprintf(why, len, "rank %d of %d is out of range", h->rank, h->nranks);
        return -1;
    }
    if (known_nranks != 0 && h->nranks != known_nranks) {
        snprintf(why, len,
                 "the ranks disagree on the number of ranks (nranks): rank %d (pid %u) was "
                 "started as one of %d, the ranks before it as one of %d (TUTTI_NRANKS or the "
                 "launcher's size must agree)",
                 h->rank, h->pid, h->nranks, known_nranks);
        return -2;
    }
    return 0;
}

tutti_status_t tutti__boot_status_decode(int32_t wire)
{
    int32_t v = (int32_t)ntohl((uint32_t)wire);
    switch (v) {
#define TUTTI_BOOT_KNOWN_(name, value, msg)                                                        \
    case TUTTI_##name:                                                                             \
        return v <= 0 ? (tutti_status_t)v : TUTTI_ERR_REMOTE;
        TUTTI_STATUS_MAP(TUTTI_BOOT_KNOWN_)
#undef TUTTI_BOOT_KNOWN_
    }
    return TUTTI_ERR_REMOTE;
}

tutti_status_t tutti__boot_error_decode(const struct boot_error *e, int *culprit_p, char *reason,
                                        size_t len)
{
    tutti_status_t st = tutti__boot_status_decode(e->status);
    *culprit_p = (int32_t)ntohl((uint32_t)e->culprit);
    size_t n = strnlen(e->reason, sizeof(e->reason));
    if (len > 0) {
        n = n < len - 1 ? n : len - 1;
        memcpy(reason, e->reason, n);
        reason[n] = '\0';
    }
    return st == TUTTI_OK ? TUTTI_ERR_REMOTE : st;
}

/* The children of the subtree [lo, hi) rooted at lo: first[0..k] as tutti__boot_tree_place's. */
static int tree_split(int lo, int hi, int first[BOOT_TREE_FANOUT + 1])
{
    int below = hi - lo - 1;
    int k = below < BOOT_TREE_FANOUT ? below : BOOT_TREE_FANOUT;
    for (int i = 0; i <= k; i++) {
        first[i] = lo + 1 + (int)((int64_t)i * below / (k > 0 ? k : 1));
    }
    if (k == 0) {
        first[0] = hi;
    }
    return k;
}

int tutti__boot_tree_height(int size)
{
    int h = 0;
    while (size > 1) { /* the largest of the k runs of size - 1 ranks: ceil((size - 1) / k) */
        int below = size - 1, k = below < BOOT_TREE_FANOUT ? below : BOOT_TREE_FANOUT;
        size = (below + k - 1) / k;
        h++;
    }
    return h;
}

int tutti__boot_tree_place(int n, int r, int *parent_p, int first[BOOT_TREE_FANOUT + 1])
{
    if (n < 1 || r < 0 || r >= n) {
        return -1;
    }
    int lo = 0, hi = n, parent = -1;
    int k = tree_split(lo, hi, first);
    while (lo != r) {
        int i = 0;
        while (first[i + 1] <= r) { /* r is in [lo + 1, hi): some run holds it */
            i++;
        }
        parent = lo;
        lo = first[i];
        hi = first[i + 1];
        k = tree_split(lo, hi, first);
    }
    *parent_p = parent;
    return k;
}
