/*
 * perf_all_reduce.c - all_reduce_perf: every rank gets the reduction of every rank's buffer.
 * Sizes, counts and busbw as nccl-tests: size = count elements, busbw = algbw * 2(n-1)/n (each
 * byte crosses n-1 links twice, in a reduce-scatter and an all-gather).
 */
#include "perf_data.h"
#include "tutti_perf.h"

static double bus_factor(int nranks)
{
    return 2.0 * (nranks - 1) / nranks;
}

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    perf_call_gen(c, &g);
    return perf_check_reduced(&g, c->recv, 0, c->lay.recv_count);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_allreduce(c->send, c->recv, c->lay.param_count, c->dt, c->op, comm, NULL);
}

const struct perf_coll perf_all_reduce = {
    .name = "all_reduce",
    .id = PERF_ALL_REDUCE,
    .flags = PERF_COLL_REDUCES,
    .bus_factor = bus_factor,
    .layout = perf_layout_flat,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
};
