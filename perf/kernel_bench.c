/*
 * kernel_bench.c - micro-benchmark of the CPU reduction kernels (kernels/reduce.h): GB/s of
 * tutti__reduce for a few datatypes and of tutti__copy2, at cache-sized and memory-sized buffers,
 * beside a plain memcpy of the same size. Prints the ISA that the dispatch picked.
 *
 * Usage: kernel_bench [--isa generic|avx2|avx512] [--reps N]
 * GB/s counts the bytes every call reads and writes (reduce: 2 reads + 1 write of `size`;
 * copy2: 1 read + 2 writes; memcpy: 1 read + 1 write), median of N repetitions.
 */
#include "kernels/reduce.h"
#include "kernels/reduce_isa.h"
#include "tutti/coll.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_REPS 9
#define MIN_REP_BYTES (256u << 20) /* traffic per repetition, so small sizes loop long enough */

typedef enum { BENCH_REDUCE, BENCH_COPY2, BENCH_MEMCPY } bench_kind_t;

typedef struct {
    const char *name;
    bench_kind_t kind;
    tutti_datatype_t dt;
    tutti_op_t op;
} bench_case_t;

static const bench_case_t cases[] = {
    {"memcpy", BENCH_MEMCPY, TUTTI_UINT8, TUTTI_SUM},
    {"copy2", BENCH_COPY2, TUTTI_UINT8, TUTTI_SUM},
    {"float32 sum", BENCH_REDUCE, TUTTI_FLOAT32, TUTTI_SUM},
    {"float64 sum", BENCH_REDUCE, TUTTI_FLOAT64, TUTTI_SUM},
    {"int32 sum", BENCH_REDUCE, TUTTI_INT32, TUTTI_SUM},
    {"bfloat16 sum", BENCH_REDUCE, TUTTI_BFLOAT16, TUTTI_SUM},
    {"float16 sum", BENCH_REDUCE, TUTTI_FLOAT16, TUTTI_SUM},
    {"fp8_e4m3 sum", BENCH_REDUCE, TUTTI_FP8_E4M3, TUTTI_SUM},
    {"float32 max", BENCH_REDUCE, TUTTI_FLOAT32, TUTTI_MAX},
};

static const size_t sizes[] = {4u << 10, 1u << 20, 64u << 20};

typedef struct {
    unsigned char *a, *b, *d0, *d1;
} bench_bufs_t;

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x;
    double b = *(const double *)y;

    return (a > b) - (a < b);
}

static void run_once(const bench_case_t *c, const bench_bufs_t *m, size_t size)
{
    switch (c->kind) {
    case BENCH_MEMCPY:
        memcpy(m->d0, m->a, size);
        break;
    case BENCH_COPY2:
        tutti__copy2(m->d0, m->d1, m->a, size);
        break;
    default:
        tutti__reduce(m->d0, NULL, m->a, m->b, size / tutti_datatype_size(c->dt), c->dt, c->op, 1);
        break;
    }
}

/* Median GB/s over `reps` repetitions of `iters` calls each. */
static double measure(const bench_case_t *c, const bench_bufs_t *m, size_t size, int reps)
{
    size_t traffic = (c->kind == BENCH_MEMCPY) ? 2 * size : 3 * size;
    size_t iters = MIN_REP_BYTES / traffic + 1;
    double gbps[64];
    int r;

    run_once(c, m, size); /* warm up: caches, page tables */
    for (r = 0; r < reps; r++) {
        int64_t t0 = tutti__now_ns();
        size_t i;

        for (i = 0; i < iters; i++) {
            run_once(c, m, size);
        }
        gbps[r] = (double)(traffic * iters) / (double)(tutti__now_ns() - t0);
    }
    qsort(gbps, (size_t)reps, sizeof(gbps[0]), cmp_double);
    return gbps[reps / 2];
}

static int alloc_bufs(bench_bufs_t *m, size_t size)
{
    size_t i;

    m->a = aligned_alloc(TUTTI_CACHELINE, size);
    m->b = aligned_alloc(TUTTI_CACHELINE, size);
    m->d0 = aligned_alloc(TUTTI_CACHELINE, size);
    m->d1 = aligned_alloc(TUTTI_CACHELINE, size);
    if (m->a == NULL || m->b == NULL || m->d0 == NULL || m->d1 == NULL) {
        return -1;
    }
    /* small finite values in every type (0x3C bytes: 1.0-ish halves, 1.5 in e4m3) */
    for (i = 0; i < size; i++) {
        m->a[i] = (unsigned char)(0x30 + i % 13);
        m->b[i] = (unsigned char)(0x31 + i % 7);
    }
    memset(m->d0, 0, size);
    memset(m->d1, 0, size);
    return 0;
}

static void free_bufs(bench_bufs_t *m)
{
    free(m->a);
    free(m->b);
    free(m->d0);
    free(m->d1);
}

static int parse_args(int argc, char **argv, int *reps_p)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            if (tutti__reduce_force_isa(argv[++i]) != 0) {
                fprintf(stderr, "kernel_bench: isa %s unknown or not supported here\n", argv[i]);
                return -1;
            }
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            *reps_p = atoi(argv[++i]);
            if (*reps_p < 1 || *reps_p > 64) {
                fprintf(stderr, "kernel_bench: --reps takes 1..64\n");
                return -1;
            }
        } else {
            fprintf(stderr, "usage: kernel_bench [--isa generic|avx2|avx512] [--reps N]\n");
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int reps = DEFAULT_REPS;
    size_t s;
    size_t k;

    if (parse_args(argc, argv, &reps) != 0) {
        return 2;
    }
    printf("# tutti kernel_bench: isa %s, median of %d, GB/s = bytes read + written per second\n",
           tutti__reduce_isa(), reps);
    printf("%-14s", "# kernel");
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        printf(" %9zu KiB", sizes[s] >> 10);
    }
    printf("\n");
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        printf("%-14s", cases[k].name);
        for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            bench_bufs_t m;

            if (alloc_bufs(&m, sizes[s]) != 0) {
                fprintf(stderr, "kernel_bench: out of memory\n");
                return 1;
            }
            printf(" %13.1f", measure(&cases[k], &m, sizes[s], reps));
            fflush(stdout);
            free_bufs(&m);
        }
        printf("\n");
    }
    return 0;
}
