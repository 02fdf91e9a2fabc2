/*
 * allgatherv_ring.c - ring all-gather of blocks of any size (MPI_Allgatherv). Block b comes
 * from rank b and travels the ring: each rank sends its own block (copying it into place in
 * the same pass unless in place), then receives and forwards the block n-2 hops behind it, and
 * keeps the last. As in allgather_ring.c the blocks advance in rounds, one chunk of each per
 * round, so no rank ever has more than one chunk in flight toward its successor per round
 * whatever the sizes; a block with fewer chunks than the round number is skipped by the sender
 * and the receiver alike (both know every count: they are the same on every rank, which each
 * frame's digest checks), and an empty block travels as a token in round 0.
 *
 * Two ranks over shared memory take allgather_ring.c's two lanes per channel instead: one sends
 * this rank's block, the other takes the peer's, so a receive finds several frames posted.
 */
#include "coll/coll.h"
#include "exec/op.h"

/* The most frames any block has on channel ch: the number of rounds. */
static size_t rounds(const struct tutti_op_desc *op, const struct tutti_plan_params *pp, int ch)
{
    size_t most = 0;
    for (int j = 0; j < pp->nranks; j++) {
        size_t c = tutti__blk_chunks(tutti__op_rcount(op, j), pp, ch);
        most = c > most ? c : most;
    }
    return most;
}

/* Round i of channel ch at ring position pos: this rank's steps for chunk i of every block. */
static int round_steps(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan, int pos, int ch, size_t i)
{
    int n = pp->nranks;
    for (int s = 0; s < n; s++) {
        int b = tutti__ring_rank(pp, pos - s); /* the block this step handles */
        size_t cnt = tutti__op_rcount(op, b), off, len;
        if (!tutti__blk_chunk(cnt, pp, ch, i, &off, &len)) {
            continue;
        }
        size_t at = tutti__op_rdispl(op, b) + off;
        tutti__blk_use(plan, pp, b, 0);
        int rc;
        if (s == 0) { /* own block: sent from the input, copied into place on the way */
            rc = len == 0
                     ? tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, 0,
                                            TUTTI_BUF_NONE, 0, 0, TUTTI_STEP_TOKEN)
                     : tutti__coll_send_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, at, len);
        } else if (s < n - 1) {
            rc =
                tutti__plan_add_step(plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0,
                                     TUTTI_BUF_RECV, at, len, TUTTI_STEP_STABLE | TUTTI_STEP_TOKEN);
        } else {
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, at,
                                      len, TUTTI_STEP_TOKEN);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

/* The pair's send lane on channel ch: this rank's block, copied into place on the way. */
static int pair_give(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                     struct tutti_plan *plan, int ch)
{
    int r = pp->rank;
    size_t cnt = tutti__op_rcount(op, r), nf = tutti__blk_chunks(cnt, pp, ch);
    if (nf == 0) {
        return 0;
    }
    tutti__blk_use(plan, pp, r, 0);
    if (tutti__plan_add_lane(plan, 1 - r, -1, ch) < 0) {
        return -1;
    }
    for (size_t i = 0; i < nf; i++) {
        size_t off, len;
        (void)tutti__blk_chunk(cnt, pp, ch, i, &off, &len);
        int rc = len == 0 ? tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, 0,
                                                 TUTTI_BUF_NONE, 0, 0, TUTTI_STEP_TOKEN)
                          : tutti__coll_send_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV,
                                                  tutti__op_rdispl(op, r) + off, len);
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__allgatherv_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank, pos = tutti__ring_pos(pp, r);
    if (tutti__blk_calls(plan, op, pp) != 0) {
        return -1;
    }
    for (int ch = 0; ch < pp->nchannels; ch++) {
        if (n == 2 && tutti__coll_by_shm(pp, 1 - r)) {
            if (pair_give(op, pp, plan, ch) != 0 ||
                tutti__blk_lane(plan, pp, TUTTI_STEP_RECV, 1 - r, 1 - r, TUTTI_BUF_RECV,
                                tutti__op_rdispl(op, 1 - r), tutti__op_rcount(op, 1 - r), ch,
                                0) != 0) {
                return -1;
            }
            continue;
        }
        if (n == 1) {
            if (tutti__blk_copy_lane(plan, pp, 0, tutti__op_rdispl(op, r), op->count, ch) != 0) {
                return -1;
            }
            continue;
        }
        size_t nr = rounds(op, pp, ch);
        if (nr == 0) {
            continue;
        }
        if (tutti__plan_add_lane(plan, tutti__ring_rank(pp, pos + 1), tutti__ring_rank(pp, pos - 1),
                                 ch) < 0) {
            return -1;
        }
        for (size_t i = 0; i < nr; i++) {
            if (round_steps(op, pp, plan, pos, ch, i) != 0) {
                return -1;
            }
        }
    }
    return 0;
}
