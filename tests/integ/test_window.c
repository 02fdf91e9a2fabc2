/*
 * test_window.c - host symmetric memory (tutti/mem.h, issue 38): all-reduces on buffers from
 * tutti_mem_alloc registered as windows run in place (each rank reads every peer's input and
 * writes every peer's output; tutti_window_query counts them) with exact results at 1, 2, 3 and
 * 4 ranks, in and out of place, for sums, averages and maxima; a rank whose buffers are not in
 * windows takes every rank to the ordinary path; mismatched calls fail on every rank before a
 * byte moves; a rank that never comes or that dies is an error, not a hang; and the misuses of
 * the calls are refused with a reason.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quick_env(const char *timeout)
{
    integ_setenv("TUTTI_TIMEOUT", timeout);
    integ_setenv("TUTTI_TRANSPORT", "shm");
}

/* Window storage: a tutti_mem_alloc block of `bytes`, registered. */
struct region {
    uint8_t *p;
    tutti_window_t *w;
};

static int region_make(tutti_comm_t *c, size_t bytes, struct region *r)
{
    ICHECK_OK(tutti_mem_alloc((void **)&r->p, bytes));
    ICHECK_OK(tutti_comm_window_register(c, r->p, bytes, &r->w));
    int shared = 0;
    ICHECK_OK(tutti_window_query(r->w, &shared, NULL));
    ICHECK(shared == 1, "a window of tutti_mem_alloc memory is not shared");
    return 0;
}

static int region_drop(tutti_comm_t *c, struct region *r)
{
    ICHECK_OK(tutti_comm_window_deregister(c, r->w));
    ICHECK_OK(tutti_mem_free(r->p));
    return 0;
}

static const size_t counts[] = {1, 7, 64, 1000, 65536 + 13, (1u << 20) + 3};

