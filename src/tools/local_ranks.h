/*
 * local_ranks.h - how tutti's command-line tools (the perf tools, tutti-train) start ranks on one
 * machine without a launcher: `-N` forked processes that join through a unique id made before the
 * fork, the parent only serving the bootstrap root and waiting; and whether this process is
 * instead one rank of a launcher's job (TUTTI_RANK, torchrun, mpirun, srun).
 */
#ifndef TUTTI_TOOLS_LOCAL_RANKS_H
#define TUTTI_TOOLS_LOCAL_RANKS_H

#include "tutti.h"

/**
 * The body of one rank, given its communicator (which it must destroy or abort); the return
 * value becomes the process's exit code.
 */
typedef int (*local_rank_fn)(void *arg, tutti_comm_t *comm);

struct local_ranks_opts {
    const char *tool; /* prefix of the parent's messages */
    int nranks;       /* ranks to fork (>= 1) */
    int bind;         /* 1: pin rank r to the r-th CPU this process may use, when every rank fits */
    /*
     * When a rank dies of a signal, the others are sent SIGTERM after this many seconds. 0: at
     * once (a benchmark has nothing to wait for). A tool whose ranks report a dead peer
     * themselves (tutti names it) gives them this long to do so and exit by themselves.
     */
    int grace_s;
};

/**
 * Make a unique id, fork o->nranks ranks, each joining the communicator and running
 * fn(arg, comm), and wait for all of them. Standard output and error are flushed before the
 * fork; a rank that cannot join exits with 1 after saying why.
 * @return the largest exit code of the ranks; 1 when a rank was killed by a signal or the ranks
 *         could not be started (the reason is printed on stderr).
 */
int local_ranks_run(const struct local_ranks_opts *o, local_rank_fn fn, void *arg);

/**
 * Run this process as one rank of a launcher's job: tutti_comm_init_env(), then fn(arg, comm).
 * @return fn's value, or 1 when the communicator could not be made (printed).
 */
int local_ranks_run_launched(const char *tool, local_rank_fn fn, void *arg);

/** Pin the calling process to the rank-th CPU it may use, if nranks ranks fit (else nothing). */
void local_ranks_bind(const char *tool, int rank, int nranks);

/** 1 when the environment says this process is one rank of a launcher's job, else 0. */
int local_ranks_under_launcher(void);

#endif /* TUTTI_TOOLS_LOCAL_RANKS_H */
