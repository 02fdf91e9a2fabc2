/*
 * harness.c - forked ranks with a deadline (see harness.h). The parent waits on pidfds, so it
 * sleeps until a child ends or the deadline comes; every child dies with the parent
 * (PR_SET_PDEATHSIG), so a test that fails half-way leaves no process behind.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int integ_rank = -1, integ_nranks = 0;

struct integ_job {
    int nranks;
    int deadline_s;
    pid_t pids[INTEG_MAX_RANKS];
    int pidfds[INTEG_MAX_RANKS];
    int status[INTEG_MAX_RANKS];
    int ended[INTEG_MAX_RANKS];
    void *shared;
    size_t shared_bytes;
    int64_t deadline_ns;
    tutti_unique_id_t id;
};

int64_t integ_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void integ_pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void integ_setenv(const char *name, const char *value)
{
    int rc = value != NULL ? setenv(name, value, 1) : unsetenv(name);
    if (rc != 0) {
        fprintf(stderr, "setenv %s: %s\n", name, strerror(errno));
        abort();
    }
}

int integ_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d/%d (pid %d) %s:%d: %s\n", integ_rank, integ_nranks, (int)getpid(),
            file, line, msg);
    fflush(stderr);
    return 1;
}

int integ_contains(const char *msg, const char *text)
{
    return msg != NULL && strstr(msg, text) != NULL;
}

int integ_count(const char *msg, const char *text)
{
    int n = 0;
    for (const char *p = msg; p != NULL && (p = strstr(p, text)) != NULL; p++) {
        n++;
    }
    return n;
}

char *integ_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t cap = 1 << 16, len = 0, n;
    char *buf = f != NULL ? malloc(cap) : NULL;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            char *grown = realloc(buf, 2 * cap);
            if (grown == NULL) {
                free(buf);
            }
            buf = grown;
            cap *= 2;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    if (buf != NULL) {
        buf[len] = '\0';
    }
    return buf;
}

extern char **environ;

void integ_clear_launcher_env(void)
{
    static const char *const prefixes[] = {"TUTTI_", "SLURM_", "OMPI_", "PMIX_"};
    static const char *const names[] = {
        "RANK",        "WORLD_SIZE",  "LOCAL_WORLD_SIZE",   "LOCAL_RANK",
        "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"};
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e != NULL && *e != NULL && !again; e++) {
            for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
                if (strncmp(*e, prefixes[p], strlen(prefixes[p])) == 0) {
                    char name[256];
                    snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                    integ_setenv(name, NULL);
                    again = 1; /* environ changed under us: start over */
                    break;
                }
            }
        }
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        integ_setenv(names[i], NULL);
    }
    integ_setenv("TUTTI_TIMEOUT", "10s");
}

int integ_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

void integ_setenv_int(const char *name, long value)
{
    char s[32];
    snprintf(s, sizeof(s), "%ld", value);
    integ_setenv(name, s);
}

int integ_comm_init(const struct integ_ctx *ctx, const tutti_comm_params_t *params,
                    tutti_comm_t **comm_p)
{
    tutti_status_t st =
        tutti_comm_init_rank_params(comm_p, ctx->nranks, ctx->id, ctx->rank, params);
    if (st != TUTTI_OK) {
        return integ_fail("tutti_comm_init_rank(%d of %d) returned %s: %s", ctx->rank, ctx->nranks,
                          tutti_status_name(st), tutti_last_error(NULL));
    }
    return 0;
}

