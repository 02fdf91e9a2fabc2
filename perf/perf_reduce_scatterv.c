/*
 * perf_reduce_scatterv.c - reduce_scatterv_perf: rank r gets its block of the reduction of every
 * rank's buffer, the blocks sized by -v (equal, uniform random or Zipf, perf_vcounts.c; the same
 * vector on every rank). As reduce_scatter_perf (nccl-tests): size is the whole send buffer,
 * count is the mean block, algbw counts the whole buffer and busbw = algbw * (n-1)/n. In place,
 * the output is rank r's block of the input (recvbuf = sendbuf + the counts before r).
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    size_t off, n;
    perf_call_gen(c, &g);
    perf_vblock(c, c->rank, &off, &n);
    return perf_check_reduced(&g, c->recv, off, n);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_reduce_scatterv(c->send, c->recv, c->v->recvcounts, c->dt, c->op, comm, NULL);
}

const struct perf_coll perf_reduce_scatterv = {
    .name = "reduce_scatterv",
    .id = PERF_REDUCE_SCATTERV,
    .flags = PERF_COLL_REDUCES | PERF_COLL_V,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_scattered,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
    .vsetup = perf_vsetup_scattered,
    .call = {NULL, "tutti_reduce_scatterv (in place: recvbuf = sendbuf + the counts before rank)"},
};
