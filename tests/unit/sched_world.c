/*
 * sched_world.c - the schedule tests' harness (sched_world.h).
 */
#include "sched_world.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "sim.h"
#include "topology/layout.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

uint32_t input(int rank, size_t i)
{
    return (uint32_t)rank * 7919u + (uint32_t)i * 31u + 1u;
}

/* Elements of sendbuf and recvbuf for a collective. */
static void extents(tutti_coll_t c, int n, size_t count, size_t *s, size_t *r)
{
    size_t many = count * (size_t)n;
    *s = (c == TUTTI_COLL_REDUCE_SCATTER || c == TUTTI_COLL_ALLTOALL || c == TUTTI_COLL_SCATTER)
             ? many
             : count;
    *r = (c == TUTTI_COLL_ALLGATHER || c == TUTTI_COLL_ALLTOALL || c == TUTTI_COLL_GATHER) ? many
                                                                                           : count;
}

void world_fill(struct world *w, tutti_coll_t c)
{
    extents(c, w->n, w->count, &w->send_elems, &w->recv_elems);
    if (w->inplace && w->send_elems > w->recv_elems) {
        w->recv_elems = w->send_elems; /* in-place reduce-scatter: recvbuf lies in sendbuf */
    }
    for (int r = 0; r < w->n; r++) {
        w->recv[r] = malloc((w->recv_elems + 1) * 4);
        w->send[r] = malloc((w->send_elems + 1) * 4);
        for (size_t i = 0; i < w->recv_elems; i++) {
            w->recv[r][i] = SENTINEL;
        }
        for (size_t i = 0; i < w->send_elems; i++) {
            w->send[r][i] = input(r, i);
        }
        if (w->inplace && c == TUTTI_COLL_ALLGATHER) {
            for (size_t i = 0; i < w->count; i++) {
                w->recv[r][(size_t)r * w->count + i] = input(r, i);
            }
        } else if (w->inplace) {
            memcpy(w->recv[r], w->send[r], w->send_elems * 4);
        }
    }
}

void world_free(struct world *w)
{
    for (int r = 0; r < w->n; r++) {
        free(w->send[r]);
        free(w->recv[r]);
    }
}

struct tutti_op_desc desc(const struct world *w, tutti_coll_t c, int r, tutti_op_t op)
{
    struct tutti_op_desc d = {
        .coll = c, .count = w->count, .dt = TUTTI_UINT32, .op = op, .root = w->root, .peer = -1};
    d.sendbuf = w->send[r];
    d.recvbuf = w->recv[r];
    if (w->inplace) {
        d.sendbuf = w->recv[r];
        if (c == TUTTI_COLL_REDUCE_SCATTER) {
            d.recvbuf = w->recv[r] + (size_t)r * w->count;
        } else if (c == TUTTI_COLL_ALLGATHER) {
            d.sendbuf = w->recv[r] + (size_t)r * w->count;
        }
    }
    return d;
}

/* The test's settings of params() (one process per test: Criterion). */
const struct tutti_layout *world_layout;
const uint8_t *world_peer_transport;
int world_tuner;
double world_cpu_load;

struct tutti_plan_params params(int r, int n, int nch, size_t chunk, int forced)
{
    struct tutti_plan_params pp = {.rank = r,
                                   .nranks = n,
                                   .nchannels = nch,
                                   .chunk_elems = chunk,
                                   .direct_max = 0,
                                   .forced = forced,
                                   .layout = world_layout,
                                   .peer_transport = world_peer_transport,
                                   .tuner = world_tuner,
                                   .cpu_load = world_cpu_load,
                                   .nhosts = world_layout != NULL ? world_layout->nhosts : 1};
    return pp;
}

int run_algo(struct world *w, tutti_coll_t c, tutti_op_t op, int nch, size_t slot_elems, int algo)
{
    struct sim_net *net = sim_net_new(w->n, 2, slot_elems * 4);
    struct tutti_plan plans[MAXN];
    struct tutti_exec exs[MAXN];
    memset(plans, 0, sizeof(plans));
    for (int r = 0; r < w->n; r++) {
        struct tutti_fabric *fab = sim_fabric(net, r, nch);
        struct tutti_plan_params pp = params(r, w->n, nch, slot_elems, algo);
        struct tutti_op_desc d = desc(w, c, r, op);
        cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0, "plan build failed");
        cr_assert_eq(tutti__exec_init(&exs[r], fab, &plans[r], 1), TUTTI_OK);
    }
    int rc = sim_run(exs, w->n);
    for (int r = 0; r < w->n; r++) {
        tutti__exec_fini(&exs[r]);
        tutti__plan_free(&plans[r]);
    }
    sim_net_free(net);
    return rc;
}

