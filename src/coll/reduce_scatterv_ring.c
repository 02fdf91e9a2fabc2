/*
 * reduce_scatterv_ring.c - ring reduce-scatter of blocks of any size. Block b (recvcounts[b]
 * elements, at the sum of the counts before b in every rank's input) ends at rank b: rank r
 * starts block r-1 with its own contribution and at step s forwards block r-s-1 with its
 * contribution added, so the last step completes block r at rank r (reduce_scatter_ring.c with
 * a count per block). The blocks advance in rounds, one chunk of each per round, both ends
 * skipping a block with fewer chunks alike (the counts are the same on every rank, which each
 * frame's digest checks); an empty block travels as a token in round 0.
 */
#include "coll/coll.h"
#include "exec/op.h"

#include <stdlib.h>

/* Round i of channel ch at ring position pos; off[b]: block b's offset in the input. */
static int round_steps(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan, const size_t *off, int pos, int ch, size_t i)
{
    int n = pp->nranks;
    for (int s = 0; s < n; s++) {
        int b = tutti__ring_rank(pp, pos - s - 1); /* s == n - 1: this rank's own block */
        size_t cnt = op->v->rcounts[b], co, len;
        if (!tutti__blk_chunk(cnt, pp, ch, i, &co, &len)) {
            continue;
        }
        tutti__blk_use(plan, pp, b, 0);
        int rc;
        if (s == 0) {
            rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off[b] + co,
                                      TUTTI_BUF_NONE, 0, len, TUTTI_STEP_TOKEN);
        } else if (s < n - 1) {
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND,
                                      off[b] + co, TUTTI_BUF_NONE, 0, len, TUTTI_STEP_TOKEN);
        } else {
            rc =
                tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off[b] + co,
                                     TUTTI_BUF_RECV, co, len, TUTTI_STEP_FINAL | TUTTI_STEP_TOKEN);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

/* Channel ch's lane: its rounds, or on one rank the copy of the block. */
static int channel(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                   struct tutti_plan *plan, const size_t *off, int ch)
{
    int n = pp->nranks, r = pp->rank, pos = tutti__ring_pos(pp, r);
    if (n == 1) {
        size_t co, len;
        tutti__coll_channel_share(op->v->rcounts[r], pp->chunk_elems, pp->nchannels, ch, &co, &len);
        return len == 0 ? 0
               : (tutti__plan_add_lane(plan, -1, -1, ch) < 0 ||
                  tutti__coll_copy(plan, TUTTI_BUF_SEND, off[r] + co, TUTTI_BUF_RECV, co, len) != 0)
                   ? -1
                   : 0;
    }
    size_t nr = 0;
    for (int j = 0; j < n; j++) {
        size_t c = tutti__blk_chunks(op->v->rcounts[j], pp, ch);
        nr = c > nr ? c : nr;
    }
    if (nr == 0) {
        return 0;
    }
    if (tutti__plan_add_lane(plan, tutti__ring_rank(pp, pos + 1), tutti__ring_rank(pp, pos - 1),
                             ch) < 0) {
        return -1;
    }
    for (size_t i = 0; i < nr; i++) {
        if (round_steps(op, pp, plan, off, pos, ch, i) != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__reduce_scatterv_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                                struct tutti_plan *plan)
{
    int n = pp->nranks;
    plan->divisor = (op->op == TUTTI_AVG) ? n : 1;
    size_t *off = malloc((size_t)n * sizeof(*off));
    if (off == NULL || tutti__blk_calls(plan, op, pp) != 0) {
        free(off);
        return -1;
    }
    for (int j = 0; j < n; j++) {
        off[j] = j == 0 ? 0 : off[j - 1] + op->v->rcounts[j - 1];
    }
    int rc = 0;
    for (int ch = 0; ch < pp->nchannels && rc == 0; ch++) {
        rc = channel(op, pp, plan, off, ch);
    }
    free(off);
    return rc;
}
