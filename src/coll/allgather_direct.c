/*
 * allgather_direct.c - all-gather for small blocks: every rank sends its block to every other
 * rank and stores the n-1 blocks it receives, one hop. Applies when a block fits one slot.
 */
#include "coll/coll.h"

int tutti__allgather_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t cnt = op->count;
    if (cnt == 0 || tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        return cnt == 0 ? 0 : -1;
    }
    if (tutti__direct_send_all(plan, pp, TUTTI_BUF_SEND, NULL, NULL, cnt) != 0 ||
        tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, (size_t)r * cnt, cnt) != 0) {
        return -1;
    }
    for (int k = 1; k < n; k++) {
        int q = (r + n - k) % n; /* the order peers sent in: the previous rank first */
        tutti__plan_set_peers(plan, -1, q);
        if (tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                 (size_t)q * cnt, cnt, 0) != 0) {
            return -1;
        }
    }
    return 0;
}
