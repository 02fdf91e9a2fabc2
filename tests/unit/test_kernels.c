/*
 * test_kernels.c - unit tests of the CPU reduction kernels (kernels/reduce.h).
 *
 * Every supported datatype x op is compared with a plain reference (tests/common/kern_ref.c:
 * exact integer math in 128 bits, double arithmetic for the float types, narrow-float rounding by
 * frexp/ldexp/nearbyint, truth tables for bool), independent of kern_ops.h, so that a bug in the
 * shared definitions shows. Further: the special values of each type, bool's true bytes other
 * than 1, the unsupported combinations (no loop, nothing written), the conversions over all
 * encodings, destination aliasing, guard bytes behind every destination, and the SIMD tables
 * against the generic one, bit for bit. test_kernels_premul.c covers the pre-multiplied sum.
 */
#include "kern_ref.h"
#include "kernels/reduce.h"
#include "kernels/reduce_isa.h"
#include "tutti/coll.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#define GUARD_ELEMS 8
#define GUARD_BYTE  0xA5
#define LARGE_N     1000003u

/* ---- harness: tutti__reduce against the reference ---- */

static const char *const variant_names[] = {
    "dst0 separate, dst1 NULL",
    "dst0 and dst1 separate",
    "in place dst0 == a, dst1 NULL",
    "in place dst0 == b, dst1 separate",
};

typedef struct {
    size_t size;
    unsigned char *a, *b, *a0, *b0, *out0, *out1;
} bufs_t;

/* Random inputs (and their copies a0, b0), destinations full of guard bytes. */
static void bufs_init(bufs_t *t, tutti_datatype_t dt, size_t n, uint64_t seed)
{
    size_t bytes;
    size_t i;

    t->size = tutti_datatype_size(dt);
    bytes = (n + GUARD_ELEMS) * t->size;
    t->a = malloc(bytes);
    t->b = malloc(bytes);
    t->a0 = malloc(bytes);
    t->b0 = malloc(bytes);
    t->out0 = malloc(bytes);
    t->out1 = malloc(bytes);
    cr_assert(t->a != NULL && t->b != NULL && t->a0 != NULL && t->b0 != NULL && t->out0 != NULL &&
              t->out1 != NULL);
    memset(t->a, GUARD_BYTE, bytes);
    memset(t->b, GUARD_BYTE, bytes);
    memset(t->out0, GUARD_BYTE, bytes);
    memset(t->out1, GUARD_BYTE, bytes);
    for (i = 0; i < n; i++) {
        put_raw(t->a, i, t->size, gen_elem(dt, &seed));
        put_raw(t->b, i, t->size, gen_elem(dt, &seed));
    }
    memcpy(t->a0, t->a, bytes);
    memcpy(t->b0, t->b, bytes);
}

static void bufs_free(bufs_t *t)
{
    free(t->a);
    free(t->b);
    free(t->a0);
    free(t->b0);
    free(t->out0);
    free(t->out1);
}

static void expect_guard(const unsigned char *buf, size_t n, size_t size, const char *what)
{
    size_t i;

    for (i = n * size; i < (n + GUARD_ELEMS) * size; i++) {
        cr_assert(buf[i] == GUARD_BYTE, "%s: byte %zu behind the last element was written", what,
                  i - n * size);
    }
}

static void expect_elems(tutti_datatype_t dt, tutti_op_t op, const bufs_t *t, const void *got,
                         size_t n, int div, const char *what)
{
    size_t i;

    for (i = 0; i < n; i++) {
        uint64_t a = get_raw(t->a0, i, t->size);
        uint64_t b = get_raw(t->b0, i, t->size);
        uint64_t want = ref_elem(dt, op, a, b, div);
        uint64_t g = get_raw(got, i, t->size);

        if (!same_result(dt, op, want, g)) {
            cr_assert_fail("%s %s n=%zu div=%d (%s): element %zu: op(%#llx, %#llx) = %#llx, "
                           "want %#llx",
                           tutti_datatype_name(dt), tutti_op_name(op), n, div, what, i,
                           (unsigned long long)a, (unsigned long long)b, (unsigned long long)g,
                           (unsigned long long)want);
        }
    }
}

/* One call of tutti__reduce in one aliasing variant (0..3, see variant_names), checked. */
static void check_reduce(tutti_datatype_t dt, tutti_op_t op, size_t n, int div, int variant,
                         uint64_t seed)
{
    bufs_t t;
    void *dst0;
    void *dst1;

    bufs_init(&t, dt, n, seed);
    dst0 = (variant == 2) ? t.a : (variant == 3) ? t.b : t.out0;
    dst1 = (variant == 1 || variant == 3) ? t.out1 : NULL;
    tutti__reduce(dst0, dst1, t.a, t.b, n, dt, op, div);
    expect_elems(dt, op, &t, dst0, n, div, variant_names[variant]);
    expect_guard(dst0, n, t.size, variant_names[variant]);
    if (dst1 != NULL) {
        expect_elems(dt, op, &t, dst1, n, div, variant_names[variant]);
        expect_guard(dst1, n, t.size, variant_names[variant]);
    } else {
        expect_guard(t.out1, 0, t.size, "untouched dst1 buffer");
    }
    if (variant != 2) {
        cr_assert(memcmp(t.a, t.a0, n * t.size) == 0, "input a changed");
    }
    if (variant != 3) {
        cr_assert(memcmp(t.b, t.b0, n * t.size) == 0, "input b changed");
    }
    bufs_free(&t);
}

