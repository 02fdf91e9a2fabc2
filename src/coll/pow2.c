/*
 * pow2.c - what recursive doubling and Rabenseifner's all-reduce share: the fold that lets a
 * number of ranks that is not a power of two run them (MPICH's), and the pairwise exchange one
 * round is made of.
 *
 * Fold: with p the largest power of two <= n and rem = n - p, ranks 0..2*rem-1 pair up; the
 * even rank of each pair sends its input to the odd one, which reduces (even first, so the
 * order is the same everywhere) and takes part as virtual rank r/2; ranks >= 2*rem take part as
 * r - rem. At the end each odd rank of a pair sends the result back.
 *
 * The exchange (one range out to a peer, one in from a peer, chunk by chunk) is also the round
 * of the Bruck algorithms.
 */
#include "coll/coll.h"

void tutti__fold(int n, int rank, struct tutti_fold *f_p)
{
    int p = 1;
    while (p * 2 <= n) {
        p *= 2;
    }
    int rem = n - p;
    f_p->p = p;
    if (rank < 2 * rem) {
        f_p->vrank = rank % 2 == 0 ? -1 : rank / 2;
        f_p->partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    } else {
        f_p->vrank = rank - rem;
        f_p->partner = -1;
    }
}

int tutti__fold_real(int n, int v)
{
    struct tutti_fold f;
    tutti__fold(n, 0, &f);
    int rem = n - f.p;
    return v < rem ? 2 * v + 1 : v + rem;
}

int tutti__pow2_fold_in(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                        const struct tutti_fold *f, size_t base, size_t len, uint32_t *acc_p)
{
    *acc_p = TUTTI_BUF_SEND;
    if (f->partner < 0) {
        return 0;
    }
    for (size_t lo = 0; lo < len; lo += pp->chunk_elems) {
        size_t off = base + lo, n = tutti__chunk(len - lo, pp);
        int rc;
        if (f->vrank < 0) { /* sits out: hand the input over */
            tutti__plan_set_peers(plan, f->partner, -1);
            rc = tutti__plan_add_step(
                plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0, n,
                tutti__coll_input_stable(plan, TUTTI_BUF_SEND, off) ? TUTTI_STEP_STABLE : 0);
        } else { /* op(partner's, own): the lower rank's first */
            tutti__plan_set_peers(plan, -1, f->partner);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off,
                                      TUTTI_BUF_RECV, off, n, 0);
        }
        if (rc != 0) {
            return -1;
        }
    }
    *acc_p = TUTTI_BUF_RECV;
    return 0;
}

int tutti__pow2_fold_out(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                         const struct tutti_fold *f, size_t base, size_t len)
{
    if (f->partner < 0) {
        return 0;
    }
    for (size_t lo = 0; lo < len; lo += pp->chunk_elems) {
        size_t off = base + lo, n = tutti__chunk(len - lo, pp);
        int rc;
        if (f->vrank < 0) {
            tutti__plan_set_peers(plan, -1, f->partner);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, off,
                                      n, 0);
        } else {
            tutti__plan_set_peers(plan, f->partner, -1);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_RECV, off, TUTTI_BUF_NONE, 0,
                                      n, TUTTI_STEP_STABLE);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__coll_exchange(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                         const struct tutti_exchange *x)
{
    size_t nsend = (x->send_len + pp->chunk_elems - 1) / pp->chunk_elems;
    size_t nrecv = (x->recv_len + pp->chunk_elems - 1) / pp->chunk_elems;
    for (size_t i = 0; i < nsend || i < nrecv; i++) {
        size_t lo = i * pp->chunk_elems;
        tutti__plan_set_peers(plan, x->send_peer, -1);
        if (i < nsend && tutti__plan_add_step(plan, TUTTI_STEP_SEND, x->send_buf, x->send_off + lo,
                                              TUTTI_BUF_NONE, 0, tutti__chunk(x->send_len - lo, pp),
                                              x->send_flags) != 0) {
            return -1;
        }
        if (i >= nrecv) {
            continue;
        }
        size_t off = x->recv_off + lo, n = tutti__chunk(x->recv_len - lo, pp);
        tutti__plan_set_peers(plan, -1, x->recv_peer);
        int rc = x->reduce ? tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, x->acc_buf,
                                                  off, x->recv_buf, off, n, x->recv_flags)
                           : tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0,
                                                  x->recv_buf, off, n, 0);
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__pow2_build(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan, tutti_pow2_lane_fn lane)
{
    plan->divisor = (op->op == TUTTI_AVG) ? pp->nranks : 1;
    if (pp->nranks == 1) {
        return tutti__plan_add_lane(plan, -1, -1, 0) < 0
                   ? -1
                   : tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0, op->count);
    }
    struct tutti_fold f;
    tutti__fold(pp->nranks, pp->rank, &f);
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t base, len;
        int open = tutti__coll_open_lane(plan, op->count, pp, ch, -1, -1, &base, &len);
        if (open < 0 || (open > 0 && lane(pp, plan, &f, base, len) != 0)) {
            return -1;
        }
    }
    return 0;
}

int tutti__bruck_start(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan, size_t own_off, size_t own_len,
                       size_t scratch_elems, uint32_t *tmp_p)
{
    if (tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        return -1;
    }
    if (pp->nranks == 1 || op->count == 0) {
        return tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, own_off, own_len) != 0 ? -1
                                                                                                : 0;
    }
    long idx;
    if (tutti__plan_scratch(plan, scratch_elems * tutti_datatype_size(op->dt)) != 0 ||
        (idx = tutti__plan_add_buf(plan, plan->scratch)) < 0) {
        return -1;
    }
    *tmp_p = (uint32_t)idx;
    return 1;
}
