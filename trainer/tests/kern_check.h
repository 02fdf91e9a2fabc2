/*
 * kern_check.h - the checks of tutti-train's GPU kernels (trainer/cuda/train_body.cuh) against
 * the CPU backend (backend_cpu.c) and sync.c's wire conversions, written once for any
 * implementation of them: the CPU emulation of the bodies (test_train_emul.c, suite trainer)
 * and the module on a real GPU (test_train_gpu.c, suite trainer_gpu). Each check draws its
 * cases (sizes around the grid, special values: signed zeros, infinities, NaNs, subnormals),
 * runs them through both and asserts with Criterion.
 *
 * Elementwise results must be equal bit for bit, but for the payload of a NaN that arithmetic
 * makes (x86 keeps the operand's, a GPU's is canonical). Softmax is bitwise where the
 * implementation's expf/logf are glibc's (the emulation), else within stated tolerances.
 */
#ifndef TRAIN_TESTS_KERN_CHECK_H
#define TRAIN_TESTS_KERN_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* One implementation of the kernels, on host buffers (it copies to its memory and back). */
struct kern_impl {
    const char *name;
    void *ctx;
    int libm_exact; /* 1: expf/logf are glibc's, softmax must be bitwise */
    void (*bias_act)(void *ctx, float *y, const float *bias, int rows, int cols, int relu);
    void (*relu_backward)(void *ctx, float *dy, const float *y, size_t n);
    void (*col_sum)(void *ctx, const float *dy, int rows, int cols, float *db);
    double (*softmax_xent)(void *ctx, const float *logits, const uint8_t *labels, int rows,
                           int cols, float scale, float *dlogits, int *correct_p);
    void (*sgd)(void *ctx, float *w, float *v, const float *g, size_t n, float lr, float mu);
    /* wire: 1 bf16, 2 fp16, 3 int64 fixed point (enum train_prec's values) */
    void (*wire_encode)(void *ctx, int wire, const float *g, void *out, size_t n);
    void (*wire_decode)(void *ctx, int wire, const void *in, float *g, size_t n);
};

/* Random floats in [-scale, scale), and every 7th element one of the special values. */
void kern_fill(float *x, size_t n, float scale, uint64_t seed, int specials);

void kern_check_bias_act(const struct kern_impl *k);
void kern_check_relu_backward(const struct kern_impl *k);
void kern_check_col_sum(const struct kern_impl *k);
void kern_check_softmax(const struct kern_impl *k);
void kern_check_sgd(const struct kern_impl *k);
/* Encode of random and special floats; decode of every 16-bit pattern and of int64 sums. */
void kern_check_wire(const struct kern_impl *k);

#endif /* TRAIN_TESTS_KERN_CHECK_H */