/* Every op and aliasing variant at lengths 0..70 (all vector tails), then a large odd length. */
static void check_datatype(tutti_datatype_t dt)
{
    static const int divisors[] = {1, 3, 8};
    uint64_t seed = 0x9E3779B97F4A7C15ull + (uint64_t)dt;
    int op;
    int variant;
    size_t n;
    size_t d;

    for (op = 0; op < TUTTI_NUM_OPS; op++) {
        if (!tutti__reduce_supported(dt, (tutti_op_t)op)) {
            continue; /* unsupported_combinations_have_no_loop checks those */
        }
        for (d = 0; d < (op == TUTTI_AVG ? 3u : 1u); d++) {
            for (variant = 0; variant < 4; variant++) {
                for (n = 0; n <= 70; n++) {
                    check_reduce(dt, (tutti_op_t)op, n, divisors[d], variant, seed++);
                }
            }
            check_reduce(dt, (tutti_op_t)op, LARGE_N, divisors[d], (int)(seed % 4), seed);
            seed++;
        }
    }
}

#define DATATYPE_TEST(name, dt)                                                                    \
    Test(kernels, name##_every_op_matches_reference)                                               \
    {                                                                                              \
        check_datatype(dt);                                                                        \
    }

REF_NUMBER_TYPES(DATATYPE_TEST)
DATATYPE_TEST(bool, TUTTI_BOOL)

/* ---- special values, spelled out ---- */

/* One element through tutti__reduce, as raw bits. */
static uint64_t reduce1(tutti_datatype_t dt, tutti_op_t op, uint64_t a, uint64_t b, int div)
{
    uint64_t out = 0;

    tutti__reduce(&out, NULL, &a, &b, 1, dt, op, div);
    return out;
}

Test(kernels, integer_sum_and_prod_wrap_around)
{
    cr_assert_eq((int8_t)reduce1(TUTTI_INT8, TUTTI_SUM, INT8_MAX, 1, 1), INT8_MIN);
    cr_assert_eq((uint8_t)reduce1(TUTTI_UINT8, TUTTI_SUM, UINT8_MAX, 1, 1), 0);
    cr_assert_eq((int16_t)reduce1(TUTTI_INT16, TUTTI_SUM, (uint16_t)INT16_MIN, 0xFFFF, 1),
                 INT16_MAX);
    cr_assert_eq((uint16_t)reduce1(TUTTI_UINT16, TUTTI_PROD, 0xFFFF, 0xFFFF, 1), 1);
    cr_assert_eq((int32_t)reduce1(TUTTI_INT32, TUTTI_SUM, INT32_MAX, INT32_MAX, 1), -2);
    cr_assert_eq((int32_t)reduce1(TUTTI_INT32, TUTTI_PROD, 0x10000, 0x10000, 1), 0);
    cr_assert_eq((int64_t)reduce1(TUTTI_INT64, TUTTI_PROD, (uint64_t)INT64_MIN, UINT64_MAX, 1),
                 INT64_MIN);
    cr_assert_eq(reduce1(TUTTI_UINT64, TUTTI_SUM, UINT64_MAX, 2, 1), 1);
}

Test(kernels, integer_avg_truncates_toward_zero)
{
    cr_assert_eq((int32_t)reduce1(TUTTI_INT32, TUTTI_AVG, (uint32_t)-7, 0, 2), -3);
    cr_assert_eq((int32_t)reduce1(TUTTI_INT32, TUTTI_AVG, (uint32_t)-8, 1, 3), -2);
    cr_assert_eq((int32_t)reduce1(TUTTI_INT32, TUTTI_AVG, 7, 0, 2), 3);
    /* the sum wraps first: 100 + 100 = -56 in int8, then -56 / 3 = -18 */
    cr_assert_eq((int8_t)reduce1(TUTTI_INT8, TUTTI_AVG, 100, 100, 3), -18);
    cr_assert_eq((uint8_t)reduce1(TUTTI_UINT8, TUTTI_AVG, 200, 100, 3), 14);
    cr_assert_eq((int64_t)reduce1(TUTTI_INT64, TUTTI_AVG, (uint64_t)INT64_MIN, 0, 2),
                 INT64_MIN / 2);
    /* divisor 1 (and below) is plain SUM */
    cr_assert_eq((int32_t)reduce1(TUTTI_INT32, TUTTI_AVG, (uint32_t)-7, 0, 1), -7);
}

/* Bool's ops are logical on whole bytes, the bitwise ones work on two's complement bits. */
static const struct {
    tutti_datatype_t dt;
    tutti_op_t op;
    uint64_t a, b, want;
} logic_cases[] = {
    /* 2 and 0x80 share no bit: bitwise "and" would give 0, bitwise "xor" 0x82, and an 8-bit sum
     * or product of 0x80 and 0x80 wraps to 0; as truth values they are true and true */
    {TUTTI_BOOL, TUTTI_BAND, 2, 0x80, 1},
    {TUTTI_BOOL, TUTTI_PROD, 0x80, 0x80, 1},
    {TUTTI_BOOL, TUTTI_MIN, 2, 0x80, 1},
    {TUTTI_BOOL, TUTTI_BXOR, 2, 0x80, 0},
    {TUTTI_BOOL, TUTTI_BXOR, 0, 0xFF, 1},
    {TUTTI_BOOL, TUTTI_SUM, 0x80, 0x80, 1},
    {TUTTI_BOOL, TUTTI_SUM, 0xFF, 0x01, 1},
    {TUTTI_BOOL, TUTTI_MAX, 0, 0x80, 1},
    {TUTTI_BOOL, TUTTI_BOR, 0x40, 0x02, 1},
    /* and false stays 0 */
    {TUTTI_BOOL, TUTTI_BAND, 0, 0xFF, 0},
    {TUTTI_BOOL, TUTTI_MIN, 0x80, 0, 0},
    {TUTTI_BOOL, TUTTI_SUM, 0, 0, 0},
    {TUTTI_BOOL, TUTTI_BXOR, 0x10, 0x01, 0},
    {TUTTI_INT8, TUTTI_BAND, 0xFF, 0x5A, 0x5A},
    {TUTTI_INT8, TUTTI_BOR, 0x80, 0x01, 0x81},
    {TUTTI_INT16, TUTTI_BXOR, 0xFFFF, 0x00FF, 0xFF00},
    {TUTTI_INT32, TUTTI_BAND, 0xFFFFFFF8u, 0x7FFFFFFF, 0x7FFFFFF8},
    {TUTTI_UINT64, TUTTI_BXOR, UINT64_MAX, 0x8000000000000001ull, 0x7FFFFFFFFFFFFFFEull},
    {TUTTI_UINT8, TUTTI_BOR, 0xF0, 0x0F, 0xFF},
};

Test(kernels, bool_is_logical_and_bitwise_ops_use_the_bits)
{
    for (size_t k = 0; k < sizeof(logic_cases) / sizeof(logic_cases[0]); k++) {
        uint64_t got =
            reduce1(logic_cases[k].dt, logic_cases[k].op, logic_cases[k].a, logic_cases[k].b, 1);

        cr_assert_eq(got, logic_cases[k].want, "%s %s(%#llx, %#llx) = %#llx, want %#llx",
                     tutti_datatype_name(logic_cases[k].dt), tutti_op_name(logic_cases[k].op),
                     (unsigned long long)logic_cases[k].a, (unsigned long long)logic_cases[k].b,
                     (unsigned long long)got, (unsigned long long)logic_cases[k].want);
    }
}

/*
 * What tutti__reduce_supported refuses has no loop in any table the CPU runs, and what it accepts
 * has one; a call with a refused combination (which the library never makes) writes nothing.
 * BOOL has no division, scaling or pre-multiplied sum either; every other type has all three.
 */
Test(kernels, unsupported_combinations_have_no_loop)
{
    static const char *const isas[] = {"generic", "avx2", "avx512"};
    unsigned char a[64];
    unsigned char out[64];
    int dt;
    int op;
    size_t k;

    memset(a, 0x3C, sizeof(a));
    for (k = 0; k < sizeof(isas) / sizeof(isas[0]); k++) {
        if (tutti__reduce_force_isa(isas[k]) != 0) {
            continue;
        }
        for (dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
            for (op = 0; op < TUTTI_NUM_OPS; op++) {
                int ok = tutti__reduce_supported((tutti_datatype_t)dt, (tutti_op_t)op);
                int div;

                for (div = 1; div <= 3 && !ok; div += 2) {
                    memset(out, GUARD_BYTE, sizeof(out));
                    tutti__reduce(out, NULL, a, a, 4, (tutti_datatype_t)dt, (tutti_op_t)op, div);
                    expect_guard(out, 0, 8, "an unsupported combination");
                }
                cr_assert(ok || (op >= TUTTI_BAND && dt >= TUTTI_FLOAT16 && dt <= TUTTI_FP8_E5M2) ||
                              (op == TUTTI_AVG && dt == TUTTI_BOOL),
                          "%s %s must be supported", tutti_datatype_name(dt), tutti_op_name(op));
            }
            memset(out, GUARD_BYTE, sizeof(out));
            tutti__reduce_div(out, a, 4, (tutti_datatype_t)dt, 1);
            tutti__scale(out, NULL, a, 4, (tutti_datatype_t)dt, a);
            tutti__reduce_premul(out, NULL, a, a, 4, (tutti_datatype_t)dt, a);
            if (dt == TUTTI_BOOL) {
                expect_guard(out, 0, 8, "bool: division, scaling, pre-multiplied sum");
            } else {
                cr_assert(out[0] != GUARD_BYTE, "%s: no scaling", tutti_datatype_name(dt));
            }
        }
    }
    tutti__reduce_force_isa("auto");
    cr_assert_not(tutti__reduce_supported(TUTTI_NUM_DATATYPES, TUTTI_SUM));
    cr_assert_not(tutti__reduce_supported(TUTTI_INT8, TUTTI_NUM_OPS));
}

/* The tables themselves: an entry exactly where the combination is supported. */
Test(kernels, every_table_has_a_loop_exactly_where_supported)
{
    const tutti_kern_table_t *tables[] = {
        &tutti__kern_generic,
#if defined(TUTTI_KERN_HAVE_X86)
        &tutti__kern_avx2,
        &tutti__kern_avx512,
#endif
    };
    size_t k;
    int dt;
    int op;

    for (k = 0; k < sizeof(tables) / sizeof(tables[0]); k++) {
        for (dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
            int number = dt != TUTTI_BOOL;

            for (op = 0; op < TUTTI_NUM_OPS; op++) {
                cr_assert_eq(tables[k]->reduce[dt][op] != NULL,
                             tutti__reduce_supported((tutti_datatype_t)dt, (tutti_op_t)op),
                             "%s: %s %s", tables[k]->name, tutti_datatype_name(dt),
                             tutti_op_name(op));
            }
            cr_assert_eq(tables[k]->div[dt] != NULL, number);
            cr_assert_eq(tables[k]->scale[dt] != NULL, number);
            cr_assert_eq(tables[k]->premul[dt] != NULL, number);
        }
    }
}

Test(kernels, float_min_max_propagate_nan_and_keep_first_on_ties)
{
    uint64_t nan = f32_bits(NAN);
    uint64_t one = f32_bits(1.0f);
    uint64_t pz = f32_bits(0.0f);
    uint64_t nz = f32_bits(-0.0f);

    cr_assert_eq(reduce1(TUTTI_FLOAT32, TUTTI_MIN, nan, one, 1), nan);
    cr_assert_eq(reduce1(TUTTI_FLOAT32, TUTTI_MIN, one, nan, 1), nan);
    cr_assert_eq(reduce1(TUTTI_FLOAT32, TUTTI_MAX, one, nan, 1), nan);
    cr_assert_eq(reduce1(TUTTI_FLOAT32, TUTTI_MIN, nz, pz, 1), nz);
    cr_assert_eq(reduce1(TUTTI_FLOAT32, TUTTI_MIN, pz, nz, 1), pz);
    cr_assert_eq(reduce1(TUTTI_FLOAT32, TUTTI_MAX, nz, pz, 1), nz);
    cr_assert_eq(reduce1(TUTTI_FLOAT64, TUTTI_MAX, f64_bits(-INFINITY), f64_bits(NAN), 1),
                 f64_bits(NAN));
    /* narrow types select an operand: an e4m3 NaN keeps its sign, -0 vs +0 keeps the first */
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_MAX, 0x38, 0xFF, 1), 0xFF);
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_MIN, 0x8000, 0x0000, 1), 0x8000);
    cr_assert_eq(reduce1(TUTTI_BFLOAT16, TUTTI_MAX, 0x7F81, 0x3F80, 1), 0x7F81);
    /* ...and an e5m2 infinity stays one under MIN/MAX (it saturates under SUM) */
    cr_assert_eq(reduce1(TUTTI_FP8_E5M2, TUTTI_MAX, 0x7C, 0x3C, 1), 0x7C);
    cr_assert_eq(reduce1(TUTTI_FP8_E5M2, TUTTI_SUM, 0x7C, 0x00, 1), 0x7B);
}

