// module.cu - the one exported symbol of libtutti-train-cuda.so: the table of train_cuda.h,
// holding the backend (backend_cuda.cu), the wire kernels (kernels.cu) and thin wrappers over
// the CUDA runtime for the device, streams and events, so that the trainer reaches CUDA only
// through this module and never links it.
#include "kernels/cuda/rt_wrap.cuh"
#include "trainer/cuda/cuda_internal.h"
#include "trainer/cuda/train_cuda_config.h"

#include <cublas_api.h>
#include <stdio.h>

namespace {

using namespace train_cuda;

int device_name(int device, char *name, size_t len)
{
    cudaDeviceProp prop = {};
    int err = (int)cudaGetDeviceProperties(&prop, device);
    if (err == 0 && len > 0) {
        snprintf(name, len, "%s", prop.name);
    }
    return err;
}

int stream_create(void **stream_p)
{
    cudaStream_t s = nullptr;
    int err = (int)cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (err == 0) {
        *stream_p = s;
    }
    return err;
}

int stream_destroy(void *stream)
{
    return (int)cudaStreamDestroy((cudaStream_t)stream);
}

int stream_synchronize(void *stream)
{
    return (int)cudaStreamSynchronize((cudaStream_t)stream);
}

int event_create(void **event_p)
{
    cudaEvent_t e = nullptr;
    int err = (int)cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (err == 0) {
        *event_p = e;
    }
    return err;
}

int event_destroy(void *event)
{
    return (int)cudaEventDestroy((cudaEvent_t)event);
}

int event_record(void *event, void *stream)
{
    return (int)cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
}

int stream_wait_event(void *stream, void *event)
{
    return (int)cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
}

int event_synchronize(void *event)
{
    return (int)cudaEventSynchronize((cudaEvent_t)event);
}

int wire_encode(int wire, const float *g, void *out, size_t n, void *stream)
{
    return (int)launch_wire_encode(wire, g, out, n, (cudaStream_t)stream);
}

int wire_decode(int wire, const void *in, float *g, size_t n, void *stream)
{
    return (int)launch_wire_decode(wire, in, g, n, (cudaStream_t)stream);
}

#define TRAIN_STR_(x) #x
#define TRAIN_STR(x) TRAIN_STR_(x)
#define TRAIN_BUILD                                                                               \
    "CUDA " TRAIN_STR(__CUDACC_VER_MAJOR__) "." TRAIN_STR(__CUDACC_VER_MINOR__) ", cuBLAS "      \
    TRAIN_STR(CUBLAS_VER_MAJOR) "." TRAIN_STR(CUBLAS_VER_MINOR) "." TRAIN_STR(CUBLAS_VER_PATCH)  \
    ", " TRAIN_CUDA_ARCHS

} // namespace

extern "C" __attribute__((visibility("default")))
const struct train_cuda_module train_cuda_module_v1 = {
    .size = sizeof(struct train_cuda_module),
    .abi = TRAIN_CUDA_ABI,
    .build = TRAIN_BUILD,
    .backend = &train_cuda::backend,
    .error_name = tutti_cuda_rt::error_name,
    .error_string = tutti_cuda_rt::error_string,
    .device_count = tutti_cuda_rt::device_count,
    .set_device = tutti_cuda_rt::set_device,
    .get_device = tutti_cuda_rt::get_device,
    .device_name = device_name,
    .stream_create = stream_create,
    .stream_destroy = stream_destroy,
    .stream_synchronize = stream_synchronize,
    .compute_stream = train_cuda::compute_stream,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .event_record = event_record,
    .stream_wait_event = stream_wait_event,
    .event_synchronize = event_synchronize,
    .wire_encode = wire_encode,
    .wire_decode = wire_decode,
};
