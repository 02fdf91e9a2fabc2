/*
 * blocks.c - what the schedules of gather, scatter and the variable-size collectives share:
 * their block calls (one fingerprint per block, so that each piece of data says whose block it
 * is and how long its sender thinks the block is) and the steps that move one channel's share
 * of a block, with a token frame for an empty block.
 *
 * Why tokens: ranks do not see each other's counts. A rank that sends nothing where its peer
 * expects data would leave the peer waiting until TUTTI_TIMEOUT; with a token for every empty
 * block, every pair that exchanges a block exchanges at least one frame, and a count one side
 * has wrong fails as TUTTI_ERR_MISMATCH on the first frame, naming both counts.
 */
#include "coll/coll.h"
#include "exec/op.h"

/* The block call of block j as this rank sees it. */
static struct tutti_op_desc block_call(const struct tutti_op_desc *op, int r, int j, int recv)
{
    struct tutti_op_desc c = *op;
    c.block = 1;
    c.fp_a = -1;
    c.fp_b = j;
    switch (op->coll) {
    case TUTTI_COLL_ALLTOALLV:
        c.count = recv ? tutti__op_rcount(op, j) : tutti__op_scount(op, j);
        c.fp_a = recv ? j : r;
        c.fp_b = recv ? r : j;
        break;
    case TUTTI_COLL_GATHER:
    case TUTTI_COLL_GATHERV:
        c.count = op->root == r ? tutti__op_rcount(op, j) : op->count;
        c.fp_a = op->root;
        break;
    case TUTTI_COLL_SCATTER:
    case TUTTI_COLL_SCATTERV:
        c.count = op->root == r ? tutti__op_scount(op, j) : op->count;
        c.fp_a = op->root;
        break;
    default: /* allgatherv, reduce_scatterv: the shared counts */
        c.count = tutti__op_rcount(op, j);
        break;
    }
    return c;
}

int tutti__blk_calls(struct tutti_plan *plan, const struct tutti_op_desc *op,
                     const struct tutti_plan_params *pp)
{
    int n = pp->nranks, r = pp->rank;
    int sides = op->coll == TUTTI_COLL_ALLTOALLV ? 2 : 1;
    for (int side = 0; side < sides; side++) {
        for (int j = 0; j < n; j++) {
            struct tutti_op_desc c = block_call(op, r, j, side);
            if (tutti__plan_add_call(plan, &c) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

void tutti__blk_use(struct tutti_plan *plan, const struct tutti_plan_params *pp, int j, int recv)
{
    plan->cur_call =
        (uint32_t)(j + (recv && plan->op.coll == TUTTI_COLL_ALLTOALLV ? pp->nranks : 0));
}

size_t tutti__blk_chunks(size_t count, const struct tutti_plan_params *pp, int ch)
{
    size_t off, len;
    tutti__coll_channel_share(count, pp->chunk_elems, pp->nchannels, ch, &off, &len);
    if (len == 0) {
        return ch == 0 ? 1 : 0; /* the token of an empty block goes on channel 0 */
    }
    return (len + pp->chunk_elems - 1) / pp->chunk_elems;
}

int tutti__blk_chunk(size_t count, const struct tutti_plan_params *pp, int ch, size_t i,
                     size_t *off_p, size_t *len_p)
{
    size_t off, len;
    tutti__coll_channel_share(count, pp->chunk_elems, pp->nchannels, ch, &off, &len);
    if (len == 0) {
        *off_p = 0;
        *len_p = 0;
        return ch == 0 && i == 0;
    }
    size_t lo = i * pp->chunk_elems;
    if (lo >= len) {
        return 0;
    }
    *off_p = off + lo;
    *len_p = tutti__chunk(len - lo, pp);
    return 1;
}

int tutti__blk_steps(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                     tutti_step_kind_t kind, uint32_t buf, size_t at, size_t count, int ch,
                     int flags)
{
    size_t n = tutti__blk_chunks(count, pp, ch);
    int sends = kind == TUTTI_STEP_SEND;
    for (size_t i = 0; i < n; i++) {
        size_t off, len;
        (void)tutti__blk_chunk(count, pp, ch, i, &off, &len);
        if (tutti__plan_add_step(plan, kind, sends ? buf : TUTTI_BUF_NONE, sends ? at + off : 0,
                                 sends ? TUTTI_BUF_NONE : buf, sends ? 0 : at + off, len,
                                 flags | TUTTI_STEP_TOKEN) != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__blk_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                    tutti_step_kind_t kind, int peer, int j, uint32_t buf, size_t at, size_t count,
                    int ch, int flags)
{
    int sends = kind == TUTTI_STEP_SEND;
    if (tutti__blk_chunks(count, pp, ch) == 0) {
        return 0;
    }
    tutti__blk_use(plan, pp, j, !sends);
    if (tutti__plan_add_lane(plan, sends ? peer : -1, sends ? -1 : peer, ch) < 0) {
        return -1;
    }
    return tutti__blk_steps(plan, pp, kind, buf, at, count, ch, flags);
}

int tutti__blk_copy_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                         size_t src_off, size_t dst_off, size_t count, int ch)
{
    size_t off, len;
    tutti__coll_channel_share(count, pp->chunk_elems, pp->nchannels, ch, &off, &len);
    if (len == 0 || tutti__coll_same_place(plan, TUTTI_BUF_SEND, src_off + off, TUTTI_BUF_RECV,
                                           dst_off + off)) {
        return 0;
    }
    if (tutti__plan_add_lane(plan, -1, -1, ch) < 0) {
        return -1;
    }
    return tutti__coll_copy(plan, TUTTI_BUF_SEND, src_off + off, TUTTI_BUF_RECV, dst_off + off,
                            len);
}
