/*
 * perf_coll_common.c - what several perf_<coll>.c share: nccl-tests' busbw factors, the layouts
 * (two buffers of `count` elements; blocks of count / nranks gathered, scattered or exchanged,
 * as nccl-tests' getCollByteCount()), and the usual fills (poison the output,
 * write this rank's input, or only the root's).
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

void perf_layout_gathered(size_t count, int nranks, struct perf_layout *lay)
{
    size_t base = count / (size_t)nranks;
    *lay = (struct perf_layout){.send_count = base,
                                .recv_count = base * (size_t)nranks,
                                .param_count = base,
                                .send_off = base};
}

void perf_layout_scattered(size_t count, int nranks, struct perf_layout *lay)
{
    size_t base = count / (size_t)nranks;
    *lay = (struct perf_layout){.send_count = base * (size_t)nranks,
                                .recv_count = base,
                                .param_count = base,
                                .recv_off = base};
}

void perf_layout_alltoall(size_t count, int nranks, struct perf_layout *lay)
{
    size_t base = count / (size_t)nranks;
    *lay = (struct perf_layout){.send_count = base * (size_t)nranks,
                                .recv_count = base * (size_t)nranks,
                                .param_count = base};
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

/* Only the root has an input (broadcast, scatter); every rank's output starts poisoned. */
void perf_fill_root(const struct perf_call *c)
{
    struct perf_gen g;
    perf_call_gen(c, &g);
    perf_poison(c->recv, c->lay.recv_count, c->dt);
    if (c->rank == c->root) {
        perf_fill_input(&g, c->send, c->rank, 0, c->lay.send_count);
    }
}
