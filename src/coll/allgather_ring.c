/*
 * allgather_ring.c - ring all-gather. Block b (sendcount elements) comes from rank b. Rank r
 * sends its own block (copying it into place in the same pass unless the call is in place),
 * then at step s receives block r-s, stores it and forwards it (one pass over the slot), and
 * finally just stores block r+1.
 */
#include "coll/coll.h"

int tutti__allgather_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank, pos = tutti__ring_pos(pp, r);
    size_t sc = op->count;
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open =
            tutti__coll_open_lane(plan, sc, pp, ch, n > 1 ? tutti__ring_rank(pp, pos + 1) : -1,
                                  n > 1 ? tutti__ring_rank(pp, pos - 1) : -1, &choff, &chlen);
        if (open < 0) {
            return -1;
        }
        if (open == 0) {
            continue;
        }
        for (size_t lo = 0; lo < chlen && n > 1; lo += pp->chunk_elems) {
            size_t in = choff + lo;
            size_t len = tutti__chunk(chlen - lo, pp);
            int rc = tutti__coll_send_copy(plan, TUTTI_BUF_SEND, in, TUTTI_BUF_RECV,
                                           (size_t)r * sc + in, len);
            for (int s = 1; s <= n - 2; s++) {
                rc |= tutti__plan_add_step(
                    plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                    (size_t)tutti__ring_rank(pp, pos - s) * sc + in, len, TUTTI_STEP_STABLE);
            }
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                       (size_t)tutti__ring_rank(pp, pos + 1) * sc + in, len, 0);
            if (rc != 0) {
                return -1;
            }
        }
        if (n == 1 && tutti__coll_copy(plan, TUTTI_BUF_SEND, choff, TUTTI_BUF_RECV,
                                       (size_t)r * sc + choff, chlen) != 0) {
            return -1;
        }
    }
    return 0;
}
