/*
 * allgather_bruck.c - Bruck's all-gather, for small messages: ceil(log2 n) rounds instead of
 * the ring's n - 1. Rank r keeps the blocks in its own order in scratch memory (block j there is
 * rank r+j's); in the round at distance d it sends its first min(d, n - d) blocks to rank r - d
 * and appends as many from rank r + d, so every round is one message however many blocks it
 * carries. At the end the blocks are rotated into place in the output.
 *
 * Scratch memory: nranks * count elements. One lane (channel 0): the message is small.
 */
#include "coll/coll.h"

int tutti__allgather_bruck(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t c = op->count, total = (size_t)n * c;
    uint32_t tmp;
    int go = tutti__bruck_start(op, pp, plan, (size_t)r * c, c, total, &tmp);
    if (go <= 0) {
        return go;
    }
    if (tutti__plan_add_step(plan, TUTTI_STEP_COPY, TUTTI_BUF_SEND, 0, tmp, 0, c, 0) != 0) {
        return -1;
    }
    for (int d = 1; d < n; d *= 2) {
        size_t nb = (size_t)(d < n - d ? d : n - d);
        /* The blocks sent are complete and stay unchanged: they travel by reference. */
        struct tutti_exchange x = {
            .send_peer = tutti__mod(r - d, n),
            .recv_peer = (r + d) % n,
            .send_buf = tmp,
            .send_off = 0,
            .send_len = nb * c,
            .send_flags = TUTTI_STEP_STABLE,
            .recv_buf = tmp,
            .recv_off = (size_t)d * c,
            .recv_len = nb * c,
        };
        if (tutti__coll_exchange(plan, pp, &x) != 0) {
            return -1;
        }
    }
    /* Block j (rank r+j's) to its place: j < n-r in one run from block r, the rest from 0. */
    size_t head = (size_t)(n - r) * c;
    tutti__plan_set_peers(plan, -1, -1);
    if (tutti__plan_add_step(plan, TUTTI_STEP_COPY, tmp, 0, TUTTI_BUF_RECV, (size_t)r * c, head,
                             0) != 0 ||
        tutti__plan_add_step(plan, TUTTI_STEP_COPY, tmp, head, TUTTI_BUF_RECV, 0, total - head,
                             0) != 0) {
        return -1;
    }
    return 0;
}
