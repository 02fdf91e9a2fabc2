/*
 * local_ranks.c - forked local ranks for the command-line tools: the unique id is made before
 * the fork (the parent serves the bootstrap root), a spawner child forks the ranks, and the
 * parent waits for all of them; or one rank of a launcher's job. A rank killed by a signal takes
 * the others down, at once or after a grace period in which they may notice the dead peer and exit
 * by themselves. SIGTERM, SIGINT or SIGHUP to the parent (timeout, Ctrl-C, a batch system) goes to
 * every rank, and the parent waits for them. Once all have ended, the parent removes whatever
 * of the job is left in /dev/shm (ranks killed during their set-up leave segments there).
 */
#include "local_ranks.h"
#include "comm/init.h"
#include "base/env.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --bind core: rank r runs on the r-th CPU this process may use, when every rank gets its own
 * (mpirun binds to cores by default in the same case; with more ranks than CPUs nothing is
 * pinned, and the scheduler shares the CPUs out). */
void local_ranks_bind(const char *tool, int rank, int nranks)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || nranks > CPU_COUNT(&allowed)) {
        return;
    }
    int seen = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed) && ++seen == rank) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof(one), &one) != 0) {
                fprintf(stderr, "%s: rank %d: cannot bind to CPU %d: %s (running unbound)\n", tool,
                        rank, cpu, strerror(errno));
            }
            return;
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void kill_left(pid_t *pids, int n, int sig)
{
    for (int k = 0; k < n; k++) {
        if (pids[k] > 0) {
            kill(pids[k], sig);
        }
    }
}

/* A signal that ends the job, caught in the parent: forwarded to the ranks, raised again once
 * they have ended and the job's leftovers are removed. */
static volatile sig_atomic_t stop_signal;
static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP};

static void on_stop(int sig)
{
    stop_signal = sig;
}

/* how: SIG_BLOCK or SIG_UNBLOCK the stop signals. */
static void stop_mask(int how)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
        sigaddset(&set, stop_signals[i]);
    }
    sigprocmask(how, &set, NULL);
}

static void stop_handlers(void (*fn)(int))
{
    for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = fn;
        sigaction(stop_signals[i], &sa, NULL);
    }
}

/*
 * Wait for one child: blocking while no rank has died of a signal; after that, poll until the
 * grace deadline and then send the others SIGTERM. Returns the pid, or -1 on error.
 */
static pid_t wait_one(pid_t *pids, int n, double deadline, int *status_p)
{
    if (deadline <= 0.0) {
        return wait(status_p);
    }
    for (;;) {
        pid_t pid = waitpid(-1, status_p, WNOHANG);
        if (pid != 0) {
            return pid;
        }
        if (now_s() >= deadline) {
            kill_left(pids, n, stop_signal != 0 ? SIGKILL : SIGTERM);
            return wait(status_p);
        }
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

static int wait_ranks(const struct local_ranks_opts *o, pid_t *pids, int n)
{
    int worst = 0, left = n;
    double deadline = 0.0;
    int forwarded = 0;
    while (left > 0) {
        int status;
        pid_t pid = wait_one(pids, n, deadline, &status);
        if (stop_signal != 0 && !forwarded) {
            forwarded = 1; /* the job is stopped: every rank goes, within 10 s */
            kill_left(pids, n, SIGTERM);
            deadline = now_s() + 10.0;
        }
        if (pid < 0 && errno == EINTR) {
            continue;
        }
        if (pid < 0) {
            perror("wait");
            return 1;
        }
        int r = 0;
        while (r < n && pids[r] != pid) {
            r++;
        }
        if (r == n) {
            continue;
        }
        pids[r] = 0;
        left--;
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "%s: rank %d (pid %d) killed by signal %d\n", o->tool, r, (int)pid,
                    WTERMSIG(status));
            if (o->grace_s <= 0) {
                kill_left(pids, n, SIGTERM);
            } else if (deadline <= 0.0) {
                deadline = now_s() + o->grace_s;
            }
            worst = worst > 1 ? worst : 1;
        } else if (WEXITSTATUS(status) > worst) {
            worst = WEXITSTATUS(status);
        }
    }
    return worst;
}

static int forked_rank(const struct local_ranks_opts *o, const tutti_unique_id_t *id, int rank,
                       local_rank_fn fn, void *arg)
{
    if (o->bind) {
        local_ranks_bind(o->tool, rank, o->nranks);
    }
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_rank(&comm, o->nranks, id, rank);
    if (st != TUTTI_OK) {
        fprintf(stderr, "%s: rank %d: tutti_comm_init_rank failed: %s: %s\n", o->tool, rank,
                tutti_status_name(st), tutti_last_error(NULL));
        return 1;
    }
    return fn(arg, comm);
}

