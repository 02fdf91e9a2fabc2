/*
 * reduce_scatterv_direct.c - reduce-scatter of small blocks of any size: rank r sends block q
 * straight to rank q, then reduces the n contributions to its own block in rank order, so every
 * element is combined in the same order as by reduce_scatter_direct.c. One hop. Applies when
 * every block fits one slot; an empty block is a token, received like data.
 */
#include "coll/coll.h"
#include "exec/op.h"

#include <stdint.h>

/* Reduce the contributions to this rank's block (cnt elements, own at (own, own_off)) into the
 * output in rank order; received ones are tokens when the block is empty. */
static int chain(struct tutti_plan *plan, const struct tutti_plan_params *pp, uint32_t own,
                 size_t own_off, size_t cnt)
{
    int n = pp->nranks, r = pp->rank;
    for (int q = 0; q < n; q++) {
        int last = q == n - 1 ? TUTTI_STEP_FINAL : 0, rc;
        if (q == r && q == 0) {
            rc = tutti__coll_copy(plan, own, own_off, TUTTI_BUF_RECV, 0, cnt);
        } else if (q == r) {
            rc = tutti__plan_add_step(plan, TUTTI_STEP_REDUCE, own, own_off, TUTTI_BUF_RECV, 0, cnt,
                                      last);
        } else if (q == 0) {
            tutti__plan_set_peers(plan, -1, q);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, 0,
                                      cnt, TUTTI_STEP_TOKEN);
        } else {
            tutti__plan_set_peers(plan, -1, q);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_RECV, 0,
                                      TUTTI_BUF_RECV, 0, cnt,
                                      last | TUTTI_STEP_SWAP | TUTTI_STEP_TOKEN);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__reduce_scatterv_direct(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp, struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    if (tutti__blk_calls(plan, op, pp) != 0 || tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        return -1;
    }
    size_t own_off = 0, at = 0, cnt = op->v->rcounts[r];
    for (int q = 0; q < n; q++) {
        own_off = q == r ? at : own_off;
        at += op->v->rcounts[q];
    }
    /* In place, rank 0's contribution lands on this rank's input block before it is added. */
    int overwritten = r > 0 && cnt > 0 &&
                      tutti__coll_same_place(plan, TUTTI_BUF_SEND, own_off, TUTTI_BUF_RECV, 0);
    tutti__blk_use(plan, pp, r, 0);
    uint32_t own = tutti__direct_keep_own(plan, TUTTI_BUF_SEND, own_off, cnt, overwritten);
    if (own == UINT32_MAX) {
        return -1;
    }
    for (int q = 0; q < n; q++) { /* block q to rank q, the next rank first */
        int to = (r + 1 + q) % n;
        size_t off = 0;
        for (int j = 0; j < to; j++) {
            off += op->v->rcounts[j];
        }
        if (to == r) {
            continue;
        }
        tutti__plan_set_peers(plan, to, -1);
        tutti__blk_use(plan, pp, to, 0);
        if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0,
                                 op->v->rcounts[to], TUTTI_STEP_TOKEN) != 0) {
            return -1;
        }
    }
    tutti__blk_use(plan, pp, r, 0);
    return chain(plan, pp, own, overwritten ? 0 : own_off, cnt);
}
