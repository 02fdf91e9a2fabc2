// reduce_body.cuh - the body of the GPU reduction kernels, the same source for two compilers:
// nvcc builds the kernels from it (reduce_kernels.cu), and a host C++ compiler builds an
// emulator from it (tests/gpu/emul_reduce.cc) that runs every thread of a grid one after the
// other on the CPU, so the indexing, the vector/tail split and the fold are tested on machines
// without a GPU. Nothing here uses a CUDA header or built-in variable: the caller passes the
// block and thread indices.
//
// Work split: where every pointer is 16-byte aligned, a thread moves whole 16-byte vectors,
// UNROLL of them per grid-stride step, a block apart (coalesced, several loads in flight); the
// elements after the last whole vector, and every element when a pointer is not aligned, go
// through the same fold one at a time. Threads share nothing, so any execution order of them
// gives the same result: that is what makes the sequential emulation exact.
#ifndef TUTTI_KERNELS_CUDA_REDUCE_BODY_CUH
#define TUTTI_KERNELS_CUDA_REDUCE_BODY_CUH

#include "kernels/cuda/tutti_cuda.h"
#include "kernels/kern_ops.h"

#include <stddef.h>
#include <stdint.h>
#include <type_traits>

#if defined(__CUDACC__)
#define TUTTI_CUDA_INLINE __host__ __device__ __forceinline__
#define TUTTI_CUDA_UNROLL _Pragma("unroll")
#else
#define TUTTI_CUDA_INLINE inline
#define TUTTI_CUDA_UNROLL _Pragma("GCC unroll 16")
// CUDA's 16-byte vector type (vector_types.h), for the host compiler.
struct alignas(16) uint4 {
    unsigned int x, y, z, w;
};
#endif

