/*
 * perf_iters.h - -I 1: every iteration timed on its own, and the record nccl-tests' -I 1 writes
 * for it in the JSON ("out_of_place_per_iter"/"in_place_per_iter"): min, max, avg, p50, p95,
 * p99, stdev and cv of the per-iteration times, the times themselves (each the slowest rank's),
 * and every rank's ("per_process_max_times_us", one list per rank). A time is per call, as the
 * table's: an iteration of -m N aggregated calls counts N.
 */
#ifndef TUTTI_PERF_ITERS_H
#define TUTTI_PERF_ITERS_H

#include "tutti_perf.h"

struct json_out;

struct perf_iters {
    int n, nranks;
    double *times_us; /* n: the slowest rank's time of each iteration */
    double *per_rank; /* nranks x n */
};

/**
 * Collective: gather every rank's n per-iteration times (mine) to rank 0, which gets the record
 * in *out (NULL on the other ranks). 0, or -1 after saying why.
 */
int perf_iters_collect(struct perf_backend *be, const double *mine, int n, struct perf_iters **out);

void perf_iters_free(struct perf_iters *it);

/** The record under `key` of the row being written. */
void perf_iters_json(struct json_out *j, const char *key, const struct perf_iters *it);

#endif /* TUTTI_PERF_ITERS_H */
