/*
 * test_boot.c - start-up on real processes when something is off: a bootstrap root whose
 * process forked its ranks (the children must not keep the root's listening socket, so a rank
 * that comes after the root has closed is refused at once, with a clear message); a rank given
 * the wrong root port (its retries are logged at info, and both sides warn after 10 s, long
 * before the timeout); ranks started with different numbers of ranks (named as such, and every
 * rank fails at once, also one that comes after the verdict); a rendezvous file left by a
 * killed rank 0 (the next identical launch waits for the new one, or names the stale file);
 * shared memory segments left by a rank killed during its set-up (replaced, not in the way).
 *
 * Some checks look inside the library (tests link it statically): the root's address in the
 * unique id.
 */
#include "comm/comm.h"
#include "harness.h"
#include "comm/init.h"
#include "comm/launch.h"
#include "transports/shm/shm.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEC 1000000000LL

/* Sockets of this process bound to the port of `a` (the root's); -1 when /proc is unreadable. */
static int sockets_on_port(const union tutti_sockaddr *a)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        union tutti_sockaddr s;
        socklen_t len = sizeof(s);
        if (e->d_name[0] != '.' && getsockname(atoi(e->d_name), &s.sa, &len) == 0 &&
            s.sa.sa_family == a->sa.sa_family && s.in.sin_port == a->in.sin_port) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Does anything accept a TCP connection at `a` within 2 s? */
static int accepts_connections(const union tutti_sockaddr *a)
{
    int fd = -1, err = 0;
    if (tutti__sock_connect_start(a, &fd) != TUTTI_OK) {
        return 0;
    }
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int64_t end = integ_now_ns() + 2 * SEC; st == TUTTI_IN_PROGRESS && integ_now_ns() < end;) {
        struct pollfd p = {fd, POLLOUT, 0};
        poll(&p, 1, 10);
        st = tutti__sock_connect_check(fd, &err);
    }
    close(fd);
    return st == TUTTI_OK;
}

/* ---------------------------------------------------------------- the root and fork */

struct late_shared {
    _Atomic int joined;    /* early ranks with their communicator */
    _Atomic int late_done; /* the late rank has its answer */
};

/* An early rank: joins, reduces, then stays alive (with whatever it inherited) until the late
 * rank has been answered. */
static int early_rank(const struct integ_ctx *ctx)
{
    struct late_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_rank(&comm, 2, ctx->id, ctx->rank));
    atomic_fetch_add(&sh->joined, 1);
    int64_t end = integ_now_ns() + 40 * SEC;
    while (!atomic_load(&sh->late_done) && integ_now_ns() < end) {
        integ_pause_ms(5);
    }
    ICHECK(atomic_load(&sh->late_done), "the late rank was not answered within 40 s");
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

/* Rank 1 of 2 again (a rank restarted with the id of a job that has formed), long after the root
 * closed: refused at once, and told why. */
static int late_rank(const struct integ_ctx *ctx)
{
    struct late_shared *sh = ctx->arg;
    tutti_comm_t *comm = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_rank(&comm, 2, ctx->id, 1);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(NULL);
    atomic_store(&sh->late_done, 1);
    ICHECK(st != TUTTI_OK, "a rank joined a root that had closed");
    ICHECK(secs < 3, "the late rank was answered after %.1f s (TUTTI_TIMEOUT 10 s): %s: %s", secs,
           tutti_status_name(st), msg);
    ICHECK(!integ_contains(msg, "secret"), "the message blames the secret: %s", msg);
    ICHECK(integ_contains(msg, "bootstrap root") && integ_contains(msg, "closed"),
           "the message does not say that the root has closed: %s", msg);
    return 0;
}

/*
 * The test process makes the id (so it serves the root, in a thread) and forks two ranks, as
 * the perf tools' -N does. Once they have their communicator the root closes its port, and
 * nothing may still accept there: not the ranks either, which were forked while it listened.
 * A rank that comes then (here a second rank 1) gets a fast, clear error.
 */
