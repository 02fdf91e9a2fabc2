/*
 * perf_reduce.c - reduce_perf: the root gets the reduction of every rank's buffer.
 * Size = count elements, busbw = algbw (nccl-tests). Only the root's output is checked: the
 * other ranks' receive buffers are not written.
 */
#include "perf_data.h"
#include "tutti_perf.h"

static double bus_factor(int nranks)
{
    (void)nranks;
    return 1.0;
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
    if (c->rank != c->root) {
        return 0;
    }
    struct perf_gen g;
    perf_gen_init(&g, c->dt, c->op, c->nranks, c->seed);
    return perf_check_reduced(&g, c->recv, 0, c->lay.recv_count);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_reduce(c->send, c->recv, c->lay.param_count, c->dt, c->op, c->root, comm, NULL);
}

const struct perf_coll perf_reduce = {
    .name = "reduce",
    .id = PERF_REDUCE,
    .flags = PERF_COLL_REDUCES | PERF_COLL_ROOTED | PERF_COLL_ROOT_ONLY,
    .bus_factor = bus_factor,
    .layout = layout,
    .fill = fill,
    .check = check,
    .run = run,
};