Test(kernels, float16_overflows_to_inf_and_keeps_subnormals)
{
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_SUM, 0x7BFF, 0x4C00, 1), 0x7C00); /* 65504 + 16 */
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_SUM, 0x7BFF, 0x4800, 1), 0x7BFF); /* 65504 + 8 */
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_SUM, 0xFBFF, 0xCC00, 1), 0xFC00);
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_SUM, 0x0001, 0x0001, 1), 0x0002);
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_SUM, 0x03FF, 0x0001, 1), 0x0400);
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_AVG, 0x0001, 0x0000, 2), 0x0000); /* tie -> even */
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_AVG, 0x0003, 0x0000, 2), 0x0002); /* tie -> even */
    cr_assert_eq(reduce1(TUTTI_FLOAT16, TUTTI_SUM, 0x8000, 0x8000, 1), 0x8000); /* -0 + -0 */
    cr_assert_eq(reduce1(TUTTI_BFLOAT16, TUTTI_SUM, 0x0001, 0x0001, 1), 0x0002);
    cr_assert_eq(reduce1(TUTTI_BFLOAT16, TUTTI_SUM, 0x7F7F, 0x7F7F, 1), 0x7F80);
}

Test(kernels, fp8_saturates_and_makes_nan_canonical)
{
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_SUM, 0x7E, 0x7E, 1), 0x7E); /* 448 + 448 */
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_SUM, 0xFE, 0xFE, 1), 0xFE);
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_PROD, 0x7E, 0xFE, 1), 0xFE);
    cr_assert_eq(reduce1(TUTTI_FP8_E5M2, TUTTI_SUM, 0x7B, 0x7B, 1), 0x7B); /* 57344 * 2 */
    cr_assert_eq(reduce1(TUTTI_FP8_E5M2, TUTTI_SUM, 0xFC, 0x00, 1), 0xFB); /* -inf */
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_SUM, 0xFF, 0x38, 1), 0x7F);
    cr_assert_eq(reduce1(TUTTI_FP8_E5M2, TUTTI_SUM, 0xFE, 0x3C, 1), 0x7F);
    cr_assert_eq(reduce1(TUTTI_FP8_E5M2, TUTTI_SUM, 0x7C, 0xFC, 1), 0x7F); /* inf - inf */
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_SUM, 0x01, 0x01, 1), 0x02); /* subnormals */
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_AVG, 0x01, 0x00, 2), 0x00); /* 2^-10: tie */
    cr_assert_eq(reduce1(TUTTI_FP8_E4M3, TUTTI_AVG, 0x81, 0x80, 2), 0x80); /* -> signed zero */
}

