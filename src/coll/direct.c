/*
 * direct.c - pieces shared by the direct (flat) algorithms for small messages: every rank sends
 * its data straight to the ranks that need it, one hop, and reductions combine the
 * contributions in rank order 0, 1, ..., n-1 on every rank that reduces, so results are bitwise
 * identical wherever they are computed. Each message must fit one slot: the catalog only
 * offers these algorithms when count * size <= chunk.
 */
#include "coll/coll.h"

uint32_t tutti__direct_keep_own(struct tutti_plan *plan, uint32_t own_buf, size_t own_off,
                                size_t count, int overwritten)
{
    if (!overwritten) {
        return own_buf;
    }
    size_t bytes = count * tutti_datatype_size(plan->op.dt);
    if (tutti__plan_scratch(plan, bytes) != 0) {
        return UINT32_MAX;
    }
    long idx = tutti__plan_add_buf(plan, plan->scratch);
    if (idx < 0 || tutti__plan_add_step(plan, TUTTI_STEP_COPY, own_buf, own_off, (uint32_t)idx, 0,
                                        count, 0) != 0) {
        return UINT32_MAX;
    }
    return (uint32_t)idx;
}

int tutti__direct_send_all(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                           uint32_t buf, size_t (*off)(int peer, const void *ctx), const void *ctx,
                           size_t count)
{
    for (int k = 1; k < pp->nranks; k++) {
        int peer = (pp->rank + k) % pp->nranks; /* start at the next rank: spreads the load */
        tutti__plan_set_peers(plan, peer, -1);
        if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, buf, off != NULL ? off(peer, ctx) : 0,
                                 TUTTI_BUF_NONE, 0, count, 0) != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__direct_reduce_chain(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                               uint32_t own_buf, size_t own_off, uint32_t dst_buf, size_t dst_off,
                               size_t count)
{
    int n = pp->nranks, r = pp->rank;
    for (int q = 0; q < n; q++) {
        int last = (q == n - 1) ? TUTTI_STEP_FINAL : 0;
        int rc;
        if (q == r && q == 0) {
            rc = tutti__coll_copy(plan, own_buf, own_off, dst_buf, dst_off, count); /* acc = own */
        } else if (q == r) {
            rc = tutti__plan_add_step(plan, TUTTI_STEP_REDUCE, own_buf, own_off, dst_buf, dst_off,
                                      count, last); /* acc = op(acc, own) */
        } else if (q == 0) {
            tutti__plan_set_peers(plan, -1, q);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, dst_buf, dst_off,
                                      count, 0);
        } else {
            tutti__plan_set_peers(plan, -1, q);
            /* acc = op(acc, x_q): the accumulator is the left operand */
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, dst_buf, dst_off, dst_buf,
                                      dst_off, count, last | TUTTI_STEP_SWAP);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}
