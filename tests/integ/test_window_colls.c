/*
 * test_window_colls.c - the collectives besides all-reduce on shared windows (issue 38, goal 4:
 * src/win/win_share.c and win_move.c): broadcast, reduce, all-gather, reduce-scatter and
 * all-to-all on tutti_mem_alloc buffers registered as windows give exact results at 1, 2, 3 and
 * 4 ranks, in and out of place, with rotating roots, and every one of them ran on the windows
 * (tutti_window_query counts one call per collective, on the rank's output window, or its input
 * window where it has no output). An all-to-all in place takes the ordinary path, exact too; an
 * all-reduce in which one rank's share is empty leaves that rank's work at the wait.
 * test_window.c has the all-reduce, the mismatches, the failures and the misuses.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const size_t counts[] = {1000, 65536 + 13}; /* past what the notes carry */
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#define MOST    (65536 + 13)

static int32_t val(int r, size_t i, int salt)
{
    return (
        int32_t)((((uint32_t)i * 2654435761u) ^ ((uint32_t)r * 40503u) ^ ((uint32_t)salt * 977u)) &
                 0xffffffu);
}

struct bufs {
    int32_t *in, *out;
    tutti_window_t *win_in, *win_out;
};

static int bufs_make(tutti_comm_t *c, size_t bytes, struct bufs *b)
{
    ICHECK_OK(tutti_mem_alloc((void **)&b->in, bytes));
    ICHECK_OK(tutti_mem_alloc((void **)&b->out, bytes));
    ICHECK_OK(tutti_comm_window_register(c, b->in, bytes, &b->win_in));
    ICHECK_OK(tutti_comm_window_register(c, b->out, bytes, &b->win_out));
    return 0;
}

static uint64_t calls_on(const struct bufs *b)
{
    uint64_t a = 0, z = 0;
    if (tutti_window_query(b->win_in, NULL, &a) != TUTTI_OK ||
        tutti_window_query(b->win_out, NULL, &z) != TUTTI_OK) {
        return UINT64_MAX;
    }
    return a + z;
}

/* One round of the five collectives at count cnt, in place or not (salt: the round). */
static int round_of(tutti_comm_t *c, struct bufs *b, int n, int me, size_t cnt, int inplace,
                    int salt)
{
    int root = salt % n;
    int32_t *in = b->in, *out = b->out;
    /* broadcast */
    int32_t *src = inplace ? out : in;
    for (size_t i = 0; i < cnt; i++) {
        src[i] = me == root ? val(root, i, salt) : -1;
        out[i] = inplace ? out[i] : -2;
    }
    ICHECK_OK(tutti_broadcast(src, out, cnt, TUTTI_INT32, root, c, NULL));
    for (size_t i = 0; i < cnt; i++) {
        ICHECK(out[i] == val(root, i, salt), "broadcast %zu from %d: [%zu] = %d", cnt, root, i,
               out[i]);
    }
    /* reduce: the root's output only */
    src = inplace && me == root ? out : in;
    for (size_t i = 0; i < cnt; i++) {
        src[i] = val(me, i, salt + 1);
    }
    if (!(inplace && me == root)) {
        memset(out, 0x5a, cnt * sizeof(int32_t));
    }
    ICHECK_OK(tutti_reduce(src, out, cnt, TUTTI_INT32, TUTTI_SUM, root, c, NULL));
    for (size_t i = 0; i < cnt; i++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++) {
            want += val(r, i, salt + 1);
        }
        int32_t here = me == root ? want : 0x5a5a5a5a;
        ICHECK(out[i] == here, "reduce %zu to %d: [%zu] = %d, want %d", cnt, root, i, out[i], here);
    }
    /* all-gather: in place, this rank's input is its block of the output */
    src = inplace ? out + (size_t)me * cnt : in;
    for (size_t i = 0; i < cnt; i++) {
        src[i] = val(me, i, salt + 2);
    }
    ICHECK_OK(tutti_allgather(src, out, cnt, TUTTI_INT32, c, NULL));
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < cnt; i++) {
            ICHECK(out[(size_t)r * cnt + i] == val(r, i, salt + 2), "allgather %zu: block %d [%zu]",
                   cnt, r, i);
        }
    }
    /* reduce-scatter: in place, the output is this rank's block of the input */
    src = inplace ? out : in;
    for (size_t i = 0; i < cnt * (size_t)n; i++) {
        src[i] = val(me, i, salt + 3);
    }
    int32_t *dst = inplace ? out + (size_t)me * cnt : out;
    ICHECK_OK(tutti_reduce_scatter(src, dst, cnt, TUTTI_INT32, TUTTI_SUM, c, NULL));
    for (size_t i = 0; i < cnt; i++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++) {
            want += val(r, (size_t)me * cnt + i, salt + 3);
        }
        ICHECK(dst[i] == want, "reduce_scatter %zu: [%zu] = %d, want %d", cnt, i, dst[i], want);
    }
    /* all-to-all: in place it takes the ordinary path */
    src = inplace ? out : in;
    for (int k = 0; k < n; k++) {
        for (size_t i = 0; i < cnt; i++) {
            src[(size_t)k * cnt + i] = val(me * 8 + k, i, salt + 4);
        }
    }
    ICHECK_OK(tutti_alltoall(src, out, cnt, TUTTI_INT32, c, NULL));
    for (int k = 0; k < n; k++) {
        for (size_t i = 0; i < cnt; i++) {
            ICHECK(out[(size_t)k * cnt + i] == val(k * 8 + me, i, salt + 4),
                   "alltoall %zu%s: block from %d [%zu]", cnt, inplace ? " in place" : "", k, i);
        }
    }
    return 0;
}