static void child_main(struct integ_job *job, const struct integ_opts *o, integ_rank_fn fn,
                       int rank, pid_t parent)
{
    /* Die with the test process, and do not outlive a parent that died before this line. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(127);
    }
    integ_rank = rank;
    integ_nranks = o->nranks;
    if (o->env != NULL) {
        o->env(rank, o->nranks, o->arg);
    }
    struct integ_ctx ctx = {
        .rank = rank,
        .nranks = o->nranks,
        .id = (o->make_id || o->id != NULL) ? &job->id : NULL,
        .shared = job->shared,
        .arg = o->arg,
    };
    int code = fn(&ctx);
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

struct integ_job *integ_start(const struct integ_opts *o, integ_rank_fn fn)
{
    cr_assert(o->nranks >= 1 && o->nranks <= INTEG_MAX_RANKS, "nranks %d", o->nranks);
    struct integ_job *job = calloc(1, sizeof(*job));
    cr_assert_not_null(job);
    job->nranks = o->nranks;
    job->deadline_s = o->deadline_s > 0 ? o->deadline_s : 60;
    if (o->shared_bytes > 0) {
        job->shared =
            mmap(NULL, o->shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        cr_assert(job->shared != MAP_FAILED, "mmap of %zu shared bytes: %s", o->shared_bytes,
                  strerror(errno));
        job->shared_bytes = o->shared_bytes;
    }
    if (o->id != NULL) {
        job->id = *o->id;
    } else if (o->make_id) {
        tutti_status_t st = tutti_get_unique_id(&job->id);
        cr_assert_eq(st, TUTTI_OK, "tutti_get_unique_id: %s: %s", tutti_status_name(st),
                     tutti_last_error(NULL));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    for (int r = 0; r < o->nranks; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            child_main(job, o, fn, r, parent);
        }
        if (pid < 0) {
            int err = errno;
            for (int k = 0; k < r; k++) {
                kill(job->pids[k], SIGKILL);
                waitpid(job->pids[k], NULL, 0);
            }
            cr_assert_fail("fork of rank %d: %s", r, strerror(err));
        }
        job->pids[r] = pid;
        job->pidfds[r] = (int)syscall(SYS_pidfd_open, pid, 0);
    }
    job->deadline_ns = integ_now_ns() + (int64_t)job->deadline_s * 1000000000LL;
    return job;
}

pid_t integ_pid(const struct integ_job *job, int rank)
{
    return job->pids[rank];
}

void *integ_shared(const struct integ_job *job)
{
    return job->shared;
}

void integ_signal(struct integ_job *job, int rank, int sig)
{
    if (!job->ended[rank]) {
        kill(job->pids[rank], sig);
    }
}

/* Reap whichever children have ended; returns how many are still running. */
static int reap(struct integ_job *job)
{
    int running = 0;
    for (int r = 0; r < job->nranks; r++) {
        if (job->ended[r]) {
            continue;
        }
        int st;
        pid_t p = waitpid(job->pids[r], &st, WNOHANG);
        if (p == job->pids[r]) {
            job->ended[r] = 1;
            job->status[r] = st;
        } else {
            running++;
        }
    }
    return running;
}

int integ_wait(struct integ_job *job, int *status_p)
{
    int hang = 0;
    while (reap(job) > 0) {
        int64_t left = job->deadline_ns - integ_now_ns();
        if (left <= 0) {
            hang = 1;
            break;
        }
        struct pollfd fds[INTEG_MAX_RANKS];
        int n = 0, have_pidfds = 1;
        for (int r = 0; r < job->nranks; r++) {
            if (!job->ended[r]) {
                have_pidfds &= job->pidfds[r] >= 0;
                fds[n++] = (struct pollfd){.fd = job->pidfds[r], .events = POLLIN};
            }
        }
        /* pidfds turn readable when the child ends; without them, look again every 5 ms. */
        int ms = have_pidfds ? (int)(left / 1000000 + 1) : 5;
        (void)poll(fds, (nfds_t)n, ms);
    }
    if (hang) {
        char who[256] = "";
        size_t o = 0;
        for (int r = 0; r < job->nranks; r++) {
            if (!job->ended[r] && o + 16 < sizeof(who)) {
                o += (size_t)snprintf(who + o, sizeof(who) - o, "%s%d (pid %d)", o ? ", " : "", r,
                                      (int)job->pids[r]);
            }
        }
        fprintf(stderr, "hang: rank(s) %s still running after %d s; killing the job\n", who,
                job->deadline_s);
        for (int r = 0; r < job->nranks; r++) {
            if (!job->ended[r]) {
                kill(job->pids[r], SIGKILL);
                waitpid(job->pids[r], NULL, 0);
                job->ended[r] = 1;
                job->status[r] = -1;
            }
        }
    }
    for (int r = 0; r < job->nranks; r++) {
        status_p[r] = job->status[r];
    }
    return hang ? -1 : 0;
}

static void job_free(struct integ_job *job)
{
    for (int r = 0; r < job->nranks; r++) {
        if (job->pidfds[r] >= 0) {
            close(job->pidfds[r]);
        }
    }
    if (job->shared != NULL) {
        munmap(job->shared, job->shared_bytes);
    }
    free(job);
}

void integ_finish(struct integ_job *job, const int *expect, unsigned skip_mask)
{
    int status[INTEG_MAX_RANKS];
    int hang = integ_wait(job, status) != 0;
    int n = job->nranks, deadline = job->deadline_s;
    job_free(job);
    cr_assert(!hang, "hang: the job did not finish within %d s (ranks killed; see stderr)",
              deadline);
    for (int r = 0; r < n; r++) {
        if ((skip_mask >> r) & 1u) {
            continue;
        }
        int want = expect != NULL ? expect[r] : 0;
        cr_assert(!WIFSIGNALED(status[r]), "rank %d was killed by signal %d (%s)", r,
                  WTERMSIG(status[r]), strsignal(WTERMSIG(status[r])));
        cr_assert(WIFEXITED(status[r]), "rank %d ended with wait status 0x%x", r, status[r]);
        cr_assert_eq(WEXITSTATUS(status[r]), want,
                     "rank %d exited with %d, expected %d (its messages are on stderr)", r,
                     WEXITSTATUS(status[r]), want);
    }
}

void integ_run(const struct integ_opts *opts, integ_rank_fn fn)
{
    integ_finish(integ_start(opts, fn), NULL, 0);
}

void integ_run_ranks(int nranks, integ_rank_fn fn, void *arg, size_t shared_bytes)
{
    struct integ_opts o = {
        .nranks = nranks, .deadline_s = 50, .make_id = 1, .arg = arg, .shared_bytes = shared_bytes};
    integ_run(&o, fn);
}

const char *integ_hang_report(const char *dir)
{
    static char out[8192];
    const char *info = getenv("INTEG_TUTTI_INFO");
    cr_assert_not_null(info, "INTEG_TUTTI_INFO is not set (meson sets it)");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' --hang '%s'/*.log", info, dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    cr_assert_eq(rc, 0, "%s exited with %d:\n%s", cmd, rc, out);
    return out;
}
