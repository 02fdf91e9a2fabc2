// reduce_kernels.cu - the GPU reduction kernels: N sources folded into M destinations in one
// pass (reduce and copy fused), for every datatype x op of the CPU path, computed with the very
// same scalar ops (kernels/kern_ops.h), so GPU and CPU results are equal bit for bit.
//
// One kernel per datatype x op around reduce_body.cuh (which says how the work is split), and
// the launcher: arguments checked, the grid sized from the element count and the device's
// multiprocessor count (cached per device), the kernel enqueued on the caller's stream.
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/reduce_body.cuh"

#include <cuda_runtime.h>

#include <atomic>

using namespace tutti_cuda;

namespace {

// The arguments stay in the kernel's parameter space (__grid_constant__): indexing src[s] by a
// run-time s would otherwise copy the whole struct to local memory.
template <class Ty, int OP>
__global__ void __launch_bounds__(THREADS) reduce_kernel(const __grid_constant__ ReduceArgs a)
{
    reduce_body<Ty, OP>(a, blockIdx.x, blockDim.x, threadIdx.x, gridDim.x);
}

typedef void (*kernel_fn)(ReduceArgs);

// Indexed by tutti_datatype_t and tutti_op_t (the order of tutti/types.h).
#define TUTTI_CUDA_ROW(dt, sfx)                                                                   \
    {reduce_kernel<Ty_##sfx, TUTTI_SUM>, reduce_kernel<Ty_##sfx, TUTTI_PROD>,                     \
     reduce_kernel<Ty_##sfx, TUTTI_MIN>, reduce_kernel<Ty_##sfx, TUTTI_MAX>,                      \
     reduce_kernel<Ty_##sfx, TUTTI_AVG>},
const kernel_fn kernels[TUTTI_NUM_DATATYPES][TUTTI_NUM_OPS] = {TUTTI_CUDA_TYPES(TUTTI_CUDA_ROW)};
static_assert(TUTTI_INT8 == 0 && TUTTI_FP8_E5M2 == 13 && TUTTI_NUM_DATATYPES == 14,
              "the kernel table follows the datatype order of tutti/types.h");
static_assert(TUTTI_SUM == 0 && TUTTI_AVG == 4 && TUTTI_NUM_OPS == 5,
              "the kernel table follows the op order of tutti/types.h");

// Multiprocessor count per device, filled on first use: a cache of a fact about the hardware
// (file-scope on purpose; racing threads store the same value).
constexpr int MAX_DEVICES = 64;
std::atomic<int> sm_count_cache[MAX_DEVICES];

int sm_count(int *sms_p)
{
    int dev = 0;
    int sms = 0;
    int err = (int)cudaGetDevice(&dev);

    if (err != 0) {
        return err;
    }
    if (dev >= 0 && dev < MAX_DEVICES) {
        sms = sm_count_cache[dev].load(std::memory_order_relaxed);
    }
    if (sms == 0) {
        err = (int)cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (err != 0) {
            return err;
        }
        if (dev >= 0 && dev < MAX_DEVICES) {
            sm_count_cache[dev].store(sms, std::memory_order_relaxed);
        }
    }
    *sms_p = sms;
    return 0;
}

} // namespace

int tutti__cuda_launch_shape(size_t count, tutti_datatype_t dt, int *blocks_p, int *threads_p)
{
    int sms = 0;
    int err;

    if ((unsigned)dt >= TUTTI_NUM_DATATYPES) {
        return TUTTI_CUDA_ERR_INVALID_VALUE;
    }
    err = sm_count(&sms);
    if (err != 0) {
        return err;
    }
    *blocks_p = blocks_for(aligned_work_items(count, dt), sms);
    *threads_p = THREADS;
    return 0;
}

int tutti__cuda_reduce(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                       tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream)
{
    ReduceArgs a;
    int sms = 0;
    int err = prepare(&a, src, nsrc, dst, ndst, count, dt, &op, divisor);

    if (err != 0 || count == 0) {
        return err;
    }
    err = sm_count(&sms);
    if (err != 0) {
        return err;
    }
    kernels[dt][op]<<<blocks_for(work_items(a), sms), THREADS, 0, (cudaStream_t)stream>>>(a);
    return (int)cudaGetLastError();
}