/* Every pair of fp8 encodings through every op (AVG with divisor 3 too) of the picked table. */
Test(kernels, fp8_every_pair_of_encodings_matches_reference)
{
    static const tutti_datatype_t dts[] = {TUTTI_FP8_E4M3, TUTTI_FP8_E5M2};
    uint8_t a[0x10000];
    uint8_t b[0x10000];
    uint8_t out[0x10000];
    size_t k;
    uint32_t i;
    int op;

    for (i = 0; i < 0x10000u; i++) {
        a[i] = (uint8_t)i;
        b[i] = (uint8_t)(i >> 8);
    }
    for (k = 0; k < 2; k++) {
        for (op = 0; op <= TUTTI_NUM_OPS; op++) {
            /* op == TUTTI_NUM_OPS stands for AVG with divisor 3 */
            tutti_op_t o = (op == TUTTI_NUM_OPS) ? TUTTI_AVG : (tutti_op_t)op;
            int div = (op == TUTTI_NUM_OPS) ? 3 : 1;

            if (!tutti__reduce_supported(dts[k], o)) {
                continue; /* the bitwise ops */
            }
            tutti__reduce(out, NULL, a, b, sizeof(out), dts[k], o, div);
            for (i = 0; i < 0x10000u; i++) {
                cr_assert_eq(out[i], ref_elem(dts[k], o, a[i], b[i], div), "%s %s/%d (%#x, %#x)",
                             tutti_datatype_name(dts[k]), tutti_op_name(o), div, a[i], b[i]);
            }
        }
    }
}

