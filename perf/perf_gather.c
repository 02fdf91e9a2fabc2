/*
 * perf_gather.c - gather_perf: the root gets every rank's block, in rank order. -v none (the
 * default) times tutti_gather with equal blocks (count per rank, as ncclGather); -v uniform or
 * zipf times tutti_gatherv with blocks of those sizes (perf_vcounts.c). As nccl-tests'
 * gather_perf: size is the root's whole receive buffer, count is one block (the mean block with
 * -v), algbw counts the whole buffer and busbw = algbw * (n-1)/n. In place, every rank's block
 * sits at its place in the receive buffer (at the root: tutti's and MPI_IN_PLACE's in-place
 * gather). Only the root's output is checked: the others' receive buffers are not written.
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

static size_t check(const struct perf_call *c)
{
    return c->rank == c->root ? perf_check_gathered(c) : 0;
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    const struct perf_vcounts *v = c->v;
    if (v == NULL) {
        return tutti_gather(c->send, c->recv, c->lay.param_count, c->dt, c->root, comm, NULL);
    }
    return tutti_gatherv(c->send, v->sendcounts[c->rank], c->recv, v->recvcounts, v->rdispls, c->dt,
                         c->root, comm, NULL);
}

const struct perf_coll perf_gather = {
    .name = "gather",
    .id = PERF_GATHER,
    .flags = PERF_COLL_ROOTED | PERF_COLL_ROOT_ONLY | PERF_COLL_V_SKEW,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_gathered,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
    .vsetup = perf_vsetup_gathered,
    .call = {"tutti_gather (in place: sendbuf = recvbuf + rank x count)",
             "tutti_gatherv (in place: sendbuf = recvbuf + displs[rank])"},
};
