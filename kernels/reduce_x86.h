/*
 * reduce_x86.h - hand-written AVX2/F16C loops for SUM, PROD, AVG, div, scale and pre-multiplied
 * sum of float16, bfloat16, fp8 e4m3 and fp8 e5m2, sixteen elements at a time, where GCC vectorises
 * the scalar conversions of kern_ops.h poorly. Part of reduce_loops.h, included by it where
 * KERN_VEC16 is 1 with a KERN_ATTR target that has AVX2 and F16C; not a header of its own. Every
 * loop gives the bits of the scalar ops, NaNs included (the tests compare the tables bit for bit),
 * and runs the remainder (n % 16 elements) through the scalar ops themselves.
 */
#include <immintrin.h>

/*
 * For each format fmt: fmt16_load gives sixteen elements as two vectors of eight float32 (lo,
 * hi), fmt16_round turns two such vectors back into sixteen elements, fmt16_store stores them,
 * and fmt16_unpack decodes what round returned as load decodes memory (the pre-multiplied sum
 * rounds its product before adding). The lane order may differ from memory order (bfloat16
 * unpacks within 128-bit halves) as long as round undoes what load did; the ops work lane by
 * lane.
 *
 * float16: vcvtph2ps is exact, and vcvtps2ph with an immediate round-to-nearest-even (whatever
 * MXCSR says) rounds correctly and quiets a NaN keeping its sign and top payload bits, exactly
 * like kern_half_to_float and kern_float_to_half.
 */
KERN_ATTR static inline void half16_load(const uint16_t *p, __m256 *lo, __m256 *hi)
{
    *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
    *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 8)));
}

KERN_ATTR static inline __m256i half16_round(__m256 lo, __m256 hi)
{
    return _mm256_set_m128i(_mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT),
                            _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
}

KERN_ATTR static inline void half16_unpack(__m256i v, __m256 *lo, __m256 *hi)
{
    *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(v));
    *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1));
}

KERN_ATTR static inline void bf1616_unpack(__m256i v, __m256 *lo, __m256 *hi)
{
    __m256i zero = _mm256_setzero_si256();

    /* each bfloat16 becomes the upper half of a 32-bit lane: elements 0-3, 8-11 | 4-7, 12-15 */
    *lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, v));
    *hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, v));
}

KERN_ATTR static inline void bf1616_load(const uint16_t *p, __m256 *lo, __m256 *hi)
{
    bf1616_unpack(_mm256_loadu_si256((const __m256i *)(const void *)p), lo, hi);
}

/*
 * Eight float32 rounded to bfloat16, each in the low half of its 32-bit lane: kern_float_to_bf16
 * (add 0x7FFF plus the kept lowest bit, shift down; a NaN keeps its top half, made quiet).
 */
KERN_ATTR static inline __m256i bf16_round_lanes(__m256 f)
{
    __m256i u = _mm256_castps_si256(f);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));

    return _mm256_blendv_epi8(r, quiet, nan);
}

KERN_ATTR static inline __m256i bf1616_round(__m256 lo, __m256 hi)
{
    /* every lane is below 0x10000, so the pack's unsigned saturation never triggers; it packs
     * within 128-bit halves, which restores the memory order that bf1616_load permuted */
    return _mm256_packus_epi32(bf16_round_lanes(lo), bf16_round_lanes(hi));
}

KERN_ATTR static inline void half16_store(uint16_t *p, __m256i r)
{
    _mm256_storeu_si256((__m256i *)(void *)p, r);
}

#define bf1616_store half16_store

/*
 * fp8: sixteen bytes, unpacked to two sets of eight 16-bit lanes holding byte << 8. For e5m2
 * that is the binary16 with the same value (e5m2 is the top byte of a binary16). For e4m3,
 * S.EEEE.MMM moved to the binary16 S.0EEEE.MMM0000000 is the value / 256, subnormals included
 * (binary16 has the wider range), so vcvtph2ps and one exact multiply decode it; NaN
 * (S.1111.111) becomes the binary16 quiet NaN of that sign, hence sign | 0x7FC00000 like the
 * scalar decoder.
 */
