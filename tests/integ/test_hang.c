/*
 * test_hang.c - hang diagnosis on real processes. Rank 1 stops calling collectives: it sleeps
 * instead of calling the third all-reduce. Every other rank must fail that all-reduce within
 * TUTTI_TIMEOUT (+ slack) with TIMEOUT or REMOTE, its message giving the operation's sequence
 * number and its own posted / completed counts, and naming rank 1 where the library can see
 * it: over shared memory a rank that times out reads every local peer's counters and blames the
 * one that never started the operation (so every rank's message names rank 1, also in a ring
 * where most ranks wait on another neighbour); over TCP only a rank that waited on rank 1
 * directly knows, so that is checked with two ranks. Then
 * `tutti-info --hang` over all the ranks' logs (TUTTI_LOG_FILE) must report rank 1 behind.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC       1000000000LL
#define TIMEOUT_S 3 /* TUTTI_TIMEOUT of these tests */
#define SLACK_S   7 /* what a loaded 2-core CI machine may add */
#define LAGGARD   1

struct hang_cfg {
    int tcp;
    int nranks;
    int ring; /* a large all-reduce (ring: each rank waits on its left neighbour), else 8 bytes */
};

#define RING_COUNT (1 << 16) /* int64 elements: 512 KiB, far above TUTTI_DIRECT_MAX */

struct hang_shared {
    _Atomic int finished; /* ranks whose third all-reduce has failed */
};

/* The laggard: two all-reduces, then it "computes" until the others have given up. */
static int laggard(const struct integ_ctx *ctx, tutti_comm_t *comm)
{
    struct hang_shared *sh = ctx->shared;
    int64_t end = integ_now_ns() + 40 * SEC;
    while (atomic_load(&sh->finished) < ctx->nranks - 1 && integ_now_ns() < end) {
        integ_pause_ms(10);
    }
    ICHECK(atomic_load(&sh->finished) == ctx->nranks - 1, "the others did not give up in 40 s");
    tutti_comm_destroy(comm);
    return 0;
}

static int hang_rank(const struct integ_ctx *ctx)
{
    const struct hang_cfg *cfg = ctx->arg;
    struct hang_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    size_t count = cfg->ring ? RING_COUNT : 1;
    int64_t *x = calloc(count, sizeof(*x));
    ICHECK(x != NULL, "out of memory");
    ICHECK_OK(tutti_allreduce(x, x, count, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK_OK(tutti_allreduce(x, x, count, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    if (ctx->rank == LAGGARD) {
        free(x);
        return laggard(ctx, comm);
    }
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_allreduce(x, x, count, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    free(x);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    atomic_fetch_add(&sh->finished, 1);
    const char *msg = tutti_last_error(comm);
    ICHECK(st == TUTTI_ERR_TIMEOUT || st == TUTTI_ERR_REMOTE,
           "the third all-reduce without rank %d returned %s: %s", LAGGARD, tutti_status_name(st),
           msg);
    ICHECK(secs < TIMEOUT_S + SLACK_S, "it failed only after %.1f s", secs);
    ICHECK(integ_contains(msg, "allreduce #3"), "no sequence number in: %s", msg);
    ICHECK(integ_contains(msg, "posted 3, completed 2"), "no posted/completed counts in: %s", msg);
    if (!cfg->tcp || ctx->nranks == 2) {
        ICHECK(integ_contains(msg, "rank 1 ("), "the message does not name rank 1: %s", msg);
    }
    tutti_comm_destroy(comm);
    return 0;
}

static struct hang_cfg hang_configs[] = {{0, 2, 0}, {0, 4, 0}, {1, 2, 0},
                                         {1, 4, 0}, {0, 4, 1}, {1, 4, 1}};

ParameterizedTestParameters(hang, stopped_rank_is_named_by_every_rank_and_by_tutti_info)
{
    return cr_make_param_array(struct hang_cfg, hang_configs,
                               sizeof(hang_configs) / sizeof(hang_configs[0]));
}

ParameterizedTest(struct hang_cfg *cfg, hang, stopped_rank_is_named_by_every_rank_and_by_tutti_info,
                  .timeout = 60)
{
    char dir[] = "/tmp/tutti-hang-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp");
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "%s/rank-%%p.log", dir);
    integ_setenv("TUTTI_LOG_FILE", pattern);
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "3s");
    struct integ_opts o = {.nranks = cfg->nranks,
                           .deadline_s = 50,
                           .make_id = 1,
                           .arg = cfg,
                           .shared_bytes = sizeof(struct hang_shared)};
    integ_run(&o, hang_rank);
    const char *report = integ_hang_report(dir);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert(strstr(report, "\nbehind: 1\n") != NULL,
              "tutti-info --hang does not name rank 1:\n%s", report);
}
