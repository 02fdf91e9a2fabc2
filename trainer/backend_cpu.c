/*
 * backend_cpu.c - the trainer's arithmetic on the host CPU, single-threaded (each rank is one
 * process, as with PyTorch's Gloo backend and one thread per rank).
 *
 * gemm is one blocked row-major kernel (C += A B): B is walked in panels of KB x NB that stay in
 * the L2 cache, and a 6 x 16 block of C lives in registers while k runs. Transposed operands are
 * first packed into scratch memory. The k loop is always outermost per element and in order, so
 * the result does not depend on blocking, alignment or vector width, only on the instruction set
 * (with FMA each step rounds once): every process on one machine computes the same bits. On
 * x86-64 the kernel is compiled twice, for AVX2+FMA (x86-64-v3) and the baseline, and the loader
 * picks one (GCC target_clones).
 */
#include "backend.h"
#include "tutti/mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GEMM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GEMM_CLONES
#endif

enum { MR = 6, NR = 16, KB = 256, NB = 256 };

typedef float v8f __attribute__((vector_size(32)));

struct cpu_ctx {
    float *pack[2]; /* transposed A, transposed B */
    size_t cap[2];  /* their sizes in floats */
};

static inline __attribute__((always_inline)) v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline __attribute__((always_inline)) void store8(float *p, v8f v)
{
    memcpy(p, &v, sizeof(v));
}

/*
 * C[R x 16] (+)= A[R x kc] B[kc x 16] for R = 1..6 rows: up to twelve 8-float accumulators,
 * named one by one so that they stay in registers (with AVX2: 12 of the 16 ymm registers, plus
 * two rows of B and a broadcast element of A) while k runs. R is a constant at every call, so
 * the compiler drops the rows beyond it.
 */
#define ROW_LOAD(i, c0, c1)                                                                        \
    if (R > (i) && load_c) {                                                                       \
        c0 = load8(c + (i)*ldc);                                                                   \
        c1 = load8(c + (i)*ldc + 8);                                                               \
    }
#define ROW_FMA(i, c0, c1)                                                                         \
    if (R > (i)) {                                                                                 \
        float ai = a[(size_t)(i)*lda + p];                                                         \
        c0 += ai * b0;                                                                             \
        c1 += ai * b1;                                                                             \
    }
#define ROW_STORE(i, c0, c1)                                                                       \
    if (R > (i)) {                                                                                 \
        store8(c + (i)*ldc, c0);                                                                   \
        store8(c + (i)*ldc + 8, c1);                                                               \
    }
#define ROWS(X)                                                                                    \
    X(0, c00, c01) X(1, c10, c11) X(2, c20, c21) X(3, c30, c31) X(4, c40, c41) X(5, c50, c51)

static inline __attribute__((always_inline)) void kernel_rx16(const int R, int kc, const float *a,
                                                              int lda, const float *b, int ldb,
                                                              float *c, int ldc, int load_c)
{
    v8f z = {0}, c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z,
        c41 = z, c50 = z, c51 = z;
    ROWS(ROW_LOAD)
    for (int p = 0; p < kc; p++) {
        v8f b0 = load8(b + (size_t)p * ldb), b1 = load8(b + (size_t)p * ldb + 8);
        ROWS(ROW_FMA)
    }
    ROWS(ROW_STORE)
}

#undef ROWS
#undef ROW_STORE
#undef ROW_FMA
#undef ROW_LOAD

/* The kernel for mr rows, with the row count a constant in each instance. */
static inline __attribute__((always_inline)) void kernel_16(int mr, int kc, const float *a, int lda,
                                                            const float *b, int ldb, float *c,
                                                            int ldc, int load_c)
{
    switch (mr) {
    case 6:
        kernel_rx16(6, kc, a, lda, b, ldb, c, ldc, load_c);
        break;
    case 5:
        kernel_rx16(5, kc, a, lda, b, ldb, c, ldc, load_c);
        break;
    case 4:
        kernel_rx16(4, kc, a, lda, b, ldb, c, ldc, load_c);
        break;
    case 3:
        kernel_rx16(3, kc, a, lda, b, ldb, c, ldc, load_c);
        break;
    case 2:
        kernel_rx16(2, kc, a, lda, b, ldb, c, ldc, load_c);
        break;
    default:
        kernel_rx16(1, kc, a, lda, b, ldb, c, ldc, load_c);
        break;
    }
}

/* The last columns of C (fewer than 16): the same sums, one element at a time. */
static inline __attribute__((always_inline)) void kernel_edge(int mr, int nr, int kc,
                                                              const float *a, int lda,
                                                              const float *b, int ldb, float *c,
                                                              int ldc, int load_c)
{
    for (int i = 0; i < mr; i++) {
        for (int j = 0; j < nr; j++) {
            float s = load_c ? c[(size_t)i * ldc + j] : 0.0f;
            for (int p = 0; p < kc; p++) {
                s += a[(size_t)i * lda + p] * b[(size_t)p * ldb + j];
            }
            c[(size_t)i * ldc + j] = s;
        }
    }
}

GEMM_CLONES
static void gemm_nn(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
                    int ldc, int accumulate)
{
    if (k == 0) {
        for (int i = 0; !accumulate && i < m; i++) {
            memset(c + (size_t)i * ldc, 0, (size_t)n * sizeof(float));
        }
        return;
    }
    for (int j0 = 0; j0 < n; j0 += NB) {
        int nb = n - j0 < NB ? n - j0 : NB;
        for (int p0 = 0; p0 < k; p0 += KB) {
            int kc = k - p0 < KB ? k - p0 : KB;
            int load_c = accumulate || p0 > 0;
            const float *bp = b + (size_t)p0 * ldb + j0;
            for (int i0 = 0; i0 < m; i0 += MR) {
                int mr = m - i0 < MR ? m - i0 : MR;
                const float *ap = a + (size_t)i0 * lda + p0;
                float *cp = c + (size_t)i0 * ldc + j0;
                int j = 0;
                for (; j + NR <= nb; j += NR) {
                    kernel_16(mr, kc, ap, lda, bp + j, ldb, cp + j, ldc, load_c);
                }
                if (j < nb) {
                    kernel_edge(mr, nb - j, kc, ap, lda, bp + j, ldb, cp + j, ldc, load_c);
                }
            }
        }
    }
}

