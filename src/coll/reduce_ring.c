/*
 * reduce_ring.c - pipelined chain reduce toward the root: root+1 -> root+2 -> ... -> root. The
 * first rank of the chain sends its data, each next one adds its own and forwards, the root adds
 * its own and writes the result (dividing for AVG). Chunks and channels as for broadcast.
 */
#include "coll/coll.h"

int tutti__reduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan)
{
    int n = pp->nranks, me = tutti__ring_pos(pp, pp->rank);
    int pos = tutti__mod(me - tutti__ring_pos(pp, op->root) - 1,
                         n); /* 0 right after the root, n-1 at the root */
    int next = pos < n - 1 ? tutti__ring_rank(pp, me + 1) : -1;
    int prev = pos > 0 ? tutti__ring_rank(pp, me - 1) : -1;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open = tutti__coll_open_lane(plan, op->count, pp, ch, next, prev, &choff, &chlen);
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
            size_t off = choff + lo;
            size_t len = tutti__chunk(chlen - lo, pp);
            int rc;
            if (pos == 0) {
                rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off,
                                          TUTTI_BUF_NONE, 0, len, TUTTI_STEP_STABLE);
            } else if (next >= 0) {
                rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND, off,
                                          TUTTI_BUF_NONE, 0, len, 0);
            } else {
                rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off,
                                          TUTTI_BUF_RECV, off, len, TUTTI_STEP_FINAL);
            }
            if (rc != 0) {
                return -1;
            }
        }
    }
    return 0;
}
