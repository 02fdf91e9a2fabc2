// train_body.cuh - the bodies of tutti-train's GPU kernels, one source for two compilers: nvcc
// builds the kernels from it (kernels.cu), and the host C++ compiler builds an emulator from it
// (trainer/tests/emul_train.cc) that runs every thread of a grid one after the other, so the
// trainer suite checks them against backend_cpu.c and sync.c's conversions without a GPU.
//
// Every body is one thread's share of a grid: thread t of nt handles the items t, t + nt, ...
// Threads share nothing (no shared memory, no atomics), and every sum runs in one thread in the
// CPU's order, so the result does not depend on the grid nor on the order of the threads: the
// sequential emulation is exact, and two runs give the same bits. The arithmetic is the CPU
// backend's, operation for operation; compiled with -fmad=false (nvcc) and -ffp-contract=off
// (g++) nothing is fused, so elementwise results equal the CPU's bit for bit. The exception is
// softmax_row on the GPU: CUDA's expf and logf are not glibc's (within 2 ulp and 1 ulp), so its
// losses and gradients are within a tolerance there (the emulation, on glibc, is bitwise).
#ifndef TRAIN_CUDA_TRAIN_BODY_CUH
#define TRAIN_CUDA_TRAIN_BODY_CUH

#include "kernels/kern_ops.h"
#include "trainer/cuda/train_cuda.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define TRAIN_HD __host__ __device__ __forceinline__
#else
#define TRAIN_HD inline
#endif

namespace train_cuda {

// Threads per block of every kernel, and the most blocks of a grid: a thread per item up to
// that (about 8 blocks per multiprocessor of an H100), the grid-stride loops take the rest.
constexpr int THREADS = 256;
constexpr size_t MAX_BLOCKS = 1024;

// The blocks kernels.cu launches for `items` independent items (the emulator uses it too).
inline unsigned grid_blocks(size_t items)
{
    size_t b = (items + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

// y (rows x cols) += bias on every row, then max(y, 0) when relu (backend_cpu's bias_act).
TRAIN_HD void bias_act(size_t t, size_t nt, float *y, const float *bias, int rows, int cols,
                       int relu)
{
    size_t n = (size_t)rows * (size_t)cols;
    for (size_t i = t; i < n; i += nt) {
        float v = y[i] + bias[i % (size_t)cols];
        y[i] = relu && v < 0.0f ? 0.0f : v;
    }
}

// dy[i] = 0 where the ReLU output y[i] is not positive.
TRAIN_HD void relu_backward(size_t t, size_t nt, float *dy, const float *y, size_t n)
{
    for (size_t i = t; i < n; i += nt) {
        dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    }
}

// db[j] = 0 + dy[0][j] + dy[1][j] + ...: a thread per column, the rows in order.
TRAIN_HD void col_sum(size_t t, size_t nt, const float *dy, int rows, int cols, float *db)
{
    for (size_t j = t; j < (size_t)cols; j += nt) {
        float s = 0.0f;
        for (int i = 0; i < rows; i++) {
            s += dy[(size_t)i * (size_t)cols + j];
        }
        db[j] = s;
    }
}

// The loss of row i (float, as the CPU adds it to its double sum), whether its largest logit
// (the first of equal ones) is the label, and, when dlogits is not NULL, the row's gradient of
// scale x loss. A label outside 0..cols-1 (the data is checked, so never) gives a NaN loss
// rather than a read outside the row.
TRAIN_HD void softmax_row(int i, const float *logits, const uint8_t *labels, int cols, float scale,
                          float *dlogits, float *row_loss, int *row_correct)
{
    const float *z = logits + (size_t)i * (size_t)cols;
    int label = labels[i];
    int best = 0;
    for (int j = 1; j < cols; j++) {
        best = z[j] > z[best] ? j : best;
    }
    row_correct[i] = best == label;
    if (label >= cols) {
        row_loss[i] = kern_bits_f32(0x7fc00000u);
        return;
    }
    float zmax = z[best], sum = 0.0f;
    for (int j = 0; j < cols; j++) {
        sum += expf(z[j] - zmax);
    }
    row_loss[i] = logf(sum) - (z[label] - zmax);
    if (dlogits != NULL) {
        float *d = dlogits + (size_t)i * (size_t)cols;
        for (int j = 0; j < cols; j++) {
            float p = expf(z[j] - zmax) / sum;
            d[j] = (p - (j == label ? 1.0f : 0.0f)) * scale;
        }
    }
}

TRAIN_HD void softmax_rows(size_t t, size_t nt, const float *logits, const uint8_t *labels,
                           int rows, int cols, float scale, float *dlogits, float *row_loss,
                           int *row_correct)
{
    for (size_t i = t; i < (size_t)rows; i += nt) {
        softmax_row((int)i, logits, labels, cols, scale, dlogits, row_loss, row_correct);
    }
}

// SGD with momentum, as PyTorch: v = mu v + g; w -= lr v (two roundings each, no fusion).
TRAIN_HD void sgd(size_t t, size_t nt, float *w, float *v, const float *g, size_t n, float lr,
                  float mu)
{
    for (size_t i = t; i < n; i += nt) {
        float vi = mu * v[i] + g[i];
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

// round(g 2^32) to nearest even, clamped to +-2^52 (sync.c's to_fixed). g * 2^32 is exact in
// double. A NaN gives INT64_MIN, what x86's llrint (the CPU's conversion) returns for it; the
// GPU's conversion would give 0.
TRAIN_HD int64_t to_fixed(float g)
{
    double x = (double)g * 4294967296.0;
    const double lim = 4503599627370496.0; // 2^52
    if (x != x) {
        return INT64_MIN;
    }
    x = x > lim ? lim : x < -lim ? -lim : x;
#if defined(__CUDA_ARCH__)
    return (int64_t)__double2ll_rn(x);
#else
    return (int64_t)llrint(x);
#endif
}

// q 2^-32, rounded once to float (the double is exact for |q| < 2^53).
TRAIN_HD float from_fixed(int64_t q)
{
    return (float)((double)q * 2.3283064365386962890625e-10); // 2^-32
}

static_assert(TRAIN_CUDA_FIXED_SHIFT == 32, "to_fixed and from_fixed scale by 2^32");

TRAIN_HD void wire_encode(size_t t, size_t nt, int wire, const float *g, void *out, size_t n)
{
    uint16_t *h = (uint16_t *)out;
    int64_t *q = (int64_t *)out;
    for (size_t i = t; i < n; i += nt) {
        if (wire == TRAIN_CUDA_WIRE_BF16) {
            h[i] = kern_float_to_bf16(g[i]);
        } else if (wire == TRAIN_CUDA_WIRE_FP16) {
            h[i] = kern_float_to_half(g[i]);
        } else {
            q[i] = to_fixed(g[i]);
        }
    }
}

TRAIN_HD void wire_decode(size_t t, size_t nt, int wire, const void *in, float *g, size_t n)
{
    const uint16_t *h = (const uint16_t *)in;
    const int64_t *q = (const int64_t *)in;
    for (size_t i = t; i < n; i += nt) {
        if (wire == TRAIN_CUDA_WIRE_BF16) {
            g[i] = kern_bf16_to_float(h[i]);
        } else if (wire == TRAIN_CUDA_WIRE_FP16) {
            g[i] = kern_half_to_float(h[i]);
        } else {
            g[i] = from_fixed(q[i]);
        }
    }
}

} // namespace train_cuda

#endif // TRAIN_CUDA_TRAIN_BODY_CUH