namespace tutti_cuda {

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
        static TUTTI_CUDA_INLINE T sum(T a, T b) { return kern_sum_##sfx(a, b); }                 \
        static TUTTI_CUDA_INLINE T prod(T a, T b) { return kern_prod_##sfx(a, b); }               \
        static TUTTI_CUDA_INLINE T min(T a, T b) { return kern_min_##sfx(a, b); }                 \
        static TUTTI_CUDA_INLINE T max(T a, T b) { return kern_max_##sfx(a, b); }                 \
        static TUTTI_CUDA_INLINE T avg(T a, T b, D d) { return kern_avg_##sfx(a, b, d); }         \
        static TUTTI_CUDA_INLINE T div(T x, D d) { return kern_div_##sfx(x, d); }                 \
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

// Every datatype in tutti/types.h order, for the tables of kernels and emulators:
// X(datatype, Ty_ suffix).
#define TUTTI_CUDA_TYPES(X)                                                                       \
    X(TUTTI_INT8, i8) X(TUTTI_UINT8, u8) X(TUTTI_INT16, i16) X(TUTTI_UINT16, u16)                 \
    X(TUTTI_INT32, i32) X(TUTTI_UINT32, u32) X(TUTTI_INT64, i64) X(TUTTI_UINT64, u64)             \
    X(TUTTI_FLOAT16, half) X(TUTTI_BFLOAT16, bf16) X(TUTTI_FLOAT32, f32)                          \
    X(TUTTI_FLOAT64, f64) X(TUTTI_FP8_E4M3, e4m3) X(TUTTI_FP8_E5M2, e5m2)

// acc = acc op x, one step of the left fold. AVG sums, and in the last step (last) divides as
// kern_avg does: the sum and the division in one rounding, like the CPU's last tutti__reduce.
template <class Ty, int OP>
TUTTI_CUDA_INLINE typename Ty::T step(typename Ty::T acc, typename Ty::T x, bool last,
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

// Two elements per instruction (four for fp8), on the GPU only, where a packed instruction gives
// the scalar fold's bits: float16 SUM and PROD (add/mul.rn.f16x2: a float16 sum or product
// rounded once from float32 is the correctly rounded float16 one, as 24 >= 2 * 11 + 2 bits),
// bfloat16 SUM (add.rn.bf16x2, sm_90), and fp8 SUM (sm_89): decode to float16x2 (exact), add
// rounded to float16, encode with .satfinite. That double rounding equals the scalar's single
// one since 11 >= 2 * 4 + 2; sums past float16's range become infinity, which saturates as the
// scalar's large sums do. Every form keeps subnormals (no .ftz). NaN results may differ only in
// payload, as the hardware makes them canonical (tests/gpu: same_result). The scalar forms
// cost tens of integer instructions per element; these bound float16 and fp8 by memory again.
template <class Ty, int OP> struct Packed {
    static constexpr bool ok = false;
    static TUTTI_CUDA_INLINE unsigned int word(unsigned int a, unsigned int) { return a; }
};
#if defined(__CUDA_ARCH__)
#define TUTTI_CUDA_PACKED(Ty_, OP_, body)                                                         \
    template <> struct Packed<Ty_, OP_> {                                                         \
        static constexpr bool ok = true;                                                          \
        static __device__ __forceinline__ unsigned int word(unsigned int a, unsigned int b)       \
        {                                                                                         \
            unsigned int d;                                                                       \
            body;                                                                                 \
            return d;                                                                             \
        }                                                                                         \
    };
TUTTI_CUDA_PACKED(Ty_half, TUTTI_SUM, asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)))
TUTTI_CUDA_PACKED(Ty_half, TUTTI_PROD, asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)))
#if __CUDA_ARCH__ >= 900
TUTTI_CUDA_PACKED(Ty_bf16, TUTTI_SUM, asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)))
#endif
#if __CUDA_ARCH__ >= 890
// four fp8 in a word: each half-word pair through float16x2
#define TUTTI_CUDA_FP8_SUM(fmt)                                                                   \
    asm("{\n\t.reg .b16 alo, ahi, blo, bhi, rlo, rhi;\n\t.reg .b32 fa, fb, s;\n\t"                  \
        "mov.b32 {alo, ahi}, %1;\n\tmov.b32 {blo, bhi}, %2;\n\t"                                 \
        "cvt.rn.f16x2." fmt "x2 fa, alo;\n\tcvt.rn.f16x2." fmt "x2 fb, blo;\n\t"                 \
        "add.rn.f16x2 s, fa, fb;\n\tcvt.rn.satfinite." fmt "x2.f16x2 rlo, s;\n\t"                \
        "cvt.rn.f16x2." fmt "x2 fa, ahi;\n\tcvt.rn.f16x2." fmt "x2 fb, bhi;\n\t"                 \
        "add.rn.f16x2 s, fa, fb;\n\tcvt.rn.satfinite." fmt "x2.f16x2 rhi, s;\n\t"                \
        "mov.b32 %0, {rlo, rhi};\n\t}"                                                            \
        : "=r"(d)                                                                                 \
        : "r"(a), "r"(b))
TUTTI_CUDA_PACKED(Ty_e4m3, TUTTI_SUM, TUTTI_CUDA_FP8_SUM("e4m3"))
TUTTI_CUDA_PACKED(Ty_e5m2, TUTTI_SUM, TUTTI_CUDA_FP8_SUM("e5m2"))
#endif
#endif

// E elements of one datatype: a 16-byte vector (E = 16 / sizeof(T)), moved as one uint4, or a
// single element.
template <class T, int E> union Lanes {
    typedef typename std::conditional<E * sizeof(T) == 16, uint4, T>::type W;
    W v;
    T e[E];
};

template <class T, int E> TUTTI_CUDA_INLINE Lanes<T, E> load(const void *p, size_t i)
{
    Lanes<T, E> l;
    l.v = static_cast<const typename Lanes<T, E>::W *>(p)[i];
    return l;
}

template <class T, int E> TUTTI_CUDA_INLINE void store(void *p, size_t i, const Lanes<T, E> &l)
{
    static_cast<typename Lanes<T, E>::W *>(p)[i] = l.v;
}

// Items idx[0..U) (vector or element indices, E elements each; valid[u] says which exist):
// load source 0, fold in the others source by source, store to every destination. All U loads
// of a source are issued before any of them is used.
template <class Ty, int OP, int E, int U>
TUTTI_CUDA_INLINE void fold(const ReduceArgs &a, const size_t *idx, const bool *valid)
{
    typedef typename Ty::T T;
    typename Ty::D dv = (typename Ty::D)a.divisor;
    Lanes<T, E> acc[U] = {}; // lanes that do not exist compute on zeros and are not stored

TUTTI_CUDA_UNROLL
    for (int u = 0; u < U; u++) {
        if (valid[u]) {
            acc[u] = load<T, E>(a.src[0], idx[u]);
        }
    }
    if (OP == TUTTI_AVG && a.nsrc == 1) {
TUTTI_CUDA_UNROLL
        for (int u = 0; u < U; u++) {
TUTTI_CUDA_UNROLL
            for (int k = 0; k < E; k++) {
                acc[u].e[k] = Ty::div(acc[u].e[k], dv);
            }
        }
    }
    for (int s = 1; s < a.nsrc; s++) {
        bool last = s == a.nsrc - 1;
        Lanes<T, E> x[U] = {};
TUTTI_CUDA_UNROLL
        for (int u = 0; u < U; u++) {
            if (valid[u]) {
                x[u] = load<T, E>(a.src[s], idx[u]);
            }
        }
TUTTI_CUDA_UNROLL
        for (int u = 0; u < U; u++) {
            if constexpr (Packed<Ty, OP>::ok && E * sizeof(T) == 16) {
                acc[u].v.x = Packed<Ty, OP>::word(acc[u].v.x, x[u].v.x);
                acc[u].v.y = Packed<Ty, OP>::word(acc[u].v.y, x[u].v.y);
                acc[u].v.z = Packed<Ty, OP>::word(acc[u].v.z, x[u].v.z);
                acc[u].v.w = Packed<Ty, OP>::word(acc[u].v.w, x[u].v.w);
            } else {
TUTTI_CUDA_UNROLL
                for (int k = 0; k < E; k++) {
                    acc[u].e[k] = step<Ty, OP>(acc[u].e[k], x[u].e[k], last, dv);
                }
            }
        }
    }
    for (int d = 0; d < a.ndst; d++) {
TUTTI_CUDA_UNROLL
        for (int u = 0; u < U; u++) {
            if (valid[u]) {
                store<T, E>(a.dst[d], idx[u], acc[u]);
            }
        }
    }
}

// What thread `thread` of block `block` (of `blocks` blocks of `bdim` threads) does.
template <class Ty, int OP>
TUTTI_CUDA_INLINE void reduce_body(const ReduceArgs &a, size_t block, size_t bdim, size_t thread,
                                   size_t blocks)
{
    constexpr int E = 16 / sizeof(typename Ty::T);
    size_t tid = block * bdim + thread;
    size_t nthreads = blocks * bdim;

    // whole vectors: UNROLL per thread and step, bdim apart (coalesced)
    for (size_t base = block * bdim * UNROLL + thread; base < a.nvec; base += nthreads * UNROLL) {
        size_t idx[UNROLL];
        bool valid[UNROLL];
TUTTI_CUDA_UNROLL
        for (int u = 0; u < UNROLL; u++) {
            idx[u] = base + (size_t)u * bdim;
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

inline size_t type_size(tutti_datatype_t dt)
{
    static const unsigned char size[TUTTI_NUM_DATATYPES] = {1, 1, 2, 2, 4, 4, 8, 8,
                                                           2, 2, 4, 8, 1, 1};
    return size[dt];
}

// Blocks for `items` units of work (vector steps or tail elements): enough to cover them, at
// most BLOCKS_PER_SM per multiprocessor (the grid-stride loop does the rest), at least one.
inline int blocks_for(size_t items, int sms)
{
    size_t want = (items + THREADS - 1) / THREADS;
    size_t cap = (size_t)sms * BLOCKS_PER_SM;

    want = (want < cap) ? want : cap;
    return (want < 1) ? 1 : (int)want;
}

// Units of work of a call: whole-vector steps or tail elements, whichever is more.
inline size_t work_items(const ReduceArgs &a)
{
    size_t steps = (a.nvec + UNROLL - 1) / UNROLL;
    size_t tail = a.count - a.first;

    return (steps > tail) ? steps : tail;
}

// Work items of a call of `count` elements whose pointers are all aligned (launch_shape).
inline size_t aligned_work_items(size_t count, tutti_datatype_t dt)
{
    ReduceArgs a = {};

    a.count = count;
    a.nvec = count * type_size(dt) / 16;
    a.first = a.nvec * (16 / type_size(dt));
    return work_items(a);
}

/*
 * Check a call's arguments and fill *a, including the vector/tail split (vectors only when
 * every pointer is 16-byte aligned), and turn AVG without a divisor into SUM as tutti__reduce
 * does. Returns 0, or TUTTI_CUDA_ERR_INVALID_VALUE.
 */
inline int prepare(ReduceArgs *a, const void *const *src, int nsrc, void *const *dst, int ndst,
                   size_t count, tutti_datatype_t dt, tutti_op_t *op, int divisor)
{
    bool aligned = true;

    if (src == NULL || dst == NULL || nsrc < 1 || nsrc > TUTTI_CUDA_MAX_SRC || ndst < 1 ||
        ndst > TUTTI_CUDA_MAX_DST || (unsigned)dt >= TUTTI_NUM_DATATYPES ||
        (unsigned)*op >= TUTTI_NUM_OPS) {
        return TUTTI_CUDA_ERR_INVALID_VALUE;
    }
    *a = ReduceArgs();
    for (int s = 0; s < nsrc; s++) {
        a->src[s] = src[s];
        aligned = aligned && ((uintptr_t)src[s] & 15u) == 0;
    }
    for (int d = 0; d < ndst; d++) {
        a->dst[d] = dst[d];
        aligned = aligned && ((uintptr_t)dst[d] & 15u) == 0;
    }
    for (int s = 0; s < nsrc; s++) {
        if (src[s] == NULL) {
            return TUTTI_CUDA_ERR_INVALID_VALUE;
        }
    }
    for (int d = 0; d < ndst; d++) {
        if (dst[d] == NULL) {
            return TUTTI_CUDA_ERR_INVALID_VALUE;
        }
    }
    a->nsrc = nsrc;
    a->ndst = ndst;
    a->count = count;
    a->divisor = divisor;
    a->nvec = aligned ? count * type_size(dt) / 16 : 0;
    a->first = a->nvec * (16 / type_size(dt));
    if (*op == TUTTI_AVG && divisor <= 1) {
        *op = TUTTI_SUM; // nothing to divide by
    }
    return 0;
}

} // namespace tutti_cuda

#endif // TUTTI_KERNELS_CUDA_REDUCE_BODY_CUH