Test(boot, a_forked_rank_does_not_keep_the_root_listening, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "10s");
    tutti_unique_id_t id;
    cr_assert_eq(tutti_get_unique_id(&id), TUTTI_OK, "%s", tutti_last_error(NULL));
    struct tutti_uid u;
    cr_assert_eq(tutti__uid_decode(&id, &u), TUTTI_OK);
    struct integ_opts o = {
        .nranks = 2, .deadline_s = 50, .id = &id, .shared_bytes = sizeof(struct late_shared)};
    struct integ_job *early = integ_start(&o, early_rank);
    struct late_shared *sh = integ_shared(early);
    int64_t end = integ_now_ns() + 20 * SEC;
    while ((atomic_load(&sh->joined) < 2 || sockets_on_port(&u.boot.root) != 0) &&
           integ_now_ns() < end) {
        integ_pause_ms(5);
    }
    cr_assert_eq(atomic_load(&sh->joined), 2, "the two ranks did not join");
    cr_assert_eq(sockets_on_port(&u.boot.root), 0, "the root did not close its port");
    int open = accepts_connections(&u.boot.root);
    struct integ_opts lo = {.nranks = 1, .deadline_s = 30, .id = &id, .arg = sh};
    integ_run(&lo, late_rank);
    atomic_store(&sh->late_done, 1);
    integ_finish(early, NULL, 0);
    cr_assert(!open, "the root's port still accepts connections after the root closed it (a "
                     "forked rank kept its listening socket)");
}

/* ---------------------------------------------------------------- launcher mistakes */

#define SECRET "00112233445566778899aabbccddeeff"

struct launch_cfg {
    char root[64];     /* TUTTI_ROOT of every rank */
    char bad_root[64]; /* ... but odd_rank's, when set */
    int odd_rank;      /* -1: none */
    int odd_nranks;    /* odd_rank's TUTTI_NRANKS, when > 0 */
    char log[64];      /* TUTTI_LOG_FILE prefix (rank appended), or "" */
};

static void launch_env(int rank, int nranks, void *arg)
{
    const struct launch_cfg *c = arg;
    int odd = rank == c->odd_rank;
    integ_setenv_int("TUTTI_RANK", rank);
    integ_setenv_int("TUTTI_NRANKS", odd && c->odd_nranks > 0 ? c->odd_nranks : nranks);
    integ_setenv("TUTTI_ROOT", odd && c->bad_root[0] != '\0' ? c->bad_root : c->root);
    integ_setenv("TUTTI_SECRET", SECRET);
    if (c->log[0] != '\0') {
        char path[96];
        snprintf(path, sizeof(path), "%s.%d", c->log, rank);
        unlink(path);
        integ_setenv("TUTTI_LOG_FILE", path);
        integ_setenv("TUTTI_LOG_LEVEL", "info");
    }
}

static void launch_cfg_init(struct launch_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->odd_rank = -1;
    int port = integ_free_port();
    cr_assert(port > 0, "no free port");
    snprintf(c->root, sizeof(c->root), "127.0.0.1:%d", port);
}

static void *init_env_thread(void *arg)
{
    tutti_comm_t *comm = NULL;
    (void)arg;
    (void)tutti_comm_init_env(&comm);
    return NULL;
}

/* Watch this rank's log until `text` appears (or `secs` pass); seconds it took, or -1. */
static double await_log(const char *path, const char *text, int secs, int64_t t0)
{
    for (int64_t end = t0 + secs * SEC; integ_now_ns() < end; integ_pause_ms(100)) {
        char *log = integ_read_file(path);
        int seen = integ_contains(log, text);
        free(log);
        if (seen) {
            return (double)(integ_now_ns() - t0) / 1e9;
        }
    }
    return -1;
}

/*
 * Rank 1 knocks at a port where nobody listens. While its init goes on (in a thread), the rank
 * watches its own log: rank 1 must log its retries at info at once and warn after 10 s without
 * contact; rank 0 (the root) must warn after 10 s that rank 1 has not joined. Both long before
 * TUTTI_TIMEOUT (30 s), which the test does not wait for.
 */
