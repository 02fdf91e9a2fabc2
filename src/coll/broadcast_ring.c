/*
 * broadcast_ring.c - pipelined chain broadcast: root -> root+1 -> ... -> root-1, chunk by chunk,
 * the data split over channels. Each middle rank copies a chunk out of the slot it received into
 * its buffer and into the slot it forwards in one pass; the root, out of place, likewise copies
 * each chunk of its input to its output while sending it (one read of the input).
 */
#include "coll/coll.h"

struct bcast_ring {
    int pos, next;
};

static int bcast_chunk(struct tutti_plan *plan, size_t off, size_t len, const void *arg)
{
    const struct bcast_ring *c = arg;
    if (c->pos == 0) {
        return tutti__coll_send_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, off, len);
    }
    if (c->next >= 0) {
        return tutti__plan_add_step(plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0,
                                    TUTTI_BUF_RECV, off, len, TUTTI_STEP_STABLE);
    }
    return tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, off, len,
                                0);
}

int tutti__broadcast_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, me = tutti__ring_pos(pp, pp->rank);
    int pos =
        tutti__mod(me - tutti__ring_pos(pp, op->root), n); /* 0 at the root, n-1 at the tail */
    struct bcast_ring c = {pos, pos < n - 1 ? tutti__ring_rank(pp, me + 1) : -1};
    struct tutti_ring_walk w = {
        op->count,   pp->chunk_elems,        c.next, pos > 0 ? tutti__ring_rank(pp, me - 1) : -1,
        bcast_chunk, tutti__ring_copy_alone, &c};
    return tutti__ring_walk(plan, pp, &w);
}
