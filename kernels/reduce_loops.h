/*
 * reduce_loops.h - the element loops of every datatype x op and the table that lists them,
 * written once and compiled once per instruction set. Not an ordinary header: a file includes it
 * exactly once after defining
 *   KERN_ATTR   the attribute that gives every loop its target (empty for the generic build),
 *   KERN_TABLE  the name of the exported tutti_kern_table_t,
 *   KERN_NAME   the table's name string,
 *   KERN_VEC16  1 where the narrow float types' SUM/PROD/AVG/div use the AVX2/F16C loops of
 *               reduce_x86.h, else 0.
 * The loops call the scalar ops of kern_ops.h and leave the vectorisation to the compiler, but
 * for the narrow float arithmetic where KERN_VEC16 is 1.
 */
#include "kernels/kern_ops.h"
#include "kernels/reduce_isa.h"

#include <stddef.h>
#include <stdint.h>

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

#define KERN_ALL_FNS(sfx, T, DT)                                                                   \
    KERN_SELECT_FNS(sfx, T, DT)                                                                    \
    KERN_ARITH_FNS(sfx, T, DT)

KERN_ALL_FNS(i8, int8_t, int)
KERN_ALL_FNS(u8, uint8_t, int)
KERN_ALL_FNS(i16, int16_t, int)
KERN_ALL_FNS(u16, uint16_t, int)
KERN_ALL_FNS(i32, int32_t, int)
KERN_ALL_FNS(u32, uint32_t, int)
KERN_ALL_FNS(i64, int64_t, int)
KERN_ALL_FNS(u64, uint64_t, int)
KERN_ALL_FNS(f32, float, float)
KERN_ALL_FNS(f64, double, double)
KERN_SELECT_FNS(half, uint16_t, float)
KERN_SELECT_FNS(bf16, uint16_t, float)
KERN_SELECT_FNS(e4m3, uint8_t, float)
KERN_SELECT_FNS(e5m2, uint8_t, float)

#if KERN_VEC16
#include "kernels/reduce_x86.h"
#else
KERN_ARITH_FNS(half, uint16_t, float)
KERN_ARITH_FNS(bf16, uint16_t, float)
KERN_ARITH_FNS(e4m3, uint8_t, float)
KERN_ARITH_FNS(e5m2, uint8_t, float)
#endif

#define KERN_ROW(sfx)                                                                              \
    {                                                                                              \
        [TUTTI_SUM] = sum_##sfx, [TUTTI_PROD] = prod_##sfx, [TUTTI_MIN] = min_##sfx,               \
        [TUTTI_MAX] = max_##sfx, [TUTTI_AVG] = avg_##sfx,                                          \
    }

const tutti_kern_table_t KERN_TABLE = {
    .name = KERN_NAME,
    .reduce =
        {
            [TUTTI_INT8] = KERN_ROW(i8),
            [TUTTI_UINT8] = KERN_ROW(u8),
            [TUTTI_INT16] = KERN_ROW(i16),
            [TUTTI_UINT16] = KERN_ROW(u16),
            [TUTTI_INT32] = KERN_ROW(i32),
            [TUTTI_UINT32] = KERN_ROW(u32),
            [TUTTI_INT64] = KERN_ROW(i64),
            [TUTTI_UINT64] = KERN_ROW(u64),
            [TUTTI_FLOAT16] = KERN_ROW(half),
            [TUTTI_BFLOAT16] = KERN_ROW(bf16),
            [TUTTI_FLOAT32] = KERN_ROW(f32),
            [TUTTI_FLOAT64] = KERN_ROW(f64),
            [TUTTI_FP8_E4M3] = KERN_ROW(e4m3),
            [TUTTI_FP8_E5M2] = KERN_ROW(e5m2),
        },
    .div =
        {
            [TUTTI_INT8] = div_i8,
            [TUTTI_UINT8] = div_u8,
            [TUTTI_INT16] = div_i16,
            [TUTTI_UINT16] = div_u16,
            [TUTTI_INT32] = div_i32,
            [TUTTI_UINT32] = div_u32,
            [TUTTI_INT64] = div_i64,
            [TUTTI_UINT64] = div_u64,
            [TUTTI_FLOAT16] = div_half,
            [TUTTI_BFLOAT16] = div_bf16,
            [TUTTI_FLOAT32] = div_f32,
            [TUTTI_FLOAT64] = div_f64,
            [TUTTI_FP8_E4M3] = div_e4m3,
            [TUTTI_FP8_E5M2] = div_e5m2,
        },
};
