// module.cu - the one exported symbol of libtutti-cuda.so: the table of tutti_cuda.h, holding
// the reduction launcher (reduce_kernels.cu) and thin wrappers over the CUDA runtime (device
// count, versions, pointer kinds, allocation, copies; those tutti-train's module has too are in
// rt_wrap.cuh). The wrappers exist so that libtutti, the tests and the perf tools reach CUDA
// only through this module and never link it themselves.
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/rt_wrap.cuh"
#include "kernels/cuda_config.h"

#include <cuda_runtime.h>

namespace {

int runtime_version(int *version_p)
{
    int v = 0;
    int err = (int)cudaRuntimeGetVersion(&v);

    if (err == 0) {
        *version_p = v;
    }
    return err;
}

// 0 with *version_p = 0 where no driver is installed (cudaDriverGetVersion's own convention).
int driver_version(int *version_p)
{
    int v = 0;
    int err = (int)cudaDriverGetVersion(&v);

    if (err == 0) {
        *version_p = v;
    }
    return err;
}

int pointer_kind(const void *ptr, tutti_cuda_mem_t *kind_p, int *device_p)
{
    cudaPointerAttributes attr = {};
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);

    if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice ||
        err == cudaErrorInvalidValue) {
        // no driver or no GPU: nothing can be device memory; an unknown pointer on old runtimes
        (void)cudaGetLastError();
        *kind_p = TUTTI_CUDA_MEM_HOST;
        *device_p = -1;
        return 0;
    }
    if (err != cudaSuccess) {
        return (int)err;
    }
    switch (attr.type) {
    case cudaMemoryTypeHost:
        *kind_p = TUTTI_CUDA_MEM_PINNED;
        break;
    case cudaMemoryTypeDevice:
        *kind_p = TUTTI_CUDA_MEM_DEVICE;
        break;
    case cudaMemoryTypeManaged:
        *kind_p = TUTTI_CUDA_MEM_MANAGED;
        break;
    default:
        *kind_p = TUTTI_CUDA_MEM_HOST;
        break;
    }
    *device_p = (attr.type == cudaMemoryTypeUnregistered) ? -1 : attr.device;
    return 0;
}

int dev_malloc(void **ptr_p, size_t bytes)
{
    void *p = NULL;
    int err = (int)cudaMalloc(&p, bytes);

    if (err == 0) {
        *ptr_p = p;
    }
    return err;
}

int dev_free(void *ptr)
{
    return (int)cudaFree(ptr);
}

int dev_memcpy(void *dst, const void *src, size_t bytes, tutti_cuda_copy_t dir)
{
    return (int)cudaMemcpy(dst, src, bytes, (cudaMemcpyKind)dir);
}

int memcpy_d2d_async(void *dst, const void *src, size_t bytes, void *stream)
{
    return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
}

int synchronize(void)
{
    return (int)cudaDeviceSynchronize();
}

static_assert((int)TUTTI_CUDA_H2D == (int)cudaMemcpyHostToDevice &&
                  (int)TUTTI_CUDA_D2H == (int)cudaMemcpyDeviceToHost &&
                  (int)TUTTI_CUDA_D2D == (int)cudaMemcpyDeviceToDevice,
              "tutti_cuda_copy_t values are cudaMemcpyKind values");
static_assert(TUTTI_CUDA_ERR_INVALID_VALUE == (int)cudaErrorInvalidValue &&
                  TUTTI_CUDA_ERR_INSUFFICIENT_DRIVER == (int)cudaErrorInsufficientDriver &&
                  TUTTI_CUDA_ERR_NO_DEVICE == (int)cudaErrorNoDevice,
              "tutti_cuda.h's status numbers are cudaError_t values");

#define TUTTI_STR_(x) #x
#define TUTTI_STR(x) TUTTI_STR_(x)

} // namespace

extern "C" __attribute__((visibility("default"))) const tutti_cuda_module_t tutti__cuda_module_v1 = {
    sizeof(tutti_cuda_module_t),
    TUTTI_CUDA_ABI,
    "CUDA " TUTTI_STR(__CUDACC_VER_MAJOR__) "." TUTTI_STR(__CUDACC_VER_MINOR__) ", " TUTTI_CUDA_ARCHS,
    tutti_cuda_rt::error_name,
    tutti_cuda_rt::error_string,
    tutti_cuda_rt::device_count,
    runtime_version,
    driver_version,
    pointer_kind,
    tutti__cuda_reduce,
    dev_malloc,
    dev_free,
    dev_memcpy,
    memcpy_d2d_async,
    synchronize,
    tutti__cuda_launch_shape,
    tutti__cuda_stream_capturing,
    tutti__cuda_host_alloc,
    tutti__cuda_host_free,
    tutti__cuda_copy_async,
    tutti__cuda_host_func,
    tutti__cuda_wait_geq,
    tutti__cuda_ipc_get_handle,
    tutti__cuda_ipc_open,
    tutti__cuda_ipc_close,
    tutti__cuda_host_register,
    tutti__cuda_host_unregister,
    tutti__cuda_write_value,
    tutti_cuda_rt::get_device,
    tutti_cuda_rt::set_device,
    tutti__cuda_stream_create,
    tutti__cuda_stream_destroy,
    tutti__cuda_stream_synchronize,
    tutti__cuda_capture_begin,
    tutti__cuda_capture_end,
    tutti__cuda_premul,
};
