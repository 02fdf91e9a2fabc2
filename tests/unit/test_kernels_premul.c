/*
 * test_kernels_premul.c - unit tests of the pre-multiplied sum's CPU kernels (kernels/reduce.h):
 * tutti__scale and tutti__reduce_premul on every datatype, against the reference of
 * tests/common/kern_ref.c (PROD with the scalar first, then SUM), with random data and special
 * scalars (NaN, infinities, signed zeros, subnormals, extremes), every aliasing the contract
 * allows, an unaligned scalar, guard bytes behind every destination, fp8 over every pair of
 * encodings, float16 and bfloat16 over every encoding, and the SIMD tables against the generic
 * one, bit for bit.
 */
#include "kern_ref.h"
#include "kernels/reduce.h"
#include "kernels/reduce_isa.h"
#include "tutti/coll.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_ELEMS 8
#define GUARD_BYTE  0xA5
#define LARGE_N     100003u

/* ---- harness ---- */

typedef struct {
    tutti_datatype_t dt;
    size_t n, size;
    unsigned char *acc, *own, *acc0, *own0, *out0, *out1;
    unsigned char scalar[10]; /* the scalar lives at scalar + 1: unaligned */
} pm_t;

static unsigned char *guarded(size_t bytes)
{
    unsigned char *p = malloc(bytes);

    cr_assert(p != NULL);
    memset(p, GUARD_BYTE, bytes);
    return p;
}

static void pm_init(pm_t *t, tutti_datatype_t dt, size_t n, uint64_t scalar, uint64_t seed)
{
    size_t bytes;

    t->dt = dt;
    t->n = n;
    t->size = tutti_datatype_size(dt);
    bytes = (n + GUARD_ELEMS) * t->size;
    t->acc = guarded(bytes);
    t->own = guarded(bytes);
    t->acc0 = guarded(bytes);
    t->own0 = guarded(bytes);
    t->out0 = guarded(bytes);
    t->out1 = guarded(bytes);
    for (size_t i = 0; i < n; i++) {
        put_raw(t->acc, i, t->size, gen_elem(dt, &seed));
        put_raw(t->own, i, t->size, gen_elem(dt, &seed));
    }
    memcpy(t->acc0, t->acc, bytes);
    memcpy(t->own0, t->own, bytes);
    memset(t->scalar, GUARD_BYTE, sizeof(t->scalar));
    put_raw(t->scalar + 1, 0, t->size, scalar);
}

static void pm_free(pm_t *t)
{
    free(t->acc);
    free(t->own);
    free(t->acc0);
    free(t->own0);
    free(t->out0);
    free(t->out1);
}

static void expect_guard(const unsigned char *buf, const pm_t *t, const char *what)
{
    for (size_t i = t->n * t->size; i < (t->n + GUARD_ELEMS) * t->size; i++) {
        cr_assert(buf[i] == GUARD_BYTE, "%s: byte %zu behind the last element was written", what,
                  i - t->n * t->size);
    }
}

/* got[i] against the reference: scale (premul 0) or pre-multiplied sum (premul 1). */
static void expect_elems(const pm_t *t, int premul, const void *got, const char *what)
{
    uint64_t s = get_raw(t->scalar + 1, 0, t->size);

    for (size_t i = 0; i < t->n; i++) {
        uint64_t a = get_raw(t->acc0, i, t->size);
        uint64_t x = get_raw(t->own0, i, t->size);
        uint64_t want = premul ? ref_premul_elem(t->dt, a, x, s) : ref_scale_elem(t->dt, s, x);
        uint64_t g = get_raw(got, i, t->size);

        if (!same_result(t->dt, TUTTI_SUM, want, g)) {
            cr_assert_fail("%s %s n=%zu scalar %#llx (%s): element %zu: acc %#llx own %#llx "
                           "gives %#llx, want %#llx",
                           premul ? "premul" : "scale", tutti_datatype_name(t->dt), t->n,
                           (unsigned long long)s, what, i, (unsigned long long)a,
                           (unsigned long long)x, (unsigned long long)g, (unsigned long long)want);
        }
    }
}

static const char *const variant_names[] = {
    "dst0 separate, dst1 NULL",
    "dst0 and dst1 separate",
    "in place: dst0 is the scaled input, dst1 separate",
    "in place: dst0 is acc, dst1 NULL",
};

