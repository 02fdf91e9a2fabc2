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
//
// The premul kernels (the scaling of a pre-multiplied sum) are this body too, with the internal
// op OP_SCALE: one source, each element multiplied by a scalar, so they share the work split.
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
    // OP_SCALE only: the scalar's bytes (scalar_dev NULL), or where the kernel reads them
    const void *scalar_dev;
    uint64_t scalar_bits;
};

// The kernels' own op beside tutti_op_t: dst = scalar * src[0] (kern_prod_*, the scalar first)
// from one source, the module's premul.
constexpr int OP_SCALE = 64;

// What a datatype is, which decides the ops it has (tutti__reduce_supported's rules): integers
// have every op, floats no bitwise ones, bool no AVG and no scaling.
enum Kind { KIND_INT, KIND_FLOAT, KIND_BOOL };

// The scalar ops of one datatype, as kern_ops.h names them, in three groups; D is the
// divisor's type there.
#define TUTTI_CUDA_OPS_ORDER(sfx)                                                                 \
    static TUTTI_CUDA_INLINE T sum(T a, T b) { return kern_sum_##sfx(a, b); }                     \
    static TUTTI_CUDA_INLINE T prod(T a, T b) { return kern_prod_##sfx(a, b); }                   \
    static TUTTI_CUDA_INLINE T min(T a, T b) { return kern_min_##sfx(a, b); }                     \
    static TUTTI_CUDA_INLINE T max(T a, T b) { return kern_max_##sfx(a, b); }
#define TUTTI_CUDA_OPS_AVG(sfx)                                                                   \
    static TUTTI_CUDA_INLINE T avg(T a, T b, D d) { return kern_avg_##sfx(a, b, d); }             \
    static TUTTI_CUDA_INLINE T div(T x, D d) { return kern_div_##sfx(x, d); }
#define TUTTI_CUDA_OPS_BITS(sfx)                                                                  \
    static TUTTI_CUDA_INLINE T band(T a, T b) { return kern_band_##sfx(a, b); }                   \
    static TUTTI_CUDA_INLINE T bor(T a, T b) { return kern_bor_##sfx(a, b); }                     \
    static TUTTI_CUDA_INLINE T bxor(T a, T b) { return kern_bxor_##sfx(a, b); }
#define TUTTI_CUDA_INT_TYPE(sfx, T_, U_, W_)                                                      \
    struct Ty_##sfx {                                                                             \
        typedef T_ T;                                                                             \
        typedef int D;                                                                            \
        static constexpr Kind kind = KIND_INT;                                                    \
        TUTTI_CUDA_OPS_ORDER(sfx) TUTTI_CUDA_OPS_AVG(sfx) TUTTI_CUDA_OPS_BITS(sfx)                \
    };
#define TUTTI_CUDA_FLOAT_TYPE(sfx, T_, D_)                                                        \
    struct Ty_##sfx {                                                                             \
        typedef T_ T;                                                                             \
        typedef D_ D;                                                                             \
        static constexpr Kind kind = KIND_FLOAT;                                                  \
        TUTTI_CUDA_OPS_ORDER(sfx) TUTTI_CUDA_OPS_AVG(sfx)                                         \
    };
// kern_ops.h's lists of the types
KERN_INT_TYPES(TUTTI_CUDA_INT_TYPE)
KERN_WIDE_TYPES(TUTTI_CUDA_FLOAT_TYPE)
KERN_NARROW_TYPES(TUTTI_CUDA_FLOAT_TYPE)
struct Ty_bool8 {
    typedef uint8_t T;
    typedef int D; // unused: bool has no AVG
    static constexpr Kind kind = KIND_BOOL;
    TUTTI_CUDA_OPS_ORDER(bool8) TUTTI_CUDA_OPS_BITS(bool8)
};

// Every datatype in tutti/types.h order, for the tables of kernels and emulators:
// X(datatype, Ty_ suffix).
#define TUTTI_CUDA_TYPES(X)                                                                       \
    X(TUTTI_INT8, i8) X(TUTTI_UINT8, u8) X(TUTTI_INT16, i16) X(TUTTI_UINT16, u16)                 \
    X(TUTTI_INT32, i32) X(TUTTI_UINT32, u32) X(TUTTI_INT64, i64) X(TUTTI_UINT64, u64)             \
    X(TUTTI_FLOAT16, half) X(TUTTI_BFLOAT16, bf16) X(TUTTI_FLOAT32, f32)                          \
    X(TUTTI_FLOAT64, f64) X(TUTTI_FP8_E4M3, e4m3) X(TUTTI_FP8_E5M2, e5m2) X(TUTTI_BOOL, bool8)

// One row of a table indexed by tutti_op_t (the order of tutti/types.h): PICK<Ty, op>() for
// every op, which gives the kernel (or emulator) or a null pointer where Ty lacks the op.
#define TUTTI_CUDA_OP_ROW(PICK, sfx)                                                              \
    {PICK<Ty_##sfx, TUTTI_SUM>(),  PICK<Ty_##sfx, TUTTI_PROD>(), PICK<Ty_##sfx, TUTTI_MIN>(),     \
     PICK<Ty_##sfx, TUTTI_MAX>(),  PICK<Ty_##sfx, TUTTI_AVG>(),  PICK<Ty_##sfx, TUTTI_BAND>(),    \
     PICK<Ty_##sfx, TUTTI_BOR>(),  PICK<Ty_##sfx, TUTTI_BXOR>()}
static_assert(TUTTI_SUM == 0 && TUTTI_AVG == 4 && TUTTI_BXOR == 7 && TUTTI_NUM_OPS == 8,
              "TUTTI_CUDA_OP_ROW follows the op order of tutti/types.h");
static_assert(TUTTI_INT8 == 0 && TUTTI_FP8_E5M2 == 13 && TUTTI_BOOL == 14 &&
                  TUTTI_NUM_DATATYPES == 15,
              "TUTTI_CUDA_TYPES follows the datatype order of tutti/types.h");

// Whether a datatype of kind k has op (a tutti_op_t or OP_SCALE): tutti__reduce_supported's
// rules, plus no scaling of bool.
constexpr bool kind_supports(Kind k, int op)
{
    return (op >= TUTTI_BAND && op <= TUTTI_BXOR) ? k != KIND_FLOAT
           : (op == TUTTI_AVG || op == OP_SCALE)  ? k != KIND_BOOL
                                                  : (op >= 0 && op < TUTTI_NUM_OPS);
}

// The same for a datatype given at run time.
inline bool dt_supports(tutti_datatype_t dt, int op)
{
#define TUTTI_CUDA_KIND(dt_, sfx) Ty_##sfx::kind,
    static const Kind kinds[TUTTI_NUM_DATATYPES] = {TUTTI_CUDA_TYPES(TUTTI_CUDA_KIND)};
#undef TUTTI_CUDA_KIND
    return (unsigned)dt < TUTTI_NUM_DATATYPES && kind_supports(kinds[dt], op);
}

// acc = acc op x, one step of the left fold. AVG sums, and in the last step (last) divides as
// kern_avg does: the sum and the division in one rounding, like the CPU's last tutti__reduce.
// `if constexpr`, as a type lacks the ops it does not support.
template <class Ty, int OP>
TUTTI_CUDA_INLINE typename Ty::T step(typename Ty::T acc, typename Ty::T x, bool last,
                                      typename Ty::D dv)
{
    if constexpr (OP == TUTTI_SUM) {
        return Ty::sum(acc, x);
    } else if constexpr (OP == TUTTI_PROD) {
        return Ty::prod(acc, x);
    } else if constexpr (OP == TUTTI_MIN) {
        return Ty::min(acc, x);
    } else if constexpr (OP == TUTTI_MAX) {
        return Ty::max(acc, x);
    } else if constexpr (OP == TUTTI_BAND) {
        return Ty::band(acc, x);
    } else if constexpr (OP == TUTTI_BOR) {
        return Ty::bor(acc, x);
    } else if constexpr (OP == TUTTI_BXOR) {
        return Ty::bxor(acc, x);
    } else {
        static_assert(OP == TUTTI_AVG, "no fold step for OP_SCALE: it has one source");
        return last ? Ty::avg(acc, x, dv) : Ty::sum(acc, x);
    }
}

// Whether a lone source (nsrc == 1) is transformed rather than copied: AVG divides it, OP_SCALE
// multiplies it by the scalar, and bool makes every byte 0 or 1 (results of bool are, even from
// one source).
template <class Ty, int OP>
constexpr bool transforms_single = OP == TUTTI_AVG || OP == OP_SCALE || Ty::kind == KIND_BOOL;

template <class Ty, int OP>
TUTTI_CUDA_INLINE typename Ty::T single(typename Ty::T x, typename Ty::D dv, typename Ty::T sc)
{
    if constexpr (OP == TUTTI_AVG) {
        return Ty::div(x, dv);
    } else if constexpr (OP == OP_SCALE) {
        return Ty::prod(sc, x);
    } else {
        return Ty::bor(x, 0);
    }
}

// The scalar of OP_SCALE, read from the device when it lives there (bytewise: any alignment).
template <class T> TUTTI_CUDA_INLINE T scalar_of(const ReduceArgs &a)
{
    T s;

    memcpy(&s, (a.scalar_dev != NULL) ? a.scalar_dev : (const void *)&a.scalar_bits, sizeof(s));
    return s;
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
// of a source are issued before any of them is used. sc is OP_SCALE's scalar.
template <class Ty, int OP, int E, int U>
TUTTI_CUDA_INLINE void fold(const ReduceArgs &a, const size_t *idx, const bool *valid,
                            typename Ty::T sc)
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
    if constexpr (transforms_single<Ty, OP>) {
        if (a.nsrc == 1) {
TUTTI_CUDA_UNROLL
            for (int u = 0; u < U; u++) {
TUTTI_CUDA_UNROLL
                for (int k = 0; k < E; k++) {
                    acc[u].e[k] = single<Ty, OP>(acc[u].e[k], dv, sc);
                }
            }
        }
    }
    if constexpr (OP != OP_SCALE) { // OP_SCALE has one source
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
    typename Ty::T sc = {};

    if constexpr (OP == OP_SCALE) {
        sc = scalar_of<typename Ty::T>(a); // once per thread, before its first element
    }

    // whole vectors: UNROLL per thread and step, bdim apart (coalesced)
    for (size_t base = block * bdim * UNROLL + thread; base < a.nvec; base += nthreads * UNROLL) {
        size_t idx[UNROLL];
        bool valid[UNROLL];
TUTTI_CUDA_UNROLL
        for (int u = 0; u < UNROLL; u++) {
            idx[u] = base + (size_t)u * bdim;
            valid[u] = idx[u] < a.nvec;
        }
        fold<Ty, OP, E, UNROLL>(a, idx, valid, sc);
    }
    // the elements after them, one at a time
    for (size_t i = a.first + tid; i < a.count; i += nthreads) {
        bool valid = true;
        fold<Ty, OP, 1, 1>(a, &i, &valid, sc);
    }
}

inline size_t type_size(tutti_datatype_t dt)
{
    static const unsigned char size[TUTTI_NUM_DATATYPES] = {1, 1, 2, 2, 4, 4, 8, 8,
                                                           2, 2, 4, 8, 1, 1, 1};
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
 * Check a call's arguments (op a tutti_op_t the datatype supports, or OP_SCALE) and fill *a,
 * including the vector/tail split (vectors only when every pointer is 16-byte aligned), and
 * turn AVG without a divisor into SUM as tutti__reduce does. Returns 0, or
 * TUTTI_CUDA_ERR_INVALID_VALUE.
 */
inline int prepare(ReduceArgs *a, const void *const *src, int nsrc, void *const *dst, int ndst,
                   size_t count, tutti_datatype_t dt, int *op, int divisor)
{
    bool aligned = true;

    if (src == NULL || dst == NULL || nsrc < 1 || nsrc > TUTTI_CUDA_MAX_SRC || ndst < 1 ||
        ndst > TUTTI_CUDA_MAX_DST || !dt_supports(dt, *op)) {
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

/*
 * The arguments of a premul call (tutti_cuda.h): one source scaled into ndst destinations, as
 * op OP_SCALE. A host scalar's bytes are copied now (the call reads it); a device scalar is
 * read by the kernel when it runs. Returns 0, or TUTTI_CUDA_ERR_INVALID_VALUE.
 */
inline int prepare_scale(ReduceArgs *a, const void *src, void *const *dst, int ndst, size_t count,
                         tutti_datatype_t dt, const void *scalar, int scalar_on_device)
{
    int op = OP_SCALE;
    int err = prepare(a, &src, 1, dst, ndst, count, dt, &op, 0);

    if (err != 0 || scalar == NULL) {
        return TUTTI_CUDA_ERR_INVALID_VALUE;
    }
    if (scalar_on_device) {
        a->scalar_dev = scalar;
    } else {
        memcpy(&a->scalar_bits, scalar, type_size(dt));
    }
    return 0;
}

} // namespace tutti_cuda

#endif // TUTTI_KERNELS_CUDA_REDUCE_BODY_CUH