static int wrong_port_rank(const struct integ_ctx *ctx)
{
    const struct launch_cfg *c = ctx->arg;
    char path[96], retry[128], warn[128];
    snprintf(path, sizeof(path), "%s.%d", c->log, ctx->rank);
    int64_t t0 = integ_now_ns();
    pthread_t th;
    ICHECK(pthread_create(&th, NULL, init_env_thread, NULL) == 0, "pthread_create");
    if (ctx->rank == 1) {
        snprintf(retry, sizeof(retry), "INFO/BOOT bootstrap root %s: Connection refused; trying",
                 c->bad_root);
        snprintf(warn, sizeof(warn), "no contact with the bootstrap root %s for 10 s", c->bad_root);
    } else {
        snprintf(retry, sizeof(retry), "bootstrap root listening on %s", c->root);
        snprintf(warn, sizeof(warn), "bootstrap root: ranks 1 never joined after 1");
    }
    double t_retry = await_log(path, retry, 5, t0);
    double t_warn = await_log(path, warn, 20, t0);
    char *log = integ_read_file(path);
    int nwarn = integ_count(log, warn);
    ICHECK(t_retry >= 0 && t_retry < 3, "no \"%s\" in the log within 3 s:\n%s", retry, log);
    ICHECK(t_warn >= 9.5 && t_warn < 14,
           "the warning \"%s\" came after %.1f s (-1: not in 20 s):\n%s", warn, t_warn, log);
    ICHECK(nwarn == 1, "%d warnings \"%s\":\n%s", nwarn, warn, log);
    free(log);
    unlink(path);
    return 0; /* init still waits in its thread: the process ends under it */
}

Test(boot, a_wrong_root_port_is_logged_at_once_and_warned_about_after_10_s, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_TIMEOUT", "30s");
    /* Rank 0 ends while its init still waits: over shared memory it would leave its control
     * segment behind (a rank that dies during set-up does; the next job's sweep removes it). */
    integ_setenv("TUTTI_TRANSPORT", "tcp");
    static struct launch_cfg c;
    launch_cfg_init(&c);
    c.odd_rank = 1;
    int bad = integ_free_port();
    cr_assert(bad > 0, "no free port");
    snprintf(c.bad_root, sizeof(c.bad_root), "127.0.0.1:%d", bad);
    snprintf(c.log, sizeof(c.log), "/tmp/tutti-test-boot-%d.log", (int)getpid());
    struct integ_opts o = {.nranks = 2, .deadline_s = 40, .env = launch_env, .arg = &c};
    integ_run(&o, wrong_port_rank);
}

/*
 * Rank 2 was started with 4 ranks, the others with 3. Every rank must fail within seconds
 * (TUTTI_TIMEOUT is 20 s), told that the ranks disagree on the number of ranks, not that a
 * secret is wrong. Rank 1 comes a second late, after the verdict: it must be told too.
 */
static int nranks_mismatch_rank(const struct integ_ctx *ctx)
{
    if (ctx->rank == 1) {
        integ_pause_ms(1000);
    }
    tutti_comm_t *comm = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_env(&comm);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(NULL);
    ICHECK(st != TUTTI_OK, "init_env succeeded in a job whose ranks disagree on its size");
    ICHECK(secs < 4, "the error came after %.1f s (TUTTI_TIMEOUT 20 s): %s: %s", secs,
           tutti_status_name(st), msg);
    ICHECK(integ_contains(msg, "disagree on the number of ranks"),
           "the message does not name the mismatch: %s: %s", tutti_status_name(st), msg);
    ICHECK(!integ_contains(msg, "secret") && !integ_contains(msg, "authentication"),
           "the message blames authentication: %s", msg);
    return 0;
}

Test(boot, ranks_of_different_sizes_all_fail_at_once_naming_the_mismatch, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_TIMEOUT", "20s");
    static struct launch_cfg c;
    launch_cfg_init(&c);
    c.odd_rank = 2;
    c.odd_nranks = 4;
    struct integ_opts o = {.nranks = 3, .deadline_s = 40, .env = launch_env, .arg = &c};
    integ_run(&o, nranks_mismatch_rank);
}

/* ---------------------------------------------------------------- a stale rendezvous file */

struct slurm_cfg {
    long job;          /* SLURM_JOB_ID: a rendezvous file of this test's own */
    int first;         /* SLURM_PROCID of the harness's rank 0 */
    int ntasks;        /* SLURM_NTASKS */
    const char *limit; /* TUTTI_TIMEOUT */
};

