/*
 * test_shrink.c - tutti_comm_shrink on real processes: after a rank is SIGKILLed in the middle of
 * collectives, the survivors get the error, shrink (exclude NULL: the dead rank is found by
 * itself), and run correct all-reduces on the smaller communicator, ranks in their old order;
 * a healthy communicator shrinks with an explicit exclude list while the excluded rank looks
 * on, and the old one still works afterwards; bad exclude lists are refused.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SEC   1000000000LL
#define BIG   100003 /* elements of the larger all-reduce: several chunks and channels */
#define NRANK 4

/*
 * On the new communicator: its size, this rank's new rank (old order kept, `out` left out), and
 * two all-reduces whose sums only the right members give: sum of (old rank + 1), and an array
 * of BIG elements where element i holds (old rank + 1) * (i % 7 + 1).
 */
static int check_new_comm(tutti_comm_t *nc, int old_rank, int out, int nranks_old)
{
    int size = -1, rank = -1;
    ICHECK_OK(tutti_comm_size(nc, &size));
    ICHECK_OK(tutti_comm_rank(nc, &rank));
    ICHECK(size == nranks_old - 1, "the new communicator has %d ranks, not %d", size,
           nranks_old - 1);
    ICHECK(rank == old_rank - (old_rank > out), "old rank %d became rank %d", old_rank, rank);
    int64_t want = (int64_t)nranks_old * (nranks_old + 1) / 2 - (out + 1);
    int64_t x = old_rank + 1;
    ICHECK_OKC(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, nc, NULL), nc);
    ICHECK(x == want, "all-reduce on the new communicator gave %lld, not %lld", (long long)x,
           (long long)want);
    int32_t *v = malloc(BIG * sizeof(*v));
    ICHECK(v != NULL, "out of memory");
    for (int i = 0; i < BIG; i++) {
        v[i] = (old_rank + 1) * (i % 7 + 1);
    }
    ICHECK_OKC(tutti_allreduce(v, v, BIG, TUTTI_INT32, TUTTI_SUM, nc, NULL), nc);
    for (int i = 0; i < BIG; i++) {
        if (v[i] != (int32_t)want * (i % 7 + 1)) {
            int got = v[i];
            free(v);
            return integ_fail("element %d of the large all-reduce is %d, not %lld", i, got,
                              (long long)want * (i % 7 + 1));
        }
    }
    free(v);
    return 0;
}

/* ---------------------------------------------------------------- after a SIGKILL */

struct kill_cfg {
    int tcp;
    int victim; /* 0: the new communicator's bootstrap moves to the next rank */
};

struct kill_shared {
    _Atomic int iters[INTEG_MAX_RANKS];
};

static int killed_then_shrink(const struct integ_ctx *ctx)
{
    const struct kill_cfg *cfg = ctx->arg;
    struct kill_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int32_t buf[4096] = {0};
    tutti_status_t st = TUTTI_OK;
    int64_t end = integ_now_ns() + 30 * SEC;
    while (st == TUTTI_OK && integ_now_ns() < end) {
        st = tutti_allreduce(buf, buf, 4096, TUTTI_INT32, TUTTI_SUM, comm, NULL);
        atomic_fetch_add(&sh->iters[ctx->rank], 1);
    }
    ICHECK(ctx->rank != cfg->victim, "the victim was not killed");
    ICHECK(st == TUTTI_ERR_REMOTE || st == TUTTI_ERR_TIMEOUT,
           "collectives with a dead peer returned %s: %s", tutti_status_name(st),
           tutti_last_error(comm));
    tutti_comm_t *nc = NULL;
    ICHECK_OKC(tutti_comm_shrink(comm, NULL, 0, &nc), comm);
    if (check_new_comm(nc, ctx->rank, cfg->victim, ctx->nranks) != 0) {
        return 1;
    }
    ICHECK_OKC(tutti_comm_destroy(nc), NULL);
    tutti_status_t dst = tutti_comm_destroy(comm);
    ICHECK(dst == st, "destroying the failed comm returned %s, not %s", tutti_status_name(dst),
           tutti_status_name(st));
    return 0;
}

static struct kill_cfg kill_configs[] = {{0, 2}, {1, 2}, {0, 0}, {1, 0}};

ParameterizedTestParameters(shrink, survivors_of_a_killed_rank_shrink_and_go_on)
{
    return cr_make_param_array(struct kill_cfg, kill_configs,
                               sizeof(kill_configs) / sizeof(kill_configs[0]));
}