/* dst (cols x rows) = src (rows x cols)^T, in 32 x 32 tiles. */
static void transpose(const float *src, int rows, int cols, float *dst)
{
    for (int i0 = 0; i0 < rows; i0 += 32) {
        for (int j0 = 0; j0 < cols; j0 += 32) {
            int ie = i0 + 32 < rows ? i0 + 32 : rows, je = j0 + 32 < cols ? j0 + 32 : cols;
            for (int i = i0; i < ie; i++) {
                for (int j = j0; j < je; j++) {
                    dst[(size_t)j * rows + i] = src[(size_t)i * cols + j];
                }
            }
        }
    }
}

/* Scratch buffer `which` with room for n floats: sized once by create(); a larger request is a
 * bug in the caller's sizing. */
static float *scratch(struct cpu_ctx *x, int which, size_t n)
{
    if (x->cap[which] < n) {
        fprintf(stderr, "tutti-train: internal error: gemm needs %zu floats of scratch, has %zu\n",
                n, x->cap[which]);
        abort();
    }
    return x->pack[which];
}

static void cpu_gemm(void *ctx, int ta, int tb, int m, int n, int k, const float *a, const float *b,
                     float *c, int accumulate)
{
    struct cpu_ctx *x = ctx;
    if (ta) {
        float *t = scratch(x, 0, (size_t)m * k);
        transpose(a, k, m, t);
        a = t;
    }
    if (tb) {
        float *t = scratch(x, 1, (size_t)k * n);
        transpose(b, n, k, t);
        b = t;
    }
    gemm_nn(m, n, k, a, k, b, n, c, n, accumulate);
}

static void *cpu_create(size_t scratch_floats)
{
    struct cpu_ctx *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        x->pack[i] = malloc((scratch_floats > 0 ? scratch_floats : 1) * sizeof(float));
        x->cap[i] = scratch_floats;
        if (x->pack[i] == NULL) {
            free(x->pack[0]);
            free(x);
            return NULL;
        }
    }
    return x;
}

static void cpu_destroy(void *ctx)
{
    struct cpu_ctx *x = ctx;
    if (x != NULL) {
        free(x->pack[0]);
        free(x->pack[1]);
        free(x);
    }
}

static void *cpu_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    void *p = NULL; /* memory local peers can map: the gradients become a window (sync.c) */
    return tutti_mem_alloc(&p, bytes > 0 ? bytes : 64) == TUTTI_OK ? p : NULL; /* zeroed */
}

static void cpu_free(void *ctx, void *p)
{
    (void)ctx;
    (void)tutti_mem_free(p);
}

static void cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memmove(dst, src, bytes);
}

static void cpu_bias_act(void *ctx, float *y, const float *bias, int rows, int cols, int relu)
{
    (void)ctx;
    for (int i = 0; i < rows; i++) {
        float *row = y + (size_t)i * cols;
        for (int j = 0; j < cols; j++) {
            float v = row[j] + bias[j];
            row[j] = relu && v < 0.0f ? 0.0f : v;
        }
    }
}

static void cpu_relu_backward(void *ctx, float *dy, const float *y, size_t n)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    }
}

static void cpu_col_sum(void *ctx, const float *dy, int rows, int cols, float *db)
{
    (void)ctx;
    memset(db, 0, (size_t)cols * sizeof(float));
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            db[j] += dy[(size_t)i * cols + j];
        }
    }
}

static double cpu_softmax_xent(void *ctx, const float *logits, const uint8_t *labels, int rows,
                               int cols, float scale, float *dlogits, int *correct_p)
{
    (void)ctx;
    double loss = 0.0;
    int correct = 0;
    for (int i = 0; i < rows; i++) {
        const float *z = logits + (size_t)i * cols;
        int best = 0;
        for (int j = 1; j < cols; j++) {
            best = z[j] > z[best] ? j : best;
        }
        float zmax = z[best], sum = 0.0f;
        for (int j = 0; j < cols; j++) {
            sum += expf(z[j] - zmax);
        }
        correct += best == labels[i];
        loss += (double)(logf(sum) - (z[labels[i]] - zmax));
        if (dlogits != NULL) {
            float *d = dlogits + (size_t)i * cols;
            for (int j = 0; j < cols; j++) {
                float p = expf(z[j] - zmax) / sum;
                d[j] = (p - (j == labels[i] ? 1.0f : 0.0f)) * scale;
            }
        }
    }
    *correct_p = correct;
    return loss;
}

static void cpu_sgd(void *ctx, float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        v[i] = mu * v[i] + g[i];
        w[i] -= lr * v[i];
    }
}

/* Out of memory at create() is the only failure, and NULL says it all. */
static const char *cpu_error(void *ctx)
{
    return ctx == NULL ? "no memory for the CPU backend's scratch buffers" : NULL;
}

const struct train_backend_ops train_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .gemm = cpu_gemm,
    .bias_act = cpu_bias_act,
    .relu_backward = cpu_relu_backward,
    .col_sum = cpu_col_sum,
    .softmax_xent = cpu_softmax_xent,
    .sgd = cpu_sgd,
    .error = cpu_error,
};
