// stream_ops.cu - the module's stream operations for libtutti's stream-ordered path
// (src/gpu/stream.c, src/gpu/ipc.c): capture state, pinned and registered host memory, asynchronous
// copies, host functions, IPC handles, and waits on and writes of 64-bit words. The waits and
// writes are the driver's cuStreamWaitValue64 / cuStreamWriteValue64, reached through
// cudaGetDriverEntryPointByVersion so that nothing links libcuda (start-up would fail where no
// driver is installed).
#include "kernels/cuda/cuda_internal.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <mutex>

namespace
{

// The driver's types for the one entry point used, as documented in cuda.h (CUDA 12-13):
// CUresult cuStreamWaitValue64(CUstream, CUdeviceptr, cuuint64_t, unsigned int flags), where
// CU_STREAM_WAIT_VALUE_GEQ = 0 waits until (int64_t)(*addr - value) >= 0.
// cuStreamWriteValue64 has the same shape; its flag 0 (CU_STREAM_WRITE_VALUE_DEFAULT) puts a
// system-wide memory fence before the write.
using value64_fn = int (*)(void *stream, unsigned long long addr, unsigned long long value,
                           unsigned int flags);
constexpr unsigned int kWaitValueGeq = 0;
constexpr unsigned int kWriteValueDefault = 0;

std::once_flag entry_once;
value64_fn wait64, write64;
int entry_err = 0;

value64_fn entry(const char *name)
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr) {
        entry_err = (err != cudaSuccess) ? (int)err : (int)cudaErrorNotSupported;
        return nullptr;
    }
    return reinterpret_cast<value64_fn>(fn);
}

void find_entries()
{
    wait64 = entry("cuStreamWaitValue64");
    write64 = entry("cuStreamWriteValue64");
}

// The address the device uses for word: mapped host memory has a device alias (the same
// address under UVA, asked anyway); device memory is its own.
int device_address(const volatile uint64_t *word, unsigned long long *addr_p)
{
    cudaPointerAttributes attr = {};
    int err = (int)cudaPointerGetAttributes(&attr, (const void *)word);
    if (err != 0) {
        return err;
    }
    if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) {
        *addr_p = (unsigned long long)(uintptr_t)word;
        return 0;
    }
    if (attr.devicePointer == nullptr) {
        return (int)cudaErrorInvalidValue; // host memory CUDA does not know
    }
    *addr_p = (unsigned long long)(uintptr_t)attr.devicePointer;
    return 0;
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

// CUresult values share cudaError_t's numbering for the common cases (invalid value, not
// supported); the callers only print them.
int tutti__cuda_wait_geq(void *stream, const volatile uint64_t *word, uint64_t value)
{
    std::call_once(entry_once, find_entries);
    unsigned long long addr = 0;
    int err = wait64 == nullptr ? entry_err : device_address(word, &addr);
    return err != 0 ? err : wait64(stream, addr, value, kWaitValueGeq);
}

int tutti__cuda_write_value(void *stream, volatile uint64_t *word, uint64_t value)
{
    std::call_once(entry_once, find_entries);
    unsigned long long addr = 0;
    int err = write64 == nullptr ? entry_err : device_address(word, &addr);
    return err != 0 ? err : write64(stream, addr, value, kWriteValueDefault);
}

int tutti__cuda_ipc_get_handle(void *ptr, unsigned char handle[64])
{
    static_assert(sizeof(cudaIpcMemHandle_t) == 64, "cudaIpcMemHandle_t is 64 bytes");
    cudaIpcMemHandle_t h;
    int err = (int)cudaIpcGetMemHandle(&h, ptr);
    if (err == 0) {
        memcpy(handle, &h, sizeof(h));
    }
    return err;
}

int tutti__cuda_ipc_open(const unsigned char handle[64], void **ptr_p)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof(h));
    void *p = nullptr;
    int err = (int)cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (err == 0) {
        *ptr_p = p;
    }
    return err;
}

int tutti__cuda_ipc_close(void *ptr)
{
    return (int)cudaIpcCloseMemHandle(ptr);
}

int tutti__cuda_host_register(void *ptr, size_t bytes)
{
    return (int)cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
}

int tutti__cuda_host_unregister(void *ptr)
{
    return (int)cudaHostUnregister(ptr);
}

int tutti__cuda_stream_create(void **stream_p)
{
    cudaStream_t s = nullptr;
    int err = (int)cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

    if (err == 0) {
        *stream_p = (void *)s;
    }
    return err;
}

int tutti__cuda_stream_destroy(void *stream)
{
    return (int)cudaStreamDestroy((cudaStream_t)stream);
}

int tutti__cuda_stream_synchronize(void *stream)
{
    return (int)cudaStreamSynchronize((cudaStream_t)stream);
}

int tutti__cuda_capture_begin(void *stream)
{
    return (int)cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeRelaxed);
}

int tutti__cuda_capture_end(void *stream)
{
    cudaGraph_t graph = nullptr;
    int err = (int)cudaStreamEndCapture((cudaStream_t)stream, &graph);

    if (graph != nullptr) {
        cudaGraphDestroy(graph);
    }
    return err;
}
