/*
 * test_faults.c - what the other ranks see when one goes wrong, on real processes: a rank
 * SIGKILLed in the middle of collectives, a rank stopped with SIGSTOP (before and after its
 * connections exist), tutti_comm_abort from another thread. Every wait is bounded: TUTTI_TIMEOUT
 * is a few seconds and each check allows that plus slack for slow, shared CI machines.
 *
 * The abort test looks inside the library (tests link it statically): whether a thread is inside
 * a collective.
 */
#include "comm.h"
#include "harness.h"
#include "init.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000000LL
#define TIMEOUT_S 3 /* TUTTI_TIMEOUT of these tests */
#define SLACK_S 7   /* what a loaded 2-core CI machine may add */

static void env_for_faults(int tcp, const char *timeout)
{
    integ_setenv("TUTTI_TRANSPORT", tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", timeout);
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Poll *flag until it is set or `secs` passed; returns whether it was set. */
static int await_flag(_Atomic int *flag, int secs)
{
    int64_t end = integ_now_ns() + secs * SEC;
    while (!atomic_load(flag)) {
        if (integ_now_ns() > end) {
            return 0;
        }
        pause_ms(1);
    }
    return 1;
}

/* "rank 3 (host h, pid 7)" is how the library names a peer in messages. */
static int names_rank(const char *msg, int rank)
{
    char needle[32];
    snprintf(needle, sizeof(needle), "rank %d (", rank);
    return integ_contains(msg, needle);
}

struct config {
    int tcp;
    int nranks;
};

/* ---------------------------------------------------------------- a rank is killed */

struct kill_shared {
    _Atomic int iters[INTEG_MAX_RANKS];
    _Atomic int64_t kill_ns; /* CLOCK_MONOTONIC of the SIGKILL, system-wide */
};

#define VICTIM 1
#define KILL_COUNT (1 << 20)

/*
 * Every rank runs all-reduces of 4 MiB back to back until one fails. The victim is SIGKILLed by
 * the test process in the middle of that; every survivor must fail with REMOTE or TIMEOUT within
 * TUTTI_TIMEOUT (+ slack) of the kill, with a message that names the dead rank, and then
 * destroy its communicator without hanging.
 */
static int killed_rank(const struct integ_ctx *ctx)
{
    struct kill_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int32_t *buf = calloc(KILL_COUNT, 4);
    ICHECK(buf != NULL, "out of memory");
    tutti_status_t st = TUTTI_OK;
    int64_t end = integ_now_ns() + 40 * SEC;
    while (st == TUTTI_OK && integ_now_ns() < end) {
        st = tutti_allreduce(buf, buf, KILL_COUNT, TUTTI_INT32, TUTTI_SUM, comm, NULL);
        atomic_fetch_add(&sh->iters[ctx->rank], 1);
    }
    int64_t now = integ_now_ns(), killed = atomic_load(&sh->kill_ns);
    const char *msg = tutti_last_error(comm);
    ICHECK(ctx->rank != VICTIM, "the victim was not killed");
    ICHECK(st != TUTTI_OK, "no error within 40 s of collectives with a dead peer");
    ICHECK(killed != 0, "allreduce failed before the kill: %s: %s", tutti_status_name(st), msg);
    double secs = (double)(now - killed) / 1e9;
    ICHECK(st == TUTTI_ERR_REMOTE || st == TUTTI_ERR_TIMEOUT, "allreduce returned %s: %s",
           tutti_status_name(st), msg);
    ICHECK(secs < TIMEOUT_S + SLACK_S, "the error came %.1f s after the kill (TUTTI_TIMEOUT %d)",
           secs, TIMEOUT_S);
    ICHECK(names_rank(msg, VICTIM), "the message does not name rank %d: %s", VICTIM, msg);
    int64_t t0 = integ_now_ns();
    tutti_status_t dst = tutti_comm_destroy(comm);
    ICHECK(dst == st, "destroy returned %s, the comm failed with %s", tutti_status_name(dst),
           tutti_status_name(st));
    ICHECK(integ_now_ns() - t0 < (TIMEOUT_S + SLACK_S) * SEC, "destroy took too long");
    free(buf);
    return 0;
}

static struct config kill_configs[] = {{0, 2}, {0, 4}, {1, 2}, {1, 4}};

ParameterizedTestParameters(faults, killed_rank_fails_every_peer_in_time)
{
    return cr_make_param_array(struct config, kill_configs, 4);
}

ParameterizedTest(struct config *cfg, faults, killed_rank_fails_every_peer_in_time,
                  .timeout = 60)
{
    env_for_faults(cfg->tcp, "3s");
    struct integ_opts o = {.nranks = cfg->nranks,
                           .deadline_s = 50,
                           .make_id = 1,
                           .shared_bytes = sizeof(struct kill_shared)};
    struct integ_job *job = integ_start(&o, killed_rank);
    struct kill_shared *sh = integ_shared(job);
    /* Kill once every rank is in the loop (two all-reduces done: connections are up). */
    int64_t end = integ_now_ns() + 30 * SEC;
    for (int r = 0; r < cfg->nranks; r++) {
        while (atomic_load(&sh->iters[r]) < 2 && integ_now_ns() < end) {
            pause_ms(1);
        }
    }
    atomic_store(&sh->kill_ns, integ_now_ns());
    integ_signal(job, VICTIM, SIGKILL);
    integ_finish(job, NULL, 1u << VICTIM);
}

/* ---------------------------------------------------------------- a rank is stuck */

struct stop_shared {
    _Atomic int pid[INTEG_MAX_RANKS];
};

struct stop_cfg {
    int tcp;
    int nranks;
    int connected; /* the stuck rank stops after a first all-reduce (connections exist) */
};

/*
 * Rank 1 stops itself (SIGSTOP), either right after init or after a first all-reduce. The
 * others' next all-reduce must fail with TIMEOUT (or REMOTE, relayed from a rank that timed
 * out first) within TUTTI_TIMEOUT + slack, the message naming whom they waited for: rank 1 with
 * two ranks. Rank 0 kills rank 1 at the end.
 */
static int stuck_body(const struct integ_ctx *ctx, const struct stop_cfg *cfg, tutti_comm_t *c)
{
    int64_t x = 1;
    if (cfg->connected) {
        ICHECK_OK(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, c, NULL));
    }
    if (ctx->rank == 1) {
        raise(SIGSTOP);
        return integ_fail("rank 1 was continued instead of killed");
    }
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, c, NULL);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(c);
    ICHECK(st == TUTTI_ERR_TIMEOUT || (ctx->nranks > 2 && st == TUTTI_ERR_REMOTE),
           "allreduce with a stopped peer returned %s: %s", tutti_status_name(st), msg);
    ICHECK(secs >= TIMEOUT_S - 0.5 || st == TUTTI_ERR_REMOTE, "timed out after %.1f s, before "
           "TUTTI_TIMEOUT (%d s)", secs, TIMEOUT_S);
    ICHECK(secs < TIMEOUT_S + SLACK_S, "failed only after %.1f s", secs);
    if (ctx->nranks == 2) {
        ICHECK(names_rank(msg, 1), "the timeout does not name rank 1: %s", msg);
    } else {
        /* A timeout names the peer waited for; a relayed error names the rank that reports it
         * (which may have timed out waiting for this rank: timeouts cascade along the ring). */
        int named = 0;
        for (int r = 0; r < ctx->nranks; r++) {
            char reports[32];
            snprintf(reports, sizeof(reports), "rank %d reports", r);
            named |= r != ctx->rank &&
                     (st == TUTTI_ERR_TIMEOUT ? names_rank(msg, r) : integ_contains(msg, reports));
        }
        ICHECK(named, "the error names no peer: %s", msg);
    }
    tutti_comm_destroy(c);
    return 0;
}

