/*
 * perf_allgatherv.c - allgatherv_perf: every rank gets every rank's block, in rank order, the
 * blocks sized by -v (equal, uniform random or Zipf, perf_vcounts.c; the same vector on every
 * rank). As all_gather_perf (nccl-tests): size is the whole gathered buffer, count is the mean
 * block, algbw counts the whole buffer and busbw = algbw * (n-1)/n. In place, rank r's block
 * already sits at displs[r] of the receive buffer (MPI_IN_PLACE's layout).
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    const struct perf_vcounts *v = c->v;
    return tutti_allgatherv(c->send, v->sendcounts[c->rank], c->recv, v->recvcounts, v->rdispls,
                            c->dt, comm, NULL);
}

const struct perf_coll perf_allgatherv = {
    .name = "allgatherv",
    .id = PERF_ALLGATHERV,
    .flags = PERF_COLL_V,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_gathered,
    .fill = perf_fill_own,
    .check = perf_check_gathered,
    .run = run,
    .vsetup = perf_vsetup_gathered,
    .call = {NULL, "tutti_allgatherv (in place: sendbuf = recvbuf + displs[rank])"},
};
