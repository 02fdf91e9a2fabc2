/*
 * test_carried.c - the carried path (issue 38, src/win/win_carry.c): on a communicator whose
 * ranks share a host, a barrier and the six collectives up to 1 KiB per rank (512 B for
 * all-reduce and reduce-scatter) travel in the ranks' control pages. Hundreds of calls in a row,
 * every collective, in and out of place, at 2, 3 and 4 ranks, mixed with calls that take the
 * ordinary path, give exact results; calls that differ between ranks fail every rank with
 * TUTTI_ERR_MISMATCH, also when one rank's call is carried and the other's is not; a broadcast that
 * one rank makes in a group and the other outside one still works; a rank that never comes to a
 * barrier, or never sends a carried message (test_carried_p2p.c), is a timeout.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 300
#define MOST   4096 /* elements of the largest buffer (an ordinary all-reduce) */

/* The value rank r contributes at element i of round it. */
static int32_t val(int it, int r, size_t i)
{
    return (int32_t)((uint32_t)it * 2654435761u ^ (uint32_t)r * 40503u ^ (uint32_t)i * 97u) % 1000;
}

/* One round of every collective, counts chosen by the round (carried and ordinary both). */
static int round_of_all(tutti_comm_t *c, int it, int n, int me, int32_t *a, int32_t *b)
{
    static const size_t counts[] = {1, 3, 16, 100, 128, 256};
    size_t cnt = counts[it % 6];
    int root = it % n;
    /* all-reduce, out of place, or (every 10th round) large enough for the ordinary path */
    size_t ac = it % 10 == 9 ? MOST : cnt;
    for (size_t i = 0; i < ac; i++) {
        a[i] = val(it, me, i);
    }
    ICHECK_OK(tutti_allreduce(a, b, ac, TUTTI_INT32, TUTTI_SUM, c, NULL));
    for (size_t i = 0; i < ac; i++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++) {
            want += val(it, r, i);
        }
        ICHECK(b[i] == want, "round %d allreduce(%zu): [%zu] = %d, want %d", it, ac, i, b[i], want);
    }
    /* reduce (max) to a rotating root, in place on odd rounds */
    for (size_t i = 0; i < cnt; i++) {
        a[i] = val(it + 1, me, i);
    }
    int32_t *rout = it % 2 ? a : b;
    ICHECK_OK(tutti_reduce(a, rout, cnt, TUTTI_INT32, TUTTI_MAX, root, c, NULL));
    for (size_t i = 0; me == root && i < cnt; i++) {
        int32_t want = val(it + 1, 0, i);
        for (int r = 1; r < n; r++) {
            want = val(it + 1, r, i) > want ? val(it + 1, r, i) : want;
        }
        ICHECK(rout[i] == want, "round %d reduce: [%zu] = %d, want %d", it, i, rout[i], want);
    }
    /* broadcast from a rotating root, in place on even rounds */
    for (size_t i = 0; i < cnt; i++) {
        a[i] = me == root ? val(it + 2, root, i) : -1;
        b[i] = -1;
    }
    int32_t *bout = it % 2 ? b : a;
    ICHECK_OK(tutti_broadcast(a, bout, cnt, TUTTI_INT32, root, c, NULL));
    for (size_t i = 0; i < cnt; i++) {
        ICHECK(bout[i] == val(it + 2, root, i), "round %d broadcast from %d: [%zu] = %d", it, root,
               i, bout[i]);
    }
    /* all-gather, in place on odd rounds */
    int32_t *gsend = it % 2 ? b + (size_t)me * cnt : a;
    for (size_t i = 0; i < cnt; i++) {
        gsend[i] = val(it + 3, me, i);
    }
    ICHECK_OK(tutti_allgather(gsend, b, cnt, TUTTI_INT32, c, NULL));
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < cnt; i++) {
            ICHECK(b[(size_t)r * cnt + i] == val(it + 3, r, i),
                   "round %d allgather: block %d [%zu]", it, r, i);
        }
    }
    /* reduce-scatter (sum) */
    for (size_t i = 0; i < cnt * (size_t)n; i++) {
        a[i] = val(it + 4, me, i);
    }
    ICHECK_OK(tutti_reduce_scatter(a, b, cnt, TUTTI_INT32, TUTTI_SUM, c, NULL));
    for (size_t i = 0; i < cnt; i++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++) {
            want += val(it + 4, r, (size_t)me * cnt + i);
        }
        ICHECK(b[i] == want, "round %d reduce_scatter: [%zu] = %d, want %d", it, i, b[i], want);
    }
    /* all-to-all, in place on even rounds */
    for (size_t i = 0; i < cnt * (size_t)n; i++) {
        a[i] = val(it + 5, me, i);
    }
    int32_t *tout = it % 2 ? b : a;
    ICHECK_OK(tutti_alltoall(a, tout, cnt, TUTTI_INT32, c, NULL));
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < cnt; i++) {
            ICHECK(tout[(size_t)r * cnt + i] == val(it + 5, r, (size_t)me * cnt + i),
                   "round %d alltoall: block %d [%zu]", it, r, i);
        }
    }
    ICHECK_OK(tutti_barrier(c, NULL));
    return 0;
}

