/*
 * reduce_x86.h - hand-written AVX2/F16C loops for SUM, PROD, AVG and div of float16 and
 * bfloat16, sixteen elements at a time. Part of reduce_loops.h (included by it where
 * KERN_VEC16 is 1, with KERN_ATTR naming a target that has AVX2 and F16C); not a header of its
 * own. The compiler vectorises the scalar conversions of kern_ops.h only poorly, so these spell
 * the vector forms out. Each gives the same bits as the scalar ops, NaNs included (the tests
 * compare the tables bit for bit):
 * - float16: vcvtph2ps is exact, and vcvtps2ph with an immediate round-to-nearest-even
 *   (independent of MXCSR) rounds correctly and quiets NaNs keeping sign and top payload bits;
 * - bfloat16: a shift up decodes; encoding adds 0x7FFF plus the kept lowest bit and shifts down
 *   (round to nearest even), or, for a NaN, keeps the top half and sets the quiet bit.
 * The remainder (n % 16 elements) runs through the scalar ops themselves.
 */
#include <immintrin.h>

/*
 * Sixteen elements as two vectors of eight float32 each (lo, hi) and back. The lane order may
 * differ from memory order (bfloat16 unpacks within 128-bit halves) as long as the store undoes
 * what the load did; the ops work lane by lane.
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

KERN_ATTR static inline void bf1616_load(const uint16_t *p, __m256 *lo, __m256 *hi)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i zero = _mm256_setzero_si256();

    /* each bfloat16 becomes the upper half of a 32-bit lane: elements 0-3, 8-11 | 4-7, 12-15 */
    *lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, v));
    *hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, v));
}

/* Eight float32 rounded to bfloat16, each in the low half of its 32-bit lane. */
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
 * One loop: fmt is half or bf16, op names vec_<op> and the scalar kern_<op>_<fmt>. Where b is
 * NULL (div), the second operand is the first one, unused.
 */
#define KERN_VEC16_FN(op, fmt, SEXPR)                                                             \
    KERN_ATTR static void op##_##fmt(void *dst0, void *dst1, const void *a, const void *b,        \
                                     size_t n, int divisor)                                       \
    {                                                                                             \
        uint16_t *d0 = (uint16_t *)dst0;                                                          \
        uint16_t *d1 = (uint16_t *)dst1;                                                          \
        const uint16_t *x = (const uint16_t *)a;                                                  \
        const uint16_t *y = (b != NULL) ? (const uint16_t *)b : x;                                \
        float dv = (float)divisor;                                                                \
        __m256 vd = _mm256_set1_ps(dv);                                                           \
        size_t i = 0;                                                                             \
                                                                                                  \
        for (; i + 16 <= n; i += 16) {                                                            \
            __m256 alo, ahi, blo, bhi;                                                            \
            __m256i r;                                                                            \
                                                                                                  \
            fmt##16_load(x + i, &alo, &ahi);                                                      \
            fmt##16_load(y + i, &blo, &bhi);                                                      \
            r = fmt##16_round(vec_##op(alo, blo, vd), vec_##op(ahi, bhi, vd));                    \
            _mm256_storeu_si256((__m256i *)(void *)(d0 + i), r);                                  \
            if (d1 != NULL) {                                                                     \
                _mm256_storeu_si256((__m256i *)(void *)(d1 + i), r);                              \
            }                                                                                     \
        }                                                                                         \
        for (; i < n; i++) {                                                                      \
            uint16_t r = SEXPR;                                                                   \
            d0[i] = r;                                                                            \
            if (d1 != NULL) {                                                                     \
                d1[i] = r;                                                                        \
            }                                                                                     \
        }                                                                                         \
    }

#define KERN_VEC16_FNS(fmt)                                                                       \
    KERN_VEC16_FN(sum, fmt, kern_sum_##fmt(x[i], y[i]))                                           \
    KERN_VEC16_FN(prod, fmt, kern_prod_##fmt(x[i], y[i]))                                         \
    KERN_VEC16_FN(avg, fmt, kern_avg_##fmt(x[i], y[i], dv))                                       \
    KERN_VEC16_FN(quot, fmt, kern_div_##fmt(x[i], dv))                                            \
    KERN_ATTR static void div_##fmt(void *dst, const void *src, size_t n, int divisor)            \
    {                                                                                             \
        quot_##fmt(dst, NULL, src, NULL, n, divisor);                                             \
    }

KERN_VEC16_FNS(half)
KERN_VEC16_FNS(bf16)
