/*
 * train.h - tutti-train's options and the per-rank training run.
 *
 * train_opts.c parses the command line; train_main.c loads the data, starts the ranks (forked
 * with -N, or one per process under a launcher) and hands each a communicator;
 * train_loop.c trains on it; train_report.c prints progress, the summary and the JSON.
 */
#ifndef TRAIN_TRAIN_H
#define TRAIN_TRAIN_H

#include "backend_load.h"
#include "data.h"
#include "mlp.h"
#include "sync.h"
#include "tutti.h"

#include <stddef.h>
#include <stdint.h>

#define TRAIN_TOOL "tutti-train"

/* Exit codes: 0 success; 1 a failure (communication, data, a check); 2 a bad command line. */
enum { TRAIN_EXIT_OK = 0, TRAIN_EXIT_FAIL = 1, TRAIN_EXIT_USAGE = 2 };

struct train_opts {
    int nranks;                         /* -N: ranks to fork; 0: the launcher's, else 1 */
    int epochs;                         /* -e */
    int batch;                          /* -b: the global batch, split over the ranks */
    float lr, momentum;                 /* --lr, --momentum */
    enum train_lr_schedule lr_schedule; /* --lr-schedule */
    enum train_prec prec;     /* -p: gradient precision on the wire; FIXED with --deterministic */
    const char *transport;    /* -t: sets TUTTI_TRANSPORT; NULL keeps the environment's */
    enum train_device device; /* --device: where each rank computes */
    uint64_t seed;            /* -s: data order and initial weights */
    const char *data_dir;     /* --data */
    size_t limit;             /* --limit: train on the first N samples (0: all) */
    size_t test_limit;        /* --test-limit: test on the first N samples (0: all) */
    long max_steps;           /* --steps: stop after this many steps (0: run every epoch) */
    int log_every;            /* --log-every: steps between progress lines (0: 10 per epoch) */
    int sizes[TRAIN_MAX_LAYERS + 1]; /* input, --hidden widths, classes */
    int nsizes;
    size_t bucket_kb;      /* --bucket-kb: bucket cap in KiB of fp32 gradients */
    int check;             /* --check */
    int check_steps;       /* --check-steps: K of check 1 */
    double target_acc;     /* --target-acc: check 3's bar */
    const char *json_path; /* --json: write the results there ("-": standard output) */
    int bind;              /* --bind core|none (default: core on the CPU, none on a GPU) */
    int quiet;             /* -q: no progress lines */
    /* hidden, for tests: a rank SIGKILLs itself / corrupts a gradient at a step (1-based) */
    long die_step, corrupt_step;
    int die_rank, corrupt_rank, corrupt_pre;
};

/**
 * Parse the command line. Returns 0, 1 after --help (printed), or -1 after printing the
 * error.
 */
int train_opts_parse(int argc, char **argv, struct train_opts *o);

/** Both halves of the data set, loaded once (before the ranks fork, when they fork). */
struct train_dataset {
    struct train_data train, test;
};

/**
 * The whole program (train_main.c): options, data, ranks. @return the exit status. The main
 * of tutti-train (tutti_train.c) is this; a test's main may install an emulated GPU first.
 */
int train_main(int argc, char **argv);

/**
 * Train as one rank of comm, which it takes over (destroyed or aborted on return).
 * @return a TRAIN_EXIT_* code: FAIL when communication failed or a check did.
 */
int train_rank_run(const struct train_opts *o, const struct train_dataset *ds, tutti_comm_t *comm);

#endif /* TRAIN_TRAIN_H */
