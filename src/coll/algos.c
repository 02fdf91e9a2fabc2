/*
 * algos.c - the catalog of algorithms per collective, with the name TUTTI_ALGO will accept and
 * when each applies, and tutti__plan_build(), the single entry point that turns a validated
 * operation into this rank's plan.
 */
#include "coll/coll.h"
#include "util.h"

static const struct tutti_algo catalog[] = {
    {TUTTI_COLL_ALLREDUCE, "ring", "reduce-scatter + all-gather around a ring, pipelined",
     tutti__allreduce_ring},
    {TUTTI_COLL_BROADCAST, "ring", "pipelined chain from the root", tutti__broadcast_ring},
    {TUTTI_COLL_REDUCE, "ring", "pipelined chain into the root", tutti__reduce_ring},
    {TUTTI_COLL_REDUCE_SCATTER, "ring", "ring reduce-scatter, pipelined",
     tutti__reduce_scatter_ring},
    {TUTTI_COLL_ALLGATHER, "ring", "ring all-gather, pipelined", tutti__allgather_ring},
    {TUTTI_COLL_ALLTOALL, "pairwise", "concurrent pairwise exchanges", tutti__alltoall_pairwise},
    {TUTTI_COLL_SEND, "direct", "one message, split over channels", tutti__p2p_direct},
    {TUTTI_COLL_RECV, "direct", "one message, split over channels", tutti__p2p_direct},
    {TUTTI_COLL_BARRIER, "ring", "one-byte ring all-reduce", tutti__barrier_ring},
};

const struct tutti_algo *tutti__algos(tutti_coll_t coll, int *n_p)
{
    int first = -1, n = 0;
    for (int i = 0; i < (int)TUTTI_ARRAY_LEN(catalog); i++) {
        if (catalog[i].coll == coll) {
            if (first < 0) {
                first = i;
            }
            n++;
        }
    }
    *n_p = n;
    return first < 0 ? NULL : &catalog[first];
}

int tutti__coll_same_place(const struct tutti_op_desc *op, tutti_buf_t a, size_t off, tutti_buf_t b,
                           size_t boff)
{
    size_t es = tutti_datatype_size(op->dt);
    const char *pa = (a == TUTTI_BUF_SEND) ? (const char *)op->sendbuf : (const char *)op->recvbuf;
    const char *pb = (b == TUTTI_BUF_SEND) ? (const char *)op->sendbuf : (const char *)op->recvbuf;
    return pa != NULL && pa + off * es == pb + boff * es;
}

int tutti__coll_open_lane(struct tutti_plan *plan, size_t total, const struct tutti_plan_params *pp,
                          int ch, int send_peer, int recv_peer, size_t *off_p, size_t *len_p)
{
    tutti__split_even(total, pp->nchannels, ch, off_p, len_p);
    if (*len_p == 0) {
        return 0;
    }
    return tutti__plan_add_lane(plan, send_peer, recv_peer, ch) < 0 ? -1 : 1;
}

int tutti__coll_copy(struct tutti_plan *plan, const struct tutti_op_desc *op, tutti_buf_t src_buf,
                     size_t src_off, tutti_buf_t dst_buf, size_t dst_off, size_t count)
{
    if (tutti__coll_same_place(op, src_buf, src_off, dst_buf, dst_off)) {
        return 0;
    }
    return tutti__plan_add_step(plan, TUTTI_STEP_COPY, src_buf, src_off, dst_buf, dst_off, count,
                                0);
}

int tutti__plan_build(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(op->coll, &n);
    if (a == NULL || tutti__plan_reset(plan, op) != 0) {
        return -1;
    }
    /* One algorithm per collective so far; the tuner and TUTTI_ALGO choose among several. */
    plan->algo = a->name;
    if (a->build(op, pp, plan) != 0) {
        return -1;
    }
    tutti__plan_finish(plan);
    return 0;
}
