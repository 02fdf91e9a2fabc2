/*
 * allgather_ring.c - ring all-gather. Block b (sendcount elements) comes from rank b. Rank r
 * sends its own block (copying it into place in the same pass unless the call is in place),
 * then at step s receives block r-s, stores it and forwards it (one pass over the slot), and
 * finally just stores block r+1.
 *
 * Two ranks over shared memory forward nothing: a lane sends this rank's block and another takes
 * the peer's, so the sends run ahead of the receives as far as the slots allow and a receive finds
 * several of the peer's frames posted, which shm reads in one system call (the ring form reads
 * one frame a call, in step with its own sends). Measured 2026-12-02
 * (perf/results/2026-12-02-allgather-pair.md): 0.90-0.95 of the ring's time at 512 KiB-2 MiB
 * over shm, the same from 4 MiB; over TCP the prototype took 1.01-1.21 of the ring's time, so
 * TCP and verbs keep the ring.
 */
#include "coll/coll.h"

struct allgather_ring {
    const struct tutti_plan_params *pp;
    int n, r, pos;
    size_t sc;
};

/* This rank's own chunk: sent, and copied into place in the same pass (the pair's send lane). */
static int allgather_give(struct tutti_plan *plan, size_t in, size_t len, const void *arg)
{
    const struct allgather_ring *c = arg;
    return tutti__coll_send_copy(plan, TUTTI_BUF_SEND, in, TUTTI_BUF_RECV,
                                 (size_t)c->r * c->sc + in, len);
}

static int allgather_chunk(struct tutti_plan *plan, size_t in, size_t len, const void *arg)
{
    const struct allgather_ring *c = arg;
    const struct tutti_plan_params *pp = c->pp;
    int rc = allgather_give(plan, in, len, arg);
    for (int s = 1; s <= c->n - 2; s++) {
        rc |= tutti__plan_add_step(
            plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
            (size_t)tutti__ring_rank(pp, c->pos - s) * c->sc + in, len, TUTTI_STEP_STABLE);
    }
    rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                               (size_t)tutti__ring_rank(pp, c->pos + 1) * c->sc + in, len, 0);
    return rc;
}

/* The pair's receive lane: the peer's block (the ring's last step). */
static int allgather_take(struct tutti_plan *plan, size_t in, size_t len, const void *arg)
{
    const struct allgather_ring *c = arg;
    return tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                                (size_t)(1 - c->r) * c->sc + in, len, 0);
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
    if (n == 2 && tutti__coll_by_shm(pp, 1 - pp->rank)) {
        struct tutti_ring_walk give = {
            op->count, pp->chunk_elems, 1 - pp->rank, -1, allgather_give, NULL, &c};
        struct tutti_ring_walk take = {
            op->count, pp->chunk_elems, -1, 1 - pp->rank, allgather_take, NULL, &c};
        return tutti__ring_walk(plan, pp, &give) != 0 ? -1 : tutti__ring_walk(plan, pp, &take);
    }
    struct tutti_ring_walk w =
        tutti__ring_around(pp, op->count, allgather_chunk, allgather_alone, &c);
    return tutti__ring_walk(plan, pp, &w);
}
