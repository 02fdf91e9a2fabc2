/*
 * train_cuda.h - the interface of tutti-train's GPU module, libtutti-train-cuda.so
 * (trainer/cuda/), and of the trainer's loader that opens it (trainer/backend_load.c).
 *
 * The module is built by nvcc only where CUDA and cuBLAS are found, linked with the static CUDA
 * runtime and with cuBLAS (dynamically), and exports exactly one symbol, TRAIN_CUDA_SYMBOL: a
 * constant table. Its first members are a size and an ABI number; members are only ever
 * appended. The trainer itself links no CUDA library, so the CPU build and a machine without a
 * driver run it unchanged.
 *
 * The table carries the backend (struct train_backend_ops, every operation enqueued on the
 * context's compute stream) and what the gradient sync needs beyond it on a GPU: the device,
 * streams, events, and the wire conversion kernels. This header is valid C11 and CUDA C++ and
 * includes no CUDA header: a CUDA status crosses it as an int holding a cudaError_t value
 * (0 = cudaSuccess), streams and events as void * (cudaStream_t, cudaEvent_t).
 */
#ifndef TRAIN_CUDA_TRAIN_CUDA_H
#define TRAIN_CUDA_TRAIN_CUDA_H

#include "trainer/backend.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The file the loader looks for, and the one symbol it exports. */
#define TRAIN_CUDA_FILE   "libtutti-train-cuda.so"
#define TRAIN_CUDA_SYMBOL "train_cuda_module_v1"
/** Bumped whenever this table or struct train_backend_ops changes incompatibly. */
#define TRAIN_CUDA_ABI 1

/** Wire formats of wire_encode/decode: enum train_prec's values (sync.h asserts it). */
enum { TRAIN_CUDA_WIRE_BF16 = 1, TRAIN_CUDA_WIRE_FP16 = 2, TRAIN_CUDA_WIRE_FIXED = 3 };
/** The fixed-point scale of TRAIN_CUDA_WIRE_FIXED: round(g * 2^32) (sync.h's TRAIN_FIXED_SHIFT). */
#define TRAIN_CUDA_FIXED_SHIFT 32

/*
 * Every int-returning function returns a cudaError_t value (0 on success) and sets its outputs
 * only on success. None blocks except the *_synchronize ones.
 */
struct train_cuda_module {
    size_t size;
    int abi;
    /** "CUDA 13.0, cuBLAS 13.1.0, sm_90": the toolkit and GPU code the module carries. */
    const char *build;
    /**
     * The backend (name "cuda"): memory is device memory of the device current when create()
     * ran, and every operation is enqueued on the context's compute stream, in call order;
     * download and softmax_xent wait for that stream (they return host data), upload returns
     * once the stream has taken the data (the host buffer may be reused). gemm is cuBLAS sgemm
     * with CUBLAS_PEDANTIC_MATH (no TF32) and a workspace of its own; the other operations are
     * the kernels of train_body.cuh. A failed operation records its cause, which error(ctx)
     * returns; the context then does nothing more (see backend.h).
     */
    const struct train_backend_ops *backend;

    /** CUDA's name and message of a status ("cudaErrorNoDevice", "no CUDA-capable ..."). */
    const char *(*error_name)(int err);
    const char *(*error_string)(int err);

    /**
     * Visible GPUs. cudaGetDeviceCount fails without a driver (35, cudaErrorInsufficientDriver)
     * or device (100, cudaErrorNoDevice) and leaves its output untouched: this sets *count_p to
     * 0 then and returns that status.
     */
    int (*device_count)(int *count_p);
    /** cudaSetDevice, cudaGetDevice: the calling thread's device (create() and streams use it). */
    int (*set_device)(int device);
    int (*get_device)(int *device_p);
    /** The device's name ("NVIDIA H100 80GB HBM3"), cut to len - 1 characters. */
    int (*device_name)(int device, char *name, size_t len);

    /** A stream of the current device that does not synchronise with the legacy stream. */
    int (*stream_create)(void **stream_p);
    int (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream);
    /** The compute stream of a backend context (every backend operation runs on it). */
    void *(*compute_stream)(void *ctx);
    /** An event without timing (cudaEventDisableTiming), and its release. */
    int (*event_create)(void **event_p);
    int (*event_destroy)(void *event);
    /** cudaEventRecord, cudaStreamWaitEvent, cudaEventSynchronize. */
    int (*event_record)(void *event, void *stream);
    int (*stream_wait_event)(void *stream, void *event);
    int (*event_synchronize)(void *event);

    /**
     * Gradients g[0..n) into wire elements (TRAIN_CUDA_WIRE_*), and back, enqueued on stream:
     * the bits of sync.c's train_wire_encode/decode (kernels/kern_ops.h's conversions; fixed
     * point rounds g * 2^32 to nearest even, clamped to +-2^52, NaN -> INT64_MIN as x86's
     * llrint). Device pointers; n == 0 does nothing; another format is cudaErrorInvalidValue.
     */
    int (*wire_encode)(int wire, const float *g, void *out, size_t n, void *stream);
    int (*wire_decode)(int wire, const void *in, float *g, size_t n, void *stream);
};

#ifdef __cplusplus
}
#endif
#endif /* TRAIN_CUDA_TRAIN_CUDA_H */
