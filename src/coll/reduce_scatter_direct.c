/*
 * reduce_scatter_direct.c - reduce-scatter for small blocks: rank r sends block q straight to
 * rank q, then reduces the n contributions to its own block in rank order. One hop. Applies
 * when a block fits one slot.
 */
#include "coll/coll.h"

#include <stdint.h>

static size_t block_of(int peer, const void *ctx)
{
    return (size_t)peer * *(const size_t *)ctx;
}

int tutti__reduce_scatter_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                                 struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t cnt = op->count;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    if (cnt == 0 || tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        return cnt == 0 ? 0 : -1;
    }
    size_t own_off = (size_t)r * cnt;
    int overwritten =
        r > 0 && tutti__coll_same_place(plan, TUTTI_BUF_SEND, own_off, TUTTI_BUF_RECV, 0);
    uint32_t own = tutti__direct_keep_own(plan, TUTTI_BUF_SEND, own_off, cnt, overwritten);
    if (own == UINT32_MAX ||
        tutti__direct_send_all(plan, pp, TUTTI_BUF_SEND, block_of, &cnt, cnt) != 0) {
        return -1;
    }
    return tutti__direct_reduce_chain(plan, pp, own, overwritten ? 0 : own_off, TUTTI_BUF_RECV, 0,
                                      cnt);
}
