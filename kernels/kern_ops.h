/*
 * kern_ops.h - the scalar element operations of the reductions and the exact conversions of the
 * narrow float types (float16, bfloat16, fp8 e4m3, fp8 e5m2) to and from float32.
 *
 * Everything here is a static inline function marked TUTTI_HOST_DEVICE, valid C11 and CUDA C++,
 * so the CPU loops (reduce_loops.h) and a later CUDA kernel compute bit-identical results from the
 * very same definitions. The conversions are integer work plus, when decoding, one exact
 * multiply: they do not depend on the floating-point environment (rounding mode, flush-to-zero),
 * and they are written without branches so that the compiler can vectorise the calling loops.
 * On the GPU the float16 and fp8 conversions use the conversion instructions instead, which
 * compute the same values (see kern_hw_* below).
 */
#ifndef TUTTI_KERNELS_KERN_OPS_H
#define TUTTI_KERNELS_KERN_OPS_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define TUTTI_HOST_DEVICE __host__ __device__
#else
#define TUTTI_HOST_DEVICE
#endif

/* ---- bit casts ---- */

TUTTI_HOST_DEVICE static inline uint32_t kern_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
#endif
}

TUTTI_HOST_DEVICE static inline float kern_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
#endif
}

/*
 * x >> s rounded to nearest, ties to even (1 <= s <= 25, x < 2^31). Adding half an ulp minus one,
 * plus the kept lowest bit, carries exactly when the dropped bits exceed half, or equal half with
 * an odd kept part.
 */
TUTTI_HOST_DEVICE static inline uint32_t kern_rne_shift(uint32_t x, uint32_t s)
{
    return (x + (1u << (s - 1u)) - 1u + ((x >> s) & 1u)) >> s;
}

/*
 * c ? a : b, written with masks: GCC turns a ternary into a branch and then moves floating-point
 * work that only one side uses into that branch, where -ftrapping-math forbids the vectoriser to
 * make it unconditional again. With masks the work stays on the straight path.
 */
TUTTI_HOST_DEVICE static inline uint32_t kern_blend(int c, uint32_t a, uint32_t b)
{
    uint32_t mask = 0u - (uint32_t)(c != 0);

    return (a & mask) | (b & ~mask);
}

/*
 * The magnitude of a finite narrow value with exponent field e and mantissa field m (mbits wide):
 * the significand (m plus the hidden bit, none where e == 0) converted to binary32 and scaled by
 * 2^(max(e, 1) - bias - mbits). Both steps are exact in any rounding mode and involve no
 * subnormal binary32 (so flush-to-zero modes do not change them), and both run for every element,
 * which keeps the loops that call this free of branches.
 */
TUTTI_HOST_DEVICE static inline uint32_t kern_narrow_mag(uint32_t e, uint32_t m, uint32_t mbits,
                                                         uint32_t bias)
{
    uint32_t sig = m | ((e != 0u) ? (1u << mbits) : 0u);
    float scale = kern_bits_f32((((e != 0u) ? e : 1u) + 127u - bias - mbits) << 23);

    return kern_f32_bits((float)(int32_t)sig * scale);
}

/*
 * On the GPU the conversion instructions do the work: for every value but NaN they are the IEEE
 * conversions the portable code below computes (exact widening; narrowing rounds to nearest even,
 * subnormals kept since no .ftz is asked, fp8 with .satfinite saturating as documented below), so
 * only a NaN takes the portable form's payload, chosen with a select. The portable forms cost
 * tens of integer instructions per element, which bound the float16 and fp8 kernels by
 * arithmetic (50% and 30% of the copy bandwidth on an H100).
 */
#if defined(__CUDA_ARCH__)
#define KERN_HW_HALF 1
__device__ static inline float kern_hw_half_to_float(uint16_t h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ static inline uint16_t kern_hw_float_to_half(float f)
{
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define KERN_HW_FP8 1
__device__ static inline float kern_hw_e4m3_to_float(uint8_t v)
{
    uint32_t h2;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((uint16_t)v));
    return kern_hw_half_to_float((uint16_t)(h2 & 0xFFFFu));
}
/* the pair instruction converts (0, f): f lands in the low byte */
__device__ static inline uint8_t kern_hw_float_to_e4m3(float f)
{
    uint16_t d;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(0.0f), "f"(f));
    return (uint8_t)(d & 0xFFu);
}
__device__ static inline uint8_t kern_hw_float_to_e5m2(float f)
{
    uint16_t d;
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(0.0f), "f"(f));
    return (uint8_t)(d & 0xFFu);
}
#endif

