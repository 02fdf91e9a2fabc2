/*
 * perf_reduce_scatter.c - reduce_scatter_perf: rank r gets block r of the reduction of every
 * rank's buffer. As nccl-tests: size is the whole send buffer, count is one block, algbw counts
 * the whole buffer and busbw = algbw * (n-1)/n. In place, the output is block r of the input.
 */
#include "perf_data.h"
#include "tutti_perf.h"

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    size_t base = c->lay.recv_count;
    perf_call_gen(c, &g);
    return perf_check_reduced(&g, c->recv, (size_t)c->rank * base, base);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_reduce_scatter(c->send, c->recv, c->lay.param_count, c->dt, c->op, comm, NULL);
}

const struct perf_coll perf_reduce_scatter = {
    .name = "reduce_scatter",
    .id = PERF_REDUCE_SCATTER,
    .flags = PERF_COLL_REDUCES,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_scattered,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
};
