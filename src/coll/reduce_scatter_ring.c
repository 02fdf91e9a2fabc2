/*
 * reduce_scatter_ring.c - ring reduce-scatter. Block b (recvcount elements) belongs to rank b.
 * Rank r starts with block r-1 and at step s forwards block r-s-1 with its contribution added,
 * so the last step completes block r at rank r. Chunks of every block travel together, one
 * chunk per step; the data of each block is split over channels.
 */
#include "coll/coll.h"

int tutti__reduce_scatter_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                               struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank, pos = tutti__ring_pos(pp, r);
    size_t rc_count = op->count;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open = tutti__coll_open_lane(
            plan, rc_count, pp, ch, n > 1 ? tutti__ring_rank(pp, pos + 1) : -1,
            n > 1 ? tutti__ring_rank(pp, pos - 1) : -1, &choff, &chlen);
        if (open < 0) {
            return -1;
        }
        if (open == 0) {
            continue;
        }
        if (n == 1) {
            if (tutti__coll_copy(plan, TUTTI_BUF_SEND, choff, TUTTI_BUF_RECV, choff, chlen)) {
                return -1;
            }
            continue;
        }
        for (size_t lo = 0; lo < chlen; lo += pp->chunk_elems) {
            size_t in = choff + lo; /* offset inside a block */
            size_t len = tutti__chunk(chlen - lo, pp);
            int rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND,
                                          (size_t)tutti__ring_rank(pp, pos - 1) * rc_count + in,
                                          TUTTI_BUF_NONE, 0, len, TUTTI_STEP_STABLE);
            for (int s = 1; s <= n - 2; s++) {
                rc |=
                    tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND,
                                         (size_t)tutti__ring_rank(pp, pos - s - 1) * rc_count + in,
                                         TUTTI_BUF_NONE, 0, len, 0);
            }
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND,
                                       (size_t)r * rc_count + in, TUTTI_BUF_RECV, in, len,
                                       TUTTI_STEP_FINAL);
            if (rc != 0) {
                return -1;
            }
        }
    }
    return 0;
}