/* ---- conversions ---- */

/* The decoded value of every encoding equals the reference (NaN for NaN, with the sign). */
static void expect_decode(const fmt_t *f, uint32_t v, float got)
{
    double want = ref_decode(f, v);

    if (isnan(want)) {
        cr_assert(isnan(got), "%#x must decode to NaN", v);
        cr_assert_eq(signbit(got) != 0, ((v >> (f->bits - 1)) & 1u) != 0, "%#x: NaN sign", v);
        cr_assert((f32_bits(got) & 0x400000u) != 0 || f == &fmt_bf16, "%#x: quiet NaN", v);
    } else {
        cr_assert((double)got == want && (signbit(got) != 0) == (signbit(want) != 0),
                  "%#x decodes to %a, want %a", v, (double)got, want);
    }
}

Test(kernels, float16_all_encodings_decode_exactly_and_round_trip)
{
    uint32_t h;

    for (h = 0; h < 0x10000u; h++) {
        float f = tutti__half_to_float((uint16_t)h);

        expect_decode(&fmt_half, h, f);
        /* a NaN comes back quiet with its sign and payload; everything else comes back as is */
        cr_assert_eq(tutti__float_to_half(f), ref_is_nan(&fmt_half, h) ? (h | 0x200u) : h,
                     "half %#x does not round-trip", h);
    }
}

Test(kernels, bfloat16_all_encodings_decode_exactly_and_round_trip)
{
    uint32_t h;

    for (h = 0; h < 0x10000u; h++) {
        float f = tutti__bf16_to_float((uint16_t)h);

        expect_decode(&fmt_bf16, h, f);
        cr_assert_eq(f32_bits(f), h << 16, "bf16 %#x: decoding is a shift", h);
        cr_assert_eq(tutti__float_to_bf16(f), ref_is_nan(&fmt_bf16, h) ? (h | 0x40u) : h,
                     "bf16 %#x does not round-trip", h);
    }
}