ParameterizedTest(struct kill_cfg *cfg, shrink, survivors_of_a_killed_rank_shrink_and_go_on,
                  .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "5s");
    struct integ_opts o = {.nranks = NRANK,
                           .deadline_s = 50,
                           .make_id = 1,
                           .arg = cfg,
                           .shared_bytes = sizeof(struct kill_shared)};
    struct integ_job *job = integ_start(&o, killed_then_shrink);
    struct kill_shared *sh = integ_shared(job);
    int64_t end = integ_now_ns() + 30 * SEC;
    for (int r = 0; r < NRANK; r++) {
        while (atomic_load(&sh->iters[r]) < 3 && integ_now_ns() < end) {
            integ_pause_ms(1);
        }
    }
    integ_signal(job, cfg->victim, SIGKILL);
    integ_finish(job, NULL, 1u << cfg->victim);
}

/* ---------------------------------------------------------------- a healthy communicator */

#define LEFT_OUT 2

struct healthy_shared {
    _Atomic int shrunk; /* ranks done with the new communicator */
};

/*
 * Every rank but LEFT_OUT shrinks with exclude = {LEFT_OUT}; LEFT_OUT waits until they are done
 * with the new communicator. Then all four run one more all-reduce on the old one.
 */
static int healthy_rank(const struct integ_ctx *ctx)
{
    struct healthy_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    if (ctx->rank != LEFT_OUT) {
        const int exclude[1] = {LEFT_OUT};
        tutti_comm_t *nc = NULL;
        ICHECK_OKC(tutti_comm_shrink(comm, exclude, 1, &nc), comm);
        if (check_new_comm(nc, ctx->rank, LEFT_OUT, ctx->nranks) != 0) {
            return 1;
        }
        ICHECK_OKC(tutti_comm_destroy(nc), NULL);
        atomic_fetch_add(&sh->shrunk, 1);
    } else {
        int64_t end = integ_now_ns() + 30 * SEC;
        while (atomic_load(&sh->shrunk) < ctx->nranks - 1 && integ_now_ns() < end) {
            integ_pause_ms(5);
        }
    }
    int64_t x = 1;
    ICHECK_OKC(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL), comm);
    ICHECK(x == ctx->nranks, "the old communicator's all-reduce gave %lld", (long long)x);
    ICHECK_OKC(tutti_comm_destroy(comm), NULL);
    return 0;
}

Test(shrink, healthy_comm_shrinks_with_an_exclude_list, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "20s");
    struct integ_opts o = {.nranks = NRANK,
                           .deadline_s = 50,
                           .make_id = 1,
                           .shared_bytes = sizeof(struct healthy_shared)};
    integ_run(&o, healthy_rank);
}

/* ---------------------------------------------------------------- arguments */

static int bad_args_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL, *nc = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    const int self[1] = {ctx->rank}, far[1] = {ctx->nranks};
    ICHECK(tutti_comm_shrink(comm, self, 1, &nc) == TUTTI_ERR_INVALID_ARG, "excluding oneself");
    ICHECK(integ_contains(tutti_last_error(comm), "exclude[0]"), "message: %s",
           tutti_last_error(comm));
    ICHECK(tutti_comm_shrink(comm, far, 1, &nc) == TUTTI_ERR_INVALID_ARG, "a rank out of range");
    ICHECK(tutti_comm_shrink(comm, NULL, 1, &nc) == TUTTI_ERR_INVALID_ARG, "NULL with nexclude 1");
    ICHECK(tutti_comm_shrink(NULL, NULL, 0, &nc) == TUTTI_ERR_INVALID_ARG, "NULL comm");
    ICHECK(nc == NULL, "newcomm_p was set by a failed call");
    /* A single rank shrinks to itself. */
    ICHECK_OKC(tutti_comm_shrink(comm, NULL, 0, &nc), comm);
    int64_t x = 5;
    ICHECK_OKC(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, nc, NULL), nc);
    ICHECK(x == 5, "all-reduce of one rank gave %lld", (long long)x);
    ICHECK_OKC(tutti_comm_destroy(nc), NULL);
    ICHECK_OKC(tutti_comm_destroy(comm), NULL);
    return 0;
}

Test(shrink, bad_exclude_lists_are_refused, .timeout = 60)
{
    integ_run_ranks(1, bad_args_rank, NULL, 0);
}
