/*
 * harness.h - run the ranks of an integration test as real, forked processes.
 *
 * Inside a Criterion test the test process is the parent: it prepares what every rank shares
 * (the environment, a unique id, a shared-memory page), forks one child per rank and waits for
 * all of them with a deadline. A child runs the rank function and _exits with its result; it
 * never calls Criterion (its asserts belong to the parent), so it reports failures on stderr
 * with integ_fail(), naming its rank, and returns non-zero. The parent then asserts every exit
 * code; on expiry of the deadline it kills every child and fails the test with "hang".
 *
 * Environment rule: tutti parses TUTTI_* variables once per process, at its first call. What all
 * ranks share is set by the parent before anything calls tutti (before integ_start when it makes
 * the id); what differs per rank is set by the child's `env` hook, before the child calls tutti,
 * and only in jobs where the parent does not call tutti first.
 */
#ifndef TUTTI_INTEG_HARNESS_H
#define TUTTI_INTEG_HARNESS_H

#include "tutti.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INTEG_MAX_RANKS 16

/** What a rank function sees. */
struct integ_ctx {
    int rank;
    int nranks;
    const tutti_unique_id_t *id; /* the job's id, or NULL when it has none */
    void *shared;                /* opts.shared_bytes of MAP_SHARED memory, zeroed; or NULL */
    void *arg;                   /* opts.arg */
};

/** A rank's body: 0 when every check passed, else non-zero (reported with integ_fail first). */
typedef int (*integ_rank_fn)(const struct integ_ctx *ctx);

struct integ_opts {
    int nranks;                  /* 1..INTEG_MAX_RANKS */
    int deadline_s;              /* the whole job; 0: 60 s. Keep it below the Criterion .timeout */
    int make_id;                 /* the parent calls tutti_get_unique_id() before forking */
    const tutti_unique_id_t *id; /* or: the job uses this id, made by the test beforehand */
    size_t shared_bytes;         /* size of ctx->shared; 0: none */
    void *arg;
    /** Optional, in each child before fn: per-rank environment (setenv) and the like. */
    void (*env)(int rank, int nranks, void *arg);
};

struct integ_job;

/** Fork the ranks. Fails the current test (cr_assert) when it cannot. */
struct integ_job *integ_start(const struct integ_opts *opts, integ_rank_fn fn);

/** The pid of a rank's process. */
pid_t integ_pid(const struct integ_job *job, int rank);

/** The job's shared memory (the same as ctx->shared in the children). */
void *integ_shared(const struct integ_job *job);

/** Send a signal to one rank's process. */
void integ_signal(struct integ_job *job, int rank, int sig);

/**
 * Wait until every rank has ended or the deadline passed (then kill them all). Each rank's wait
 * status goes to status_p[rank] (as from waitpid; -1 when it had to be killed for the hang).
 * @return 0 when every rank ended by itself, -1 on a hang.
 */
int integ_wait(struct integ_job *job, int *status_p);

/**
 * Wait (integ_wait), then assert: no hang, and each rank exited normally with expect[rank]
 * (expect NULL: 0 for all). A rank in `skip_mask` (bit = rank) may end any way, e.g. one the
 * test killed. Frees the job.
 */
void integ_finish(struct integ_job *job, const int *expect, unsigned skip_mask);

/** integ_start + integ_finish, every rank expected to exit with 0. */
void integ_run(const struct integ_opts *opts, integ_rank_fn fn);

/**
 * The common case of integ_run: nranks ranks of fn with a fresh id made by the test process,
 * a 50 s deadline (keep the Criterion .timeout above it), arg and shared_bytes as in opts.
 */
void integ_run_ranks(int nranks, integ_rank_fn fn, void *arg, size_t shared_bytes);

/* ---- for the children ---- */

/** Report a failed check on stderr: "rank R/N (pid P) file:line: message". Returns 1. */
int integ_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define integ_fail(...) integ_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/** In a rank function: report and return 1 unless cond holds. */
#define ICHECK(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            return integ_fail(__VA_ARGS__);                                                        \
        }                                                                                          \
    } while (0)

/**
 * In a rank function: the tutti call must return TUTTI_OK, else report it with the message
 * tutti_last_error(comm) gives (comm NULL: the thread's; pass the comm for asynchronous
 * operations, whose errors are recorded by the progress thread on the comm).
 */
#define ICHECK_OKC(expr, comm)                                                                     \
    do {                                                                                           \
        tutti_status_t icheck_st_ = (expr);                                                        \
        if (icheck_st_ != TUTTI_OK) {                                                              \
            return integ_fail("%s returned %s: %s", #expr, tutti_status_name(icheck_st_),          \
                              tutti_last_error(comm));                                             \
        }                                                                                          \
    } while (0)

#define ICHECK_OK(expr) ICHECK_OKC(expr, NULL)

/** Monotonic clock in nanoseconds. */
int64_t integ_now_ns(void);

/** Sleep for ms milliseconds. */
void integ_pause_ms(int ms);

/** Set (or with value NULL, unset) an environment variable; aborts on failure. */
void integ_setenv(const char *name, const char *value);

/** The child's rank and job size (for messages), set by the harness after fork. */
extern int integ_rank, integ_nranks;

/** Create the comm of ctx->rank from ctx->id (with optional params); reports failures. */
int integ_comm_init(const struct integ_ctx *ctx, const tutti_comm_params_t *params,
                    tutti_comm_t **comm_p);

/**
 * Unset every TUTTI_* variable and every launcher variable tutti looks at (torchrun's, Open
 * MPI's, Slurm's, PMIx's), then set TUTTI_TIMEOUT=10s: a test of tutti_comm_init_env sees only
 * what it sets, also when CI runs it under a launcher.
 */
void integ_clear_launcher_env(void);

/** A loopback TCP port that was free a moment ago (the kernel's choice), or 0. */
int integ_free_port(void);

/** Does the message contain the text? (a helper for checks on error messages) */
int integ_contains(const char *msg, const char *text);

/** How many times text occurs in msg (NULL msg: 0). */
int integ_count(const char *msg, const char *text);

/**
 * Read a whole (log) file into a fresh NUL-terminated buffer (free it); NULL when it cannot be
 * read.
 */
char *integ_read_file(const char *path);

/* ---- for tests of tutti_comm_init_env (launch.c) ---- */

/** integ_setenv of a decimal integer. */
void integ_setenv_int(const char *name, long value);

/**
 * In the test process: the output of `tutti-info --hang dir/ *.log` (INTEG_TUTTI_INFO, which
 * meson sets), in a static buffer; fails the test when it cannot run or exits non-zero.
 */
const char *integ_hang_report(const char *dir);

#endif /* TUTTI_INTEG_HARNESS_H */
