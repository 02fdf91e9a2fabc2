/*
 * alltoallv_pairwise.c - all-to-all of blocks of any size (MPI_Alltoallv) as nranks-1
 * concurrent pairwise exchanges: one lane per peer and channel sends block j to rank j, another
 * receives rank j's block, and the copy of this rank's own block runs chunk by chunk between
 * the sends to rank r+1 (as alltoall_pairwise.c does for equal blocks). Lanes that only send or
 * only receive cannot wait on each other, so any block sizes and FIFO depths work. Each block is
 * split over channels by its own count (both ends compute the same split), and an empty block
 * sends a token (blocks.c): the bytes moved are exactly the counts, never a padded maximum.
 *
 * In place (sendbuf == recvbuf, MPI_IN_PLACE), block j is both what goes to rank j and where
 * rank j's block lands: its lane copies block j aside (plan scratch), then alternates a chunk
 * out and a chunk in, one chunk in flight each way.
 */
#include "coll/coll.h"
#include "exec/op.h"

/* One lane per peer and channel: keep block j aside, then swap it chunk by chunk. */
static int in_place(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                    struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t sl, rl;
    tutti__op_extents_of(op, r, n, &sl, &rl);
    if (tutti__plan_scratch(plan, rl) != 0) {
        return -1;
    }
    long tmp = tutti__plan_add_buf(plan, plan->scratch);
    if (tmp < 0) {
        return -1;
    }
    for (int ch = 0; ch < pp->nchannels; ch++) {
        for (int k = 1; k < n; k++) {
            int j = (r + k) % n;
            size_t cnt = tutti__op_rcount(op, j), at = tutti__op_rdispl(op, j);
            size_t nchunks = tutti__blk_chunks(cnt, pp, ch), choff, chlen;
            if (nchunks == 0) {
                continue;
            }
            tutti__coll_channel_share(cnt, pp->chunk_elems, pp->nchannels, ch, &choff, &chlen);
            if (tutti__plan_add_lane(plan, j, j, ch) < 0 ||
                tutti__plan_add_step(plan, TUTTI_STEP_COPY, TUTTI_BUF_RECV, at + choff,
                                     (uint32_t)tmp, at + choff, chlen, 0) != 0) {
                return -1;
            }
            for (size_t i = 0; i < nchunks; i++) {
                size_t off, len;
                (void)tutti__blk_chunk(cnt, pp, ch, i, &off, &len);
                tutti__blk_use(plan, pp, j, 0);
                if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, (uint32_t)tmp, at + off,
                                         TUTTI_BUF_NONE, 0, len,
                                         TUTTI_STEP_STABLE | TUTTI_STEP_TOKEN) != 0) {
                    return -1;
                }
                tutti__blk_use(plan, pp, j, 1);
                if (tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                         at + off, len, TUTTI_STEP_TOKEN) != 0) {
                    return -1;
                }
            }
        }
    }
    return 0; /* block r stays where it is */
}

/* The lane that sends block `to` on channel ch, with this rank's own block copied chunk by
 * chunk between its sends when `own` (the lane toward rank r+1). */
static int send_lane(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                     struct tutti_plan *plan, int to, int ch, int own)
{
    int r = pp->rank;
    size_t cnt = tutti__op_scount(op, to), at = tutti__op_sdispl(op, to);
    size_t mine = own ? tutti__op_scount(op, r) : 0, ochoff = 0, ochlen = 0;
    tutti__coll_channel_share(mine, pp->chunk_elems, pp->nchannels, ch, &ochoff, &ochlen);
    size_t nsend = tutti__blk_chunks(cnt, pp, ch);
    size_t ncopy = (ochlen + pp->chunk_elems - 1) / pp->chunk_elems;
    if (nsend == 0 && ncopy == 0) {
        return 0;
    }
    if (tutti__plan_add_lane(plan, to, -1, ch) < 0) {
        return -1;
    }
    tutti__blk_use(plan, pp, to, 0);
    for (size_t i = 0; i < nsend || i < ncopy; i++) {
        size_t off, len;
        if (i < nsend) {
            (void)tutti__blk_chunk(cnt, pp, ch, i, &off, &len);
            if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, at + off,
                                     TUTTI_BUF_NONE, 0, len,
                                     TUTTI_STEP_STABLE | TUTTI_STEP_TOKEN) != 0) {
                return -1;
            }
        }
        if (i < ncopy) {
            size_t lo = i * pp->chunk_elems;
            if (tutti__coll_copy(plan, TUTTI_BUF_SEND, tutti__op_sdispl(op, r) + ochoff + lo,
                                 TUTTI_BUF_RECV, tutti__op_rdispl(op, r) + ochoff + lo,
                                 tutti__chunk(ochlen - lo, pp)) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

int tutti__alltoallv_pairwise(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                              struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    if (tutti__blk_calls(plan, op, pp) != 0) {
        return -1;
    }
    if (n > 1 && op->sendbuf == op->recvbuf && op->sendbuf != NULL) {
        return in_place(op, pp, plan);
    }
    for (int ch = 0; ch < pp->nchannels; ch++) {
        if (n == 1) {
            if (tutti__blk_copy_lane(plan, pp, tutti__op_sdispl(op, r), tutti__op_rdispl(op, r),
                                     tutti__op_scount(op, r), ch) != 0) {
                return -1;
            }
            continue;
        }
        for (int k = 1; k < n; k++) {
            int to = (r + k) % n, from = tutti__mod(r - k, n);
            if (send_lane(op, pp, plan, to, ch, k == 1) != 0) {
                return -1;
            }
            if (tutti__blk_lane(plan, pp, TUTTI_STEP_RECV, from, from, TUTTI_BUF_RECV,
                                tutti__op_rdispl(op, from), tutti__op_rcount(op, from), ch,
                                0) != 0) {
                return -1;
            }
        }
    }
    return 0;
}
