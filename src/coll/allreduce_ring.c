/*
 * allreduce_ring.c - ring all-reduce: a reduce-scatter pass then an all-gather pass around the
 * ring, pipelined in loops of nranks chunks, the data split over channels.
 *
 * The ring is the layout's (coll.h: tutti__ring_rank), so below r is this rank's position on it.
 * Within one loop the data is cut into nranks blocks. Rank r first sends its block r; at
 * reduce-scatter step s (1 <= s < nranks) it receives block r-s from its predecessor, adds its
 * own contribution and forwards it, so after nranks-1 steps block r+1 is complete at rank r. The
 * all-gather pass then circulates the finished blocks as bytes. Every element is reduced at exactly
 * one rank and copied everywhere else, which is why every rank's result is bitwise identical.
 */
#include "coll/coll.h"

int tutti__ring_allreduce_loop(struct tutti_plan *plan, int n, int r, uint32_t src, size_t base,
                               size_t len, int first_flags)
{
    size_t off, blen;
#define BLOCK(b) (tutti__split_even(len, n, tutti__mod((b), n), &off, &blen), off += base)
    int rc = 0;
    BLOCK(r);
    rc |=
        tutti__plan_add_step(plan, TUTTI_STEP_SEND, src, off, TUTTI_BUF_NONE, 0, blen, first_flags);
    for (int s = 1; s <= n - 2; s++) {
        BLOCK(r - s);
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, src, off, TUTTI_BUF_NONE, 0,
                                   blen, 0);
    }
    BLOCK(r + 1);
    rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY_SEND, src, off, TUTTI_BUF_RECV,
                               off, blen, TUTTI_STEP_FINAL | TUTTI_STEP_STABLE);
    for (int s = 1; s <= n - 2; s++) {
        BLOCK(r + 1 - s);
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0,
                                   TUTTI_BUF_RECV, off, blen, TUTTI_STEP_STABLE);
    }
    BLOCK(r + 2);
    rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, off, blen,
                               0);
#undef BLOCK
    return rc;
}

struct allreduce_ring {
    int n, r;
};

/* One loop of nranks chunks (or what is left of the lane). */
static int allreduce_chunk(struct tutti_plan *plan, size_t off, size_t len, const void *arg)
{
    const struct allreduce_ring *c = arg;
    return tutti__ring_allreduce_loop(plan, c->n, c->r, TUTTI_BUF_SEND, off, len,
                                      TUTTI_STEP_STABLE);
}

int tutti__allreduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, r = tutti__ring_pos(pp, pp->rank);
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    if (n == 1) {
        if (tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
            return -1;
        }
        return tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0, op->count);
    }
    struct allreduce_ring c = {n, r};
    struct tutti_ring_walk w = {op->count,
                                (size_t)n * pp->chunk_elems,
                                tutti__ring_rank(pp, r + 1),
                                tutti__ring_rank(pp, r - 1),
                                allreduce_chunk,
                                NULL,
                                &c};
    return tutti__ring_walk(plan, pp, &w);
}