/* Averages of floats: every rank holds the same bits. */
static int average_round(tutti_comm_t *c, int it, int n, int me, const struct integ_ctx *ctx)
{
    float f[7], g[7];
    for (int i = 0; i < 7; i++) {
        f[i] = (float)val(it, me, (size_t)i) / 7.0f;
    }
    ICHECK_OK(tutti_allreduce(f, g, 7, TUTTI_FLOAT32, TUTTI_AVG, c, NULL));
    float *board = (float *)ctx->shared + (size_t)me * 7;
    memcpy(board, g, sizeof(g));
    ICHECK_OK(tutti_barrier(c, NULL));
    for (int r = 0; r < n; r++) {
        ICHECK(memcmp((float *)ctx->shared + (size_t)r * 7, g, sizeof(g)) == 0,
               "round %d: rank %d's average differs from this rank's", it, r);
    }
    float want = 0.0f;
    for (int r = 0; r < n; r++) {
        want += (float)val(it, r, 0) / 7.0f;
    }
    want /= (float)n;
    ICHECK(g[0] > want - 1e-3f && g[0] < want + 1e-3f, "round %d: average %g, want %g", it,
           (double)g[0], (double)want);
    ICHECK_OK(tutti_barrier(c, NULL));
    return 0;
}

static int exact_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int32_t *a = calloc(MOST, sizeof(*a)), *b = calloc(MOST, sizeof(*b));
    ICHECK(a != NULL && b != NULL, "no memory");
    for (int it = 0; it < ROUNDS; it++) {
        if (round_of_all(c, it, ctx->nranks, ctx->rank, a, b) != 0 ||
            (it % 50 == 0 && average_round(c, it, ctx->nranks, ctx->rank, ctx) != 0)) {
            return 1;
        }
    }
    free(a);
    free(b);
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

ParameterizedTestParameters(carried, every_collective_is_exact)
{
    static int rank_counts[] = {2, 3, 4};
    return cr_make_param_array(int, rank_counts, sizeof(rank_counts) / sizeof(rank_counts[0]));
}

ParameterizedTest(int *n, carried, every_collective_is_exact, .timeout = 180)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_run_ranks(*n, exact_rank, NULL, 4 * 7 * sizeof(float));
}

/* Calls that differ: each kind is rank 0's call against rank 1's. */
enum kind {
    COUNTS_BOTH_CARRIED, /* all-reduce of 4 against 8 elements */
    CARRIED_VS_ORDINARY, /* all-reduce of 4 against 100000 elements (no note on rank 1) */
    ROOTS,               /* broadcast from rank 0 against from rank 1 (both lead: the next call) */
    ALLREDUCE_VS_GATHER, /* all-reduce against all-gather, both 4 elements */
    KINDS
};

static tutti_status_t differing_call(tutti_comm_t *c, enum kind k, int me, int32_t *buf)
{
    switch (k) {
    case COUNTS_BOTH_CARRIED:
        return tutti_allreduce(buf, buf, me == 0 ? 4 : 8, TUTTI_INT32, TUTTI_SUM, c, NULL);
    case CARRIED_VS_ORDINARY:
        return tutti_allreduce(buf, buf, me == 0 ? 4 : 100000, TUTTI_INT32, TUTTI_SUM, c, NULL);
    case ROOTS:
        return tutti_broadcast(buf, buf, 4, TUTTI_INT32, me, c, NULL);
    default:
        return me == 0 ? tutti_allreduce(buf, buf, 4, TUTTI_INT32, TUTTI_SUM, c, NULL)
                       : tutti_allgather(buf, buf + 16, 2, TUTTI_INT32, c, NULL);
    }
}

