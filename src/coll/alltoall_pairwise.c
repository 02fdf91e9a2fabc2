/*
 * alltoall_pairwise.c - all-to-all as nranks-1 concurrent pairwise exchanges: one lane sends
 * block r+k to rank r+k while another receives block r-k from rank r-k, for every k, plus the
 * local copy of block r, chunk by chunk between the sends to rank r+1 (so the copy never holds
 * up the exchanges for long). Lanes run concurrently, so no exchange waits for another and
 * large blocks cannot deadlock on full FIFOs. Blocks are split over channels.
 *
 * In place (sendbuf == recvbuf, as nccl-tests and MPI_IN_PLACE use it), block j is both what
 * goes to rank j and where rank j's block lands, so each peer gets one lane that first copies
 * block j aside (plan scratch) and then alternates sending a chunk of the copy and receiving a
 * chunk into block j: one chunk in flight each way, so the exchange cannot deadlock either.
 */
#include "coll/coll.h"

static int in_place(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                    struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t cnt = op->count;
    if (tutti__plan_scratch(plan, (size_t)n * cnt * tutti_datatype_size(op->dt)) != 0) {
        return -1;
    }
    long tmp = tutti__plan_add_buf(plan, plan->scratch);
    if (tmp < 0) {
        return -1;
    }
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        tutti__coll_channel_share(cnt, pp->chunk_elems, pp->nchannels, ch, &choff, &chlen);
        for (int k = 1; k < n && chlen > 0; k++) {
            int j = (r + k) % n;
            size_t at = (size_t)j * cnt + choff;
            if (tutti__plan_add_lane(plan, j, j, ch) < 0 ||
                tutti__plan_add_step(plan, TUTTI_STEP_COPY, TUTTI_BUF_RECV, at, (uint32_t)tmp, at,
                                     chlen, 0) != 0) {
                return -1;
            }
            for (size_t lo = 0; lo < chlen; lo += pp->chunk_elems) {
                size_t len = tutti__chunk(chlen - lo, pp);
                if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, (uint32_t)tmp, at + lo,
                                         TUTTI_BUF_NONE, 0, len, TUTTI_STEP_STABLE) != 0 ||
                    tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                         at + lo, len, 0) != 0) {
                    return -1;
                }
            }
        }
    }
    return 0; /* block r stays where it is */
}

int tutti__alltoall_pairwise(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t cnt = op->count;
    if (cnt > 0 && tutti__coll_same_place(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0)) {
        return in_place(op, pp, plan);
    }
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        tutti__coll_channel_share(cnt, pp->chunk_elems, pp->nchannels, ch, &choff, &chlen);
        if (chlen == 0) {
            continue;
        }
        for (int k = 1; k < n; k++) {
            int to = (r + k) % n, from = tutti__mod(r - k, n);
            if (tutti__plan_add_lane(plan, to, -1, ch) < 0) {
                return -1;
            }
            for (size_t lo = 0; lo < chlen; lo += pp->chunk_elems) {
                size_t len = tutti__chunk(chlen - lo, pp);
                size_t mine = (size_t)r * cnt + choff + lo;
                if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND,
                                         (size_t)to * cnt + choff + lo, TUTTI_BUF_NONE, 0, len,
                                         TUTTI_STEP_STABLE) != 0 ||
                    (k == 1 && tutti__coll_copy(plan, TUTTI_BUF_SEND, mine, TUTTI_BUF_RECV, mine,
                                                len) != 0)) {
                    return -1;
                }
            }
            if (tutti__plan_add_lane(plan, -1, from, ch) < 0) {
                return -1;
            }
            for (size_t lo = 0; lo < chlen; lo += pp->chunk_elems) {
                size_t len = tutti__chunk(chlen - lo, pp);
                if (tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                         (size_t)from * cnt + choff + lo, len, 0) != 0) {
                    return -1;
                }
            }
        }
        if (n == 1 && (tutti__plan_add_lane(plan, -1, -1, ch) < 0 ||
                       tutti__coll_copy(plan, TUTTI_BUF_SEND, (size_t)r * cnt + choff,
                                        TUTTI_BUF_RECV, (size_t)r * cnt + choff, chlen) != 0)) {
            return -1;
        }
    }
    return 0;
}
