/*
 * test_schedule_v.c - the schedules of gather, scatter and the variable-size collectives, run
 * for every rank on the real executor over the simulated network (tests/common/sim.c): random
 * counts with zeros, displacements in shuffled order with gaps (which must stay untouched),
 * every rank count 1..MAXN, 1-3 channels, slots of a few elements (many chunks per block) and
 * FIFOs of two and three slots (the sim reports a deadlock as a round without progress; the ring
 * schedules, like allgather_ring.c's, need two: a rank's own chunk and the one it forwards), in
 * place and not, and every algorithm of each collective.
 */
#include "coll/coll.h"
#include "comm/comm.h"
#include "exec/op.h"
#include "sim.h"
#include "transports/transport.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 13
#define GAP  0xdeadbeefu
#define MAXC 9 /* counts 0..MAXC-1 */

static uint32_t seed;

/* The transport run() reports to every rank (NULL: not known, as in tools). */
static const uint8_t *peer_transport;
static const uint8_t all_shm[MAXN]; /* TUTTI_TRANSPORT_SHM is 0 */

static uint32_t rnd(uint32_t mod)
{
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % mod;
}

/* Rank r's input element i: recognisable in any block. */
static uint32_t in_val(int r, size_t i)
{
    return (uint32_t)r * 100003u + (uint32_t)i * 7u + 3u;
}

/* One test world: per rank its counts, displacements and buffers. */
struct vworld {
    int n, root, inplace;
    tutti_coll_t coll;
    size_t sc[MAXN][MAXN], sd[MAXN][MAXN], rc[MAXN][MAXN], rd[MAXN][MAXN];
    size_t count[MAXN]; /* the scalar count of each rank's call */
    struct tutti_vcounts v[MAXN];
    uint32_t *send[MAXN], *recv[MAXN];
    size_t send_len[MAXN], recv_len[MAXN];
};

/* Displacements of counts c[0..n-1] in a shuffled order with a gap of 0-2 elements before each;
 * returns the extent. */
static size_t layout(const size_t *c, size_t *d, int n)
{
    int order[MAXN];
    for (int j = 0; j < n; j++) {
        order[j] = j;
    }
    for (int j = n - 1; j > 0; j--) {
        int k = (int)rnd((uint32_t)j + 1), t = order[j];
        order[j] = order[k];
        order[k] = t;
    }
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        at += rnd(3);
        d[order[k]] = at;
        at += c[order[k]];
    }
    return at + rnd(2);
}

static uint32_t *buffer(size_t len, int fill_rank)
{
    uint32_t *b = malloc((len + 1) * 4);
    for (size_t i = 0; i < len; i++) {
        b[i] = fill_rank >= 0 ? in_val(fill_rank, i) : GAP;
    }
    return b;
}

/* Counts for coll: pair (r, j) sends sc[r][j] = rc[j][r]; shared vectors where the collective
 * has one. In place, alltoallv's matrix is symmetric (a block goes out where one comes in). */
static void make_counts(struct vworld *w)
{
    int n = w->n;
    size_t shared[MAXN];
    for (int j = 0; j < n; j++) {
        shared[j] = rnd(4) == 0 ? 0 : rnd(MAXC);
    }
    for (int r = 0; r < n; r++) {
        for (int j = 0; j < n; j++) {
            size_t c = w->coll == TUTTI_COLL_ALLTOALLV ? (rnd(4) == 0 ? 0 : rnd(MAXC)) : shared[j];
            if (w->coll == TUTTI_COLL_ALLTOALLV && w->inplace && j < r) {
                c = w->sc[j][r];
            }
            w->sc[r][j] = c;
            w->rc[j][r] = c;
        }
    }
    for (int r = 0; r < n; r++) {
        switch (w->coll) {
        case TUTTI_COLL_ALLGATHERV:
        case TUTTI_COLL_REDUCE_SCATTERV:
            for (int j = 0; j < n; j++) {
                w->rc[r][j] = shared[j];
            }
            w->count[r] = shared[r];
            break;
        case TUTTI_COLL_GATHERV:
            w->count[r] = shared[r];
            for (int j = 0; j < n; j++) {
                w->rc[r][j] = shared[j];
            }
            break;
        case TUTTI_COLL_SCATTERV:
            w->count[r] = shared[r];
            for (int j = 0; j < n; j++) {
                w->sc[r][j] = shared[j];
            }
            break;
        default:
            w->count[r] = shared[0] + 1; /* gather, scatter: one count for all */
            break;
        }
    }
}

