/*
 * perf_scatter.c - scatter_perf: rank r gets block r of the root's buffer. -v none (the default)
 * times tutti_scatter with equal blocks (count per rank, as ncclScatter); -v uniform or zipf
 * times tutti_scatterv with blocks of those sizes (perf_vcounts.c). As nccl-tests'
 * scatter_perf: size is the root's whole send buffer, count is one block (the mean block with
 * -v), algbw counts the whole buffer and busbw = algbw * (n-1)/n. In place, each rank's output
 * is its block of the (root's) send buffer, as tutti's and MPI_IN_PLACE's in-place scatter.
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

/* This rank's block of the root's input. */
static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    size_t off, n;
    perf_call_gen(c, &g);
    perf_vblock(c, c->rank, &off, &n);
    return perf_check_input(&g, c->recv, c->root, off, n);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    const struct perf_vcounts *v = c->v;
    if (v == NULL) {
        return tutti_scatter(c->send, c->recv, c->lay.param_count, c->dt, c->root, comm, NULL);
    }
    return tutti_scatterv(c->send, v->sendcounts, v->sdispls, c->recv, v->recvcounts[c->rank],
                          c->dt, c->root, comm, NULL);
}

const struct perf_coll perf_scatter = {
    .name = "scatter",
    .id = PERF_SCATTER,
    .flags = PERF_COLL_ROOTED | PERF_COLL_V_SKEW,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_scattered,
    .fill = perf_fill_root,
    .check = check,
    .run = run,
    .vsetup = perf_vsetup_scattered,
    .call = {"tutti_scatter (in place: recvbuf = sendbuf + rank x count)",
             "tutti_scatterv (in place: recvbuf = sendbuf + displs[rank])"},
};
