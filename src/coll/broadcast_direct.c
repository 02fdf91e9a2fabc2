/*
 * broadcast_direct.c - broadcast for small messages: the root sends to every rank directly,
 * one hop, instead of passing the message down the chain. Applies when it fits one slot.
 */
#include "coll/coll.h"

int tutti__broadcast_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            struct tutti_plan *plan)
{
    if (op->count == 0 || tutti__plan_add_lane(plan, -1, op->root, 0) < 0) {
        return op->count == 0 ? 0 : -1;
    }
    if (pp->rank != op->root) {
        return tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, 0,
                                    op->count, 0);
    }
    if (tutti__direct_send_all(plan, pp, TUTTI_BUF_SEND, NULL, NULL, op->count) != 0) {
        return -1;
    }
    return tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0, op->count);
}
