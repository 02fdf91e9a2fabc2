/*
 * scatter_direct.c - scatter and scatterv: the root sends each rank its block directly (a lane
 * per rank and channel, so the blocks go out concurrently) and copies its own unless in place;
 * every other rank receives its one block. Blocks larger than a slot go in chunks, split over
 * channels by their own count; an empty block is a token (blocks.c).
 */
#include "coll/coll.h"
#include "exec/op.h"

int tutti__scatter_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank, root = op->root;
    if (tutti__blk_calls(plan, op, pp) != 0) {
        return -1;
    }
    for (int ch = 0; ch < pp->nchannels; ch++) {
        if (r != root) {
            if (tutti__blk_lane(plan, pp, TUTTI_STEP_RECV, root, r, TUTTI_BUF_RECV, 0, op->count,
                                ch, 0) != 0) {
                return -1;
            }
            continue;
        }
        for (int k = 1; k < n; k++) {
            int q = (r + k) % n;
            if (tutti__blk_lane(plan, pp, TUTTI_STEP_SEND, q, q, TUTTI_BUF_SEND,
                                tutti__op_sdispl(op, q), tutti__op_scount(op, q), ch,
                                TUTTI_STEP_STABLE) != 0) {
                return -1;
            }
        }
        if (tutti__blk_copy_lane(plan, pp, tutti__op_sdispl(op, r), 0, op->count, ch) != 0) {
            return -1;
        }
    }
    return 0;
}