/*
 * The spawner: a child of the parent that forks the ranks and ends, writing each rank's pid
 * (or -1 when a fork fails) to fd. The parent runs the bootstrap root's thread, whose
 * connections grow with every rank that joins: forked from it, rank k had to close the k
 * connections it inherited. Forked from the spawner (one thread, nothing of the root's but what
 * it closed once), a rank closes nothing. (A fork itself still costs about 3 ms on this
 * project's VM, from either process.)
 * The ranks are the parent's to wait for (PR_SET_CHILD_SUBREAPER).
 */
static void spawn_ranks(const struct local_ranks_opts *o, const tutti_unique_id_t *id,
                        local_rank_fn fn, void *arg, int fd)
{
    for (int rank = 0; rank < o->nranks; rank++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(fd);
            stop_handlers(SIG_DFL);
            stop_mask(SIG_UNBLOCK);
            exit(forked_rank(o, id, rank, fn, arg));
        }
        if (pid < 0) {
            perror("fork");
        }
        if (write(fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid) || pid < 0) {
            break;
        }
    }
    _exit(0); /* nothing of the parent's to run at exit */
}

/* The ranks' pids from the spawner, until it ends: how many it started. */
static int read_pids(int fd, pid_t *pids, int n)
{
    int got = 0;
    size_t have = 0;
    pid_t pid;
    while (got < n) {
        ssize_t k = read(fd, (char *)&pid + have, sizeof(pid) - have);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            break;
        }
        have += (size_t)k;
        if (have == sizeof(pid)) {
            have = 0;
            if (pid <= 0) {
                break;
            }
            pids[got++] = pid;
        }
    }
    return got;
}

int local_ranks_run(const struct local_ranks_opts *o, local_rank_fn fn, void *arg)
{
    tutti_unique_id_t id;
    tutti_status_t st = tutti_get_unique_id(&id);
    if (st != TUTTI_OK) {
        fprintf(stderr, "%s: tutti_get_unique_id failed: %s: %s\n", o->tool, tutti_status_name(st),
                tutti_last_error(NULL));
        return 1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("local ranks: pipe or PR_SET_CHILD_SUBREAPER");
        return 1;
    }
    fflush(stdout);
    fflush(stderr);
    stop_mask(SIG_BLOCK); /* a rank starts with the default actions, unblocked */
    stop_handlers(on_stop);
    pid_t spawner = fork();
    if (spawner == 0) {
        close(fds[0]);
        spawn_ranks(o, &id, fn, arg, fds[1]);
    }
    close(fds[1]);
    pid_t *pids = calloc((size_t)o->nranks, sizeof(*pids));
    int started = 0;
    if (spawner < 0) {
        perror("fork");
    } else if (pids == NULL) {
        fprintf(stderr, "%s: no memory for %d ranks\n", o->tool, o->nranks);
        kill(spawner, SIGKILL);
    } else {
        started = read_pids(fds[0], pids, o->nranks);
    }
    close(fds[0]);
    while (spawner > 0 && waitpid(spawner, NULL, 0) < 0 && errno == EINTR) {
    }
    if (started < o->nranks) {
        kill_left(pids, started, SIGTERM); /* they would wait for the missing rank */
    }
    stop_mask(SIG_UNBLOCK);
    int rc = pids != NULL ? wait_ranks(o, pids, started) : 1;
    free(pids);
    int removed = tutti__uid_remove_leftovers(&id);
    if (removed > 0) {
        fprintf(stderr, "%s: removed %d shared memory segments the ranks left in /dev/shm\n",
                o->tool, removed);
    }
    if (stop_signal != 0) {
        stop_handlers(SIG_DFL);
        raise(stop_signal);
    }
    return started == o->nranks ? rc : 1;
}

int local_ranks_run_launched(const char *tool, local_rank_fn fn, void *arg)
{
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_env(&comm);
    if (st != TUTTI_OK) {
        fprintf(stderr, "%s: tutti_comm_init_env failed: %s: %s\n", tool, tutti_status_name(st),
                tutti_last_error(NULL));
        return 1;
    }
    return fn(arg, comm);
}

int local_ranks_under_launcher(void)
{
    static const char *const vars[] = {"TUTTI_RANK", "TUTTI_NRANKS", "RANK", "OMPI_COMM_WORLD_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        if (tutti__env_foreign(vars[i]) != NULL) {
            return 1;
        }
    }
    return 0;
}
