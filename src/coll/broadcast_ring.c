/*
 * broadcast_ring.c - pipelined chain broadcast: root -> root+1 -> ... -> root-1, chunk by chunk,
 * the data split over channels. Each middle rank copies a chunk out of the slot it received into
 * its buffer and into the slot it forwards in one pass; the root, out of place, likewise copies
 * each chunk of its input to its output while sending it (one read of the input).
 */
#include "coll/coll.h"

int tutti__broadcast_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, me = tutti__ring_pos(pp, pp->rank);
    int pos =
        tutti__mod(me - tutti__ring_pos(pp, op->root), n); /* 0 at the root, n-1 at the tail */
    int next = pos < n - 1 ? tutti__ring_rank(pp, me + 1) : -1;
    int prev = pos > 0 ? tutti__ring_rank(pp, me - 1) : -1;
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open = tutti__coll_open_lane(plan, op->count, pp, ch, next, prev, &choff, &chlen);
        if (open < 0) {
            return -1;
        }
        if (open == 0) {
            continue;
        }
        for (size_t lo = 0; lo < chlen && n > 1; lo += pp->chunk_elems) {
            size_t off = choff + lo;
            size_t len = tutti__chunk(chlen - lo, pp);
            int rc;
            if (pos == 0) {
                rc = tutti__coll_send_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, off, len);
            } else if (next >= 0) {
                rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0,
                                          TUTTI_BUF_RECV, off, len, TUTTI_STEP_STABLE);
            } else {
                rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                          off, len, 0);
            }
            if (rc != 0) {
                return -1;
            }
        }
        if (n == 1 &&
            tutti__coll_copy(plan, TUTTI_BUF_SEND, choff, TUTTI_BUF_RECV, choff, chlen) != 0) {
            return -1;
        }
    }
    return 0;
}
