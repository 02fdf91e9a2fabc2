/*
 * test_faults.c - what the other ranks see when one goes wrong, on real processes: a rank
 * SIGKILLed in the middle of collectives, a rank stopped with SIGSTOP (before and after its
 * connections exist), tutti_comm_abort from another thread, and strangers on the bootstrap
 * root's port and on a rank's TCP port (wrong secret, garbage, half-open connections) while the
 * job goes on. Every wait is bounded: TUTTI_TIMEOUT is a few seconds and each check allows that
 * plus slack for slow, shared CI machines.
 *
 * Some checks look inside the library (tests link it statically): the root's address in the
 * unique id, a rank's TCP listening address, and whether a thread is inside a collective.
 */
#include "comm/comm.h"
#include "harness.h"
#include "comm/init.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SEC       1000000000LL
#define TIMEOUT_S 3 /* TUTTI_TIMEOUT of these tests */
#define SLACK_S   7 /* what a loaded 2-core CI machine may add */

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

#define VICTIM     1
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

ParameterizedTest(struct config *cfg, faults, killed_rank_fails_every_peer_in_time, .timeout = 60)
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

/*
 * A rank killed right after its first collective leaves no shared-memory names behind: a FIFO's
 * name must go as soon as both ends have it mapped, so that a crash cannot leak its pages.
 */
struct leak_shared {
    _Atomic uint64_t comm_id;
};