static int stuck_rank(const struct integ_ctx *ctx)
{
    const struct stop_cfg *cfg = ctx->arg;
    struct stop_shared *sh = ctx->shared;
    atomic_store(&sh->pid[ctx->rank], (int)getpid());
    tutti_comm_t *c = NULL;
    int rc = integ_comm_init(ctx, NULL, &c);
    rc = rc != 0 ? rc : stuck_body(ctx, cfg, c);
    if (ctx->rank == 0 && atomic_load(&sh->pid[1]) > 0) {
        kill(atomic_load(&sh->pid[1]), SIGKILL); /* whatever happened, free the stuck rank */
    }
    return rc;
}

static struct stop_cfg stop_configs[] = {
    {0, 2, 0}, {0, 2, 1}, {1, 2, 0}, {1, 2, 1}, {0, 3, 1}, {1, 3, 1},
};

ParameterizedTestParameters(faults, stuck_rank_times_out_naming_whom_they_waited_for)
{
    return cr_make_param_array(struct stop_cfg, stop_configs,
                               sizeof(stop_configs) / sizeof(stop_configs[0]));
}

ParameterizedTest(struct stop_cfg *cfg, faults, stuck_rank_times_out_naming_whom_they_waited_for,
                  .timeout = 60)
{
    env_for_faults(cfg->tcp, "3s");
    struct integ_opts o = {.nranks = cfg->nranks,
                           .deadline_s = 50,
                           .make_id = 1,
                           .arg = cfg,
                           .shared_bytes = sizeof(struct stop_shared)};
    integ_finish(integ_start(&o, stuck_rank), NULL, 1u << 1);
}

