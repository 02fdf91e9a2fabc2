/*
 * perf_alltoall.c - alltoall_perf: block j of rank r's buffer goes to block r of rank j's.
 * As nccl-tests: size is the whole buffer, count is one block, algbw counts the whole buffer and
 * busbw = algbw * (n-1)/n. tutti refuses in-place all-to-all (tutti/coll.h), so the in-place
 * half of each row reads N/A.
 */
#include "perf_data.h"
#include "tutti_perf.h"

/* Block j came from rank j, which sent its block `rank`. */
static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    size_t base = c->lay.param_count, esz = tutti_datatype_size(c->dt), wrong = 0;
    perf_call_gen(c, &g);
    for (int j = 0; j < c->nranks; j++) {
        wrong += perf_check_input(&g, (const char *)c->recv + j * base * esz, j,
                                  (size_t)c->rank * base, base);
    }
    return wrong;
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_alltoall(c->send, c->recv, c->lay.param_count, c->dt, comm, NULL);
}

const struct perf_coll perf_alltoall = {
    .name = "alltoall",
    .id = PERF_ALLTOALL,
    .flags = PERF_COLL_NO_INPLACE,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_alltoall,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
};
