/*
 * perf_reduce.c - reduce_perf: the root gets the reduction of every rank's buffer.
 * Size = count elements, busbw = algbw (nccl-tests). Only the root's output is checked: the
 * other ranks' receive buffers are not written.
 */
#include "perf_data.h"
#include "tutti_perf.h"

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    if (c->rank != c->root) {
        return 0;
    }
    perf_call_gen(c, &g);
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
    .bus_factor = perf_bus_one,
    .layout = perf_layout_flat,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
};
