/*
 * footprint_tool.c - `tutti-info --footprint N [--size B]`: forks N local ranks, runs one call of
 * each collective (all-reduce, broadcast, reduce, reduce-scatter, all-gather, all-to-all of B
 * bytes, 1 MiB by default) and a barrier with the algorithms the tuner picks, then prints what
 * each rank holds (comm/footprint.h: connections by transport, shared, registered and pinned
 * memory) and the totals. Connections are made on first use, so this is what a job that makes
 * those calls holds at most. Honours TUTTI_* variables (TUTTI_MEM_BUDGET, TUTTI_TRANSPORT...).
 */
#include "footprint_tool.h"
#include "tutti.h"
#include "comm/footprint.h"
#include "local_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fp_args {
    size_t bytes;
};

/* One of each collective on `bytes` (whole elements of float32; the all-to-all and the scatter
 * take their blocks from it); 0 or the first error. */
static tutti_status_t each_call(tutti_comm_t *comm, size_t bytes)
{
    int n = 1;
    (void)tutti_comm_size(comm, &n);
    size_t count = bytes / sizeof(float) / (size_t)n * (size_t)n;
    count = count > 0 ? count : (size_t)n;
    float *a = calloc(count, sizeof(float)), *b = calloc(count, sizeof(float));
    tutti_status_t st = a != NULL && b != NULL ? TUTTI_OK : TUTTI_ERR_NO_MEMORY;
    size_t blk = count / (size_t)n;
    if (st == TUTTI_OK) {
        st = tutti_allreduce(a, b, count, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    }
    if (st == TUTTI_OK) {
        st = tutti_broadcast(a, b, count, TUTTI_FLOAT32, 0, comm, NULL);
    }
    if (st == TUTTI_OK) {
        st = tutti_reduce(a, b, count, TUTTI_FLOAT32, TUTTI_SUM, 0, comm, NULL);
    }
    if (st == TUTTI_OK) {
        st = tutti_reduce_scatter(a, b, blk, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    }
    if (st == TUTTI_OK) {
        st = tutti_allgather(a, b, blk, TUTTI_FLOAT32, comm, NULL);
    }
    if (st == TUTTI_OK) {
        st = tutti_alltoall(a, b, blk, TUTTI_FLOAT32, comm, NULL);
    }
    if (st == TUTTI_OK) {
        st = tutti_barrier(comm, NULL);
    }
    free(a);
    free(b);
    return st;
}

static void print_all(const struct tutti_footprint *all, int n)
{
    struct tutti_footprint sum = {0}, max = {0};
    char line[200];
    printf("%-6s %s\n", "rank", "footprint after one call of each collective");
    for (int r = 0; r < n; r++) {
        const struct tutti_footprint *f = &all[r];
        tutti__footprint_str(f, line, sizeof(line));
        if (n <= 16 || r < 4 || r == n - 1) {
            printf("%-6d %s\n", r, line);
        } else if (r == 4) {
            printf("%-6s (%d ranks more)\n", "...", n - 5);
        }
        for (int t = 0; t < TUTTI_TRANSPORT_COUNT; t++) {
            sum.conns[t] += f->conns[t];
            max.conns[t] = f->conns[t] > max.conns[t] ? f->conns[t] : max.conns[t];
        }
        sum.shared += f->shared;
        sum.registered += f->registered;
        sum.pinned += f->pinned;
        max.shared = f->shared > max.shared ? f->shared : max.shared;
        max.registered = f->registered > max.registered ? f->registered : max.registered;
        max.pinned = f->pinned > max.pinned ? f->pinned : max.pinned;
    }
    tutti__footprint_str(&max, line, sizeof(line));
    printf("%-6s %s\n", "max", line);
    tutti__footprint_str(&sum, line, sizeof(line));
    printf("%-6s %s\n", "total", line);
}

static int rank_body(void *arg, tutti_comm_t *comm)
{
    const struct fp_args *a = arg;
    int rank = 0, n = 1;
    (void)tutti_comm_rank(comm, &rank);
    (void)tutti_comm_size(comm, &n);
    tutti_status_t st = each_call(comm, a->bytes);
    struct tutti_footprint mine, *all = calloc((size_t)n, sizeof(*all));
    tutti__comm_footprint(comm, &mine);
    if (st == TUTTI_OK && all == NULL) {
        st = TUTTI_ERR_NO_MEMORY;
    }
    if (st == TUTTI_OK) {
        st = tutti_allgather(&mine, all, sizeof(mine), TUTTI_UINT8, comm, NULL);
    }
    if (st == TUTTI_OK && rank == 0) {
        print_all(all, n);
    }
    if (st != TUTTI_OK) {
        fprintf(stderr, "tutti-info --footprint: rank %d: %s\n", rank, tutti_last_error(comm));
    }
    free(all);
    tutti_status_t dst = tutti_comm_destroy(comm);
    return st == TUTTI_OK && dst == TUTTI_OK ? 0 : 1;
}

int tutti__footprint_tool(int argc, char **argv)
{
    char *end = NULL;
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 0;
    struct fp_args a = {.bytes = (size_t)1 << 20};
    if (argc < 2 || end == argv[1] || *end != '\0' || n < 1 || n > 4096) {
        fprintf(stderr, "tutti-info --footprint N [--size B]: N is the number of local ranks, "
                        "1 to 4096\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        long long v = -1;
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            v = strtoll(argv[++i], &end, 10);
        }
        if (v < 1 || *end != '\0') {
            fprintf(stderr, "tutti-info --footprint: '%s': expected --size B (bytes >= 1)\n",
                    argv[i]);
            return 2;
        }
        a.bytes = (size_t)v;
    }
    struct local_ranks_opts o = {.tool = "tutti-info --footprint", .nranks = (int)n};
    return local_ranks_run(&o, rank_body, &a);
}
