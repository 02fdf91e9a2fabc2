/*
 * allreduce_rd.c - recursive doubling all-reduce, for small and mid-sized messages: in round k
 * each rank swaps its whole partial result with the rank whose virtual rank differs in bit k
 * and reduces, so after log2(p) rounds every rank holds the result: log2(p) hops instead of the
 * ring's 2(n - 1), at the price of sending the whole message every round. A number of ranks
 * that is not a power of two is folded first (pow2.c): two more hops for the ranks that sit out.
 *
 * Both partners reduce op(lower rank's half of the group, upper rank's), so every rank computes
 * the same bits. The data is split over channels, a lane each.
 */
#include "coll/coll.h"

static int rd_lane(const struct tutti_plan_params *pp, struct tutti_plan *plan,
                   const struct tutti_fold *f, size_t base, size_t len)
{
    uint32_t acc;
    if (tutti__pow2_fold_in(plan, pp, f, base, len, &acc) != 0) {
        return -1;
    }
    for (int bit = 1; f->vrank >= 0 && bit < f->p; bit <<= 1) {
        int vpeer = f->vrank ^ bit;
        struct tutti_exchange x = {
            .send_peer = tutti__fold_real(pp->nranks, vpeer),
            .recv_peer = tutti__fold_real(pp->nranks, vpeer),
            .send_buf = acc,
            .send_off = base,
            .send_len = len,
            .send_flags = tutti__coll_input_stable(plan, acc, base) ? TUTTI_STEP_STABLE : 0,
            .reduce = 1,
            .acc_buf = acc,
            .recv_buf = TUTTI_BUF_RECV,
            .recv_off = base,
            .recv_len = len,
            .recv_flags =
                (vpeer > f->vrank ? TUTTI_STEP_SWAP : 0) | (bit * 2 == f->p ? TUTTI_STEP_FINAL : 0),
        };
        if (tutti__coll_exchange(plan, pp, &x) != 0) {
            return -1;
        }
        acc = TUTTI_BUF_RECV;
    }
    return tutti__pow2_fold_out(plan, pp, f, base, len);
}

int tutti__allreduce_rd(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                        struct tutti_plan *plan)
{
    return tutti__pow2_build(op, pp, plan, rd_lane);
}