static void make_buffers(struct vworld *w)
{
    int n = w->n;
    for (int r = 0; r < n; r++) {
        size_t sl = 0, rl = 0, tot = 0;
        int root = w->root == r;
        switch (w->coll) {
        case TUTTI_COLL_ALLTOALLV:
            sl = layout(w->sc[r], w->sd[r], n);
            rl = layout(w->rc[r], w->rd[r], n);
            if (w->inplace) {
                memcpy(w->sd[r], w->rd[r], sizeof(w->rd[r]));
                sl = rl;
            }
            break;
        case TUTTI_COLL_ALLGATHERV:
        case TUTTI_COLL_GATHERV:
            sl = w->count[r];
            rl = layout(w->rc[r], w->rd[r], n);
            break;
        case TUTTI_COLL_SCATTERV:
            sl = layout(w->sc[r], w->sd[r], n);
            rl = w->count[r];
            break;
        case TUTTI_COLL_GATHER:
            sl = w->count[r];
            rl = (size_t)n * w->count[r];
            break;
        case TUTTI_COLL_SCATTER:
            sl = (size_t)n * w->count[r];
            rl = w->count[r];
            break;
        default: /* reduce_scatterv */
            for (int j = 0; j < n; j++) {
                tot += w->rc[r][j];
            }
            sl = tot;
            rl = w->rc[r][r];
            break;
        }
        (void)root;
        w->send_len[r] = sl;
        w->recv_len[r] = rl;
        w->send[r] = buffer(sl, r);
        w->recv[r] = buffer(rl, -1);
        w->v[r] = (struct tutti_vcounts){w->sc[r], w->sd[r], w->rc[r], w->rd[r], 0};
    }
}

static void world_free(struct vworld *w)
{
    for (int r = 0; r < w->n; r++) {
        free(w->send[r]);
        free(w->recv[r]);
    }
}

/* Rank r's call, with the in-place forms pointing one buffer into the other. */
static struct tutti_op_desc call(struct vworld *w, int r)
{
    struct tutti_op_desc d = {.coll = w->coll,
                              .sendbuf = w->send[r],
                              .recvbuf = w->recv[r],
                              .count = w->count[r],
                              .dt = TUTTI_UINT32,
                              .op = TUTTI_SUM,
                              .root = w->root,
                              .peer = -1,
                              .seq = 1,
                              .v = &w->v[r]};
    if (w->coll == TUTTI_COLL_GATHER || w->coll == TUTTI_COLL_SCATTER) {
        d.v = NULL;
    }
    if (!w->inplace) {
        return d;
    }
    switch (w->coll) {
    case TUTTI_COLL_ALLTOALLV: /* the data is in the receive buffer, where it goes out from */
        for (size_t i = 0; i < w->recv_len[r]; i++) {
            w->recv[r][i] = in_val(r, i);
        }
        memcpy(w->send[r], w->recv[r], w->recv_len[r] * 4);
        d.sendbuf = w->recv[r];
        break;
    case TUTTI_COLL_ALLGATHERV:
        memcpy(w->recv[r] + w->rd[r][r], w->send[r], w->count[r] * 4);
        d.sendbuf = w->recv[r] + w->rd[r][r];
        break;
    case TUTTI_COLL_REDUCE_SCATTERV: {
        size_t off = 0;
        for (int j = 0; j < r; j++) {
            off += w->rc[r][j];
        }
        d.recvbuf = w->send[r] + off;
        break;
    }
    default:
        break;
    }
    return d;
}

static size_t rs_off(const struct vworld *w, int r, int b)
{
    size_t off = 0;
    for (int j = 0; j < b; j++) {
        off += w->rc[r][j];
    }
    return off;
}

