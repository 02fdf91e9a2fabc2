/*
 * reduce_direct.c - reduce for small messages: every rank sends its buffer to the root, which
 * reduces the n contributions in rank order. One hop. Applies when the buffer fits one slot.
 */
#include "coll/coll.h"

#include <stdint.h>

int tutti__reduce_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    if (op->count == 0 || tutti__plan_add_lane(plan, r == op->root ? -1 : op->root, -1, 0) < 0) {
        return op->count == 0 ? 0 : -1;
    }
    if (r != op->root) {
        return tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, 0, TUTTI_BUF_NONE, 0,
                                    op->count, 0);
    }
    int overwritten = r > 0 && tutti__coll_same_place(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0);
    uint32_t own = tutti__direct_keep_own(plan, TUTTI_BUF_SEND, 0, op->count, overwritten);
    if (own == UINT32_MAX) {
        return -1;
    }
    return tutti__direct_reduce_chain(plan, pp, own, 0, TUTTI_BUF_RECV, 0, op->count);
}