static int leak_rank(const struct integ_ctx *ctx)
{
    struct leak_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    atomic_store(&sh->comm_id, comm->fab.comm_id);
    int64_t x = 1;
    ICHECK_OK(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK_OK(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    if (ctx->rank == 1) {
        raise(SIGKILL);
    }
    tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    ICHECK(st == TUTTI_ERR_REMOTE, "allreduce with a killed peer returned %s",
           tutti_status_name(st));
    tutti_comm_destroy(comm);
    return 0;
}

Test(faults, killed_rank_leaves_no_shared_memory_names, .timeout = 60)
{
    env_for_faults(0, "10s");
    struct integ_opts o = {
        .nranks = 2, .deadline_s = 50, .make_id = 1, .shared_bytes = sizeof(struct leak_shared)};
    struct integ_job *job = integ_start(&o, leak_rank);
    struct leak_shared *sh = integ_shared(job);
    int status[2];
    (void)integ_wait(job, status); /* then read the shared page, which integ_finish frees */
    unsigned long long id = atomic_load(&sh->comm_id);
    integ_finish(job, NULL, 1u << 1);
    char prefix[64], left[512] = "";
    snprintf(prefix, sizeof(prefix), "tutti-%016llx-", id);
    DIR *d = opendir("/dev/shm");
    cr_assert_not_null(d, "/dev/shm: %s", strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            size_t o = strlen(left);
            snprintf(left + o, sizeof(left) - o, " %s", e->d_name);
            char path[300];
            snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
            unlink(path); /* do not leave it to the next run */
        }
    }
    closedir(d);
    cr_assert_eq(left[0], '\0', "left in /dev/shm:%s", left);
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
    ICHECK(secs >= TIMEOUT_S - 0.5 || st == TUTTI_ERR_REMOTE,
           "timed out after %.1f s, before "
           "TUTTI_TIMEOUT (%d s)",
           secs, TIMEOUT_S);
    ICHECK(secs < TIMEOUT_S + SLACK_S, "failed only after %.1f s", secs);
    if (ctx->nranks == 2) {
        ICHECK(names_rank(msg, 1), "the timeout does not name rank 1: %s", msg);
    } else {
        /* A timeout names the peer waited for; a relayed error names the rank that reports it
         * (which may have timed out waiting for this rank: timeouts cascade along the ring); a
         * rank that waits in the control pages (a small call) may also see the stopped rank
         * exit once the test kills it, and name it. */
        int named = 0;
        for (int r = 0; r < ctx->nranks; r++) {
            char reports[32];
            snprintf(reports, sizeof(reports), "rank %d reports", r);
            named |=
                r != ctx->rank && (st == TUTTI_ERR_TIMEOUT
                                       ? names_rank(msg, r)
                                       : integ_contains(msg, reports) ||
                                             (integ_contains(msg, "exited") && names_rank(msg, r)));
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
    while (tutti__comm_busy(j->comm) == 0 && integ_now_ns() < end) {
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
    ICHECK(st == TUTTI_ERR_REMOTE,
           "allreduce after the peer aborted returned %s (tutti/comm.h: "
           "TUTTI_ERR_REMOTE): %s",
           tutti_status_name(st), msg);
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
    struct integ_opts o = {
        .nranks = 2, .deadline_s = 50, .make_id = 1, .shared_bytes = sizeof(struct abort_shared)};
    integ_run(&o, abort_rank);
}

/* ---------------------------------------------------------------- strangers */

/* A blocking TCP connection to `to`, or -1. */
static int dial(const union tutti_sockaddr *to)
{
    int fd = -1, err = 0;
    if (tutti__sock_connect_start(to, &fd) != TUTTI_OK) {
        return -1;
    }
    tutti_status_t st;
    int64_t end = integ_now_ns() + 5 * SEC;
    while ((st = tutti__sock_connect_check(fd, &err)) == TUTTI_IN_PROGRESS &&
           integ_now_ns() < end) {
        struct pollfd p = {fd, POLLOUT, 0};
        poll(&p, 1, 10);
    }
    if (st != TUTTI_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Has the other end closed fd (EOF or reset) within `secs`? Data it sent first is skipped. */
static int closed_by_peer(int fd, int secs)
{
    int64_t end = integ_now_ns() + secs * SEC;
    while (integ_now_ns() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
            char b[256];
            ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                return 1;
            }
        }
    }
    return 0;
}

/* The three strangers: one with another job's secret, one sending garbage, one that is silent. */
struct strangers {
    int wrong, garbage, silent;
    struct tutti_hs hs; /* the wrong-secret handshake */
};

static void strangers_open(struct strangers *s, const union tutti_sockaddr *to, uint64_t id)
{
    static const uint8_t other_secret[TUTTI_SECRET_BYTES] = "not-the-secret!";
    uint8_t payload[TUTTI_HS_PAYLOAD] = {1, 2, 3};
    char junk[600];
    memset(junk, 'G', sizeof(junk));
    s->wrong = dial(to);
    s->garbage = dial(to);
    s->silent = dial(to);
    cr_assert(s->wrong >= 0 && s->garbage >= 0 && s->silent >= 0, "cannot connect to the port");
    cr_assert_eq(send(s->garbage, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
    tutti__hs_init_connect(&s->hs, s->wrong, other_secret, id, payload, sizeof(payload),
                           tutti__now_ns() + 30 * SEC);
}

/* Drive the wrong-secret handshake to its end; it must not succeed. */
static tutti_status_t strangers_run_hs(struct strangers *s)
{
    tutti_status_t st;
    while ((st = tutti__hs_progress(&s->hs)) == TUTTI_IN_PROGRESS) {
        struct pollfd p = {s->wrong, POLLIN | POLLOUT, 0};
        poll(&p, 1, 10);
    }
    return st;
}

static void strangers_close(struct strangers *s)
{
    close(s->wrong);
    close(s->garbage);
    close(s->silent);
}

static int small_job_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int64_t x = ctx->rank + 1, y = 0;
    ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK(y == (int64_t)ctx->nranks * (ctx->nranks + 1) / 2, "allreduce gave %lld", (long long)y);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

/*
 * Strangers reach the bootstrap root before any rank: the root refuses the wrong secret and
 * the garbage, and serves the job while the silent connection stays open.
 */
Test(faults, strangers_at_the_root_are_refused_while_the_job_goes_on, .timeout = 60)
{
    env_for_faults(0, "10s");
    tutti_unique_id_t id;
    cr_assert_eq(tutti_get_unique_id(&id), TUTTI_OK);
    struct tutti_uid u;
    cr_assert_eq(tutti__uid_decode(&id, &u), TUTTI_OK);
    struct strangers s;
    strangers_open(&s, &u.boot.root, u.boot.job_id);
    tutti_status_t hs = strangers_run_hs(&s);
    cr_assert(hs == TUTTI_ERR_REMOTE || hs == TUTTI_ERR_AUTH,
              "the root did not refuse another job's secret: %s", tutti_status_name(hs));
    cr_assert(closed_by_peer(s.garbage, 15), "the root kept a connection that sent garbage");

    /* The job runs with the silent stranger still connected; the root, done once every rank
     * has its communicator, closes it then. */
    struct integ_opts o = {.nranks = 3, .deadline_s = 40, .id = &id};
    integ_run(&o, small_job_rank);
    cr_assert(closed_by_peer(s.silent, 15), "the root kept a silent connection after the set-up");
    strangers_close(&s);
}

/* Connections the root (a thread of this process) holds: sockets here whose local port is the
 * root's and that have a peer; -errno when /proc/self/fd cannot be read. Only system calls and
 * stack memory: this runs beside fork() of the ranks, and a child forked while this thread held
 * an allocator lock (opendir's malloc; ASan's allocator has no fork handler) would deadlock. */
static int root_held(const union tutti_sockaddr *root)
{
    int n = 0;
    int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) {
        return -errno;
    }
    char buf[4096] __attribute__((aligned(8)));
    long got;
    while ((got = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0) {
        for (long off = 0; off < got;) {
            const struct dirent64 *e = (const struct dirent64 *)(buf + off);
            off += e->d_reclen;
            int fd = atoi(e->d_name);
            union tutti_sockaddr a, p;
            socklen_t al = sizeof(a), pl = sizeof(p);
            if (e->d_name[0] != '.' && fd != d && getsockname(fd, &a.sa, &al) == 0 &&
                a.sa.sa_family == root->sa.sa_family && a.in.sin_port == root->in.sin_port &&
                getpeername(fd, &p.sa, &pl) == 0) {
                n++;
            }
        }
    }
    int err = got < 0 ? errno : 0;
    close(d);
    return got < 0 ? -err : n;
}

/* Watches root_held from before the flood until the job has ended. */
struct held_watch {
    const union tutti_sockaddr *root;
    _Atomic int stop;
    int most, samples, failed, last_errno;
};

static void *held_watcher(void *arg)
{
    struct held_watch *w = arg;
    while (!atomic_load(&w->stop)) {
        int n = root_held(w->root);
        w->samples++;
        if (n < 0) {
            w->failed++;
            w->last_errno = -n;
        } else {
            w->most = TUTTI_MAX(w->most, n);
        }
        pause_ms(2);
    }
    return NULL;
}

/*
 * More silent connections than the root keeps handshakes for reach it before the ranks: it
 * holds at most TUTTI_BOOT_MAX_HANDSHAKES of them at any time (the rest wait in the listen
 * queue, and newcomers replace those that waited longest), and the job's set-up succeeds.
 */
Test(faults, a_flood_of_silent_connections_at_the_root_is_capped, .timeout = 90)
{
    enum { EXTRA = 100, N = TUTTI_BOOT_MAX_HANDSHAKES + EXTRA };
    env_for_faults(0, "10s");
    tutti_unique_id_t id;
    cr_assert_eq(tutti_get_unique_id(&id), TUTTI_OK);
    struct tutti_uid u;
    cr_assert_eq(tutti__uid_decode(&id, &u), TUTTI_OK);
    static struct held_watch w;
    w = (struct held_watch){.root = &u.boot.root};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, held_watcher, &w), 0);
    static int silent[N];
    for (int i = 0; i < N; i++) {
        silent[i] = dial(&u.boot.root);
        cr_assert(silent[i] >= 0, "silent connection %d of %d: cannot connect", i, N);
    }
    struct integ_opts o = {.nranks = 3, .deadline_s = 60, .id = &id};
    integ_finish(integ_start(&o, small_job_rank), NULL, 0); /* every rank set up and reduced */
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    /* Handshakes in progress are capped; the ranks that have joined hold theirs besides. */
    cr_assert(w.most <= TUTTI_BOOT_MAX_HANDSHAKES + o.nranks,
              "the root held %d connections at once, cap %d handshakes + %d ranks", w.most,
              TUTTI_BOOT_MAX_HANDSHAKES, o.nranks);
    cr_assert(w.most >= TUTTI_BOOT_MAX_HANDSHAKES - 3,
              "the root held at most %d of %d connections (%d samples, %d could not read "
              "/proc/self/fd: %s; RLIMIT_NOFILE %llu)",
              w.most, N, w.samples, w.failed, strerror(w.last_errno),
              (unsigned long long)rl.rlim_cur);
    for (int i = 0; i < N; i++) {
        cr_assert(closed_by_peer(silent[i], 15), "silent connection %d was kept open", i);
        close(silent[i]);
    }
}

struct port_shared {
    struct tutti_wire_addr addr[INTEG_MAX_RANKS]; /* each rank's TCP listening address */
    _Atomic uint64_t comm_id;
    _Atomic int published, attacked, verified;
};

/*
 * Each rank publishes its TCP listening address, waits until the test process has connected
 * strangers to every rank's port, then runs collectives (they must succeed and be right) until
 * the test process has seen every stranger refused. One rank is late in every round, so the
 * others wait, which is when a rank looks at its port.
 */
static int port_rank(const struct integ_ctx *ctx)
{
    struct port_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    memcpy(&sh->addr[ctx->rank], comm->fab.peers[ctx->rank].blob[TUTTI_TRANSPORT_TCP],
           sizeof(struct tutti_wire_addr));
    atomic_store(&sh->comm_id, comm->fab.comm_id);
    atomic_fetch_add(&sh->published, 1);
    ICHECK(await_flag(&sh->attacked, 30), "the test process did not attack");
    int32_t any = 0;
    int64_t end = integ_now_ns() + 30 * SEC;
    for (int k = 0; !any && integ_now_ns() < end; k++) {
        if (k % ctx->nranks == ctx->rank) {
            pause_ms(5);
        }
        static int32_t v[10000];
        for (int i = 0; i < 10000; i++) {
            v[i] = k + i;
        }
        ICHECK_OK(tutti_allreduce(v, v, 10000, TUTTI_INT32, TUTTI_SUM, comm, NULL));
        ICHECK(v[9999] == (k + 9999) * ctx->nranks, "round %d: allreduce gave %d", k, v[9999]);
        int32_t seen = atomic_load(&sh->verified);
        ICHECK_OK(tutti_allreduce(&seen, &any, 1, TUTTI_INT32, TUTTI_MAX, comm, NULL));
    }
    ICHECK(any, "the test process did not see the strangers refused within 30 s");
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

Test(faults, strangers_at_a_rank_port_are_refused_while_the_job_goes_on, .timeout = 90)
{
    enum { N = 3 };
    env_for_faults(1, "10s");
    struct integ_opts o = {
        .nranks = N, .deadline_s = 80, .make_id = 1, .shared_bytes = sizeof(struct port_shared)};
    struct integ_job *job = integ_start(&o, port_rank);
    struct port_shared *sh = integ_shared(job);
    int64_t end = integ_now_ns() + 30 * SEC;
    while (atomic_load(&sh->published) < N && integ_now_ns() < end) {
        pause_ms(1);
    }
    cr_assert_eq(atomic_load(&sh->published), N, "the ranks did not publish their ports");
    struct strangers s[N];
    for (int r = 0; r < N; r++) {
        union tutti_sockaddr a;
        cr_assert_eq(tutti__wire_addr_decode(&sh->addr[r], &a), TUTTI_OK);
        strangers_open(&s[r], &a, atomic_load(&sh->comm_id));
    }
    atomic_store(&sh->attacked, 1);
    for (int r = 0; r < N; r++) {
        tutti_status_t hs = strangers_run_hs(&s[r]);
        cr_assert(hs == TUTTI_ERR_REMOTE || hs == TUTTI_ERR_AUTH,
                  "rank %d did not refuse another job's secret: %s", r, tutti_status_name(hs));
        cr_assert(closed_by_peer(s[r].garbage, 20), "rank %d kept a connection that sent garbage",
                  r);
    }
    atomic_store(&sh->verified, 1);
    integ_finish(job, NULL, 0);
    for (int r = 0; r < N; r++) {
        strangers_close(&s[r]);
    }
}
