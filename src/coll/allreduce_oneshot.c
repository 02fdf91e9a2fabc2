/*
 * allreduce_oneshot.c - one-shot all-reduce for small messages: every rank sends its whole
 * buffer to every other rank, then reduces all n contributions in rank order. One hop instead
 * of the ring's 2(n-1); every rank computes the same sum in the same order, so results stay
 * bitwise identical. Applies when the buffer fits one slot (see algos.c).
 */
#include "coll/coll.h"

#include <stdint.h>

int tutti__allreduce_oneshot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    if (op->count == 0 || tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        return op->count == 0 ? 0 : -1;
    }
    /* In place, rank 0's message lands on our buffer before we add ours: keep ours aside. */
    int overwritten = r > 0 && tutti__coll_same_place(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0);
    uint32_t own = tutti__direct_keep_own(plan, TUTTI_BUF_SEND, 0, op->count, overwritten);
    if (own == UINT32_MAX ||
        tutti__direct_send_all(plan, pp, TUTTI_BUF_SEND, NULL, NULL, op->count) != 0) {
        return -1;
    }
    return tutti__direct_reduce_chain(plan, pp, own, 0, TUTTI_BUF_RECV, 0, op->count);
}
