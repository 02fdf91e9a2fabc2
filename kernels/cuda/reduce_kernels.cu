// reduce_kernels.cu - the GPU reduction kernels: N sources folded into M destinations in one
// pass (reduce and copy fused), for every datatype x op of the CPU path, computed with the very
// same scalar ops (kernels/kern_ops.h), so GPU and CPU results are equal bit for bit; and the
// scaling kernels of the pre-multiplied sum (premul: one source times a scalar).
//
// One kernel per supported datatype x op around reduce_body.cuh (which says how the work is
// split), and the launchers: arguments checked, the grid sized from the element count and the
// device's multiprocessor count (cached per device), the kernel enqueued on the caller's stream.
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

// The kernel of a datatype x op, or none where the datatype lacks the op (never instantiated).
template <class Ty, int OP> constexpr kernel_fn kernel_of()
{
    if constexpr (kind_supports(Ty::kind, OP)) {
        return reduce_kernel<Ty, OP>;
    } else {
        return nullptr;
    }
}

// Indexed by tutti_datatype_t and tutti_op_t (reduce_body.cuh asserts the order), and the
// premul kernels by tutti_datatype_t.
#define TUTTI_CUDA_ROW(dt, sfx) TUTTI_CUDA_OP_ROW(kernel_of, sfx),
const kernel_fn kernels[TUTTI_NUM_DATATYPES][TUTTI_NUM_OPS] = {TUTTI_CUDA_TYPES(TUTTI_CUDA_ROW)};
#define TUTTI_CUDA_SCALE(dt, sfx) kernel_of<Ty_##sfx, OP_SCALE>(),
const kernel_fn scale_kernels[TUTTI_NUM_DATATYPES] = {TUTTI_CUDA_TYPES(TUTTI_CUDA_SCALE)};

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

namespace {

// Enqueue kernel k over the work of a (prepared) on stream.
int launch(kernel_fn k, const ReduceArgs &a, void *stream)
{
    int sms = 0;
    int err = sm_count(&sms);

    if (err != 0) {
        return err;
    }
    k<<<blocks_for(work_items(a), sms), THREADS, 0, (cudaStream_t)stream>>>(a);
    return (int)cudaGetLastError();
}

} // namespace

int tutti__cuda_reduce(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                       tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream)
{
    ReduceArgs a;
    int o = (int)op;
    int err = prepare(&a, src, nsrc, dst, ndst, count, dt, &o, divisor);

    if (err != 0 || count == 0) {
        return err;
    }
    return launch(kernels[dt][o], a, stream);
}

int tutti__cuda_premul(const void *src, void *const *dst, int ndst, size_t count,
                       tutti_datatype_t dt, const void *scalar, int scalar_on_device, void *stream)
{
    ReduceArgs a;
    int err = prepare_scale(&a, src, dst, ndst, count, dt, scalar, scalar_on_device);

    if (err != 0 || count == 0) {
        return err;
    }
    return launch(scale_kernels[dt], a, stream);
}
