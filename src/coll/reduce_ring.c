/*
 * reduce_ring.c - pipelined chain reduce toward the root: root+1 -> root+2 -> ... -> root. The
 * first rank of the chain sends its data, each next one adds its own and forwards, the root adds
 * its own and writes the result (dividing for AVG). Chunks and channels as for broadcast.
 */
#include "coll/coll.h"

struct reduce_ring {
    int pos, next;
};

static int reduce_chunk(struct tutti_plan *plan, size_t off, size_t len, const void *arg)
{
    const struct reduce_ring *c = arg;
    if (c->pos == 0) {
        return tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0,
                                    len, TUTTI_STEP_STABLE);
    }
    if (c->next >= 0) {
        return tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND, off,
                                    TUTTI_BUF_NONE, 0, len, 0);
    }
    return tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off,
                                TUTTI_BUF_RECV, off, len, TUTTI_STEP_FINAL);
}

int tutti__reduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan)
{
    int n = pp->nranks, me = tutti__ring_pos(pp, pp->rank);
    /* 0 right after the root, n-1 at the root */
    int pos = tutti__mod(me - tutti__ring_pos(pp, op->root) - 1, n);
    struct reduce_ring c = {pos, pos < n - 1 ? tutti__ring_rank(pp, me + 1) : -1};
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    struct tutti_ring_walk w = {
        op->count,    pp->chunk_elems,        c.next, pos > 0 ? tutti__ring_rank(pp, me - 1) : -1,
        reduce_chunk, tutti__ring_copy_alone, &c};
    return tutti__ring_walk(plan, pp, &w);
}
