// rt_wrap.cuh - the thin CUDA runtime wrappers that both GPU modules put in their tables
// (libtutti-cuda.so: kernels/cuda/module.cu; tutti-train's libtutti-train-cuda.so:
// trainer/cuda/module.cu). A status crosses as an int holding a cudaError_t value (0 =
// cudaSuccess); outputs are set only on success, except the device count, which is always set.
#ifndef TUTTI_KERNELS_CUDA_RT_WRAP_CUH
#define TUTTI_KERNELS_CUDA_RT_WRAP_CUH

#include <cuda_runtime.h>

namespace tutti_cuda_rt {

inline const char *error_name(int err)
{
    return cudaGetErrorName((cudaError_t)err);
}

inline const char *error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}

// cudaGetDeviceCount leaves its output untouched when it fails (no driver: 35; no device: 100),
// so the count starts at 0 and is always defined.
inline int device_count(int *count_p)
{
    int n = 0;
    int err = (int)cudaGetDeviceCount(&n);

    *count_p = (err == 0) ? n : 0;
    return err;
}

inline int get_device(int *device_p)
{
    int d = -1;
    int err = (int)cudaGetDevice(&d);

    if (err == 0) {
        *device_p = d;
    }
    return err;
}

inline int set_device(int device)
{
    return (int)cudaSetDevice(device);
}

} // namespace tutti_cuda_rt

#endif // TUTTI_KERNELS_CUDA_RT_WRAP_CUH