/* Sums of int32 and maxima of float, in and out of place, every count: exact, and in place. */
static int exact_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int n = ctx->nranks, me = ctx->rank;
    size_t most = counts[sizeof(counts) / sizeof(counts[0]) - 1] * 4;
    struct region in, out;
    if (region_make(c, most, &in) != 0 || region_make(c, most, &out) != 0) {
        return 1;
    }
    uint64_t want_calls = 0;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t cnt = counts[k];
        int32_t *s = (int32_t *)in.p, *d = (int32_t *)out.p;
        for (size_t i = 0; i < cnt; i++) {
            s[i] = (int32_t)(i * 7 + (size_t)me * 1000003u);
        }
        ICHECK_OK(tutti_allreduce(s, d, cnt, TUTTI_INT32, TUTTI_SUM, c, NULL));
        for (size_t i = 0; i < cnt; i++) {
            int32_t want =
                (int32_t)(i * 7 * (size_t)n) + (int32_t)(1000003u * (unsigned)(n * (n - 1) / 2));
            ICHECK(d[i] == want, "count %zu: out[%zu] = %d, want %d", cnt, i, d[i], want);
        }
        float *f = (float *)out.p; /* in place in the output window */
        for (size_t i = 0; i < cnt; i++) {
            f[i] = (float)((i + (size_t)me) % 17) - 8.5f;
        }
        ICHECK_OK(tutti_allreduce(f, f, cnt, TUTTI_FLOAT32, TUTTI_MAX, c, NULL));
        for (size_t i = 0; i < cnt; i++) {
            float want = -100.0f;
            for (int r = 0; r < n; r++) {
                float v = (float)((i + (size_t)r) % 17) - 8.5f;
                want = v > want ? v : want;
            }
            ICHECK(f[i] == want, "count %zu in place: max[%zu] = %g, want %g", cnt, i, f[i], want);
        }
        want_calls += cnt * 4 > 512 ? 2 : 0; /* smaller ones are carried in the notes */
    }
    uint64_t calls = 0;
    ICHECK_OK(tutti_window_query(out.w, NULL, &calls));
    ICHECK(calls == want_calls, "%llu all-reduces ran on the windows, want %llu",
           (unsigned long long)calls, (unsigned long long)want_calls);
    if (region_drop(c, &in) != 0 || region_drop(c, &out) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

static int rank_counts[] = {1, 2, 3, 4};

ParameterizedTestParameters(window, allreduce_in_place_is_exact)
{
    return cr_make_param_array(int, rank_counts, sizeof(rank_counts) / sizeof(rank_counts[0]));
}

ParameterizedTest(int *n, window, allreduce_in_place_is_exact, .timeout = 120)
{
    quick_env("20s");
    integ_run_ranks(*n, exact_rank, NULL, 0);
}

/* Rank 1's send buffer is plain malloc memory: every rank takes the ordinary path, and the
 * averages come out right all the same; then rank 1 uses its window, and all run in place. */
static int mixed_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    size_t cnt = 4099;
    struct region in, out;
    if (region_make(c, cnt * 8, &in) != 0 || region_make(c, cnt * 8, &out) != 0) {
        return 1;
    }
    double *plain = malloc(cnt * 8), *s = (double *)in.p, *d = (double *)out.p;
    ICHECK(plain != NULL, "malloc");
    for (size_t i = 0; i < cnt; i++) {
        s[i] = plain[i] = (double)(i % 100) * (ctx->rank + 1);
    }
    for (int round = 0; round < 2; round++) {
        const double *src = (ctx->rank == 1 && round == 0) ? plain : s;
        ICHECK_OK(tutti_allreduce(src, d, cnt, TUTTI_FLOAT64, TUTTI_AVG, c, NULL));
        for (size_t i = 0; i < cnt; i++) {
            double want = (double)(i % 100) * 3.0 / 2.0; /* ranks 1 and 2 of 2 */
            ICHECK(d[i] == want, "round %d: avg[%zu] = %g, want %g", round, i, d[i], want);
        }
        uint64_t calls = 0;
        ICHECK_OK(tutti_window_query(out.w, NULL, &calls));
        ICHECK(calls == (uint64_t)round, "round %d: %llu calls in place", round,
               (unsigned long long)calls);
    }
    free(plain);
    if (region_drop(c, &in) != 0 || region_drop(c, &out) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

Test(window, a_rank_without_windows_takes_every_rank_to_the_ordinary_path, .timeout = 60)
{
    quick_env("20s");
    integ_run_ranks(2, mixed_rank, NULL, 0);
}

/* Rank 1 all-reduces twice the count: every rank gets MISMATCH, the outputs untouched. */
static int mismatch_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    struct region in, out;
    if (region_make(c, 4096, &in) != 0 || region_make(c, 4096, &out) != 0) {
        return 1;
    }
    memset(in.p, 1, 4096);
    memset(out.p, 0xee, 4096);
    size_t cnt = ctx->rank == 1 ? 200 : 100;
    tutti_status_t st = tutti_allreduce(in.p, out.p, cnt, TUTTI_INT8, TUTTI_SUM, c, NULL);
    const char *m = tutti_last_error(NULL);
    ICHECK(st == TUTTI_ERR_MISMATCH && integ_contains(m, "allreduce"),
           "returned %s (\"%s\"), expected MISMATCH naming the calls", tutti_status_name(st), m);
    for (size_t i = 0; i < 4096; i++) {
        ICHECK(out.p[i] == 0xee, "out[%zu] = %#x: data landed before the check", i, out.p[i]);
    }
    if (region_drop(c, &in) != 0 || region_drop(c, &out) != 0) {
        return 1;
    }
    (void)tutti_comm_destroy(c);
    return 0;
}

Test(window, mismatched_counts_fail_every_rank_before_a_byte_moves, .timeout = 60)
{
    quick_env("20s");
    integ_run_ranks(2, mismatch_rank, NULL, 0);
}

/* Rank 1 registers and then never all-reduces (arg NULL: it waits and destroys; else it exits
 * at once): rank 0 gets TIMEOUT, or REMOTE naming the rank that exited, well before the
 * deadline. */
static int absent_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    struct region in;
    if (region_make(c, 4096, &in) != 0) {
        return 1;
    }
    int dies = ctx->arg != NULL;
    if (ctx->rank == 1) {
        if (dies) {
            _exit(0);
        }
        integ_pause_ms(4000);
        (void)tutti_comm_destroy(c);
        return 0;
    }
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_allreduce(in.p, in.p, 10, TUTTI_INT32, TUTTI_SUM, c, NULL);
    double s = (double)(integ_now_ns() - t0) / 1e9;
    const char *m = tutti_last_error(NULL);
    ICHECK(dies ? (st == TUTTI_ERR_REMOTE || st == TUTTI_ERR_TIMEOUT) : st == TUTTI_ERR_TIMEOUT,
           "returned %s (\"%s\")", tutti_status_name(st), m);
    ICHECK(integ_contains(m, "rank 1"), "the message does not name rank 1: %s", m);
    ICHECK(s < 3.5, "the error took %.1f s with TUTTI_TIMEOUT 1s", s);
    (void)tutti_comm_destroy(c);
    return 0;
}