static void slurm_env(int rank, int nranks, void *arg)
{
    const struct slurm_cfg *c = arg;
    (void)nranks;
    integ_setenv_int("SLURM_PROCID", c->first + rank);
    integ_setenv_int("SLURM_NTASKS", c->ntasks);
    integ_setenv("SLURM_NNODES", "1");
    integ_setenv_int("SLURM_JOB_ID", c->job);
    integ_setenv("SLURM_STEP_ID", "0");
    integ_setenv("SLURM_JOB_NODELIST", "localhost");
    integ_setenv("TUTTI_TIMEOUT", c->limit);
}

/* Where rank 0 of a single-node Slurm step publishes its root: the rendezvous file of the job
 * key "slurm-<job>-<step>-" (launch.c's job_key without a root address). */
static void rendezvous_path(long job, char *out, size_t len)
{
    char key[64];
    snprintf(key, sizeof(key), "slurm-%ld-0-", job);
    tutti__rendezvous_path(key, out, len);
}

/* Rank 0, killed by the test while it waits for rank 1: it leaves its rendezvous file. */
static int doomed_rank_0(const struct integ_ctx *ctx)
{
    (void)ctx;
    tutti_comm_t *comm = NULL;
    (void)tutti_comm_init_env(&comm);
    return integ_fail("rank 0 was not killed");
}

static char stale_path[128]; /* the rendezvous file of the test below */

/* Rank 1 alone with the stale file: its error names the file and how to remove it. */
static int lone_rank_1(const struct integ_ctx *ctx)
{
    (void)ctx;
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_env(&comm);
    const char *msg = tutti_last_error(NULL);
    char rm[160];
    snprintf(rm, sizeof(rm), "rm -f %s", stale_path);
    ICHECK(st == TUTTI_ERR_TIMEOUT, "init returned %s: %s", tutti_status_name(st), msg);
    ICHECK(integ_contains(msg, rm) && integ_contains(msg, "has ended"),
           "the error does not name the stale file and how to remove it: %s", msg);
    return 0;
}

/* The identical launch again, rank 0 a second late: rank 1 must wait for the new file. */
static int relaunched_rank(const struct integ_ctx *ctx)
{
    if (ctx->rank == 0) {
        integ_pause_ms(1000);
    }
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_env(&comm));
    int64_t x = 1, y = 0;
    ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK(y == 2, "allreduce gave %lld", (long long)y);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

/*
 * A launch without a root address (rank 0 publishes its root in a file) whose rank 0 is
 * SIGKILLed leaves that file. The next identical launch must not follow it to a dead root: its
 * ranks wait for the new rank 0 to replace it, and a rank that waits in vain is told which file
 * is stale and how to remove it.
 */
Test(boot, a_stale_rendezvous_file_of_a_killed_rank_0_is_replaced, .timeout = 90)
{
    integ_clear_launcher_env();
    static struct slurm_cfg c;
    c = (struct slurm_cfg){.job = 910000000L + getpid(), .ntasks = 2, .limit = "10s"};
    char *path = stale_path;
    rendezvous_path(c.job, path, sizeof(stale_path));
    unlink(path);
    struct integ_opts o = {.nranks = 1, .deadline_s = 30, .env = slurm_env, .arg = &c};
    struct integ_job *job = integ_start(&o, doomed_rank_0);
    for (int64_t end = integ_now_ns() + 20 * SEC; access(path, F_OK) != 0;) {
        cr_assert(integ_now_ns() < end, "rank 0 did not publish %s", path);
        integ_pause_ms(5);
    }
    integ_signal(job, 0, SIGKILL);
    integ_finish(job, NULL, 1u << 0);
    cr_assert_eq(access(path, F_OK), 0, "the killed rank 0 left no file (test premise)");

    static struct slurm_cfg lone;
    lone = (struct slurm_cfg){.job = c.job, .first = 1, .ntasks = 2, .limit = "2s"};
    struct integ_opts lo = {.nranks = 1, .deadline_s = 30, .env = slurm_env, .arg = &lone};
    integ_run(&lo, lone_rank_1);

    int64_t t0 = integ_now_ns();
    struct integ_opts ro = {.nranks = 2, .deadline_s = 40, .env = slurm_env, .arg = &c};
    integ_run(&ro, relaunched_rank);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    int left = access(path, F_OK) == 0;
    unlink(path);
    cr_assert(secs < 8, "the relaunch took %.1f s (TUTTI_TIMEOUT 10 s)", secs);
    cr_assert(!left, "the relaunch left %s behind", path);
}

