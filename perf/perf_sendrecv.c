/*
 * perf_sendrecv.c - sendrecv_perf: each rank sends its buffer to rank + 1 and receives from
 * rank - 1 (modulo n), both in one group so the ring cannot deadlock. Size = count elements,
 * busbw = algbw (nccl-tests). The in-place half sends and receives on one buffer, as
 * nccl-tests does; tutti stages such a receive until the send has read the buffer.
 */
#include "perf_data.h"
#include "tutti_perf.h"

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    perf_call_gen(c, &g);
    return perf_check_input(&g, c->recv, (c->rank + c->nranks - 1) % c->nranks, 0,
                            c->lay.recv_count);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    int to = (c->rank + 1) % c->nranks, from = (c->rank + c->nranks - 1) % c->nranks;
    size_t n = c->lay.param_count;
    tutti_status_t st = tutti_group_start();
    if (st != TUTTI_OK) {
        return st;
    }
    tutti_status_t s1 = tutti_send(c->send, n, c->dt, to, comm, NULL);
    tutti_status_t s2 = tutti_recv(c->recv, n, c->dt, from, comm, NULL);
    st = tutti_group_end(); /* always close the group, even after a refused call */
    return s1 != TUTTI_OK ? s1 : s2 != TUTTI_OK ? s2 : st;
}

const struct perf_coll perf_sendrecv = {
    .name = "sendrecv",
    .id = PERF_SENDRECV,
    .bus_factor = perf_bus_one,
    .layout = perf_layout_flat,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
};
