/*
 * reduce_scatter_ring.c - ring reduce-scatter. Block b (recvcount elements) belongs to rank b.
 * Rank r starts with block r-1 and at step s forwards block r-s-1 with its contribution added,
 * so the last step completes block r at rank r. Chunks of every block travel together, one
 * chunk per step; the data of each block is split over channels.
 */
#include "coll/coll.h"

struct rs_ring {
    const struct tutti_plan_params *pp;
    int n, r, pos;
    size_t rc_count;
};

static int rs_chunk(struct tutti_plan *plan, size_t in, size_t len, const void *arg)
{
    const struct rs_ring *c = arg;
    const struct tutti_plan_params *pp = c->pp;
    int rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND,
                                  (size_t)tutti__ring_rank(pp, c->pos - 1) * c->rc_count + in,
                                  TUTTI_BUF_NONE, 0, len, TUTTI_STEP_STABLE);
    for (int s = 1; s <= c->n - 2; s++) {
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND,
                                   (size_t)tutti__ring_rank(pp, c->pos - s - 1) * c->rc_count + in,
                                   TUTTI_BUF_NONE, 0, len, 0);
    }
    rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND,
                               (size_t)c->r * c->rc_count + in, TUTTI_BUF_RECV, in, len,
                               TUTTI_STEP_FINAL);
    return rc;
}

int tutti__reduce_scatter_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                               struct tutti_plan *plan)
{
    int n = pp->nranks, pos = tutti__ring_pos(pp, pp->rank);
    struct rs_ring c = {pp, n, pp->rank, pos, op->count};
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    struct tutti_ring_walk w =
        tutti__ring_around(pp, op->count, rs_chunk, tutti__ring_copy_alone, &c);
    return tutti__ring_walk(plan, pp, &w);
}
