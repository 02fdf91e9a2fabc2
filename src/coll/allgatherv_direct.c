/*
 * allgatherv_direct.c - all-gather of blocks of any size for small blocks: every rank sends its
 * block to every other rank and stores the n-1 blocks it receives, one hop (allgather_direct.c
 * with a count per block). Applies when every block fits one slot; an empty block is a token.
 */
#include "coll/coll.h"
#include "exec/op.h"

int tutti__allgatherv_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    if (tutti__blk_calls(plan, op, pp) != 0 || tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        return -1;
    }
    tutti__blk_use(plan, pp, r, 0);
    for (int k = 1; k < n; k++) {
        tutti__plan_set_peers(plan, (r + k) % n, -1); /* the next rank first: spreads the load */
        if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, 0, TUTTI_BUF_NONE, 0,
                                 op->count, TUTTI_STEP_TOKEN) != 0) {
            return -1;
        }
    }
    if (tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, tutti__op_rdispl(op, r),
                         op->count) != 0) {
        return -1;
    }
    for (int k = 1; k < n; k++) {
        int q = (r + n - k) % n; /* the order peers sent in: the previous rank first */
        tutti__plan_set_peers(plan, -1, q);
        tutti__blk_use(plan, pp, q, 0);
        if (tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                 tutti__op_rdispl(op, q), tutti__op_rcount(op, q),
                                 TUTTI_STEP_TOKEN) != 0) {
            return -1;
        }
    }
    return 0;
}