KERN_ATTR static inline __m256 e5m28_decode(__m128i w)
{
    return _mm256_cvtph_ps(w);
}

KERN_ATTR static inline __m256 e4m38_decode(__m128i w)
{
    __m128i sign = _mm_and_si128(w, _mm_set1_epi16((short)0x8000));
    __m128i h = _mm_or_si128(sign, _mm_and_si128(_mm_srli_epi16(w, 1), _mm_set1_epi16(0x3F80)));
    __m128i nan = _mm_cmpeq_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7F00)), _mm_set1_epi16(0x7F00));

    h = _mm_blendv_epi8(h, _mm_or_si128(sign, _mm_set1_epi16(0x7E00)), nan);
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
}

/* x >> s rounded to nearest even, lane by lane: kern_rne_shift with a variable shift. */
KERN_ATTR static inline __m256i vec_rne_shift(__m256i x, __m256i s)
{
    __m256i one = _mm256_set1_epi32(1);
    __m256i half = _mm256_sub_epi32(_mm256_sllv_epi32(one, _mm256_sub_epi32(s, one)), one);
    __m256i lsb = _mm256_and_si256(_mm256_srlv_epi32(x, s), one);

    return _mm256_srlv_epi32(_mm256_add_epi32(_mm256_add_epi32(x, half), lsb), s);
}

/* kern_float_to_fp8, step for step, on eight lanes; the result in the low byte of each lane. */
KERN_ATTR static inline __m256i fp8_round_lanes(__m256 f, int mbits, int bias, int sat_above,
                                                int maxnorm)
{
    int drop = 23 - mbits;
    int emin = 128 - bias;
    __m256i u = _mm256_castps_si256(f);
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i e = _mm256_srli_epi32(a, 23);
    __m256i s = _mm256_sub_epi32(_mm256_set1_epi32(drop + emin), e);
    __m256i sig = _mm256_or_si256(_mm256_and_si256(a, _mm256_set1_epi32(0x7FFFFF)),
                                  _mm256_set1_epi32(0x800000));
    __m256i r_norm = _mm256_sub_epi32(a, _mm256_set1_epi32((127 - bias) << 23));
    __m256i r;

    s = _mm256_min_epi32(_mm256_max_epi32(s, _mm256_set1_epi32(1)), _mm256_set1_epi32(25));
    r_norm = vec_rne_shift(r_norm, _mm256_set1_epi32(drop));
    r = _mm256_blendv_epi8(r_norm, vec_rne_shift(sig, s),
                           _mm256_cmpgt_epi32(_mm256_set1_epi32(emin), e));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(maxnorm),
                           _mm256_cmpgt_epi32(a, _mm256_set1_epi32(sat_above)));
    r = _mm256_or_si256(r, sign);
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7F),
                              _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000)));
}

/* Two sets of eight lanes back to sixteen bytes in memory order. */
KERN_ATTR static inline __m128i fp8_pack(__m256i lo, __m256i hi)
{
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);

    return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

#define KERN_FP8_FNS(fmt, mbits, bias, sat_above, maxnorm)                                         \
    KERN_ATTR static inline void fmt##16_unpack(__m128i v, __m256 * lo, __m256 * hi)               \
    {                                                                                              \
        *lo = fmt##8_decode(_mm_unpacklo_epi8(_mm_setzero_si128(), v));                            \
        *hi = fmt##8_decode(_mm_unpackhi_epi8(_mm_setzero_si128(), v));                            \
    }                                                                                              \
    KERN_ATTR static inline void fmt##16_load(const uint8_t *p, __m256 *lo, __m256 *hi)            \
    {                                                                                              \
        fmt##16_unpack(_mm_loadu_si128((const __m128i *)(const void *)p), lo, hi);                 \
    }                                                                                              \
    KERN_ATTR static inline __m128i fmt##16_round(__m256 lo, __m256 hi)                            \
    {                                                                                              \
        return fp8_pack(fp8_round_lanes(lo, mbits, bias, sat_above, maxnorm),                      \
                        fp8_round_lanes(hi, mbits, bias, sat_above, maxnorm));                     \
    }                                                                                              \
    KERN_ATTR static inline void fmt##16_store(uint8_t * p, __m128i r)                             \
    {                                                                                              \
        _mm_storeu_si128((__m128i *)(void *)p, r);                                                 \
    }

