/*
 * gpu_kernel_bench.c - bandwidth of the GPU reduction kernels (kernels/cuda/, through the module
 * libtutti-cuda.so) as a fraction of cudaMemcpy device-to-device bandwidth measured in the same
 * run. The goal is >= 90% for the memory-bound kernels.
 *
 * Usage: gpu_kernel_bench [--bytes N] [--iters N] [--reps N]
 * Each case reduces `nsrc` device buffers of N bytes into `ndst` (default N = 256 MiB). GB/s
 * counts the bytes the call reads and writes ((nsrc + ndst) x N; the copy: 2 x N); a repetition
 * times `iters` back-to-back launches on the default stream with the host clock, after a
 * warm-up, up to one cudaDeviceSynchronize; the best of `reps` repetitions is printed (launch
 * gaps are included, which is why N should be large). Without a GPU module or a GPU it says so
 * and exits with 77 (the "skipped" status of meson test).
 */
#include "kernels/cuda/tutti_cuda.h"
#include "tutti/coll.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_SKIP 77

typedef struct {
    tutti_datatype_t dt;
    tutti_op_t op;
    int nsrc, ndst;
} gpu_case_t;

static const gpu_case_t cases[] = {
    {TUTTI_FLOAT32, TUTTI_SUM, 1, 1},   {TUTTI_FLOAT32, TUTTI_SUM, 2, 1},
    {TUTTI_FLOAT32, TUTTI_SUM, 2, 2},   {TUTTI_FLOAT32, TUTTI_SUM, 4, 1},
    {TUTTI_FLOAT32, TUTTI_SUM, 8, 1},   {TUTTI_BFLOAT16, TUTTI_SUM, 2, 1},
    {TUTTI_FLOAT16, TUTTI_SUM, 2, 1},   {TUTTI_FP8_E4M3, TUTTI_SUM, 2, 1},
    {TUTTI_FLOAT64, TUTTI_SUM, 2, 1},   {TUTTI_INT32, TUTTI_SUM, 2, 1},
    {TUTTI_FLOAT32, TUTTI_AVG, 2, 1},   {TUTTI_FLOAT32, TUTTI_MAX, 2, 1},
};

typedef struct {
    const tutti_cuda_module_t *mod;
    size_t bytes;
    int iters, reps;
    void *buf[TUTTI_CUDA_MAX_SRC + TUTTI_CUDA_MAX_DST];
} bench_t;

/* Best GB/s over the repetitions of one case (c == NULL: the device-to-device copy). */
static double measure(const bench_t *b, const gpu_case_t *c, int *err_p)
{
    const void *src[TUTTI_CUDA_MAX_SRC];
    void *dst[TUTTI_CUDA_MAX_DST];
    int nsrc = (c != NULL) ? c->nsrc : 1;
    int ndst = (c != NULL) ? c->ndst : 1;
    size_t count = (c != NULL) ? b->bytes / tutti_datatype_size(c->dt) : 0;
    double best = 0.0;
    int err = 0;

    for (int s = 0; s < nsrc; s++) {
        src[s] = b->buf[s];
    }
    for (int d = 0; d < ndst; d++) {
        dst[d] = b->buf[TUTTI_CUDA_MAX_SRC + d];
    }
    for (int r = -1; r < b->reps && err == 0; r++) { /* r == -1: warm-up */
        int64_t t0 = tutti__now_ns();
        for (int i = 0; i < b->iters && err == 0; i++) {
            err = (c != NULL) ? b->mod->reduce(src, nsrc, dst, ndst, count, c->dt, c->op, 2, NULL)
                              : b->mod->memcpy_d2d_async(dst[0], src[0], b->bytes, NULL);
        }
        err = (err != 0) ? err : b->mod->synchronize();
        double gbps = (double)b->bytes * (nsrc + ndst) * b->iters / (double)(tutti__now_ns() - t0);
        best = (r >= 0 && gbps > best) ? gbps : best;
    }
    *err_p = err;
    return best;
}

static int parse_args(int argc, char **argv, bench_t *b)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--bytes") == 0) {
            b->bytes = strtoull(argv[++i], NULL, 0);
        } else if (i + 1 < argc && strcmp(argv[i], "--iters") == 0) {
            b->iters = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0) {
            b->reps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: gpu_kernel_bench [--bytes N] [--iters N] [--reps N]\n");
            return -1;
        }
    }
    if (b->bytes < 16 || b->iters < 1 || b->reps < 1) {
        fprintf(stderr, "gpu_kernel_bench: --bytes >= 16, --iters >= 1 and --reps >= 1\n");
        return -1;
    }
    return 0;
}

static int run(bench_t *b)
{
    int err = 0;
    int blocks = 0;
    int threads = 0;
    double copy = measure(b, NULL, &err);

    if (err != 0) {
        fprintf(stderr, "gpu_kernel_bench: copy: %s\n", b->mod->error_string(err));
        return 1;
    }
    printf("# tutti gpu_kernel_bench: %s, %zu bytes per buffer, %d launches x best of %d\n",
           b->mod->build, b->bytes, b->iters, b->reps);
    printf("# %-10s %-5s %4s %4s %8s %9s %9s %8s\n", "type", "op", "nsrc", "ndst", "blocks",
           "GB/s", "copy GB/s", "of copy");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const gpu_case_t *c = &cases[i];
        double gbps = measure(b, c, &err);
        if (err != 0 || b->mod->launch_shape(b->bytes / tutti_datatype_size(c->dt), c->dt,
                                             &blocks, &threads) != 0) {
            fprintf(stderr, "gpu_kernel_bench: %s %s: %s\n", tutti_datatype_name(c->dt),
                    tutti_op_name(c->op), b->mod->error_string(err));
            return 1;
        }
        printf("  %-10s %-5s %4d %4d %8d %9.1f %9.1f %7.1f%%\n", tutti_datatype_name(c->dt),
               tutti_op_name(c->op), c->nsrc, c->ndst, blocks, gbps, copy, 100.0 * gbps / copy);
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench_t b = {.bytes = (size_t)256 << 20, .iters = 20, .reps = 5};
    int count = 0;
    int err;
    int ret = 1;
    int n = 0;

    if (parse_args(argc, argv, &b) != 0) {
        return 2;
    }
    if (tutti__cuda_module(&b.mod) != TUTTI_OK) {
        printf("gpu_kernel_bench: no GPU module: %s\n", tutti__cuda_why());
        return EXIT_SKIP;
    }
    err = b.mod->device_count(&count);
    if (count == 0) {
        printf("gpu_kernel_bench: no GPU: %s\n",
               err != 0 ? b.mod->error_string(err) : "no CUDA device visible");
        return EXIT_SKIP;
    }
    /* contents stay as cudaMalloc leaves them: the GPU's integer and IEEE arithmetic take the
     * same time on any bits (NaN, subnormal), so they do not change the figures */
    for (n = 0; n < TUTTI_CUDA_MAX_SRC + TUTTI_CUDA_MAX_DST; n++) {
        err = b.mod->malloc(&b.buf[n], b.bytes);
        if (err != 0) {
            fprintf(stderr, "gpu_kernel_bench: cudaMalloc of %zu bytes: %s\n", b.bytes,
                    b.mod->error_string(err));
            goto out_free;
        }
    }
    ret = run(&b);
out_free:
    while (n-- > 0) {
        (void)b.mod->free(b.buf[n]);
    }
    return ret;
}
