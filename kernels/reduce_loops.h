/*
 * reduce_loops.h - the element loops of every datatype x op and the table that lists them,
 * written once and compiled once per instruction set. Not an ordinary header: a file includes it
 * exactly once after defining
 *   KERN_ATTR   the attribute that gives every loop its target (empty for the generic build),
 *   KERN_TABLE  the name of the exported tutti_kern_table_t,
 *   KERN_NAME   the table's name string,
 *   KERN_VEC16  1 where the narrow float types' SUM/PROD/AVG/div, scale and pre-multiplied
 *               sum use the AVX2/F16C loops of reduce_x86.h, else 0.
 * The loops call the scalar ops of kern_ops.h and leave the vectorisation to the compiler, but
 * for the narrow float arithmetic where KERN_VEC16 is 1.
 */
#include "kernels/kern_ops.h"
#include "kernels/reduce_isa.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The destinations may alias the sources exactly (dst0 == a, say), which rules out `restrict`;
 * but element i only ever reads a[i], b[i] before writing dst0[i], dst1[i], so no iteration
 * depends on another one, which is what these pragmas tell the compiler.
 */
#if defined(__clang__)
/* clang's pragma also asks for vectorisation and warns where its cost model declines (the
 * generic float16 conversions on SSE2); a loop that stays scalar there is fine */
#pragma clang diagnostic ignored "-Wpass-failed"
#define KERN_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define KERN_IVDEP _Pragma("GCC ivdep")
#else
#define KERN_IVDEP
#endif

/*
 * Elements per inner loop. A fixed trip count lets GCC vectorise at -O2 too (its "very cheap"
 * cost model refuses loops that would need a scalar epilogue); 64 is a multiple of every vector
 * length up to 64 one-byte lanes. The remainder runs through the same expression, scalar.
 */
#define KERN_BLOCK 64

/* Apply EXPR (of i, x, y, dv) to every element: the body shared by all reduce loops. */
#define KERN_APPLY(T, EXPR)                                                                        \
    size_t i = 0;                                                                                  \
    if (d1 == NULL) {                                                                              \
        for (size_t blk = 0; blk + KERN_BLOCK <= n; blk += KERN_BLOCK) {                           \
            KERN_IVDEP                                                                             \
            for (i = blk; i < blk + KERN_BLOCK; i++) {                                             \
                d0[i] = EXPR;                                                                      \
            }                                                                                      \
        }                                                                                          \
        for (i = n - n % KERN_BLOCK; i < n; i++) {                                                 \
            d0[i] = EXPR;                                                                          \
        }                                                                                          \
    } else {                                                                                       \
        for (size_t blk = 0; blk + KERN_BLOCK <= n; blk += KERN_BLOCK) {                           \
            KERN_IVDEP                                                                             \
            for (i = blk; i < blk + KERN_BLOCK; i++) {                                             \
                T r = EXPR;                                                                        \
                d0[i] = r;                                                                         \
                d1[i] = r;                                                                         \
            }                                                                                      \
        }                                                                                          \
        for (i = n - n % KERN_BLOCK; i < n; i++) {                                                 \
            T r = EXPR;                                                                            \
            d0[i] = r;                                                                             \
            d1[i] = r;                                                                             \
        }                                                                                          \
    }

/* One reduce loop: name, element type T, divisor type DT, element expression. */
#define KERN_REDUCE_FN(name, T, DT, EXPR)                                                          \
    KERN_ATTR static void name(void *dst0, void *dst1, const void *a, const void *b, size_t n,     \
                               int divisor)                                                        \
    {                                                                                              \
        T *d0 = (T *)dst0;                                                                         \
        T *d1 = (T *)dst1;                                                                         \
        const T *x = (const T *)a;                                                                 \
        const T *y = (const T *)b;                                                                 \
        DT dv = (DT)divisor;                                                                       \
        (void)dv;                                                                                  \
        KERN_APPLY(T, EXPR)                                                                        \
    }