/* the constants of kern_float_to_e4m3 and kern_float_to_e5m2 */
KERN_FP8_FNS(e4m3, 3, 7, 0x43E80000, 0x7E)
KERN_FP8_FNS(e5m2, 2, 15, 0x476FFFFF, 0x7B)

/* The float32 ops, lane by lane; d is the divisor. */
KERN_ATTR static inline __m256 vec_sum(__m256 a, __m256 b, __m256 d)
{
    (void)d;
    return _mm256_add_ps(a, b);
}

KERN_ATTR static inline __m256 vec_prod(__m256 a, __m256 b, __m256 d)
{
    (void)d;
    return _mm256_mul_ps(a, b);
}

KERN_ATTR static inline __m256 vec_avg(__m256 a, __m256 b, __m256 d)
{
    return _mm256_div_ps(_mm256_add_ps(a, b), d);
}

KERN_ATTR static inline __m256 vec_quot(__m256 a, __m256 b, __m256 d)
{
    (void)b;
    return _mm256_div_ps(a, d);
}

/*
 * The body of every loop below, over elements of type T sixteen at a time: VEXPR gives the
 * sixteen results at i (a VT, what fmt16_round returns), stored to d0 and, when not NULL, d1;
 * SEXPR, the scalar op, gives each result of the remainder.
 */
#define KERN_VEC16_LOOP(fmt, T, VT, VEXPR, SEXPR)                                                  \
    size_t i = 0;                                                                                  \
    for (; i + 16 <= n; i += 16) {                                                                 \
        VT r = VEXPR;                                                                              \
        fmt##16_store(d0 + i, r);                                                                  \
        if (d1 != NULL) {                                                                          \
            fmt##16_store(d1 + i, r);                                                              \
        }                                                                                          \
    }                                                                                              \
    for (; i < n; i++) {                                                                           \
        T r = SEXPR;                                                                               \
        d0[i] = r;                                                                                 \
        if (d1 != NULL) {                                                                          \
            d1[i] = r;                                                                             \
        }                                                                                          \
    }

/*
 * One reduce loop: fmt names the load/round/store helpers above, op names vec_<op>, SEXPR is the
 * scalar op for the tail. Where b is NULL (div), the second operand is the first one, unused.
 */