static uint32_t sum_at(int n, size_t idx)
{
    uint32_t s = 0;
    for (int q = 0; q < n; q++) {
        s += input(q, idx);
    }
    return s;
}

/* Expected recvbuf element i of rank r (for the reducing collectives: SUM). */
static uint32_t expect(const struct world *w, tutti_coll_t c, int r, size_t i)
{
    size_t k = w->count;
    switch (c) {
    case TUTTI_COLL_ALLREDUCE:
        return sum_at(w->n, i);
    case TUTTI_COLL_BROADCAST:
        return input(w->root, i);
    case TUTTI_COLL_REDUCE:
        return r == w->root ? sum_at(w->n, i) : (w->inplace ? input(r, i) : SENTINEL);
    case TUTTI_COLL_REDUCE_SCATTER:
        if (w->inplace) {
            return i / k == (size_t)r ? sum_at(w->n, i) : input(r, i);
        }
        return sum_at(w->n, (size_t)r * k + i);
    case TUTTI_COLL_ALLGATHER:
        return input((int)(i / k), i % k);
    case TUTTI_COLL_ALLTOALL:
        return input((int)(i / k), (size_t)r * k + i % k);
    case TUTTI_COLL_SCATTER:
        return input(w->root, (size_t)r * k + i);
    case TUTTI_COLL_GATHER: /* out of place only */
        return r == w->root ? input((int)(i / k), i % k) : SENTINEL;
    default:
        return 0;
    }
}

void check(const struct world *w, tutti_coll_t c, const char *what)
{
    for (int r = 0; r < w->n; r++) {
        for (size_t i = 0; i < w->recv_elems; i++) {
            uint32_t e = expect(w, c, r, i);
            if (w->recv[r][i] != e) {
                cr_assert_fail(
                    "%s n=%d count=%zu root=%d inplace=%d: rank %d elem %zu is %u, expected "
                    "%u",
                    what, w->n, w->count, w->root, w->inplace, r, i, w->recv[r][i], e);
            }
        }
    }
}

void check_float_bitwise(int n, int algo, size_t slot)
{
    const char *name = tutti__algos(TUTTI_COLL_ALLREDUCE, &(int){0})[algo].name;
    struct world w = {.n = n, .count = 301, .root = -1, .inplace = n % 2};
    world_fill(&w, TUTTI_COLL_ALLREDUCE);
    uint32_t x = 12345u + (uint32_t)n;
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < w.count; i++) {
            x = x * 1664525u + 1013904223u;
            float f = (float)(x >> 8) * ((x & 1) ? 1e-7f : 1e3f);
            memcpy(w.inplace ? &w.recv[r][i] : &w.send[r][i], &f, 4);
        }
    }
    struct sim_net *net = sim_net_new(n, 2, slot * 4);
    struct tutti_plan plans[MAXN];
    struct tutti_exec exs[MAXN];
    memset(plans, 0, sizeof(plans));
    for (int r = 0; r < n; r++) {
        struct tutti_plan_params pp = params(r, n, 1, slot, algo);
        struct tutti_op_desc d = desc(&w, TUTTI_COLL_ALLREDUCE, r, TUTTI_SUM);
        d.dt = TUTTI_FLOAT32;
        cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0);
        cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 1), &plans[r], 1), TUTTI_OK);
    }
    cr_assert_eq(sim_run(exs, n), 0, "%s n=%d", name, n);
    for (int r = 0; r < n; r++) {
        cr_assert(memcmp(w.recv[r], w.recv[0], w.count * 4) == 0,
                  "%s n=%d: rank %d's sums differ from rank 0's", name, n, r);
        tutti__exec_fini(&exs[r]);
        tutti__plan_free(&plans[r]);
    }
    sim_net_free(net);
    world_free(&w);
}
