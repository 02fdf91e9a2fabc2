// stream_ops.cu - the module's stream operations for libtutti's stream-ordered path
// (src/stream.c): capture state, pinned host memory, asynchronous copies, host functions, and a
// wait on a 64-bit word in pinned memory. The wait is the driver's cuStreamWaitValue64, reached
// through cudaGetDriverEntryPointByVersion so that nothing links libcuda (start-up would fail
// where no driver is installed).
#include "kernels/cuda/cuda_internal.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

namespace {

// The driver's types for the one entry point used, as documented in cuda.h (CUDA 12-13):
// CUresult cuStreamWaitValue64(CUstream, CUdeviceptr, cuuint64_t, unsigned int flags), where
// CU_STREAM_WAIT_VALUE_GEQ = 0 waits until (int64_t)(*addr - value) >= 0.
using wait64_fn = int (*)(void *stream, unsigned long long addr, unsigned long long value,
                          unsigned int flags);
constexpr unsigned int kWaitValueGeq = 0;

std::once_flag wait64_once;
wait64_fn wait64;
int wait64_err = 0;

void find_wait64()
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err = cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &fn, 12000,
                                                       cudaEnableDefault, &found);
    if (err == cudaSuccess && found == cudaDriverEntryPointSuccess && fn != nullptr) {
        wait64 = reinterpret_cast<wait64_fn>(fn);
    } else {
        wait64_err = (err != cudaSuccess) ? (int)err : (int)cudaErrorNotSupported;
    }
}

} // namespace

int tutti__cuda_stream_capturing(void *stream, int *capturing_p)
{
    cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
    int err = (int)cudaStreamIsCapturing((cudaStream_t)stream, &s);

    if (err == 0) {
        *capturing_p = (s != cudaStreamCaptureStatusNone);
    }
    return err;
}

int tutti__cuda_host_alloc(void **ptr_p, size_t bytes)
{
    void *p = nullptr;
    int err = (int)cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped);

    if (err == 0) {
        *ptr_p = p;
    }
    return err;
}

int tutti__cuda_host_free(void *ptr)
{
    return (int)cudaFreeHost(ptr);
}

int tutti__cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
}

int tutti__cuda_host_func(void *stream, void (*fn)(void *), void *arg)
{
    return (int)cudaLaunchHostFunc((cudaStream_t)stream, fn, arg);
}

int tutti__cuda_wait_geq(void *stream, const volatile uint64_t *word, uint64_t value)
{
    std::call_once(wait64_once, find_wait64);
    if (wait64 == nullptr) {
        return wait64_err;
    }
    void *dev = nullptr;
    int err = (int)cudaHostGetDevicePointer(&dev, (void *)word, 0);
    if (err != 0) {
        return err;
    }
    // CUresult values share cudaError_t's numbering for the common cases (invalid value,
    // not supported); the caller only prints it.
    return wait64(stream, (unsigned long long)(uintptr_t)dev, value, kWaitValueGeq);
}