/* One call of tutti__scale (premul 0) or tutti__reduce_premul in one aliasing variant. */
static void check_call(tutti_datatype_t dt, int premul, size_t n, uint64_t scalar, int variant,
                       uint64_t seed)
{
    pm_t t;
    unsigned char *dst0;
    unsigned char *dst1;
    const char *what = variant_names[variant];

    pm_init(&t, dt, n, scalar, seed);
    dst0 = (variant == 2) ? t.own : (variant == 3 && premul) ? t.acc : t.out0;
    dst1 = (variant == 1 || variant == 2) ? t.out1 : NULL;
    if (premul) {
        tutti__reduce_premul(dst0, dst1, t.acc, t.own, n, dt, t.scalar + 1);
    } else {
        tutti__scale(dst0, dst1, t.own, n, dt, t.scalar + 1);
    }
    expect_elems(&t, premul, dst0, what);
    expect_guard(dst0, &t, what);
    if (dst1 != NULL) {
        expect_elems(&t, premul, dst1, what);
        expect_guard(dst1, &t, what);
    } else {
        cr_assert(t.out1[0] == GUARD_BYTE, "%s: dst1 NULL, yet a buffer was written", what);
    }
    cr_assert(dst0 == t.own || memcmp(t.own, t.own0, n * t.size) == 0, "own changed");
    cr_assert(dst0 == t.acc || memcmp(t.acc, t.acc0, n * t.size) == 0, "acc changed");
    cr_assert(t.scalar[0] == GUARD_BYTE && t.scalar[1 + t.size] == GUARD_BYTE);
    pm_free(&t);
}

/* Every special scalar and a few random ones, lengths 0..70 in every variant, and a long one. */
static void check_datatype(tutti_datatype_t dt)
{
    uint64_t seed = 0x5DEECE66Dull + (uint64_t)dt;
    uint64_t sseed = 77 + (uint64_t)dt;

    for (int k = 0; k < GEN_SCALAR_SPECIALS + 6; k++) {
        uint64_t scalar = gen_scalar(dt, k, &sseed);

        for (int premul = 0; premul < 2; premul++) {
            for (int variant = 0; variant < 4; variant++) {
                for (size_t n = 0; n <= 70; n += (n < 40) ? 1 : 3) {
                    check_call(dt, premul, n, scalar, variant, seed++);
                }
            }
            check_call(dt, premul, LARGE_N, scalar, (int)(seed % 4), seed);
            seed++;
        }
    }
}