static int colls_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int n = ctx->nranks, me = ctx->rank;
    struct bufs b;
    if (bufs_make(c, (size_t)n * MOST * sizeof(int32_t), &b) != 0) {
        return 1;
    }
    uint64_t want = 0;
    int salt = 0;
    for (int round = 0; round < 2 * n; round++) {
        for (size_t k = 0; k < NCOUNTS; k++) {
            int inplace = round % 2;
            if (round_of(c, &b, n, me, counts[k], inplace, salt++) != 0) {
                return 1;
            }
            want += inplace ? 4 : 5; /* an all-to-all in place is not on the windows */
            /* 129 elements: past the 512 bytes an all-reduce carries, and at 4 ranks the last
             * rank's share (shares cut at 16 elements) is empty */
            for (size_t i = 0; i < 129; i++) {
                b.in[i] = val(me, i, salt);
            }
            for (size_t i = 129; i < 129 * 5; i++) {
                b.out[i] = -7; /* past the output: nobody writes there */
            }
            ICHECK_OK(tutti_allreduce(b.in, b.out, 129, TUTTI_INT32, TUTTI_SUM, c, NULL));
            for (size_t i = 0; i < 129; i++) {
                int32_t sum = 0;
                for (int r = 0; r < n; r++) {
                    sum += val(r, i, salt);
                }
                ICHECK(b.out[i] == sum, "allreduce 129: [%zu] = %d, want %d", i, b.out[i], sum);
            }
            for (size_t i = 129; i < 129 * 5; i++) {
                ICHECK(b.out[i] == -7, "allreduce 129 wrote past its output: [%zu] = %d", i,
                       b.out[i]);
            }
            want++;
            uint64_t got = calls_on(&b);
            ICHECK(got == want,
                   "round %d, count %zu: %llu collectives ran on the windows, want "
                   "%llu",
                   round, counts[k], (unsigned long long)got, (unsigned long long)want);
        }
    }
    ICHECK_OK(tutti_comm_window_deregister(c, b.win_in));
    ICHECK_OK(tutti_comm_window_deregister(c, b.win_out));
    ICHECK_OK(tutti_mem_free(b.in));
    ICHECK_OK(tutti_mem_free(b.out));
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

ParameterizedTestParameters(window_colls, every_collective_on_windows_is_exact)
{
    static int rank_counts[] = {1, 2, 3, 4};
    return cr_make_param_array(int, rank_counts, sizeof(rank_counts) / sizeof(rank_counts[0]));
}

ParameterizedTest(int *n, window_colls, every_collective_on_windows_is_exact, .timeout = 120)
{
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_run_ranks(*n, colls_rank, NULL, 0);
}