/* ---------------------------------------------------------------- a stale shm segment */

struct shm_shared {
    _Atomic uint64_t comm_id;
    _Atomic int shm_off; /* ranks that ran without shared memory */
};

static int shm_rank(const struct integ_ctx *ctx)
{
    struct shm_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_env(&comm));
    atomic_store(&sh->comm_id, comm->fab.comm_id);
    if (comm->fab.net.ops[TUTTI_TRANSPORT_SHM] == NULL) {
        atomic_fetch_add(&sh->shm_off, 1);
    }
    int64_t x = ctx->rank + 1, y = 0;
    ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK(y == 3, "allreduce gave %lld", (long long)y);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

/* What a rank SIGKILLed during its set-up leaves: the segments it had made by then. */
static void plant_killed_rank_segments(uint64_t id)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        char name[64];
        tutti_status_t st;
        /* The control directory (shm_dir.c), and a control segment of earlier releases */
        snprintf(name, sizeof(name), "/tutti-%016llx-d", (unsigned long long)id);
        void *dir = tutti__shm_map(name, 3 * TUTTI_SHM_CTL_BYTES, 1, &st, NULL);
        snprintf(name, sizeof(name), "/tutti-%016llx-c1", (unsigned long long)id);
        void *ctl = tutti__shm_map(name, 4096, 1, &st, NULL);
        snprintf(name, sizeof(name), "/tutti-%016llx-f0-1-0", (unsigned long long)id);
        void *fifo = tutti__shm_map(name, 1 << 16, 1, &st, NULL);
        if (dir == NULL || ctl == NULL || fifo == NULL) {
            _exit(1);
        }
        raise(SIGKILL);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st), "the planting child could not make its segments");
}

/* The names /dev/shm holds for communicator id (space-separated), or "". */
static void segments_of(uint64_t id, char *out, size_t len)
{
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "tutti-%016llx-", (unsigned long long)id);
    out[0] = '\0';
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            size_t o = strlen(out);
            snprintf(out + o, len - o, " %s", e->d_name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

/*
 * A launch with a root address and a secret has the same communicator id every time, so the
 * segments of a rank killed during its set-up are in the way of the next identical launch. It
 * must replace them (their owner has ended) and run over shared memory, not fall back to TCP,
 * and leave nothing behind.
 */
Test(boot, segments_of_a_rank_killed_during_init_are_replaced, .timeout = 60)
{
    integ_clear_launcher_env();
    static struct launch_cfg c;
    launch_cfg_init(&c);
    struct integ_opts o = {.nranks = 2,
                           .deadline_s = 40,
                           .env = launch_env,
                           .arg = &c,
                           .shared_bytes = sizeof(struct shm_shared)};
    struct integ_job *job = integ_start(&o, shm_rank);
    struct shm_shared *sh = integ_shared(job);
    int status[2];
    (void)integ_wait(job, status);
    uint64_t id = atomic_load(&sh->comm_id);
    int off = atomic_load(&sh->shm_off);
    integ_finish(job, NULL, 0);
    cr_assert(id != 0 && off == 0, "the first launch: comm id %llx, %d ranks without shm",
              (unsigned long long)id, off);
    plant_killed_rank_segments(id);

    job = integ_start(&o, shm_rank);
    sh = integ_shared(job);
    (void)integ_wait(job, status);
    uint64_t again = atomic_load(&sh->comm_id);
    off = atomic_load(&sh->shm_off);
    integ_finish(job, NULL, 0);
    char left[512];
    segments_of(id, left, sizeof(left));
    cr_assert_eq(again, id, "the identical launch got another communicator id (test premise)");
    cr_assert_eq(off, 0, "%d ranks of the identical launch ran without shared memory", off);
    cr_assert_eq(left[0], '\0', "left in /dev/shm:%s", left);
}
