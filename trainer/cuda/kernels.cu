// kernels.cu - tutti-train's GPU kernels: one __global__ function around each body of
// train_body.cuh (which says what they compute and why the bits are the CPU's), and their
// launchers: the grid sized from the work, the kernel enqueued on the caller's stream, the
// launch's status returned. Compiled with -fmad=false, IEEE division and square root, and no
// flush to zero (nvcc's defaults without --use_fast_math).
#include "trainer/cuda/cuda_internal.h"
#include "trainer/cuda/train_body.cuh"

namespace train_cuda {

namespace {

// This thread's index and the grid's thread count, for the bodies.
__device__ __forceinline__ size_t tid()
{
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ size_t nthreads()
{
    return (size_t)gridDim.x * blockDim.x;
}

__global__ void __launch_bounds__(THREADS)
    bias_act_kernel(float *y, const float *bias, int rows, int cols, int relu)
{
    bias_act(tid(), nthreads(), y, bias, rows, cols, relu);
}

__global__ void __launch_bounds__(THREADS) relu_backward_kernel(float *dy, const float *y, size_t n)
{
    relu_backward(tid(), nthreads(), dy, y, n);
}

__global__ void __launch_bounds__(THREADS)
    col_sum_kernel(const float *dy, int rows, int cols, float *db)
{
    col_sum(tid(), nthreads(), dy, rows, cols, db);
}

__global__ void __launch_bounds__(THREADS)
    softmax_kernel(const float *logits, const uint8_t *labels, int rows, int cols, float scale,
                   float *dlogits, float *row_loss, int *row_correct)
{
    softmax_rows(tid(), nthreads(), logits, labels, rows, cols, scale, dlogits, row_loss,
                 row_correct);
}

__global__ void __launch_bounds__(THREADS)
    sgd_kernel(float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    sgd(tid(), nthreads(), w, v, g, n, lr, mu);
}

__global__ void __launch_bounds__(THREADS)
    encode_kernel(int wire, const float *g, void *out, size_t n)
{
    wire_encode(tid(), nthreads(), wire, g, out, n);
}

__global__ void __launch_bounds__(THREADS)
    decode_kernel(int wire, const void *in, float *g, size_t n)
{
    wire_decode(tid(), nthreads(), wire, in, g, n);
}

bool known_wire(int wire)
{
    return wire == TRAIN_CUDA_WIRE_BF16 || wire == TRAIN_CUDA_WIRE_FP16 ||
           wire == TRAIN_CUDA_WIRE_FIXED;
}

} // namespace

cudaError_t launch_bias_act(float *y, const float *bias, int rows, int cols, int relu,
                            cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) {
        return cudaSuccess;
    }
    bias_act_kernel<<<grid_blocks((size_t)rows * (size_t)cols), THREADS, 0, stream>>>(y, bias, rows,
                                                                                      cols, relu);
    return cudaGetLastError();
}

cudaError_t launch_relu_backward(float *dy, const float *y, size_t n, cudaStream_t stream)
{
    if (n == 0) {
        return cudaSuccess;
    }
    relu_backward_kernel<<<grid_blocks(n), THREADS, 0, stream>>>(dy, y, n);
    return cudaGetLastError();
}

// rows may be 0 (a rank's empty shard): the sums are then 0, as on the CPU.
cudaError_t launch_col_sum(const float *dy, int rows, int cols, float *db, cudaStream_t stream)
{
    if (cols <= 0) {
        return cudaSuccess;
    }
    col_sum_kernel<<<grid_blocks((size_t)cols), THREADS, 0, stream>>>(dy, rows < 0 ? 0 : rows, cols,
                                                                      db);
    return cudaGetLastError();
}

cudaError_t launch_softmax(const float *logits, const uint8_t *labels, int rows, int cols,
                           float scale, float *dlogits, float *row_loss, int *row_correct,
                           cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) {
        return cudaSuccess;
    }
    softmax_kernel<<<grid_blocks((size_t)rows), THREADS, 0, stream>>>(
        logits, labels, rows, cols, scale, dlogits, row_loss, row_correct);
    return cudaGetLastError();
}

cudaError_t launch_sgd(float *w, float *v, const float *g, size_t n, float lr, float mu,
                       cudaStream_t stream)
{
    if (n == 0) {
        return cudaSuccess;
    }
    sgd_kernel<<<grid_blocks(n), THREADS, 0, stream>>>(w, v, g, n, lr, mu);
    return cudaGetLastError();
}

cudaError_t launch_wire_encode(int wire, const float *g, void *out, size_t n, cudaStream_t stream)
{
    if (!known_wire(wire)) {
        return cudaErrorInvalidValue;
    }
    if (n == 0) {
        return cudaSuccess;
    }
    encode_kernel<<<grid_blocks(n), THREADS, 0, stream>>>(wire, g, out, n);
    return cudaGetLastError();
}

cudaError_t launch_wire_decode(int wire, const void *in, float *g, size_t n, cudaStream_t stream)
{
    if (!known_wire(wire)) {
        return cudaErrorInvalidValue;
    }
    if (n == 0) {
        return cudaSuccess;
    }
    decode_kernel<<<grid_blocks(n), THREADS, 0, stream>>>(wire, in, g, n);
    return cudaGetLastError();
}

} // namespace train_cuda