/* ---- float16 (IEEE binary16) ---- */

/*
 * Exact. A NaN keeps its sign and payload and comes out quiet, as the x86 F16C instruction
 * vcvtph2ps does, so the generic and the F16C loops agree bit for bit.
 */
TUTTI_HOST_DEVICE static inline float kern_half_to_float(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1Fu;
    uint32_t m = (uint32_t)h & 0x3FFu;
#if defined(KERN_HW_HALF)
    uint32_t bits = kern_f32_bits(kern_hw_half_to_float(h));
#else
    uint32_t bits = sign | kern_narrow_mag(e, m, 10u, 15u);
#endif
    uint32_t special = sign | 0x7F800000u | (m << 13) | (m != 0u ? 0x400000u : 0u);

    return kern_bits_f32(kern_blend(e == 31u, special, bits));
}

/*
 * Round to nearest even; magnitudes from 65520 (halfway past the largest finite, 65504) become
 * infinity; subnormals are rounded exactly; a NaN keeps its sign and top payload bits and comes
 * out quiet (bit-identical to F16C vcvtps2ph with round-to-nearest-even).
 */
TUTTI_HOST_DEVICE static inline uint16_t kern_float_to_half(float f)
{
    uint32_t u = kern_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t nan = 0x7E00u | ((a >> 13) & 0x3FFu);
#if defined(KERN_HW_HALF)
    return (uint16_t)(sign | ((a > 0x7F800000u) ? nan : (kern_hw_float_to_half(f) & 0x7FFFu)));
#else
    uint32_t e = a >> 23;
    /* a subnormal half counts units of 2^-24: the 24-bit significand shifted right by 126 - e;
     * the shift is clamped to 25 (everything rounds to zero) and set to 1 where it is unused */
    uint32_t s = (e < 101u) ? 25u : ((e > 112u) ? 1u : 126u - e);
    uint32_t r_sub = kern_rne_shift((a & 0x7FFFFFu) | 0x800000u, s);
    uint32_t r_norm = kern_rne_shift(a - 0x38000000u, 13u); /* rebias 127 -> 15 */
    uint32_t r = (a < 0x38800000u) ? r_sub : r_norm;        /* below 2^-14: subnormal */

    r = (a >= 0x477FF000u) ? 0x7C00u : r;
    r = (a > 0x7F800000u) ? nan : r;
    return (uint16_t)(sign | r);
#endif
}

/* ---- bfloat16 (the top half of a binary32) ---- */

/* Exact: the bits move up; a signalling NaN stays signalling until an arithmetic op quiets it. */
TUTTI_HOST_DEVICE static inline float kern_bf16_to_float(uint16_t h)
{
    return kern_bits_f32((uint32_t)h << 16);
}

/* Round to nearest even on the upper 16 bits (overflow -> inf); a NaN keeps sign, becomes quiet. */
TUTTI_HOST_DEVICE static inline uint16_t kern_float_to_bf16(float f)
{
    uint32_t u = kern_f32_bits(f);
    uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;

    r = ((u & 0x7FFFFFFFu) > 0x7F800000u) ? ((u >> 16) | 0x40u) : r;
    return (uint16_t)r;
}

/* ---- fp8 (OCP formats as CUDA's cuda_fp8.h defines them) ---- */

/*
 * float -> fp8 with CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) semantics:
 * - round to nearest even, subnormals included;
 * - magnitudes at or below half the smallest subnormal become a zero of the input's sign;
 * - magnitudes above `sat_above` (float bits of the saturation threshold) and infinities become
 *   the largest finite value `maxnorm` with the input's sign;
 * - every NaN becomes 0x7F: CUDA's float path makes NaN canonical (0x7FFFFFFF) before converting,
 *   so the sign is dropped. 0x7F is NaN in e4m3 and a quiet NaN in e5m2.
 * mbits is the number of mantissa bits, bias the exponent bias.
 */