/* Check rank r's output against what the collective means; gaps keep GAP. */
static void verify(const struct vworld *w, int r, const char *what)
{
    int n = w->n;
    const uint32_t *got = w->recv[r];
    uint32_t *want = buffer(w->recv_len[r], -1);
    switch (w->coll) {
    case TUTTI_COLL_ALLTOALLV:
        for (int j = 0; j < n; j++) {
            for (size_t i = 0; i < w->rc[r][j]; i++) {
                want[w->rd[r][j] + i] = in_val(j, w->sd[j][r] + i);
            }
        }
        if (w->inplace) { /* the gaps of the buffer held this rank's input */
            for (size_t i = 0; i < w->recv_len[r]; i++) {
                want[i] = want[i] == GAP ? in_val(r, i) : want[i];
            }
        }
        break;
    case TUTTI_COLL_ALLGATHERV:
        for (int j = 0; j < n; j++) {
            for (size_t i = 0; i < w->rc[r][j]; i++) {
                want[w->rd[r][j] + i] = in_val(j, i);
            }
        }
        break;
    case TUTTI_COLL_GATHERV:
    case TUTTI_COLL_GATHER:
        for (int j = 0; j < n && r == w->root; j++) {
            size_t c = w->coll == TUTTI_COLL_GATHER ? w->count[r] : w->rc[r][j];
            size_t at = w->coll == TUTTI_COLL_GATHER ? (size_t)j * c : w->rd[r][j];
            for (size_t i = 0; i < c; i++) {
                want[at + i] = in_val(j, i);
            }
        }
        break;
    case TUTTI_COLL_SCATTERV:
    case TUTTI_COLL_SCATTER: {
        int q = w->root;
        size_t at = w->coll == TUTTI_COLL_SCATTER ? (size_t)r * w->count[q] : w->sd[q][r];
        for (size_t i = 0; i < w->count[r]; i++) {
            want[i] = in_val(q, at + i);
        }
        break;
    }
    default: /* reduce_scatterv: SUM */
        for (size_t i = 0; i < w->rc[r][r]; i++) {
            uint32_t s = 0;
            for (int q = 0; q < n; q++) {
                s += in_val(q, rs_off(w, q, r) + i);
            }
            want[i] = s;
        }
        break;
    }
    const uint32_t *out = got;
    if (w->inplace && w->coll == TUTTI_COLL_REDUCE_SCATTERV) {
        out = w->send[r] + rs_off(w, r, r);
    }
    for (size_t i = 0; i < w->recv_len[r]; i++) {
        if (out[i] != want[i]) {
            cr_assert_fail("%s n=%d root=%d inplace=%d: rank %d element %zu is %#x, expected %#x",
                           what, n, w->root, w->inplace, r, i, out[i], want[i]);
        }
    }
    free(want);
}

/* Build and run every rank's plan of catalog entry algo; check every output. */
static void run(struct vworld *w, int algo, int nch, size_t slot, int depth)
{
    const struct tutti_algo *a = tutti__algos(w->coll, &(int){0});
    char what[96];
    snprintf(what, sizeof(what), "%s:%s nch=%d slot=%zu depth=%d", tutti__coll_name(w->coll),
             a[algo].name, nch, slot, depth);
    struct sim_net *net = sim_net_new(w->n, depth, slot * 4);
    struct tutti_plan plans[MAXN];
    struct tutti_exec exs[MAXN];
    struct tutti_op_desc ds[MAXN];
    struct tutti_plan_params pps[MAXN];
    memset(plans, 0, sizeof(plans));
    for (int r = 0; r < w->n; r++) {
        pps[r] = (struct tutti_plan_params){.rank = r,
                                            .nranks = w->n,
                                            .nchannels = nch,
                                            .chunk_elems = slot,
                                            .forced = algo,
                                            .nhosts = 1,
                                            .peer_transport = peer_transport};
        ds[r] = call(w, r);
        int rc = tutti__plan_build(&ds[r], &pps[r], &plans[r]);
        cr_assert_eq(rc, 0, "%s: plan of rank %d: %d", what, r, rc);
        cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, nch), &plans[r], 1), TUTTI_OK);
    }
    int rc = sim_run(exs, w->n);
    /* A plan in two phases (alltoallv's Bruck): every rank's second phase, as run.c builds it. */
    while (rc == 0 && plans[0].then != NULL) {
        for (int r = 0; r < w->n; r++) {
            char why[256] = "";
            cr_assert_eq(tutti__plan_continue(&ds[r], &pps[r], &plans[r], why, sizeof(why)), 0,
                         "%s: second phase of rank %d: %s", what, r, why);
            cr_assert_eq(tutti__exec_reuse(&exs[r], sim_fabric(net, r, nch), &plans[r], 1),
                         TUTTI_OK);
        }
        rc = sim_run(exs, w->n);
    }
    cr_assert_eq(rc, 0, "%s n=%d inplace=%d: %s", what, w->n, w->inplace,
                 rc == -1 ? "deadlock" : "error");
    for (int r = 0; r < w->n; r++) {
        verify(w, r, what);
        tutti__exec_fini(&exs[r]);
        tutti__plan_free(&plans[r]);
    }
    sim_net_free(net);
}

