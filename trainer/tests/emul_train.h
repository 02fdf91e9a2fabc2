/*
 * emul_train.h - tutti-train's GPU kernel bodies (trainer/cuda/train_body.cuh) built by the host
 * C++ compiler and run thread by thread on the CPU (emul_train.cc), with the arguments of the
 * module's kernels. `blocks` is the grid: 0 for the one kernels.cu launches for the work, or a
 * small one to make the grid-stride loops wrap. Threads share nothing, so running them one after
 * the other gives exactly what a GPU computes from these bodies (up to its expf/logf).
 */
#ifndef TRAIN_TESTS_EMUL_TRAIN_H
#define TRAIN_TESTS_EMUL_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void emul_bias_act(unsigned blocks, float *y, const float *bias, int rows, int cols, int relu);
void emul_relu_backward(unsigned blocks, float *dy, const float *y, size_t n);
void emul_col_sum(unsigned blocks, const float *dy, int rows, int cols, float *db);
/** The kernel's per-row results summed in row order in double, as backend_cuda.cu does. */
double emul_softmax_xent(unsigned blocks, const float *logits, const uint8_t *labels, int rows,
                         int cols, float scale, float *dlogits, int *correct_p);
void emul_sgd(unsigned blocks, float *w, float *v, const float *g, size_t n, float lr, float mu);
void emul_wire_encode(unsigned blocks, int wire, const float *g, void *out, size_t n);
void emul_wire_decode(unsigned blocks, int wire, const void *in, float *g, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* TRAIN_TESTS_EMUL_TRAIN_H */