TUTTI_HOST_DEVICE static inline uint8_t kern_float_to_fp8(float f, uint32_t mbits, uint32_t bias,
                                                          uint32_t sat_above, uint32_t maxnorm)
{
    uint32_t u = kern_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t e = a >> 23;
    uint32_t drop = 23u - mbits; /* float mantissa bits below the fp8 ulp of a normal */
    uint32_t emin = 128u - bias; /* float exponent field of the smallest fp8 normal */
    /* a subnormal counts units of 2^(1 - bias - mbits): the significand shifted right by
     * drop + emin - e, clamped to 25 (rounds to zero), and 1 where it is unused */
    uint32_t s = (e >= emin) ? 1u : ((e + 25u < drop + emin) ? 25u : drop + emin - e);
    uint32_t r_sub = kern_rne_shift((a & 0x7FFFFFu) | 0x800000u, s);
    uint32_t r_norm = kern_rne_shift(a - ((127u - bias) << 23), drop);
    uint32_t r = (e < emin) ? r_sub : r_norm;

    r = (a > sat_above) ? maxnorm : r;
    r |= sign;
    r = (a > 0x7F800000u) ? 0x7Fu : r;
    return (uint8_t)r;
}

/* e4m3 -> float, exact. 0x7F and 0xFF are NaN (a quiet NaN of that sign); there is no infinity. */
TUTTI_HOST_DEVICE static inline float kern_e4m3_to_float(uint8_t v)
{
    uint32_t sign = ((uint32_t)v & 0x80u) << 24;
#if defined(KERN_HW_FP8)
    uint32_t bits = kern_f32_bits(kern_hw_e4m3_to_float(v));
#else
    uint32_t bits = sign | kern_narrow_mag(((uint32_t)v >> 3) & 0xFu, (uint32_t)v & 0x7u, 3u, 7u);
#endif

    return kern_bits_f32(kern_blend(((uint32_t)v & 0x7Fu) == 0x7Fu, sign | 0x7FC00000u, bits));
}

/* RNE; |x| > 464 (halfway past 448) and infinities saturate to +-448 (0x7E); NaN -> 0x7F. */
TUTTI_HOST_DEVICE static inline uint8_t kern_float_to_e4m3(float f)
{
#if defined(KERN_HW_FP8)
    return (kern_f32_bits(f) & 0x7FFFFFFFu) > 0x7F800000u ? 0x7Fu : kern_hw_float_to_e4m3(f);
#else
    return kern_float_to_fp8(f, 3u, 7u, 0x43E80000u, 0x7Eu);
#endif
}

/* e5m2 -> float, exact: e5m2 is the upper byte of a binary16, so this is the half conversion. */
TUTTI_HOST_DEVICE static inline float kern_e5m2_to_float(uint8_t v)
{
    return kern_half_to_float((uint16_t)((uint32_t)v << 8));
}

/* RNE; |x| >= 61440 (halfway past 57344) and infinities saturate to +-57344 (0x7B); NaN -> 0x7F. */
TUTTI_HOST_DEVICE static inline uint8_t kern_float_to_e5m2(float f)
{
#if defined(KERN_HW_FP8)
    return (kern_f32_bits(f) & 0x7FFFFFFFu) > 0x7F800000u ? 0x7Fu : kern_hw_float_to_e5m2(f);
#else
    return kern_float_to_fp8(f, 2u, 15u, 0x476FFFFFu, 0x7Bu);
#endif
}

/* ---- element operations ---- */

/*
 * Integers. SUM and PROD run in the unsigned type W (at least as wide as int, so the operands are
 * not promoted to signed int) and wrap; the conversion back to a signed T is modulo 2^N on every
 * compiler we support. AVG truncates toward zero (C division) after the wrapped sum. The bitwise
 * ops work on the unsigned bits U, which is the two's-complement meaning for the signed types.
 */