#define KERN_VEC16_FN(op, fmt, T, VT, SEXPR)                                                       \
    KERN_ATTR static inline VT op##_##fmt##16(const T *a, const T *b, __m256 vd)                   \
    {                                                                                              \
        __m256 alo, ahi, blo, bhi;                                                                 \
                                                                                                   \
        fmt##16_load(a, &alo, &ahi);                                                               \
        fmt##16_load(b, &blo, &bhi);                                                               \
        return fmt##16_round(vec_##op(alo, blo, vd), vec_##op(ahi, bhi, vd));                      \
    }                                                                                              \
    KERN_ATTR static void op##_##fmt(void *dst0, void *dst1, const void *a, const void *b,         \
                                     size_t n, int divisor)                                        \
    {                                                                                              \
        T *d0 = (T *)dst0;                                                                         \
        T *d1 = (T *)dst1;                                                                         \
        const T *x = (const T *)a;                                                                 \
        const T *y = (b != NULL) ? (const T *)b : x;                                               \
        float dv = (float)divisor;                                                                 \
        __m256 vd = _mm256_set1_ps(dv);                                                            \
                                                                                                   \
        KERN_VEC16_LOOP(fmt, T, VT, op##_##fmt##16(x + i, y + i, vd), SEXPR)                       \
    }

#define KERN_VEC16_FNS(fmt, T, VT)                                                                 \
    KERN_VEC16_FN(sum, fmt, T, VT, kern_sum_##fmt(x[i], y[i]))                                     \
    KERN_VEC16_FN(prod, fmt, T, VT, kern_prod_##fmt(x[i], y[i]))                                   \
    KERN_VEC16_FN(avg, fmt, T, VT, kern_avg_##fmt(x[i], y[i], dv))                                 \
    KERN_VEC16_FN(quot, fmt, T, VT, kern_div_##fmt(x[i], dv))                                      \
    KERN_ATTR static void div_##fmt(void *dst, const void *src, size_t n, int divisor)             \
    {                                                                                              \
        quot_##fmt(dst, NULL, src, NULL, n, divisor);                                              \
    }

KERN_VEC16_FNS(half, uint16_t, __m256i)
KERN_VEC16_FNS(bf16, uint16_t, __m256i)
KERN_VEC16_FNS(e4m3, uint8_t, __m128i)
KERN_VEC16_FNS(e5m2, uint8_t, __m128i)

/*
 * The pre-multiplied sum, sixteen elements at a time: fmt16_scale is round(scalar * own) (the
 * scalar first, as kern_prod_*(s, x)); fmt16_premul adds that rounded product, decoded again, to
 * acc and rounds once more: two roundings, exactly kern_sum_*(acc, kern_prod_*(s, own)).
 */
#define KERN_VEC16_HELPERS(fmt, T, VT)                                                             \
    KERN_ATTR static inline VT fmt##16_scale(const T *own, __m256 vs)                              \
    {                                                                                              \
        __m256 lo, hi;                                                                             \
                                                                                                   \
        fmt##16_load(own, &lo, &hi);                                                               \
        return fmt##16_round(_mm256_mul_ps(vs, lo), _mm256_mul_ps(vs, hi));                        \
    }                                                                                              \
    KERN_ATTR static inline VT fmt##16_premul(const T *acc, const T *own, __m256 vs)               \
    {                                                                                              \
        __m256 alo, ahi, plo, phi;                                                                 \
                                                                                                   \
        fmt##16_unpack(fmt##16_scale(own, vs), &plo, &phi);                                        \
        fmt##16_load(acc, &alo, &ahi);                                                             \
        return fmt##16_round(_mm256_add_ps(alo, plo), _mm256_add_ps(ahi, phi));                    \
    }

/* One loop of the pre-multiplied sum (reduce_loops.h's KERN_PREMUL_SIG and _LOCALS). */
#define KERN_VEC16_SCALE_FN(name, fmt, T, VT, VEXPR, SEXPR)                                        \
    KERN_PREMUL_SIG(name)                                                                          \
    {                                                                                              \
        KERN_PREMUL_LOCALS(T)                                                                      \
        __m256 vs = _mm256_set1_ps(kern_##fmt##_to_float(s));                                      \
                                                                                                   \
        KERN_VEC16_LOOP(fmt, T, VT, VEXPR, SEXPR)                                                  \
    }

#define KERN_VEC16_PREMUL_FNS(fmt, T, VT)                                                          \
    KERN_VEC16_HELPERS(fmt, T, VT)                                                                 \
    KERN_VEC16_SCALE_FN(premul_##fmt, fmt, T, VT, fmt##16_premul(x + i, y + i, vs),                \
                        kern_sum_##fmt(x[i], kern_prod_##fmt(s, y[i])))                            \
    KERN_VEC16_SCALE_FN(scale_own_##fmt, fmt, T, VT, fmt##16_scale(y + i, vs),                     \
                        kern_prod_##fmt(s, y[i]))                                                  \
    KERN_SCALE_WRAPPER(fmt)

KERN_VEC16_PREMUL_FNS(half, uint16_t, __m256i)
KERN_VEC16_PREMUL_FNS(bf16, uint16_t, __m256i)
KERN_VEC16_PREMUL_FNS(e4m3, uint8_t, __m128i)
KERN_VEC16_PREMUL_FNS(e5m2, uint8_t, __m128i)
