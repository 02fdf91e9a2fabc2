/*
 * scale_probe.c - what a job of N forked local ranks costs (issue 20's scale benchmark, driven
 * by perf/scale_bench.sh): the time from the launch to each rank's communicator being ready,
 * its first 8-byte all-reduce (which makes the connections it needs) and a second one, each
 * rank's peak resident memory (VmHWM: its own pages and the shared pages it touched), and the
 * CPU time its process used until its communicator was ready (user + system: on a machine with
 * fewer cores than ranks, init's wall time follows the ranks' CPU time summed). Rank 0 prints
 * one line:
 *
 *   ranks N init_s MAX MEDIAN first_ms MAX second_ms MAX hwm_mib MAX MEDIAN wrong W
 *     init_cpu_ms MEDIAN SUM
 *
 * Usage: scale_probe N (forks N ranks); under a launcher (TUTTI_RANK..., perf/scale_hosts.sh)
 * it is one rank, and "launch" is its own start. Exit status 0 when every rank got the right
 * sums.
 */
#include "../src/tools/local_ranks.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* one clock for every process of the machine */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double hwm_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = atof(line + 6);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib / 1024.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* CPU time this process has used, in ms. */
static double cpu_ms(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0;
    }
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

struct probe {
    double init_s, first_ms, second_ms, hwm_mib, wrong, init_cpu_ms;
};

/* The median and maximum of field k of all[0..n). */
static void stats(const struct probe *all, int n, size_t off, double *med, double *max)
{
    double *v = malloc((size_t)n * sizeof(*v));
    for (int r = 0; r < n; r++) {
        memcpy(&v[r], (const char *)&all[r] + off, sizeof(double));
    }
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    *med = v[n / 2];
    *max = v[n - 1];
    free(v);
}

static int rank_body(void *arg, tutti_comm_t *comm)
{
    double t0 = *(const double *)arg;
    struct probe me = {.init_s = now_s() - t0, .init_cpu_ms = cpu_ms()};
    int rank = 0, n = 0;
    tutti_comm_rank(comm, &rank);
    tutti_comm_size(comm, &n);
    double in[2] = {rank, 1}, out[2];
    double t = now_s();
    tutti_status_t st = tutti_allreduce(in, out, 2, TUTTI_FLOAT64, TUTTI_SUM, comm, NULL);
    me.first_ms = (now_s() - t) * 1e3;
    me.wrong += st != TUTTI_OK || out[0] != (double)n * (n - 1) / 2 || out[1] != n;
    t = now_s();
    st = st == TUTTI_OK ? tutti_allreduce(in, out, 2, TUTTI_FLOAT64, TUTTI_SUM, comm, NULL) : st;
    me.second_ms = (now_s() - t) * 1e3;
    me.wrong += st != TUTTI_OK || out[0] != (double)n * (n - 1) / 2 || out[1] != n;
    me.hwm_mib = hwm_mib();
    struct probe *all = calloc((size_t)n, sizeof(*all));
    if (st == TUTTI_OK && all != NULL) {
        st = tutti_allgather(&me, all, sizeof(me), TUTTI_UINT8, comm, NULL);
    }
    if (st == TUTTI_OK && rank == 0) {
        double m[6][2] = {{0}};
        size_t offs[6] = {offsetof(struct probe, init_s),   offsetof(struct probe, first_ms),
                          offsetof(struct probe, second_ms), offsetof(struct probe, hwm_mib),
                          offsetof(struct probe, wrong),     offsetof(struct probe, init_cpu_ms)};
        for (int k = 0; k < 6; k++) {
            stats(all, n, offs[k], &m[k][0], &m[k][1]);
        }
        double wrong = 0, cpu = 0;
        for (int r = 0; r < n; r++) {
            wrong += all[r].wrong;
            cpu += all[r].init_cpu_ms;
        }
        printf("ranks %d init_s %.3f %.3f first_ms %.1f second_ms %.1f hwm_mib %.1f %.1f wrong "
               "%.0f init_cpu_ms %.1f %.0f\n",
               n, m[0][1], m[0][0], m[1][1], m[2][1], m[3][1], m[3][0], wrong, m[5][0], cpu);
        fflush(stdout);
    }
    if (st != TUTTI_OK) {
        fprintf(stderr, "scale_probe: rank %d: %s\n", rank, tutti_last_error(comm));
    }
    free(all);
    tutti_status_t dst = tutti_comm_destroy(comm);
    return st == TUTTI_OK && dst == TUTTI_OK && me.wrong == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (local_ranks_under_launcher()) {
        double t0 = now_s();
        return local_ranks_run_launched("scale_probe", rank_body, &t0);
    }
    int n = argc == 2 ? atoi(argv[1]) : 0;
    if (n < 1) {
        fprintf(stderr, "usage: scale_probe N (local ranks, >= 1)\n");
        return 2;
    }
    double t0 = now_s();
    struct local_ranks_opts o = {.tool = "scale_probe", .nranks = n};
    return local_ranks_run(&o, rank_body, &t0);
}
