// reduce_kernels.cu - the GPU reduction kernels: N sources folded into M destinations in one
// pass (reduce and copy fused), for every datatype x op of the CPU path, computed with the very
// same scalar ops (kernels/kern_ops.h), so GPU and CPU results are equal bit for bit.
//
// One kernel per datatype x op. Where every pointer is 16-byte aligned, each thread moves whole
// 16-byte vectors (UNROLL of them per step, a block apart so that the warp's accesses coalesce)
// in a grid-stride loop; the elements past the last whole vector, and every element when a
// pointer is not aligned, go through the same fold one element at a time. The grid is sized
// from the element count and the device's multiprocessor count (cached per device).
#include "kernels/cuda/cuda_internal.h"
#include "kernels/kern_ops.h"

#include <cuda_runtime.h>

#include <atomic>
#include <type_traits>
#include <stdint.h>

namespace {

// Vectors each thread handles per grid-stride step: enough independent 16-byte loads in flight
// per source to cover memory latency, few enough registers to keep occupancy.
constexpr int UNROLL = 4;
constexpr int THREADS = 512;
// Resident blocks per multiprocessor the grid aims for (2048 threads on sm_80 and sm_90).
constexpr int BLOCKS_PER_SM = 4;

struct ReduceArgs {
    const void *src[TUTTI_CUDA_MAX_SRC];
    void *dst[TUTTI_CUDA_MAX_DST];
    int nsrc;
    int ndst;
    size_t nvec;  // whole 16-byte vectors (0 when a pointer is not 16-byte aligned)
    size_t first; // first element after them
    size_t count;
    int divisor;
};

// The scalar ops of one datatype, as kern_ops.h names them; D is the divisor's type there.
#define TUTTI_CUDA_TYPE(sfx, T_, D_)                                                              \
    struct Ty_##sfx {                                                                             \
        typedef T_ T;                                                                             \
        typedef D_ D;                                                                             \
        static __device__ T sum(T a, T b) { return kern_sum_##sfx(a, b); }                        \
        static __device__ T prod(T a, T b) { return kern_prod_##sfx(a, b); }                      \
        static __device__ T min(T a, T b) { return kern_min_##sfx(a, b); }                        \
        static __device__ T max(T a, T b) { return kern_max_##sfx(a, b); }                        \
        static __device__ T avg(T a, T b, D d) { return kern_avg_##sfx(a, b, d); }                \
        static __device__ T div(T x, D d) { return kern_div_##sfx(x, d); }                        \
    };
TUTTI_CUDA_TYPE(i8, int8_t, int)
TUTTI_CUDA_TYPE(u8, uint8_t, int)
TUTTI_CUDA_TYPE(i16, int16_t, int)
TUTTI_CUDA_TYPE(u16, uint16_t, int)
TUTTI_CUDA_TYPE(i32, int32_t, int)
TUTTI_CUDA_TYPE(u32, uint32_t, int)
TUTTI_CUDA_TYPE(i64, int64_t, int)
TUTTI_CUDA_TYPE(u64, uint64_t, int)
TUTTI_CUDA_TYPE(half, uint16_t, float)
TUTTI_CUDA_TYPE(bf16, uint16_t, float)
TUTTI_CUDA_TYPE(f32, float, float)
TUTTI_CUDA_TYPE(f64, double, double)
TUTTI_CUDA_TYPE(e4m3, uint8_t, float)
TUTTI_CUDA_TYPE(e5m2, uint8_t, float)

// acc = acc op x, one step of the left fold. AVG sums, and in the last step (last) divides as
// kern_avg does: the sum and the division in one rounding, like the CPU's last tutti__reduce.
template <class Ty, int OP>
__device__ __forceinline__ typename Ty::T step(typename Ty::T acc, typename Ty::T x, bool last,
                                               typename Ty::D dv)
{
    switch (OP) {
    case TUTTI_SUM:
        return Ty::sum(acc, x);
    case TUTTI_PROD:
        return Ty::prod(acc, x);
    case TUTTI_MIN:
        return Ty::min(acc, x);
    case TUTTI_MAX:
        return Ty::max(acc, x);
    default:
        return last ? Ty::avg(acc, x, dv) : Ty::sum(acc, x);
    }
}

// E elements of one datatype: a 16-byte vector (E = 16 / sizeof(T)), moved as one uint4, or a
// single element.
template <class T, int E> union Lanes {
    typedef typename std::conditional<E * sizeof(T) == 16, uint4, T>::type W;
    W v;
    T e[E];
};

template <class T, int E> __device__ __forceinline__ Lanes<T, E> load(const void *p, size_t i)
{
    Lanes<T, E> l;
    l.v = static_cast<const typename Lanes<T, E>::W *>(p)[i];
    return l;
}

template <class T, int E>
__device__ __forceinline__ void store(void *p, size_t i, const Lanes<T, E> &l)
{
    static_cast<typename Lanes<T, E>::W *>(p)[i] = l.v;
}

// Items idx[0..U) (vector or element indices, E elements each; valid[u] says which exist):
// load source 0, fold in the others source by source, store to every destination. All U loads
// of a source are issued before any of them is used.
template <class Ty, int OP, int E, int U>
__device__ __forceinline__ void fold(const ReduceArgs &a, const size_t *idx, const bool *valid)
{
    typedef typename Ty::T T;
    typename Ty::D dv = (typename Ty::D)a.divisor;
    Lanes<T, E> acc[U];

#pragma unroll
    for (int u = 0; u < U; u++) {
        if (valid[u]) {
            acc[u] = load<T, E>(a.src[0], idx[u]);
        }
    }
    if (OP == TUTTI_AVG && a.nsrc == 1) {
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int k = 0; k < E; k++) {
                acc[u].e[k] = Ty::div(acc[u].e[k], dv);
            }
        }
    }
    for (int s = 1; s < a.nsrc; s++) {
        bool last = s == a.nsrc - 1;
        Lanes<T, E> x[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (valid[u]) {
                x[u] = load<T, E>(a.src[s], idx[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int k = 0; k < E; k++) {
                acc[u].e[k] = step<Ty, OP>(acc[u].e[k], x[u].e[k], last, dv);
            }
        }
    }
    for (int d = 0; d < a.ndst; d++) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (valid[u]) {
                store<T, E>(a.dst[d], idx[u], acc[u]);
            }
        }
    }
}

template <class Ty, int OP> __global__ void __launch_bounds__(THREADS) reduce_kernel(const __grid_constant__ ReduceArgs a)
{
    typedef typename Ty::T T;
    constexpr int E = 16 / sizeof(T);
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nthreads = (size_t)gridDim.x * blockDim.x;

    // whole vectors: UNROLL per thread and step, blockDim apart (coalesced)
    for (size_t base = (size_t)blockIdx.x * blockDim.x * UNROLL + threadIdx.x; base < a.nvec;
         base += nthreads * UNROLL) {
        size_t idx[UNROLL];
        bool valid[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            idx[u] = base + (size_t)u * blockDim.x;
            valid[u] = idx[u] < a.nvec;
        }
        fold<Ty, OP, E, UNROLL>(a, idx, valid);
    }
    // the elements after them, one at a time
    for (size_t i = a.first + tid; i < a.count; i += nthreads) {
        bool valid = true;
        fold<Ty, OP, 1, 1>(a, &i, &valid);
    }
}

typedef void (*kernel_fn)(ReduceArgs);

#define TUTTI_CUDA_ROW(sfx)                                                                       \
    {                                                                                             \
        reduce_kernel<Ty_##sfx, TUTTI_SUM>, reduce_kernel<Ty_##sfx, TUTTI_PROD>,                  \
            reduce_kernel<Ty_##sfx, TUTTI_MIN>, reduce_kernel<Ty_##sfx, TUTTI_MAX>,               \
            reduce_kernel<Ty_##sfx, TUTTI_AVG>,                                                   \
    }

// Indexed by tutti_datatype_t and tutti_op_t (the order of tutti/types.h).
const kernel_fn kernels[TUTTI_NUM_DATATYPES][TUTTI_NUM_OPS] = {
    TUTTI_CUDA_ROW(i8),  TUTTI_CUDA_ROW(u8),  TUTTI_CUDA_ROW(i16),  TUTTI_CUDA_ROW(u16),
    TUTTI_CUDA_ROW(i32), TUTTI_CUDA_ROW(u32), TUTTI_CUDA_ROW(i64),  TUTTI_CUDA_ROW(u64),
    TUTTI_CUDA_ROW(half), TUTTI_CUDA_ROW(bf16), TUTTI_CUDA_ROW(f32), TUTTI_CUDA_ROW(f64),
    TUTTI_CUDA_ROW(e4m3), TUTTI_CUDA_ROW(e5m2),
};
static_assert(TUTTI_INT8 == 0 && TUTTI_FP8_E5M2 == 13 && TUTTI_NUM_DATATYPES == 14,
              "the kernel table follows the datatype order of tutti/types.h");
static_assert(TUTTI_SUM == 0 && TUTTI_AVG == 4 && TUTTI_NUM_OPS == 5,
              "the kernel table follows the op order of tutti/types.h");

const int type_size[TUTTI_NUM_DATATYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8, 1, 1};

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

// Blocks for `items` units of work (vector steps or tail elements): enough to cover them, at
// most BLOCKS_PER_SM per multiprocessor (the grid-stride loop does the rest), at least one.
int blocks_for(size_t items, int sms)
{
    size_t want = (items + THREADS - 1) / THREADS;
    size_t cap = (size_t)sms * BLOCKS_PER_SM;

    want = (want < cap) ? want : cap;
    return (want < 1) ? 1 : (int)want;
}

bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

// Vectors and first tail element of a call; vectors only when every pointer is aligned.
void split(const ReduceArgs &a, size_t elem, size_t *nvec_p, size_t *first_p)
{
    bool ok = true;

    for (int s = 0; s < a.nsrc; s++) {
        ok = ok && aligned16(a.src[s]);
    }
    for (int d = 0; d < a.ndst; d++) {
        ok = ok && aligned16(a.dst[d]);
    }
    *nvec_p = ok ? a.count * elem / 16 : 0;
    *first_p = *nvec_p * (16 / elem);
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
    // the aligned case: whole-vector steps, or tail elements, whichever is more
    size_t vecs = count * (size_t)type_size[dt] / 16;
    size_t steps = (vecs + UNROLL - 1) / UNROLL;
    size_t tail = count - vecs * (16 / (size_t)type_size[dt]);
    *blocks_p = blocks_for(steps > tail ? steps : tail, sms);
    *threads_p = THREADS;
    return 0;
}

int tutti__cuda_reduce(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                       tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream)
{
    ReduceArgs a = {};
    int sms = 0;
    int err;

    if (src == NULL || dst == NULL || nsrc < 1 || nsrc > TUTTI_CUDA_MAX_SRC || ndst < 1 ||
        ndst > TUTTI_CUDA_MAX_DST || (unsigned)dt >= TUTTI_NUM_DATATYPES ||
        (unsigned)op >= TUTTI_NUM_OPS) {
        return TUTTI_CUDA_ERR_INVALID_VALUE;
    }
    if (count == 0) {
        return 0;
    }
    for (int s = 0; s < nsrc; s++) {
        if (src[s] == NULL) {
            return TUTTI_CUDA_ERR_INVALID_VALUE;
        }
        a.src[s] = src[s];
    }
    for (int d = 0; d < ndst; d++) {
        if (dst[d] == NULL) {
            return TUTTI_CUDA_ERR_INVALID_VALUE;
        }
        a.dst[d] = dst[d];
    }
    a.nsrc = nsrc;
    a.ndst = ndst;
    a.count = count;
    a.divisor = divisor;
    if (op == TUTTI_AVG && divisor <= 1) {
        op = TUTTI_SUM; // as tutti__reduce: nothing to divide by
    }
    err = sm_count(&sms);
    if (err != 0) {
        return err;
    }
    split(a, (size_t)type_size[dt], &a.nvec, &a.first);
    size_t steps = (a.nvec + UNROLL - 1) / UNROLL;
    size_t tail = count - a.first;
    int blocks = blocks_for(steps > tail ? steps : tail, sms);
    kernels[dt][op]<<<blocks, THREADS, 0, (cudaStream_t)stream>>>(a);
    return (int)cudaGetLastError();
}
