/*
 * perf_all_gather.c - all_gather_perf: every rank gets every rank's block, in rank order.
 * As nccl-tests: size is the whole gathered buffer, count is one rank's block, algbw counts the
 * whole buffer and busbw = algbw * (n-1)/n. In place, rank r's block already sits at block r of
 * the receive buffer.
 */
#include "perf_data.h"
#include "tutti_perf.h"

/* Block r is rank r's input. */
static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    size_t base = c->lay.param_count, esz = tutti_datatype_size(c->dt), wrong = 0;
    perf_call_gen(c, &g);
    for (int r = 0; r < c->nranks; r++) {
        wrong += perf_check_input(&g, (const char *)c->recv + r * base * esz, r, 0, base);
    }
    return wrong;
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_allgather(c->send, c->recv, c->lay.param_count, c->dt, comm, NULL);
}

const struct perf_coll perf_all_gather = {
    .name = "all_gather",
    .id = PERF_ALL_GATHER,
    .flags = 0,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_gathered,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
};