Test(window, a_rank_that_never_comes_is_a_timeout, .timeout = 60)
{
    quick_env("1s");
    integ_run_ranks(2, absent_rank, NULL, 0);
}

Test(window, a_rank_that_exits_is_an_error_naming_it, .timeout = 60)
{
    quick_env("1s");
    static int dies = 1;
    integ_run_ranks(2, absent_rank, &dies, 0);
}

/* Misuse: NULL and zero arguments, freeing a registered block, a foreign window, memory that is
 * not tutti_mem_alloc's (registered, not shared), and the call after deregistration. */
static int misuse_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    void *p = NULL;
    tutti_window_t *w = NULL;
    ICHECK(tutti_mem_alloc(NULL, 8) == TUTTI_ERR_INVALID_ARG, "NULL ptr_p accepted");
    ICHECK(tutti_mem_alloc(&p, 0) == TUTTI_ERR_INVALID_ARG, "0 bytes accepted");
    ICHECK(tutti_mem_free(&w) == TUTTI_ERR_INVALID_ARG, "a foreign pointer freed");
    ICHECK(integ_contains(tutti_last_error(NULL), "not memory from tutti_mem_alloc"), "%s",
           tutti_last_error(NULL));
    ICHECK_OK(tutti_mem_free(NULL));
    ICHECK(tutti_comm_window_register(c, NULL, 8, &w) == TUTTI_ERR_INVALID_ARG, "NULL buf");
    ICHECK_OK(tutti_mem_alloc(&p, 100));
    ICHECK(((uintptr_t)p & 4095) == 0, "%p is not page-aligned", p);
    ICHECK_OK(tutti_comm_window_register(c, p, 100, &w));
    ICHECK(tutti_mem_free(p) == TUTTI_ERR_INVALID_USAGE, "a registered block freed");
    ICHECK(integ_contains(tutti_last_error(NULL), "deregister first"), "%s",
           tutti_last_error(NULL));
    char plain[64];
    tutti_window_t *pw = NULL;
    int shared = 1;
    ICHECK_OK(tutti_comm_window_register(c, plain, sizeof(plain), &pw));
    ICHECK_OK(tutti_window_query(pw, &shared, NULL));
    ICHECK(shared == 0, "a window of stack memory says it is shared");
    ICHECK_OK(tutti_comm_window_deregister(c, pw));
    ICHECK(tutti_comm_window_deregister(c, pw) == TUTTI_ERR_INVALID_ARG, "deregistered twice");
    ICHECK_OK(tutti_comm_window_deregister(c, w));
    int32_t *x = p;
    x[0] = ctx->rank + 1;
    ICHECK_OK(tutti_allreduce(x, x, 1, TUTTI_INT32, TUTTI_SUM, c, NULL));
    ICHECK(x[0] == 3, "after deregistration: %d", x[0]);
    ICHECK_OK(tutti_mem_free(p));
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

Test(window, misuse_is_refused_with_a_reason, .timeout = 60)
{
    quick_env("20s");
    integ_run_ranks(2, misuse_rank, NULL, 0);
}

/* TUTTI_WINDOWS=0: windows are registered but not shared, and all-reduces take the ordinary
 * path with the same results. */
static int off_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int32_t *p = NULL;
    tutti_window_t *w = NULL;
    int shared = 1;
    uint64_t calls = 1;
    ICHECK_OK(tutti_mem_alloc((void **)&p, 4096));
    ICHECK_OK(tutti_comm_window_register(c, p, 4096, &w));
    p[0] = ctx->rank + 5;
    ICHECK_OK(tutti_allreduce(p, p, 1, TUTTI_INT32, TUTTI_SUM, c, NULL));
    ICHECK_OK(tutti_window_query(w, &shared, &calls));
    ICHECK(shared == 0 && calls == 0 && p[0] == 11, "shared %d, %llu calls in place, sum %d",
           shared, (unsigned long long)calls, p[0]);
    ICHECK_OK(tutti_comm_window_deregister(c, w));
    ICHECK_OK(tutti_mem_free(p));
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

Test(window, tutti_windows_0_turns_sharing_off, .timeout = 60)
{
    quick_env("20s");
    integ_setenv("TUTTI_WINDOWS", "0");
    integ_run_ranks(2, off_rank, NULL, 0);
}
