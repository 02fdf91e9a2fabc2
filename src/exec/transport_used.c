/*
 * transport_used.c - which transports some pair of a communicator's ranks uses, as
 * tutti__transport_pick would answer for every pair, without asking it n^2 / 2 times (every
 * rank asked for every pair: 131,072 questions per rank at 512 ranks, and 2 x 10^9 at 65,536).
 *
 * What a pair's answer can depend on (transport.h, can_connect): shm takes ranks of one host,
 * verbs ranks whose verbs blobs match, TCP any pair. So ranks with equal verbs blobs form a
 * class, and a pair's answer depends only on the two classes and on whether the ranks share a
 * host: one example pair of each such kind is asked. Ranks of one host are found by sorting;
 * for pairs across hosts a class keeps two ranks on different hosts, which finds an example
 * whenever one exists.
 */
#include "exec/registry.h"
#include "base/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct kinds {
    const struct tutti_tpeer *peers;
    int *cls; /* [n] rank -> class */
    int nclasses;
    int (*far)[2];  /* [class] two ranks of it on different hosts (-1: none) */
    uint8_t *asked; /* [class x class x 2]: this kind of pair was asked (x 2: same host?) */
    int *bad;       /* [2]: a pair no transport takes */
};

static int blob_eq(const struct tutti_tpeer *a, const struct tutti_tpeer *b)
{
    return memcmp(a->blob[TUTTI_TRANSPORT_IB], b->blob[TUTTI_TRANSPORT_IB], TUTTI_TRANSPORT_BLOB) ==
           0;
}

/* Order ranks by host, then class, then rank. */
static int by_host_class(const void *x, const void *y, void *arg)
{
    const struct kinds *k = arg;
    int a = *(const int *)x, b = *(const int *)y;
    int ha = k->peers[a].host, hb = k->peers[b].host;
    if (ha != hb) {
        return ha < hb ? -1 : 1;
    }
    if (k->cls[a] != k->cls[b]) {
        return k->cls[a] < k->cls[b] ? -1 : 1;
    }
    return (a > b) - (a < b);
}

/* Ask about the pair (a, b) unless a pair of its kind was asked already. */
static tutti_status_t ask(const struct tutti_transport_ops *const ops[], void *const tctx[],
                          struct kinds *k, int a, int b, unsigned *used)
{
    int same = k->peers[a].host == k->peers[b].host;
    size_t i = ((size_t)k->cls[a] * (size_t)k->nclasses + (size_t)k->cls[b]) * 2 + (size_t)same;
    if (k->asked[i]) {
        return TUTTI_OK;
    }
    k->asked[i] = 1;
    tutti_transport_id_t id;
    tutti_status_t st = tutti__transport_pick(ops, tctx, a, b, &id);
    if (st == TUTTI_OK) {
        *used |= 1u << id;
    } else if (st == TUTTI_ERR_UNSUPPORTED) {
        k->bad[0] = a; /* the caller names it */
        k->bad[1] = b;
    }
    return st;
}

/* Every kind of pair of ranks sharing a host: idx sorted by host and class. */
static tutti_status_t ask_within_hosts(const struct tutti_transport_ops *const ops[],
                                       void *const tctx[], struct kinds *k, const int *idx, int n,
                                       unsigned *used)
{
    for (int lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo; hi < n && k->peers[idx[hi]].host == k->peers[idx[lo]].host; hi++) {
        }
        /* Within [lo, hi), runs of one class; a pair of runs, or a run with two ranks. */
        for (int i = lo; i < hi; i++) {
            if (i > lo && k->cls[idx[i]] == k->cls[idx[i - 1]]) {
                if (i - 1 == lo || k->cls[idx[i - 2]] != k->cls[idx[i]]) {
                    TUTTI_CHECK(ask(ops, tctx, k, idx[i - 1], idx[i], used));
                }
                continue;
            }
            for (int j = lo; j < i; j++) {
                if (j == lo || k->cls[idx[j]] != k->cls[idx[j - 1]]) {
                    TUTTI_CHECK(ask(ops, tctx, k, idx[j], idx[i], used));
                }
            }
        }
    }
    return TUTTI_OK;
}

/* Every kind of pair of ranks on different hosts. */
static tutti_status_t ask_across_hosts(const struct tutti_transport_ops *const ops[],
                                       void *const tctx[], struct kinds *k, unsigned *used)
{
    for (int x = 0; x < k->nclasses; x++) {
        for (int y = x; y < k->nclasses; y++) {
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < 2; j++) {
                    int a = k->far[x][i], b = k->far[y][j];
                    if (a >= 0 && b >= 0 && k->peers[a].host != k->peers[b].host) {
                        TUTTI_CHECK(ask(ops, tctx, k, a, b, used));
                    }
                }
            }
        }
    }
    return TUTTI_OK;
}

tutti_status_t tutti__transport_used(const struct tutti_transport_ops *const ops[],
                                     void *const tctx[], const struct tutti_tpeer *peers, int n,
                                     unsigned *used_p, int bad[2])
{
    struct kinds k = {.peers = peers, .bad = bad};
    int *rep = malloc((size_t)n * sizeof(int)); /* class -> its first rank */
    int *idx = malloc((size_t)n * sizeof(int));
    k.cls = malloc((size_t)n * sizeof(int));
    tutti_status_t st = TUTTI_ERR_NO_MEMORY;
    *used_p = 0;
    if (rep == NULL || idx == NULL || k.cls == NULL) {
        goto out;
    }
    for (int r = 0; r < n; r++) {
        int c = 0;
        while (c < k.nclasses && !blob_eq(&peers[rep[c]], &peers[r])) {
            c++;
        }
        if (c == k.nclasses) {
            rep[k.nclasses++] = r;
        }
        k.cls[r] = c;
        idx[r] = r;
    }
    k.far = malloc((size_t)k.nclasses * sizeof(*k.far));
    k.asked = calloc((size_t)k.nclasses * (size_t)k.nclasses * 2, 1);
    if (k.far == NULL || k.asked == NULL) {
        goto out;
    }
    for (int c = 0; c < k.nclasses; c++) {
        k.far[c][0] = k.far[c][1] = -1;
    }
    for (int r = 0; r < n; r++) {
        int *f = k.far[k.cls[r]];
        if (f[0] < 0) {
            f[0] = r;
        } else if (f[1] < 0 && peers[f[0]].host != peers[r].host) {
            f[1] = r;
        }
    }
    qsort_r(idx, (size_t)n, sizeof(int), by_host_class, &k);
    st = ask_within_hosts(ops, tctx, &k, idx, n, used_p);
    if (st == TUTTI_OK) {
        st = ask_across_hosts(ops, tctx, &k, used_p);
    }
out:
    free(rep);
    free(idx);
    free(k.cls);
    free(k.far);
    free(k.asked);
    return st;
}
