/*
 * allreduce_hier.c - hierarchical all-reduce for ranks on several hosts with as many ranks on
 * each (L per host, H hosts): a ring reduce-scatter among the L ranks of each host, then a ring
 * all-reduce of each rank's block among the H ranks with the same local index (one per host: a
 * "rail"), then a ring all-gather within each host. Only 2 (H - 1) / H of a block crosses the
 * network per rank, and the inter-host rings have H ranks instead of n, so their latency grows
 * with the hosts, not the ranks.
 *
 * The data of one channel goes in loops of L * H chunks, cut into L blocks of H parts (a chunk
 * at most each): block l of a loop ends the first phase at the rank with local index l, which
 * shares it with the same local index on the other hosts (rails pair ranks by local index: on GPU
 * machines the same GPU and NIC position). Within a host the rings follow the layout's locality
 * ring. Each element is reduced to the end at one rank and copied to the others, so every rank gets
 * the same bits. One lane per channel: its steps change peers from phase to phase.
 */
#include "coll/coll.h"

#define MAX_PPN 1024

/* A ring among some ranks: this rank's position, its neighbours, and the data block each ring
 * block id stands for. */
struct group {
    int n, pos, next, prev;
    int block[MAX_PPN];
};

/* The ranks of this host in ring order; block id k carries the block of the rank at k - 1
 * (a ring reduce-scatter completes block id k at position k - 1: each rank its own). */
static void local_group(const struct tutti_plan_params *pp, struct group *g)
{
    const struct tutti_layout *l = pp->layout;
    int me = pp->rank, ring[MAX_PPN] = {0};
    g->n = 0;
    g->pos = 0;
    for (int i = 0; i < pp->nranks; i++) {
        int r = l->ring[i];
        if (l->host[r] == l->host[me]) {
            if (r == me) {
                g->pos = g->n;
            }
            ring[g->n++] = r;
        }
    }
    g->next = ring[(g->pos + 1) % g->n];
    g->prev = ring[tutti__mod(g->pos - 1, g->n)];
    for (int k = 0; k < g->n; k++) {
        g->block[k] = l->local[ring[tutti__mod(k - 1, g->n)]];
    }
}

/* Part q (of nq) of block id k of the loop [base, base + len) of group g. */
static void part(const struct group *g, int k, int q, int nq, size_t base, size_t len,
                 size_t *off_p, size_t *len_p)
{
    size_t boff, blen;
    tutti__split_even(len, g->n, g->block[tutti__mod(k, g->n)], &boff, &blen);
    tutti__split_even(blen, nq, q, off_p, len_p);
    *off_p += base + boff;
}

/*
 * Phase 1: reduce-scatter of [base, base + len) within the host, in nq passes of one part of
 * every block (at most a chunk: each ring step sends one slot and receives one, or two ranks
 * both sending several would wait on each other's full FIFOs). This rank's block ends in the
 * output, partly reduced.
 */
static int local_reduce_scatter(struct tutti_plan *plan, const struct group *g, int nq, size_t base,
                                size_t len)
{
    size_t off, plen;
    int rc = 0;
    tutti__plan_set_peers(plan, g->next, g->prev);
    for (int q = 0; q < nq; q++) {
        part(g, g->pos, q, nq, base, len, &off, &plen);
        rc |= tutti__plan_add_step(
            plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0, plen,
            tutti__coll_input_stable(plan, TUTTI_BUF_SEND, off) ? TUTTI_STEP_STABLE : 0);
        for (int s = 1; s <= g->n - 2; s++) {
            part(g, g->pos - s, q, nq, base, len, &off, &plen);
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND, off,
                                       TUTTI_BUF_NONE, 0, plen, 0);
        }
        part(g, g->pos + 1, q, nq, base, len, &off, &plen);
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off,
                                   TUTTI_BUF_RECV, off, plen, 0);
    }
    return rc;
}

/* Phase 3: all-gather of the finished blocks within the host, in the same passes. */
static int local_all_gather(struct tutti_plan *plan, const struct group *g, int nq, size_t base,
                            size_t len)
{
    size_t off, plen;
    int rc = 0;
    tutti__plan_set_peers(plan, g->next, g->prev);
    for (int q = 0; q < nq; q++) {
        part(g, g->pos + 1, q, nq, base, len, &off, &plen);
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_RECV, off, TUTTI_BUF_NONE, 0,
                                   plen, TUTTI_STEP_STABLE);
        for (int s = 1; s <= g->n - 2; s++) {
            part(g, g->pos + 1 - s, q, nq, base, len, &off, &plen);
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0,
                                       TUTTI_BUF_RECV, off, plen, TUTTI_STEP_STABLE);
        }
        part(g, g->pos + 2, q, nq, base, len, &off, &plen);
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, off,
                                   plen, 0);
    }
    return rc;
}

/* Phase 2: ring all-reduce of this rank's block (its parts, one per host), in place in the
 * output, along its rail. */
static int rail_all_reduce(struct tutti_plan *plan, const struct tutti_plan_params *pp, size_t base,
                           size_t len)
{
    const struct tutti_layout *l = pp->layout;
    int h = l->host[pp->rank], nh = l->nhosts, li = l->local[pp->rank];
    tutti__plan_set_peers(plan, l->by_local[((h + 1) % nh) * l->ppn + li],
                          l->by_local[tutti__mod(h - 1, nh) * l->ppn + li]);
    return tutti__ring_allreduce_loop(plan, nh, h, TUTTI_BUF_RECV, base, len, 0);
}

int tutti__allreduce_hier_applies(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp)
{
    (void)op;
    const struct tutti_layout *l = pp->layout;
    return l != NULL && l->nhosts >= 2 && l->ppn >= 2 && l->ppn <= MAX_PPN;
}

int tutti__allreduce_hier(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    plan->divisor = (op->op == TUTTI_AVG) ? pp->nranks : 1;
    struct group g;
    local_group(pp, &g);
    size_t loop = (size_t)g.n * (size_t)pp->layout->nhosts * pp->chunk_elems;
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open = tutti__coll_open_lane(plan, op->count, pp, ch, g.next, g.prev, &choff, &chlen);
        if (open <= 0) {
            if (open < 0) {
                return -1;
            }
            continue;
        }
        for (size_t lo = 0; lo < chlen; lo += loop) {
            size_t base = choff + lo, len = chlen - lo < loop ? chlen - lo : loop;
            size_t mine, mlen; /* this rank's block of the loop */
            tutti__split_even(len, g.n, pp->layout->local[pp->rank], &mine, &mlen);
            int nh = pp->layout->nhosts;
            if (local_reduce_scatter(plan, &g, nh, base, len) != 0 ||
                rail_all_reduce(plan, pp, base + mine, mlen) != 0 ||
                local_all_gather(plan, &g, nh, base, len) != 0) {
                return -1;
            }
        }
    }
    return 0;
}
