// cuda_internal.h - what the files of tutti-train's GPU module share (trainer/cuda/, compiled
// by nvcc only): the kernel launchers (kernels.cu), the backend (backend_cuda.cu) and the
// module table (module.cu) that puts them together.
#ifndef TRAIN_CUDA_CUDA_INTERNAL_H
#define TRAIN_CUDA_CUDA_INTERNAL_H

#include "trainer/cuda/train_cuda.h"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

namespace train_cuda {

// Each enqueues one kernel of train_body.cuh on stream and returns the launch's status;
// nothing is launched for no work.
cudaError_t launch_bias_act(float *y, const float *bias, int rows, int cols, int relu,
                            cudaStream_t stream);
cudaError_t launch_relu_backward(float *dy, const float *y, size_t n, cudaStream_t stream);
cudaError_t launch_col_sum(const float *dy, int rows, int cols, float *db, cudaStream_t stream);
cudaError_t launch_softmax(const float *logits, const uint8_t *labels, int rows, int cols,
                           float scale, float *dlogits, float *row_loss, int *row_correct,
                           cudaStream_t stream);
cudaError_t launch_sgd(float *w, float *v, const float *g, size_t n, float lr, float mu,
                       cudaStream_t stream);
cudaError_t launch_wire_encode(int wire, const float *g, void *out, size_t n, cudaStream_t stream);
cudaError_t launch_wire_decode(int wire, const void *in, float *g, size_t n, cudaStream_t stream);

// The backend's table and its compute-stream accessor (backend_cuda.cu).
extern const struct train_backend_ops backend;
void *compute_stream(void *ctx);

} // namespace train_cuda

#endif // TRAIN_CUDA_CUDA_INTERNAL_H
