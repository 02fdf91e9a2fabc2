/*
 * report.h - what a training run measured and concluded, and how rank 0 shows it: progress
 * lines, one line per epoch, the summary, the checks, and the same as JSON for scripts.
 */
#ifndef TRAIN_REPORT_H
#define TRAIN_REPORT_H

#include "train.h"

#include <stdio.h>

#define TRAIN_MAX_EPOCHS_REPORTED 1000

/**
 * Sums over a span of steps (an interval between progress lines, or the whole run). Once
 * reported, losses are summed over the ranks and times are the mean over the ranks.
 */
struct train_span {
    long steps;
    double samples;   /* global samples trained */
    double loss_sum;  /* sum of the samples' losses (all ranks) */
    double step_s;    /* time in steps: compute + the communication waited for */
    double comm_s;    /* time with gradients in flight */
    double exposed_s; /* time waiting for gradients (and converting them) */
    double wall_s;    /* wall time of the span, checks and progress lines included */
};

struct train_epoch {
    int epoch; /* 1-based */
    long steps;
    double train_loss; /* mean over the epoch's samples */
    double test_acc, test_loss;
    size_t test_n;
    double time_s; /* the epoch's wall time, evaluation excluded */
};

enum { TRAIN_CHECK_NOT_RUN = -1, TRAIN_CHECK_FAIL = 0, TRAIN_CHECK_PASS = 1 };

struct train_check {
    int result; /* TRAIN_CHECK_* */
    double value, limit;
    char detail[400];
};

struct train_report {
    const struct train_opts *o;
    int nranks;
    const char *transport;
    char gpu[320]; /* --device cuda: the GPUs and the module; "" on the CPU */
    size_t nparams, ntrain, ntest;
    int nbuckets;
    long steps_per_epoch;
    struct train_span total;
    struct train_epoch epochs[TRAIN_MAX_EPOCHS_REPORTED];
    int nepochs;
    struct train_check check[3];
};

/** The opening lines: ranks, model, data, hyper-parameters. */
void train_report_header(const struct train_report *r);

/** A progress line for the span since the previous one. */
void train_report_progress(const struct train_report *r, int epoch, long step_in_epoch,
                           const struct train_span *span);

/** The line of a finished epoch. */
void train_report_epoch(const struct train_report *r, const struct train_epoch *e);

/** The summary and the checks' verdicts. */
void train_report_summary(const struct train_report *r);

/** Write the report as JSON to path ("-": standard output). 0, or -1 (printed). */
int train_report_json(const struct train_report *r, const char *path);

#endif /* TRAIN_REPORT_H */