static int mismatch_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    enum kind k = *(const int *)ctx->arg;
    int32_t *buf = calloc(100000, sizeof(*buf));
    ICHECK(buf != NULL, "no memory");
    ICHECK_OK(tutti_allreduce(buf, buf, 4, TUTTI_INT32, TUTTI_SUM, c, NULL)); /* one that agrees */
    int64_t t0 = integ_now_ns();
    tutti_status_t st = differing_call(c, k, ctx->rank, buf);
    if (st == TUTTI_OK && k == ROOTS) { /* each root only gave its data: the next call knows */
        st = tutti_allreduce(buf, buf, 4, TUTTI_INT32, TUTTI_SUM, c, NULL);
    }
    double s = (double)(integ_now_ns() - t0) / 1e9;
    const char *m = tutti_last_error(NULL);
    ICHECK(st == TUTTI_ERR_MISMATCH && integ_contains(m, "mismatched calls"),
           "kind %d, rank %d: returned %s after %.1f s (\"%s\"), expected MISMATCH", (int)k,
           ctx->rank, tutti_status_name(st), s, m);
    ICHECK(s < 5.0, "kind %d, rank %d: the mismatch took %.1f s (TUTTI_TIMEOUT 30 s)", (int)k,
           ctx->rank, s);
    tutti_status_t later = tutti_allreduce(buf, buf, 4, TUTTI_INT32, TUTTI_SUM, c, NULL);
    ICHECK(later == TUTTI_ERR_MISMATCH, "a later call returned %s", tutti_status_name(later));
    free(buf);
    (void)tutti_comm_destroy(c);
    return 0;
}

ParameterizedTestParameters(carried, differing_calls_fail_every_rank)
{
    static int kinds[] = {COUNTS_BOTH_CARRIED, CARRIED_VS_ORDINARY, ROOTS, ALLREDUCE_VS_GATHER};
    return cr_make_param_array(int, kinds, sizeof(kinds) / sizeof(kinds[0]));
}

ParameterizedTest(int *k, carried, differing_calls_fail_every_rank, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_run_ranks(2, mismatch_rank, k, 0);
}

/* Rank g makes its calls inside a group, the other rank outside one: an all-gather (carried
 * outside groups) takes both to the ordinary path; a broadcast and a reduce are led in groups
 * too (win_lead.c). Either way the data arrives. */
static int group_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int me = ctx->rank;
    for (int it = 0; it < 40; it++) {
        int g = it % 2, root = it / 2 % 2; /* who groups, and the root */
        int32_t v[4] = {0}, all[8] = {0}, sum[4] = {0};
        for (int i = 0; i < 4 && me == root; i++) {
            v[i] = val(it, root, (size_t)i);
        }
        int32_t mine[4] = {val(it, me, 0), val(it, me, 1), val(it, me, 2), val(it, me, 3)};
        if (me == g) {
            ICHECK_OK(tutti_group_start());
        }
        ICHECK_OK(tutti_broadcast(v, v, 4, TUTTI_INT32, root, c, NULL));
        ICHECK_OK(tutti_allgather(mine, all, 4, TUTTI_INT32, c, NULL));
        ICHECK_OK(tutti_reduce(mine, sum, 4, TUTTI_INT32, TUTTI_SUM, root, c, NULL));
        if (me == g) {
            ICHECK_OK(tutti_group_end());
        }
        for (int i = 0; i < 4; i++) {
            ICHECK(v[i] == val(it, root, (size_t)i), "round %d: broadcast [%d] = %d", it, i, v[i]);
            ICHECK(all[i] == val(it, 0, (size_t)i) && all[4 + i] == val(it, 1, (size_t)i),
                   "round %d: all-gather [%d]", it, i);
            ICHECK(me != root || sum[i] == val(it, 0, (size_t)i) + val(it, 1, (size_t)i),
                   "round %d: reduce [%d] = %d", it, i, sum[i]);
        }
    }
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

Test(carried, calls_in_a_group_on_one_rank_meet_the_same_calls_outside_one, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_run_ranks(2, group_rank, NULL, 0);
}

/* Rank 1 never makes the call (a barrier, or the send of a carried message): rank 0 gets
 * TIMEOUT naming it, soon after TUTTI_TIMEOUT. */
static int absent_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    if (ctx->rank == 1) {
        integ_pause_ms(4000);
        (void)tutti_comm_destroy(c);
        return 0;
    }
    int message = *(const int *)ctx->arg;
    int32_t v[4];
    int64_t t0 = integ_now_ns();
    tutti_status_t st =
        message ? tutti_recv(v, 4, TUTTI_INT32, 1, c, NULL) : tutti_barrier(c, NULL);
    double s = (double)(integ_now_ns() - t0) / 1e9;
    const char *m = tutti_last_error(NULL);
    ICHECK(st == TUTTI_ERR_TIMEOUT && integ_contains(m, "rank 1") &&
               integ_contains(m, message ? "to send the message" : "to reach the call"),
           "returned %s (\"%s\")", tutti_status_name(st), m);
    ICHECK(s < 3.5, "the error took %.1f s with TUTTI_TIMEOUT 1s", s);
    (void)tutti_comm_destroy(c);
    return 0;
}

ParameterizedTestParameters(carried, a_rank_that_never_comes_is_a_timeout)
{
    static int message[] = {0, 1};
    return cr_make_param_array(int, message, sizeof(message) / sizeof(message[0]));
}

ParameterizedTest(int *message, carried, a_rank_that_never_comes_is_a_timeout, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "1s");
    integ_run_ranks(2, absent_rank, message, 0);
}
