/*
 * gather_direct.c - gather and gatherv: every rank sends its block straight to the root, which
 * receives the blocks concurrently (a lane per rank and channel) into place and copies its own
 * unless in place. Blocks larger than a slot go in chunks, split over channels by their own
 * count; an empty block is a token (blocks.c), so a root that expects data from a rank that
 * sends none is told on the first frame, naming both counts.
 */
#include "coll/coll.h"
#include "exec/op.h"

int tutti__gather_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank, root = op->root;
    if (tutti__blk_calls(plan, op, pp) != 0) {
        return -1;
    }
    /* The root takes every rank's block (a gatherv's leaf knows only its own: it counts the
     * others as large). */
    plan->recv_load = r != root ? n : 1;
    for (int ch = 0; ch < pp->nchannels; ch++) {
        if (r != root) {
            if (tutti__blk_lane(plan, pp, TUTTI_STEP_SEND, root, r, TUTTI_BUF_SEND, 0, op->count,
                                ch, TUTTI_STEP_STABLE) != 0) {
                return -1;
            }
            continue;
        }
        if (tutti__blk_copy_lane(plan, pp, 0, tutti__op_rdispl(op, r), op->count, ch) != 0) {
            return -1;
        }
        for (int k = 1; k < n; k++) {
            int q = (r + k) % n;
            if (tutti__blk_lane(plan, pp, TUTTI_STEP_RECV, q, q, TUTTI_BUF_RECV,
                                tutti__op_rdispl(op, q), tutti__op_rcount(op, q), ch, 0) != 0) {
                return -1;
            }
        }
    }
    return 0;
}