Test(kernels, fp8_all_encodings_decode_exactly_and_round_trip)
{
    uint32_t v;

    for (v = 0; v < 0x100u; v++) {
        float f4 = tutti__e4m3_to_float((uint8_t)v);
        float f5 = tutti__e5m2_to_float((uint8_t)v);
        int inf5 = (v & 0x7Fu) == 0x7Cu;

        expect_decode(&fmt_e4m3, v, f4);
        expect_decode(&fmt_e5m2, v, f5);
        cr_assert_eq(tutti__float_to_e4m3(f4), ref_is_nan(&fmt_e4m3, v) ? 0x7Fu : v, "e4m3 %#x", v);
        /* e5m2 infinities saturate to the largest finite value on the way back */
        cr_assert_eq(tutti__float_to_e5m2(f5),
                     ref_is_nan(&fmt_e5m2, v) ? 0x7Fu
                     : inf5                   ? ((v & 0x80u) | 0x7Bu)
                                              : v,
                     "e5m2 %#x", v);
    }
}

static uint32_t to_fmt(const fmt_t *f, float x)
{
    if (f == &fmt_half) {
        return tutti__float_to_half(x);
    }
    if (f == &fmt_bf16) {
        return tutti__float_to_bf16(x);
    }
    return (f == &fmt_e4m3) ? tutti__float_to_e4m3(x) : tutti__float_to_e5m2(x);
}

static void expect_to_fmt(const fmt_t *f, float x)
{
    uint32_t want = ref_from_float(f, x);
    uint32_t got = to_fmt(f, x);

    cr_assert_eq(got, want, "%d-bit format (m%d): %a (%#x) -> %#x, want %#x", f->bits, f->mbits,
                 (double)x, f32_bits(x), got, want);
}

/* x, its neighbours, and the same negated. */
static void expect_to_fmt_around(const fmt_t *f, double x)
{
    float c = (float)x;
    int s;

    for (s = 0; s < 2; s++) {
        expect_to_fmt(f, c);
        expect_to_fmt(f, nextafterf(c, INFINITY));
        expect_to_fmt(f, nextafterf(c, -INFINITY));
        c = -c;
    }
}

/* Random floats (any bits, and the format's own range), every midpoint between two neighbouring
 * encodings (ties), and the thresholds: overflow/saturation and half the smallest subnormal. */
static void check_from_float(const fmt_t *f)
{
    uint64_t seed = 12345 + (uint64_t)f->mbits;
    uint32_t v;
    uint32_t top = (f->bits == 16) ? 0x7FFFu : 0x7Fu;
    int i;

    for (i = 0; i < 1000000; i++) {
        uint64_t r = next_rand(&seed);
        uint32_t e = 127u - (uint32_t)f->bias - (uint32_t)f->mbits - 2u + (uint32_t)(r >> 58);

        expect_to_fmt(f, bits_f32((uint32_t)r));
        expect_to_fmt(f, bits_f32(((uint32_t)(r >> 32) & 0x807FFFFFu) | ((e & 0xFFu) << 23)));
    }
    for (v = 0; v < top; v++) {
        double lo = ref_decode(f, v);
        double hi = ref_decode(f, v + 1u);

        if (!isnan(lo) && !isnan(hi) && !isinf(hi)) {
            expect_to_fmt_around(f, (lo + hi) / 2);
            expect_to_fmt_around(f, lo);
        }
    }
    expect_to_fmt_around(f, ref_max_finite(f));
    expect_to_fmt_around(f, ref_max_finite(f) * (1.0 + ldexp(1.0, -f->mbits - 1)));
    expect_to_fmt_around(f, ldexp(1.0, -f->bias - f->mbits));
    expect_to_fmt_around(f, INFINITY);
    expect_to_fmt_around(f, NAN);
    expect_to_fmt(f, bits_f32(0x7F800001u)); /* signalling NaN */
    expect_to_fmt(f, bits_f32(0xFFA00000u));
}

Test(kernels, float_to_float16_matches_reference)
{
    check_from_float(&fmt_half);
    cr_assert_eq(tutti__float_to_half(65520.0f), 0x7C00); /* halfway past 65504: to inf */
    cr_assert_eq(tutti__float_to_half(65519.996f), 0x7BFF);
    cr_assert_eq(tutti__float_to_half(0x1p-25f), 0x0000); /* half the smallest subnormal */
}

Test(kernels, float_to_bfloat16_matches_reference)
{
    check_from_float(&fmt_bf16);
    cr_assert_eq(tutti__float_to_bf16(bits_f32(0x3F808000u)), 0x3F80); /* tie -> even */
    cr_assert_eq(tutti__float_to_bf16(bits_f32(0x3F818000u)), 0x3F82);
    cr_assert_eq(tutti__float_to_bf16(bits_f32(0x7F800001u)), 0x7FC0); /* payload only low */
}

