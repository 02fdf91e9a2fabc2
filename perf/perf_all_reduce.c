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

static void layout(size_t count, int nranks, struct perf_layout *lay)
{
    (void)nranks;
    *lay = (struct perf_layout){.send_count = count, .recv_count = count, .param_count = count};
}

static void fill(const struct perf_call *c)
{
    struct perf_gen g;
    perf_gen_init(&g, c->dt, c->op, c->nranks, c->seed);
    perf_poison(c->recv, c->lay.recv_count, c->dt);
    perf_fill_input(&g, c->send, c->rank, 0, c->lay.send_count);
}

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    perf_gen_init(&g, c->dt, c->op, c->nranks, c->seed);
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
    .layout = layout,
    .fill = fill,
    .check = check,
    .run = run,
};