/* dst[i] = src[i] / divisor: the reduce body with no second destination and y unused. */
#define KERN_DIV_FN(sfx, T, DT)                                                                    \
    KERN_ATTR static void div_##sfx(void *dst, const void *src, size_t n, int divisor)             \
    {                                                                                              \
        T *d0 = (T *)dst;                                                                          \
        T *d1 = NULL;                                                                              \
        const T *x = (const T *)src;                                                               \
        DT dv = (DT)divisor;                                                                       \
        KERN_APPLY(T, kern_div_##sfx(x[i], dv))                                                    \
    }

#define KERN_SELECT_FNS(sfx, T, DT)                                                                \
    KERN_REDUCE_FN(min_##sfx, T, DT, kern_min_##sfx(x[i], y[i]))                                   \
    KERN_REDUCE_FN(max_##sfx, T, DT, kern_max_##sfx(x[i], y[i]))

#define KERN_ARITH_FNS(sfx, T, DT)                                                                 \
    KERN_REDUCE_FN(sum_##sfx, T, DT, kern_sum_##sfx(x[i], y[i]))                                   \
    KERN_REDUCE_FN(prod_##sfx, T, DT, kern_prod_##sfx(x[i], y[i]))                                 \
    KERN_REDUCE_FN(avg_##sfx, T, DT, kern_avg_##sfx(x[i], y[i], dv))                               \
    KERN_DIV_FN(sfx, T, DT)

/* The bitwise ops, of the integer types and of bool (kern_ops.h's *_bool8 are logical). */
#define KERN_BITS_FNS(sfx, T)                                                                      \
    KERN_REDUCE_FN(band_##sfx, T, int, kern_band_##sfx(x[i], y[i]))                                \
    KERN_REDUCE_FN(bor_##sfx, T, int, kern_bor_##sfx(x[i], y[i]))                                  \
    KERN_REDUCE_FN(bxor_##sfx, T, int, kern_bxor_##sfx(x[i], y[i]))

/*
 * The pre-multiplied sum: premul_<sfx> is acc + (scalar * own), the product rounded once (kern_prod
 * with the scalar first, so that a NaN scalar's payload wins as on the GPU), then SUM's rounding;
 * scale_own_<sfx> is the same loop without acc. Both take tutti_kern_premul_fn's arguments, with
 * the locals below (x is acc, y own, s the scalar, read once with memcpy as it may be unaligned),
 * and scale_<sfx> passes tutti_kern_scale_fn's arguments on to scale_own_<sfx>. reduce_x86.h
 * builds its loops the same way.
 */
#define KERN_PREMUL_SIG(name)                                                                      \
    KERN_ATTR static void name(void *dst0, void *dst1, const void *acc, const void *own, size_t n, \
                               const void *scalar)
#define KERN_PREMUL_LOCALS(T)                                                                      \
    T *d0 = (T *)dst0;                                                                             \
    T *d1 = (T *)dst1;                                                                             \
    const T *x = (const T *)acc;                                                                   \
    const T *y = (const T *)own;                                                                   \
    T s;                                                                                           \
    memcpy(&s, scalar, sizeof(s));                                                                 \
    (void)x;
#define KERN_SCALE_WRAPPER(sfx)                                                                    \
    KERN_ATTR static void scale_##sfx(void *dst0, void *dst1, const void *src, size_t n,           \
                                      const void *scalar)                                          \
    {                                                                                              \
        scale_own_##sfx(dst0, dst1, NULL, src, n, scalar);                                         \
    }

#define KERN_SCALE_FNS(sfx, T)                                                                     \
    KERN_PREMUL_SIG(scale_own_##sfx){KERN_PREMUL_LOCALS(T) KERN_APPLY(                             \
        T, kern_prod_##sfx(s, y[i]))} KERN_PREMUL_SIG(premul_##sfx){                               \
        KERN_PREMUL_LOCALS(T)                                                                      \
            KERN_APPLY(T, kern_sum_##sfx(x[i], kern_prod_##sfx(s, y[i])))} KERN_SCALE_WRAPPER(sfx)

#define KERN_ALL_FNS(sfx, T, DT)                                                                   \
    KERN_SELECT_FNS(sfx, T, DT)                                                                    \
    KERN_ARITH_FNS(sfx, T, DT)                                                                     \
    KERN_SCALE_FNS(sfx, T)

/* The integer types (kern_ops.h's list); U and W are unused here. */
#define KERN_INT_FNS(sfx, T, U, W)                                                                 \
    KERN_ALL_FNS(sfx, T, int)                                                                      \
    KERN_BITS_FNS(sfx, T)

KERN_INT_TYPES(KERN_INT_FNS)
KERN_WIDE_TYPES(KERN_ALL_FNS)
KERN_NARROW_TYPES(KERN_SELECT_FNS)
/* bool: SUM and MAX are BOR, PROD and MIN are BAND (kern_ops.h), so three loops serve seven */
KERN_BITS_FNS(bool8, uint8_t)

#if KERN_VEC16
#include "kernels/reduce_x86.h"
#else
#define KERN_NARROW_FNS(sfx, T, DT)                                                                \
    KERN_ARITH_FNS(sfx, T, DT)                                                                     \
    KERN_SCALE_FNS(sfx, T)
KERN_NARROW_TYPES(KERN_NARROW_FNS)
#endif

/* The rows of the table: the float types have no bitwise ops (NULL). */
#define KERN_ROW(sfx)                                                                              \
    {                                                                                              \
        [TUTTI_SUM] = sum_##sfx, [TUTTI_PROD] = prod_##sfx, [TUTTI_MIN] = min_##sfx,               \
        [TUTTI_MAX] = max_##sfx, [TUTTI_AVG] = avg_##sfx,                                          \
    }
#define KERN_INT_ROW(sfx)                                                                          \
    {                                                                                              \
        [TUTTI_SUM] = sum_##sfx, [TUTTI_PROD] = prod_##sfx, [TUTTI_MIN] = min_##sfx,               \
        [TUTTI_MAX] = max_##sfx, [TUTTI_AVG] = avg_##sfx, [TUTTI_BAND] = band_##sfx,               \
        [TUTTI_BOR] = bor_##sfx, [TUTTI_BXOR] = bxor_##sfx,                                        \
    }
/* A column of the table: the function pfx_<suffix> of every datatype but bool. */
#define KERN_NUMBER_COLUMN(pfx)                                                                    \
    {                                                                                              \
        [TUTTI_INT8] = pfx##_i8, [TUTTI_UINT8] = pfx##_u8, [TUTTI_INT16] = pfx##_i16,              \
        [TUTTI_UINT16] = pfx##_u16, [TUTTI_INT32] = pfx##_i32, [TUTTI_UINT32] = pfx##_u32,         \
        [TUTTI_INT64] = pfx##_i64, [TUTTI_UINT64] = pfx##_u64, [TUTTI_FLOAT16] = pfx##_half,       \
        [TUTTI_BFLOAT16] = pfx##_bf16, [TUTTI_FLOAT32] = pfx##_f32, [TUTTI_FLOAT64] = pfx##_f64,   \
        [TUTTI_FP8_E4M3] = pfx##_e4m3, [TUTTI_FP8_E5M2] = pfx##_e5m2,                              \
    }

const tutti_kern_table_t KERN_TABLE = {
    .name = KERN_NAME,
    .reduce =
        {
            [TUTTI_INT8] = KERN_INT_ROW(i8),
            [TUTTI_UINT8] = KERN_INT_ROW(u8),
            [TUTTI_INT16] = KERN_INT_ROW(i16),
            [TUTTI_UINT16] = KERN_INT_ROW(u16),
            [TUTTI_INT32] = KERN_INT_ROW(i32),
            [TUTTI_UINT32] = KERN_INT_ROW(u32),
            [TUTTI_INT64] = KERN_INT_ROW(i64),
            [TUTTI_UINT64] = KERN_INT_ROW(u64),
            [TUTTI_FLOAT16] = KERN_ROW(half),
            [TUTTI_BFLOAT16] = KERN_ROW(bf16),
            [TUTTI_FLOAT32] = KERN_ROW(f32),
            [TUTTI_FLOAT64] = KERN_ROW(f64),
            [TUTTI_FP8_E4M3] = KERN_ROW(e4m3),
            [TUTTI_FP8_E5M2] = KERN_ROW(e5m2),
            [TUTTI_BOOL] =
                {
                    [TUTTI_SUM] = bor_bool8,
                    [TUTTI_PROD] = band_bool8,
                    [TUTTI_MIN] = band_bool8,
                    [TUTTI_MAX] = bor_bool8,
                    [TUTTI_BAND] = band_bool8,
                    [TUTTI_BOR] = bor_bool8,
                    [TUTTI_BXOR] = bxor_bool8,
                },
        },
    .div = KERN_NUMBER_COLUMN(div),
    .scale = KERN_NUMBER_COLUMN(scale),
    .premul = KERN_NUMBER_COLUMN(premul),
};
