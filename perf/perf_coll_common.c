/*
 * perf_coll_common.c - what several perf_<coll>.c share: nccl-tests' busbw factors, the layout
 * of collectives whose two buffers hold `count` elements, and the usual fill (poison the output,
 * write this rank's input).
 */
#include "perf_data.h"
#include "tutti_perf.h"

double perf_bus_one(int nranks)
{
    (void)nranks;
    return 1.0;
}

double perf_bus_ring(int nranks)
{
    return (double)(nranks - 1) / nranks;
}

void perf_layout_flat(size_t count, int nranks, struct perf_layout *lay)
{
    (void)nranks;
    *lay = (struct perf_layout){.send_count = count, .recv_count = count, .param_count = count};
}

void perf_call_gen(const struct perf_call *c, struct perf_gen *g)
{
    perf_gen_init(g, c->dt, c->op, c->nranks, c->seed);
}

void perf_fill_own(const struct perf_call *c)
{
    struct perf_gen g;
    perf_call_gen(c, &g);
    perf_poison(c->recv, c->lay.recv_count, c->dt);
    perf_fill_input(&g, c->send, c->rank, 0, c->lay.send_count);
}