Test(kernels, float_to_fp8_e4m3_matches_reference)
{
    check_from_float(&fmt_e4m3);
    cr_assert_eq(tutti__float_to_e4m3(464.0f), 0x7E); /* tie between 448 and (NaN) 480 */
    cr_assert_eq(tutti__float_to_e4m3(1e30f), 0x7E);
    cr_assert_eq(tutti__float_to_e4m3(-INFINITY), 0xFE);
    cr_assert_eq(tutti__float_to_e4m3(-NAN), 0x7F);
    cr_assert_eq(tutti__float_to_e4m3(0x1p-10f), 0x00); /* half the smallest subnormal */
    cr_assert_eq(tutti__float_to_e4m3(-0x1.000002p-10f), 0x81);
}

Test(kernels, float_to_fp8_e5m2_matches_reference)
{
    check_from_float(&fmt_e5m2);
    cr_assert_eq(tutti__float_to_e5m2(61439.996f), 0x7B);
    cr_assert_eq(tutti__float_to_e5m2(61440.0f), 0x7B); /* would round to inf: saturates */
    cr_assert_eq(tutti__float_to_e5m2(INFINITY), 0x7B);
    cr_assert_eq(tutti__float_to_e5m2(-NAN), 0x7F);
    cr_assert_eq(tutti__float_to_e5m2(-0x1p-17f), 0x80); /* half the smallest subnormal */
}

/* ---- tutti__reduce_div, tutti__copy2, the ISA choice ---- */

Test(kernels, reduce_div_matches_reference)
{
    static const int divisors[] = {0, 1, 3, 8};
    uint64_t seed = 99;
    int dt;
    size_t d;
    size_t n;

    for (dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
        if (!tutti__reduce_supported((tutti_datatype_t)dt, TUTTI_AVG)) {
            continue; /* bool: no division (unsupported_combinations_have_no_loop) */
        }
        for (d = 0; d < sizeof(divisors) / sizeof(divisors[0]); d++) {
            for (n = 0; n <= 70; n += (n < 20) ? 1 : 7) {
                int div = divisors[d];
                bufs_t t;
                size_t i;

                bufs_init(&t, (tutti_datatype_t)dt, n, seed++);
                tutti__reduce_div(t.out0, t.a, n, (tutti_datatype_t)dt, div);
                tutti__reduce_div(t.b, t.b, n, (tutti_datatype_t)dt, div); /* in place */
                for (i = 0; i < n; i++) {
                    uint64_t x = get_raw(t.a0, i, t.size);
                    uint64_t y = get_raw(t.b0, i, t.size);
                    uint64_t wx = div > 1 ? ref_div_elem((tutti_datatype_t)dt, x, div) : x;
                    uint64_t wy = div > 1 ? ref_div_elem((tutti_datatype_t)dt, y, div) : y;

                    cr_assert(same_result((tutti_datatype_t)dt, TUTTI_AVG, wx,
                                          get_raw(t.out0, i, t.size)) &&
                                  same_result((tutti_datatype_t)dt, TUTTI_AVG, wy,
                                              get_raw(t.b, i, t.size)),
                              "%s / %d, element %zu of %zu", tutti_datatype_name(dt), div, i, n);
                }
                expect_guard(t.out0, n, t.size, "reduce_div");
                expect_guard(t.b, n, t.size, "reduce_div in place");
                bufs_free(&t);
            }
        }
    }
}

Test(kernels, copy2_fills_both_destinations_and_nothing_more)
{
    static const size_t sizes[] = {0, 1, 7, 4096, 16383, 16384, 16385, 100003};
    size_t k;

    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        bufs_t t;
        size_t n = sizes[k];

        bufs_init(&t, TUTTI_UINT8, n, k + 1);
        tutti__copy2(t.out0, t.out1, t.a, n);
        cr_assert(memcmp(t.out0, t.a0, n) == 0 && memcmp(t.out1, t.a0, n) == 0, "size %zu", n);
        expect_guard(t.out0, n, 1, "copy2 dst0");
        expect_guard(t.out1, n, 1, "copy2 dst1");

        memset(t.out0, GUARD_BYTE, n + GUARD_ELEMS);
        tutti__copy2(t.out0, NULL, t.b, n); /* plain memcpy */
        cr_assert(memcmp(t.out0, t.b0, n) == 0, "size %zu, one destination", n);
        expect_guard(t.out0, n, 1, "copy2 single");

        tutti__copy2(t.a, t.out1, t.a, n); /* dst0 is the source */
        cr_assert(memcmp(t.a, t.a0, n) == 0 && memcmp(t.out1, t.a0, n) == 0, "size %zu", n);
        bufs_free(&t);
    }
}