/* Every algorithm of coll that applies, over rank counts, channels, slots, FIFO depths. */
static void sweep(tutti_coll_t coll, int inplace_ok)
{
    int nalgos = 0;
    (void)tutti__algos(coll, &nalgos);
    for (int n = 1; n <= MAXN; n++) {
        for (int inplace = 0; inplace <= inplace_ok; inplace++) {
            for (int k = 0; k < 6; k++) {
                seed = (uint32_t)(n * 1000 + k * 10 + inplace);
                int nch = 1 + k % 3, depth = 2 + k % 2;
                size_t slot = k < 2 ? 1 : k < 4 ? 4 : 64;
                for (int algo = 0; algo < nalgos; algo++) {
                    struct vworld w = {.n = n, .coll = coll, .inplace = inplace};
                    w.root = (int)rnd((uint32_t)n);
                    make_counts(&w);
                    make_buffers(&w);
                    struct tutti_plan_params pp = {
                        .rank = 0, .nranks = n, .nchannels = nch, .chunk_elems = slot};
                    struct tutti_op_desc d = call(&w, 0);
                    const struct tutti_algo *a = tutti__algos(coll, &(int){0});
                    if (a[algo].applies(&d, &pp)) {
                        run(&w, algo, nch, slot, depth);
                    }
                    world_free(&w);
                }
            }
        }
    }
}

Test(schedule_v, alltoallv)
{
    sweep(TUTTI_COLL_ALLTOALLV, 1);
}

Test(schedule_v, allgatherv)
{
    sweep(TUTTI_COLL_ALLGATHERV, 1);
}

/* Two ranks over shared memory take a lane of sends and a lane of receives (allgatherv_ring.c):
 * every rank count again with every peer reached by shm, and the pair's lanes each one way. */
Test(schedule_v, allgatherv_over_shm)
{
    cr_assert_eq(TUTTI_TRANSPORT_SHM, 0);
    peer_transport = all_shm;
    sweep(TUTTI_COLL_ALLGATHERV, 1);
    seed = 7;
    struct vworld w = {.n = 2, .coll = TUTTI_COLL_ALLGATHERV};
    make_counts(&w);
    w.rc[0][0] = w.rc[1][0] = w.count[0] = 40; /* rank 0's block, as both see it */
    make_buffers(&w);
    struct tutti_plan_params pp = {.rank = 0,
                                   .nranks = 2,
                                   .nchannels = 2,
                                   .chunk_elems = 4,
                                   .forced = -1,
                                   .nhosts = 1,
                                   .peer_transport = peer_transport};
    struct tutti_op_desc d = call(&w, 0);
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0);
    int sending = 0;
    for (int i = 0; i < plan.nlanes; i++) {
        const struct tutti_lane *l = &plan.lanes[i];
        cr_assert(l->send_peer < 0 || l->recv_peer < 0, "lane %d sends to %d and receives from %d",
                  i, l->send_peer, l->recv_peer);
        sending += l->send_peer == 1;
    }
    cr_assert_eq(sending, 2, "%d sending lanes for 2 channels", sending);
    tutti__plan_free(&plan);
    world_free(&w);
    peer_transport = NULL;
}

Test(schedule_v, gather_and_gatherv)
{
    sweep(TUTTI_COLL_GATHER, 0);
    sweep(TUTTI_COLL_GATHERV, 0);
}

Test(schedule_v, scatter_and_scatterv)
{
    sweep(TUTTI_COLL_SCATTER, 0);
    sweep(TUTTI_COLL_SCATTERV, 0);
}

Test(schedule_v, reduce_scatterv)
{
    sweep(TUTTI_COLL_REDUCE_SCATTERV, 1);
}

/* A block of 0 elements still exchanges one frame (a token) between the two ranks it concerns:
 * what lets a count that differs between them be seen on the first frame. */
Test(schedule_v, empty_blocks_send_tokens)
{
    struct vworld w = {.n = 3, .coll = TUTTI_COLL_ALLTOALLV};
    make_counts(&w);
    for (int r = 0; r < 3; r++) {
        for (int j = 0; j < 3; j++) {
            w.sc[r][j] = w.rc[j][r] = 0;
        }
    }
    make_buffers(&w);
    struct tutti_plan plan = {0};
    struct tutti_plan_params pp = {.rank = 0, .nranks = 3, .nchannels = 2, .chunk_elems = 4};
    struct tutti_op_desc d = call(&w, 0);
    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0);
    int sends = 0, recvs = 0;
    for (int l = 0; l < plan.nlanes; l++) {
        for (size_t k = 0; k < plan.lanes[l].nsteps; k++) {
            const struct tutti_step *s = &plan.lanes[l].steps[k];
            cr_assert_eq(s->count, 0);
            cr_assert_eq(plan.lanes[l].channel, 0, "tokens go on channel 0");
            sends += s->send_peer >= 0;
            recvs += s->recv_peer >= 0;
        }
    }
    cr_assert_eq(sends, 2, "one token to each peer, got %d", sends);
    cr_assert_eq(recvs, 2, "one token from each peer, got %d", recvs);
    tutti__plan_free(&plan);
    world_free(&w);
}