/* ---------------------------------------------------------------- abort */

struct abort_shared {
    _Atomic int aborted;
};

struct abort_job {
    tutti_comm_t *comm;
    int64_t t_abort;
    tutti_status_t st;
};

/* Wait until the main thread is inside its all-reduce, then abort the comm under it. */
static void *aborter(void *arg)
{
    struct abort_job *j = arg;
    int64_t end = integ_now_ns() + 20 * SEC;
    while (atomic_load(&j->comm->state.inflight) == 0 && integ_now_ns() < end) {
        pause_ms(1);
    }
    pause_ms(20); /* let it settle into waiting for rank 1 */
    j->t_abort = integ_now_ns();
    j->st = tutti_comm_abort(j->comm);
    return NULL;
}

/*
 * Rank 0 blocks in an all-reduce that rank 1 does not join; another thread of rank 0 aborts the
 * comm: the all-reduce returns ABORTED at once. Rank 1 then calls the all-reduce (which may
 * still complete with the data rank 0 sent before the abort) and another one, and gets an error
 * naming rank 0 long before its TUTTI_TIMEOUT (20 s here): the abort notice reached it.
 */
static int abort_rank(const struct integ_ctx *ctx)
{
    struct abort_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int64_t x = 1;
    ICHECK_OK(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    if (ctx->rank == 0) {
        struct abort_job j = {comm, 0, TUTTI_ERR_INTERNAL};
        pthread_t th;
        ICHECK(pthread_create(&th, NULL, aborter, &j) == 0, "pthread_create");
        tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
        int64_t t_ret = integ_now_ns();
        pthread_join(th, NULL);
        atomic_store(&sh->aborted, 1);
        ICHECK(j.st == TUTTI_OK, "tutti_comm_abort returned %s", tutti_status_name(j.st));
        ICHECK(st == TUTTI_ERR_ABORTED, "the aborted allreduce returned %s: %s",
               tutti_status_name(st), tutti_last_error(NULL));
        double secs = (double)(t_ret - j.t_abort) / 1e9;
        ICHECK(secs < 2.0, "the allreduce returned %.2f s after the abort", secs);
        return 0; /* the comm is gone */
    }
    ICHECK(await_flag(&sh->aborted, 30), "rank 0 did not abort");
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    if (st == TUTTI_OK) {
        /* Rank 0 had sent all that this rank needed before it aborted, which completes this
         * rank's part of that all-reduce; the next one cannot complete. */
        st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(comm);
    ICHECK(st == TUTTI_ERR_REMOTE, "allreduce after the peer aborted returned %s (tutti/comm.h: "
           "TUTTI_ERR_REMOTE): %s", tutti_status_name(st), msg);
    ICHECK(secs < 5.0, "the peer learned of the abort only after %.1f s", secs);
    ICHECK(integ_contains(msg, "rank 0"), "the message does not name rank 0: %s", msg);
    tutti_comm_destroy(comm);
    return 0;
}

static struct config abort_configs[] = {{0, 2}, {1, 2}};

ParameterizedTestParameters(faults, abort_from_another_thread_unblocks_and_tells_peers)
{
    return cr_make_param_array(struct config, abort_configs, 2);
}

ParameterizedTest(struct config *cfg, faults, abort_from_another_thread_unblocks_and_tells_peers,
                  .timeout = 60)
{
    env_for_faults(cfg->tcp, "20s");
    struct integ_opts o = {.nranks = 2,
                           .deadline_s = 50,
                           .make_id = 1,
                           .shared_bytes = sizeof(struct abort_shared)};
    integ_run(&o, abort_rank);
}