Test(kernels, reduce_isa_names_the_table_the_cpu_runs)
{
    const char *isa = tutti__reduce_isa();

    cr_assert(strcmp(isa, "generic") == 0 || strcmp(isa, "avx2") == 0 || strcmp(isa, "avx512") == 0,
              "unknown ISA %s", isa);
    cr_assert_eq(tutti__reduce_force_isa("no-such-isa"), -1);
    cr_assert_str_eq(tutti__reduce_isa(), isa, "a refused name must not change the choice");
    cr_assert_eq(tutti__reduce_force_isa("generic"), 0);
    cr_assert_str_eq(tutti__reduce_isa(), "generic");
    cr_assert_eq(tutti__reduce_force_isa("auto"), 0);
    cr_assert_str_eq(tutti__reduce_isa(), isa);
}

/*
 * One datatype x op through the named table (with dst1 aliasing a) and through the generic one:
 * the results must be equal bit for bit. The one exception is SUM/PROD/AVG where both inputs are
 * NaN: IEEE leaves open which payload the result carries, and compilers order commutative
 * operands freely. tutti__reduce_div (in place) is compared too, without exception.
 */
static void compare_one(const char *isa, tutti_datatype_t dt, tutti_op_t op, size_t n,
                        uint64_t seed)
{
    int arith = op == TUTTI_SUM || op == TUTTI_PROD || op == TUTTI_AVG;
    bufs_t t;
    size_t i;

    bufs_init(&t, dt, n, seed);
    cr_assert_eq(tutti__reduce_force_isa("generic"), 0);
    tutti__reduce(t.out0, NULL, t.a, t.b, n, dt, op, 3);
    tutti__reduce_div(t.out1, t.b, n, dt, 3);
    cr_assert_eq(tutti__reduce_force_isa(isa), 0);
    tutti__reduce(t.b, t.a, t.a, t.b, n, dt, op, 3);
    for (i = 0; i < n; i++) {
        uint64_t want = get_raw(t.out0, i, t.size);
        int both_nan =
            raw_is_nan(dt, get_raw(t.a0, i, t.size)) && raw_is_nan(dt, get_raw(t.b0, i, t.size));

        cr_assert((want == get_raw(t.b, i, t.size) && want == get_raw(t.a, i, t.size)) ||
                      (arith && both_nan),
                  "%s %s %s n=%zu element %zu", isa, tutti_datatype_name(dt), tutti_op_name(op), n,
                  i);
    }
    tutti__reduce_div(t.b0, t.b0, n, dt, 3);
    /* bool has no division: both leave b0 and out1 as they were, which differ */
    cr_assert(dt == TUTTI_BOOL || memcmp(t.b0, t.out1, n * t.size) == 0, "%s: %s / 3", isa,
              tutti_datatype_name(dt));
    bufs_free(&t);
}

static void compare_with_generic(const char *isa)
{
    uint64_t seed = 4242;
    int dt;
    int op;
    size_t n;

    for (dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
        for (op = 0; op < TUTTI_NUM_OPS; op++) {
            if (!tutti__reduce_supported((tutti_datatype_t)dt, (tutti_op_t)op)) {
                continue;
            }
            for (n = 0; n < 4200; n = (n < 70) ? n + 1 : n * 2 + 11) {
                compare_one(isa, (tutti_datatype_t)dt, (tutti_op_t)op, n, seed++);
            }
        }
    }
    tutti__reduce_force_isa("auto");
}

Test(kernels, avx2_table_matches_generic_bit_for_bit)
{
    if (tutti__reduce_force_isa("avx2") != 0) {
        cr_skip_test("this CPU cannot run the AVX2 + F16C table");
    }
    compare_with_generic("avx2");
}

Test(kernels, avx512_table_matches_generic_bit_for_bit)
{
    if (tutti__reduce_force_isa("avx512") != 0) {
        cr_skip_test("this CPU cannot run the AVX-512 table");
    }
    compare_with_generic("avx512");
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) static uint16_t f16c_from_float(float x)
{
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set1_ps(x), _MM_FROUND_TO_NEAREST_INT), 0);
}

__attribute__((target("avx,f16c"))) static float f16c_to_float(uint16_t h)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16((short)h)));
}

/* The F16C loops rely on vcvtph2ps/vcvtps2ph giving exactly the scalar conversions' bits. */
Test(kernels, f16c_conversions_equal_the_scalar_ones)
{
    unsigned int eax, ebx, ecx, edx;
    uint64_t seed = 7;
    uint32_t h;
    int i;

    __builtin_cpu_init();
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_F16C) == 0 ||
        !__builtin_cpu_supports("avx")) {
        cr_skip_test("no F16C on this CPU");
    }
    for (h = 0; h < 0x10000u; h++) {
        cr_assert_eq(f32_bits(f16c_to_float((uint16_t)h)),
                     f32_bits(tutti__half_to_float((uint16_t)h)), "half %#x", h);
    }
    for (i = 0; i < 4000000; i++) {
        float x = bits_f32((uint32_t)next_rand(&seed));

        cr_assert_eq(f16c_from_float(x), tutti__float_to_half(x), "float %#x", f32_bits(x));
    }
}
#endif