#define DATATYPE_TEST(name, dt)                                                                    \
    Test(premul, name##_matches_reference)                                                         \
    {                                                                                              \
        check_datatype(dt);                                                                        \
    }

REF_NUMBER_TYPES(DATATYPE_TEST)

/* ---- spelled out ---- */

static uint64_t scale1(tutti_datatype_t dt, uint64_t s, uint64_t x)
{
    uint64_t out = 0;

    tutti__scale(&out, NULL, &x, 1, dt, &s);
    return out;
}

static uint64_t premul1(tutti_datatype_t dt, uint64_t acc, uint64_t own, uint64_t s)
{
    uint64_t out = 0;

    tutti__reduce_premul(&out, NULL, &acc, &own, 1, dt, &s);
    return out;
}

Test(premul, integers_wrap_around)
{
    cr_assert_eq((int8_t)scale1(TUTTI_INT8, 16, 16), 0);
    cr_assert_eq((int8_t)scale1(TUTTI_INT8, (uint8_t)-1, (uint8_t)INT8_MIN), INT8_MIN);
    cr_assert_eq((uint32_t)scale1(TUTTI_UINT32, 0xFFFFFFFFu, 3), 0xFFFFFFFDu);
    cr_assert_eq((int64_t)scale1(TUTTI_INT64, (uint64_t)-3, 5), -15);
    cr_assert_eq((int16_t)premul1(TUTTI_INT16, 0x7FFF, 2, 1), -32767); /* 32767 + 1 * 2 */
    cr_assert_eq((int8_t)premul1(TUTTI_INT8, 5, 16, 16), 5);           /* 16 * 16 wraps to 0 */
}

Test(premul, float_special_values)
{
    uint64_t one = f32_bits(1.0f);
    uint64_t inf = f32_bits(INFINITY);

    cr_assert(raw_is_nan(TUTTI_FLOAT32, scale1(TUTTI_FLOAT32, f32_bits(NAN), one)));
    cr_assert(raw_is_nan(TUTTI_FLOAT32, scale1(TUTTI_FLOAT32, f32_bits(0.0f), inf))); /* 0 * inf */
    cr_assert_eq(scale1(TUTTI_FLOAT32, f32_bits(-0.0f), f32_bits(5.0f)), f32_bits(-0.0f));
    cr_assert_eq(scale1(TUTTI_FLOAT32, f32_bits(0.5f), 0x00000001), 0x0); /* tie to even */
    cr_assert_eq(scale1(TUTTI_FLOAT32, f32_bits(0.5f), 0x00000003), 0x2);
    cr_assert_eq(scale1(TUTTI_FLOAT32, f32_bits(2.0f), 0x7F7FFFFF), inf);
    cr_assert_eq(scale1(TUTTI_FLOAT64, f64_bits(0.25), f64_bits(-8.0)), f64_bits(-2.0));
    /* -0 + (+1 * -0) stays -0; +0 + -0 is +0 */
    cr_assert_eq(premul1(TUTTI_FLOAT32, f32_bits(-0.0f), f32_bits(-0.0f), one), f32_bits(-0.0f));
    cr_assert_eq(premul1(TUTTI_FLOAT32, 0, f32_bits(-0.0f), one), 0);
    cr_assert_eq(scale1(TUTTI_FLOAT16, 0x4000, 0x7BFF), 0x7C00); /* 2 * 65504: infinity */
    cr_assert_eq(scale1(TUTTI_FLOAT16, 0x3800, 0x0001), 0x0000); /* 2^-25: tie to even */
    cr_assert_eq(scale1(TUTTI_BFLOAT16, 0x3F00, 0x0003), 0x0002);
}

Test(premul, fp8_saturates_and_rounds_the_product_before_the_sum)
{
    cr_assert_eq(scale1(TUTTI_FP8_E4M3, 0x40, 0x7E), 0x7E); /* 2 * 448 */
    cr_assert_eq(scale1(TUTTI_FP8_E4M3, 0x40, 0xFE), 0xFE);
    cr_assert_eq(scale1(TUTTI_FP8_E5M2, 0x40, 0x7B), 0x7B); /* 2 * 57344 */
    cr_assert_eq(scale1(TUTTI_FP8_E5M2, 0x3C, 0xFC), 0xFB); /* 1 * -inf */
    cr_assert_eq(scale1(TUTTI_FP8_E4M3, 0xFF, 0x38), 0x7F); /* NaN scalar */
    cr_assert_eq(scale1(TUTTI_FP8_E5M2, 0x00, 0x7C), 0x7F); /* 0 * inf */
    /* -1.75 + 1.625 * 1.125: the product 1.828125 rounds to 1.875 first, so the sum is 0.125
     * (0x20); one rounding of the exact -1.75 + 1.828125 would give 0.078125 (0x1A) */
    cr_assert_eq(premul1(TUTTI_FP8_E4M3, 0xBE, 0x39, 0x3D), 0x20);
    cr_assert_eq(premul1(TUTTI_FP8_E4M3, 0x7E, 0x7E, 0x38), 0x7E); /* 448 + 448 saturates */
}

/* Every scalar times every encoding: fp8 all 256 x 256, float16 and bfloat16 every encoding
 * against the special scalars and 64 random ones. */
static void check_every_encoding(tutti_datatype_t dt, int nscalars)
{
    size_t size = tutti_datatype_size(dt);
    size_t count = (size_t)1 << (8 * size);
    unsigned char *x = malloc(count * size);
    unsigned char *out = malloc(count * size);
    uint64_t seed = 31;

    cr_assert(x != NULL && out != NULL);
    for (size_t i = 0; i < count; i++) {
        put_raw(x, i, size, i);
    }
    for (int k = 0; k < nscalars; k++) {
        uint64_t s = (nscalars == 256) ? (uint64_t)k : gen_scalar(dt, k, &seed);

        tutti__scale(out, NULL, x, count, dt, &s);
        for (size_t i = 0; i < count; i++) {
            uint64_t want = ref_scale_elem(dt, s, i);
            uint64_t got = get_raw(out, i, size);

            cr_assert(same_result(dt, TUTTI_PROD, want, got),
                      "%s: %#llx * %#zx = %#llx, want %#llx", tutti_datatype_name(dt),
                      (unsigned long long)s, i, (unsigned long long)got, (unsigned long long)want);
        }
    }
    free(x);
    free(out);
}

Test(premul, fp8_every_pair_of_encodings)
{
    check_every_encoding(TUTTI_FP8_E4M3, 256);
    check_every_encoding(TUTTI_FP8_E5M2, 256);
}

Test(premul, float16_and_bfloat16_every_encoding)
{
    check_every_encoding(TUTTI_FLOAT16, GEN_SCALAR_SPECIALS + 64);
    check_every_encoding(TUTTI_BFLOAT16, GEN_SCALAR_SPECIALS + 64);
}

/* ---- the SIMD tables against the generic one ---- */

/*
 * Scale and pre-multiplied sum through the named table (in place, with a second destination)
 * and through the generic one: equal bit for bit, but where both operands of one float
 * operation are NaN (the scalar and own[i], or acc[i] and the rounded product), whose payload
 * IEEE leaves open and compilers order freely.
 */
static void compare_one(const char *isa, tutti_datatype_t dt, size_t n, uint64_t scalar,
                        uint64_t seed)
{
    pm_t t;
    int s_nan = raw_is_nan(dt, scalar);
    unsigned char *copy;

    pm_init(&t, dt, n, scalar, seed);
    copy = guarded((n + GUARD_ELEMS) * t.size);
    cr_assert_eq(tutti__reduce_force_isa("generic"), 0);
    tutti__scale(t.out0, NULL, t.own, n, dt, t.scalar + 1);
    tutti__reduce_premul(t.out1, NULL, t.acc, t.own, n, dt, t.scalar + 1);
    cr_assert_eq(tutti__reduce_force_isa(isa), 0);
    tutti__reduce_premul(t.acc, copy, t.acc, t.own, n, dt, t.scalar + 1);
    tutti__scale(t.own, NULL, t.own, n, dt, t.scalar + 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t sw = get_raw(t.out0, i, t.size);
        uint64_t pw = get_raw(t.out1, i, t.size);
        int prod_open = s_nan && raw_is_nan(dt, get_raw(t.own0, i, t.size));
        int sum_open = raw_is_nan(dt, get_raw(t.acc0, i, t.size)) && raw_is_nan(dt, sw);

        cr_assert(get_raw(t.own, i, t.size) == sw || prod_open, "%s %s scale n=%zu element %zu",
                  isa, tutti_datatype_name(dt), n, i);
        cr_assert((get_raw(t.acc, i, t.size) == pw && get_raw(copy, i, t.size) == pw) ||
                      prod_open || sum_open,
                  "%s %s premul n=%zu element %zu", isa, tutti_datatype_name(dt), n, i);
    }
    expect_guard(copy, &t, "premul dst1");
    free(copy);
    pm_free(&t);
}

static void compare_with_generic(const char *isa)
{
    uint64_t seed = 4343;

    for (int dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
        if (dt == TUTTI_BOOL) {
            continue; /* no scaling of bool */
        }
        for (int k = 0; k < GEN_SCALAR_SPECIALS + 2; k++) {
            uint64_t scalar = gen_scalar((tutti_datatype_t)dt, k, &seed);

            for (size_t n = 0; n < 4200; n = (n < 40) ? n + 1 : n * 2 + 11) {
                compare_one(isa, (tutti_datatype_t)dt, n, scalar, seed++);
            }
        }
    }
    tutti__reduce_force_isa("auto");
}

/* Every SIMD table this CPU runs (a CPU with none skips). */
Test(premul, simd_tables_match_generic_bit_for_bit)
{
    static const char *const isas[] = {"avx2", "avx512"};
    int ran = 0;

    for (size_t k = 0; k < sizeof(isas) / sizeof(isas[0]); k++) {
        if (tutti__reduce_force_isa(isas[k]) == 0) {
            compare_with_generic(isas[k]);
            ran++;
        } else {
            cr_log_info("this CPU cannot run the %s table", isas[k]);
        }
    }
    if (ran == 0) {
        cr_skip_test("this CPU runs no SIMD table");
    }
}
