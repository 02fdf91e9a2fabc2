/*
 * allreduce_rabenseifner.c - Rabenseifner's all-reduce: a reduce-scatter by recursive halving
 * (round s: keep half of the current range, send the other half to the partner whose virtual
 * rank differs in bit log2(p) - 1 - s, reduce what it sends of the kept half), then an
 * all-gather by recursive doubling that retraces the rounds backwards. Each rank sends about
 * 2 * (p - 1) / p of the message in 2 log2(p) rounds: the ring's volume with a logarithmic number
 * of hops. Non-powers of two are folded first (pow2.c).
 *
 * Each element is reduced to the end at one rank and copied to the others, so every rank gets
 * the same bits. The data is split over channels, a lane each.
 */
#include "coll/coll.h"

#define MAX_ROUNDS 31

static int rab_lane(const struct tutti_plan_params *pp, struct tutti_plan *plan,
                    const struct tutti_fold *f, size_t base, size_t len)
{
    uint32_t acc;
    if (tutti__pow2_fold_in(plan, pp, f, base, len, &acc) != 0) {
        return -1;
    }
    size_t lo = base, hi = base + len;
    size_t keep_lo[MAX_ROUNDS], keep_hi[MAX_ROUNDS], give_lo[MAX_ROUNDS], give_hi[MAX_ROUNDS];
    int peer[MAX_ROUNDS], rounds = 0;
    for (int dist = f->p / 2; f->vrank >= 0 && dist >= 1; dist /= 2, rounds++) {
        int r = rounds, lower = (f->vrank & dist) == 0;
        size_t mid = lo + (hi - lo) / 2;
        peer[r] = tutti__fold_real(pp->nranks, f->vrank ^ dist);
        keep_lo[r] = lower ? lo : mid;
        keep_hi[r] = lower ? mid : hi;
        give_lo[r] = lower ? mid : lo;
        give_hi[r] = lower ? hi : mid;
        struct tutti_exchange x = {
            .send_peer = peer[r],
            .recv_peer = peer[r],
            .send_buf = acc,
            .send_off = give_lo[r],
            .send_len = give_hi[r] - give_lo[r],
            .send_flags = tutti__coll_input_stable(plan, acc, give_lo[r]) ? TUTTI_STEP_STABLE : 0,
            .reduce = 1,
            .acc_buf = acc,
            .recv_buf = TUTTI_BUF_RECV,
            .recv_off = keep_lo[r],
            .recv_len = keep_hi[r] - keep_lo[r],
            .recv_flags = (lower ? TUTTI_STEP_SWAP : 0) | (dist == 1 ? TUTTI_STEP_FINAL : 0),
        };
        if (tutti__coll_exchange(plan, pp, &x) != 0) {
            return -1;
        }
        acc = TUTTI_BUF_RECV;
        lo = keep_lo[r];
        hi = keep_hi[r];
    }
    /* All-gather: the rounds backwards; what this rank holds is final from here on. */
    for (int r = rounds - 1; r >= 0; r--) {
        struct tutti_exchange x = {
            .send_peer = peer[r],
            .recv_peer = peer[r],
            .send_buf = TUTTI_BUF_RECV,
            .send_off = keep_lo[r],
            .send_len = keep_hi[r] - keep_lo[r],
            .send_flags = TUTTI_STEP_STABLE,
            .reduce = 0,
            .recv_buf = TUTTI_BUF_RECV,
            .recv_off = give_lo[r],
            .recv_len = give_hi[r] - give_lo[r],
        };
        if (tutti__coll_exchange(plan, pp, &x) != 0) {
            return -1;
        }
    }
    return tutti__pow2_fold_out(plan, pp, f, base, len);
}

int tutti__allreduce_rabenseifner(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp, struct tutti_plan *plan)
{
    return tutti__pow2_build(op, pp, plan, rab_lane);
}
