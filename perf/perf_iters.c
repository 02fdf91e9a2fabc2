/*
 * perf_iters.c - per-iteration times (-I 1) and their JSON record (perf_iters.h).
 */
#include "perf_iters.h"
#include "json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int perf_iters_collect(struct perf_backend *be, const double *mine, int n, struct perf_iters **out)
{
    *out = NULL;
    if (be->gather_f64 == NULL) {
        fprintf(stderr, "-I 1: %s's backend cannot gather the ranks' times\n", be->lib);
        return -1;
    }
    struct perf_iters *it = NULL;
    double *all = NULL;
    if (be->rank == 0) {
        it = calloc(1, sizeof(*it));
        all = malloc((size_t)n * (size_t)be->nranks * sizeof(double));
        double *times = malloc((size_t)n * sizeof(double));
        if (it == NULL || all == NULL || times == NULL) {
            fprintf(stderr, "out of memory for %d per-iteration times\n", n);
            free(it);
            free(all);
            free(times);
            return -1; /* the peers fail in the gather when rank 0 leaves */
        }
        it->times_us = times;
    }
    if (be->gather_f64(be, mine, n, all) != 0) {
        perf_iters_free(it);
        free(all);
        return -1;
    }
    if (it != NULL) {
        it->n = n;
        it->nranks = be->nranks;
        it->per_rank = all;
        for (int i = 0; i < n; i++) {
            double m = all[i];
            for (int r = 1; r < be->nranks; r++) {
                m = fmax(m, all[(size_t)r * (size_t)n + (size_t)i]);
            }
            it->times_us[i] = m;
        }
        *out = it;
    }
    return 0;
}

void perf_iters_free(struct perf_iters *it)
{
    if (it != NULL) {
        free(it->times_us);
        free(it->per_rank);
        free(it);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile of n sorted values: the smallest value with at least p% at or below. */
static double percentile(const double *sorted, int n, int p)
{
    int k = (n * p + 99) / 100 - 1;
    return sorted[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void put_list(struct json_out *j, const double *v, int n)
{
    json_list(j, 1);
    for (int i = 0; i < n; i++) {
        json_num(j, v[i], 6);
    }
    json_end(j);
}

void perf_iters_json(struct json_out *j, const char *key, const struct perf_iters *it)
{
    int n = it->n;
    double *s = malloc((size_t)n * sizeof(double));
    if (s == NULL || n == 0) {
        free(s);
        return;
    }
    memcpy(s, it->times_us, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double sum = 0, var = 0;
    for (int i = 0; i < n; i++) {
        sum += s[i];
    }
    double avg = sum / n;
    for (int i = 0; i < n; i++) {
        var += (s[i] - avg) * (s[i] - avg);
    }
    double stdev = sqrt(var / n);
    const struct {
        const char *key;
        double v;
    } stats[] = {{"min_us", s[0]},
                 {"max_us", s[n - 1]},
                 {"avg_us", avg},
                 {"p50_us", s[n / 2]},
                 {"p95_us", percentile(s, n, 95)},
                 {"p99_us", percentile(s, n, 99)},
                 {"stdev_us", stdev},
                 {"cv_pct", avg > 0 ? stdev / avg * 100 : 0}};
    json_key(j, key);
    json_obj(j, 1);
    json_key(j, "skipped_iterations");
    json_int(j, 0);
    for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
        json_key(j, stats[i].key);
        json_num(j, stats[i].v, 6);
    }
    json_key(j, "times_us");
    put_list(j, it->times_us, n);
    json_key(j, "per_process_max_times_us");
    json_list(j, 1);
    for (int r = 0; r < it->nranks; r++) {
        put_list(j, it->per_rank + (size_t)r * (size_t)n, n);
    }
    json_end(j);
    json_end(j);
    free(s);
}
