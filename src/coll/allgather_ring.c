/*
 * allgather_ring.c - ring all-gather. Block b (sendcount elements) comes from rank b. Rank r
 * sends its own block (copying it into place in the same pass unless the call is in place),
 * then at step s receives block r-s, stores it and forwards it (one pass over the slot), and
 * finally just stores block r+1.
 */
#include "coll/coll.h"

struct allgather_ring {
    const struct tutti_plan_params *pp;
    int n, r, pos;
    size_t sc;
};

static int allgather_chunk(struct tutti_plan *plan, size_t in, size_t len, const void *arg)
{
    const struct allgather_ring *c = arg;
    const struct tutti_plan_params *pp = c->pp;
    int rc = tutti__coll_send_copy(plan, TUTTI_BUF_SEND, in, TUTTI_BUF_RECV,
                                   (size_t)c->r * c->sc + in, len);
    for (int s = 1; s <= c->n - 2; s++) {
        rc |= tutti__plan_add_step(
            plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
            (size_t)tutti__ring_rank(pp, c->pos - s) * c->sc + in, len, TUTTI_STEP_STABLE);
    }
    rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                               (size_t)tutti__ring_rank(pp, c->pos + 1) * c->sc + in, len, 0);
    return rc;
}

static int allgather_alone(struct tutti_plan *plan, size_t off, size_t len, const void *arg)
{
    const struct allgather_ring *c = arg;
    return tutti__coll_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, (size_t)c->r * c->sc + off,
                            len);
}

int tutti__allgather_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, pos = tutti__ring_pos(pp, pp->rank);
    struct allgather_ring c = {pp, n, pp->rank, pos, op->count};
    struct tutti_ring_walk w =
        tutti__ring_around(pp, op->count, allgather_chunk, allgather_alone, &c);
    return tutti__ring_walk(plan, pp, &w);
}
