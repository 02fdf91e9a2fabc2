/*
 * perf_broadcast.c - broadcast_perf: the root's buffer lands in every rank's buffer.
 * Size = count elements, busbw = algbw (nccl-tests: each byte crosses at least one link).
 * In place, sendbuf == recvbuf on every rank.
 */
#include "perf_data.h"
#include "tutti_perf.h"

static size_t check(const struct perf_call *c)
{
    struct perf_gen g;
    perf_call_gen(c, &g);
    return perf_check_input(&g, c->recv, c->root, 0, c->lay.recv_count);
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    return tutti_broadcast(c->send, c->recv, c->lay.param_count, c->dt, c->root, comm, NULL);
}

const struct perf_coll perf_broadcast = {
    .name = "broadcast",
    .id = PERF_BROADCAST,
    .flags = PERF_COLL_ROOTED,
    .bus_factor = perf_bus_one,
    .layout = perf_layout_flat,
    .fill = perf_fill_root,
    .check = check,
    .run = run,
};