#define KERN_INT_OPS(sfx, T, U, W)                                                                 \
    TUTTI_HOST_DEVICE static inline T kern_sum_##sfx(T a, T b)                                     \
    {                                                                                              \
        return (T)((W)(U)a + (W)(U)b);                                                             \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_prod_##sfx(T a, T b)                                    \
    {                                                                                              \
        return (T)((W)(U)a * (W)(U)b);                                                             \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_min_##sfx(T a, T b)                                     \
    {                                                                                              \
        return (b < a) ? b : a;                                                                    \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_max_##sfx(T a, T b)                                     \
    {                                                                                              \
        return (a < b) ? b : a;                                                                    \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_div_##sfx(T x, int d)                                   \
    {                                                                                              \
        return (T)(x / d);                                                                         \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_avg_##sfx(T a, T b, int d)                              \
    {                                                                                              \
        return kern_div_##sfx(kern_sum_##sfx(a, b), d);                                            \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_band_##sfx(T a, T b)                                    \
    {                                                                                              \
        return (T)((U)a & (U)b);                                                                   \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_bor_##sfx(T a, T b)                                     \
    {                                                                                              \
        return (T)((U)a | (U)b);                                                                   \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_bxor_##sfx(T a, T b)                                    \
    {                                                                                              \
        return (T)((U)a ^ (U)b);                                                                   \
    }

/* Every integer type in tutti/types.h order, X(suffix, T, U, W) as above; the CPU loops and the
 * GPU kernels are made from this list too. */
#define KERN_INT_TYPES(X)                                                                          \
    X(i8, int8_t, uint8_t, uint32_t)                                                               \
    X(u8, uint8_t, uint8_t, uint32_t)                                                              \
    X(i16, int16_t, uint16_t, uint32_t)                                                            \
    X(u16, uint16_t, uint16_t, uint32_t)                                                           \
    X(i32, int32_t, uint32_t, uint32_t)                                                            \
    X(u32, uint32_t, uint32_t, uint32_t)                                                           \
    X(i64, int64_t, uint64_t, uint64_t)                                                            \
    X(u64, uint64_t, uint64_t, uint64_t)

KERN_INT_TYPES(KERN_INT_OPS)

/*
 * float32, float64: IEEE arithmetic. MIN/MAX return a NaN operand if there is one (the first if
 * both are), else the smaller/larger operand, the first on equality (so -0.0 and +0.0 are equal).
 */
#define KERN_FLOAT_OPS(sfx, T)                                                                     \
    TUTTI_HOST_DEVICE static inline T kern_sum_##sfx(T a, T b)                                     \
    {                                                                                              \
        return a + b;                                                                              \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_prod_##sfx(T a, T b)                                    \
    {                                                                                              \
        return a * b;                                                                              \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_min_##sfx(T a, T b)                                     \
    {                                                                                              \
        return (a != a) ? a : ((b != b) ? b : ((b < a) ? b : a));                                  \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_max_##sfx(T a, T b)                                     \
    {                                                                                              \
        return (a != a) ? a : ((b != b) ? b : ((a < b) ? b : a));                                  \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_div_##sfx(T x, T d)                                     \
    {                                                                                              \
        return x / d;                                                                              \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline T kern_avg_##sfx(T a, T b, T d)                                \
    {                                                                                              \
        return (a + b) / d;                                                                        \
    }

KERN_FLOAT_OPS(f32, float)
KERN_FLOAT_OPS(f64, double)

/* float32 and float64, X(suffix, T, D), D the divisor's type; for the loops and kernels. */
#define KERN_WIDE_TYPES(X)                                                                         \
    X(f32, float, float)                                                                           \
    X(f64, double, double)

/*
 * Narrow float types, stored as U. SUM, PROD and AVG decode both operands to float32, compute in
 * float32 and round back once (AVG: (a + b) / d in float32, then one rounding). MIN and MAX only
 * select: the result is one of the two operands bit for bit, chosen as kern_min_f32/kern_max_f32
 * would choose between the decoded values. The choice is made on an integer key: the formats are
 * sign-magnitude, so +-magnitude orders them exactly like their values, with -0 equal to +0.
 * `nan_above` is the largest magnitude that is not NaN, `mag` the magnitude mask.
 */
#define KERN_NARROW_OPS(sfx, U, mag, nan_above)                                                    \
    TUTTI_HOST_DEVICE static inline U kern_sum_##sfx(U a, U b)                                     \
    {                                                                                              \
        return kern_float_to_##sfx(kern_##sfx##_to_float(a) + kern_##sfx##_to_float(b));           \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline U kern_prod_##sfx(U a, U b)                                    \
    {                                                                                              \
        return kern_float_to_##sfx(kern_##sfx##_to_float(a) * kern_##sfx##_to_float(b));           \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline int32_t kern_key_##sfx(U x)                                    \
    {                                                                                              \
        int32_t m = (int32_t)((uint32_t)x & (mag));                                                \
        return (((uint32_t)x & ((mag) + 1u)) != 0u) ? -m : m;                                      \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline U kern_min_##sfx(U a, U b)                                     \
    {                                                                                              \
        int a_nan = ((uint32_t)a & (mag)) > (nan_above);                                           \
        int b_nan = ((uint32_t)b & (mag)) > (nan_above);                                           \
        return a_nan ? a : (b_nan ? b : ((kern_key_##sfx(b) < kern_key_##sfx(a)) ? b : a));        \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline U kern_max_##sfx(U a, U b)                                     \
    {                                                                                              \
        int a_nan = ((uint32_t)a & (mag)) > (nan_above);                                           \
        int b_nan = ((uint32_t)b & (mag)) > (nan_above);                                           \
        return a_nan ? a : (b_nan ? b : ((kern_key_##sfx(a) < kern_key_##sfx(b)) ? b : a));        \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline U kern_div_##sfx(U x, float d)                                 \
    {                                                                                              \
        return kern_float_to_##sfx(kern_##sfx##_to_float(x) / d);                                  \
    }                                                                                              \
    TUTTI_HOST_DEVICE static inline U kern_avg_##sfx(U a, U b, float d)                            \
    {                                                                                              \
        return kern_float_to_##sfx((kern_##sfx##_to_float(a) + kern_##sfx##_to_float(b)) / d);     \
    }

KERN_NARROW_OPS(half, uint16_t, 0x7FFFu, 0x7C00u)
KERN_NARROW_OPS(bf16, uint16_t, 0x7FFFu, 0x7F80u)
KERN_NARROW_OPS(e4m3, uint8_t, 0x7Fu, 0x7Eu)
KERN_NARROW_OPS(e5m2, uint8_t, 0x7Fu, 0x7Cu)

/* The narrow float types, X(suffix, storage type, divisor type); for the loops and kernels. */
#define KERN_NARROW_TYPES(X)                                                                       \
    X(half, uint16_t, float)                                                                       \
    X(bf16, uint16_t, float)                                                                       \
    X(e4m3, uint8_t, float)                                                                        \
    X(e5m2, uint8_t, float)

/*
 * TUTTI_BOOL ("bool8": one byte, any nonzero value true). Every op is logical and every result 0
 * or 1, whatever nonzero bytes the inputs held: SUM, MAX and BOR are "or", PROD, MIN and BAND
 * "and", BXOR "exclusive or"; there is no AVG. The forms test whole bytes against zero, never a
 * single bit, so that 2 or 0x80 count as true; they have no branches and vectorise.
 */
TUTTI_HOST_DEVICE static inline uint8_t kern_bor_bool8(uint8_t a, uint8_t b)
{
    return (uint8_t)((a | b) != 0);
}

TUTTI_HOST_DEVICE static inline uint8_t kern_band_bool8(uint8_t a, uint8_t b)
{
    return (uint8_t)((a != 0) & (b != 0));
}

TUTTI_HOST_DEVICE static inline uint8_t kern_bxor_bool8(uint8_t a, uint8_t b)
{
    return (uint8_t)((a != 0) ^ (b != 0));
}

TUTTI_HOST_DEVICE static inline uint8_t kern_sum_bool8(uint8_t a, uint8_t b)
{
    return kern_bor_bool8(a, b);
}

TUTTI_HOST_DEVICE static inline uint8_t kern_max_bool8(uint8_t a, uint8_t b)
{
    return kern_bor_bool8(a, b);
}

TUTTI_HOST_DEVICE static inline uint8_t kern_prod_bool8(uint8_t a, uint8_t b)
{
    return kern_band_bool8(a, b);
}

TUTTI_HOST_DEVICE static inline uint8_t kern_min_bool8(uint8_t a, uint8_t b)
{
    return kern_band_bool8(a, b);
}

#endif /* TUTTI_KERNELS_KERN_OPS_H */
