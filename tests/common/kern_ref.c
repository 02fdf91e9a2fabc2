/*
 * kern_ref.c - the reference of kern_ref.h: exact integer math in 128 bits, double arithmetic
 * for the float types, narrow-float rounding by frexp/ldexp/nearbyint, truth tables for bool,
 * and the pre-multiplied sum built from those.
 */
#include "kern_ref.h"
#include "tutti/coll.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef __int128 i128;
typedef unsigned __int128 u128;

/* ---- random inputs ---- */

uint64_t next_rand(uint64_t *s)
{
    /* xorshift64*: deterministic, so a failure reproduces */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static double bits_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

/* Encodings every test input mixes in: zeros, infinities, NaNs (quiet, signalling, negative),
 * extremes, subnormals. Integers get their limits. */
static const uint64_t specials_int[] = {0,
                                        1,
                                        UINT64_MAX,
                                        0x7F,
                                        0x80,
                                        0xFF,
                                        0x7FFF,
                                        0x8000,
                                        0xFFFF,
                                        0x7FFFFFFF,
                                        0x80000000u,
                                        0xFFFFFFFFu,
                                        0x7FFFFFFFFFFFFFFFull,
                                        0x8000000000000000ull};
static const uint64_t specials_f32[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                                        0xFFC00000, 0x7F800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000,
                                        0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000};
static const uint64_t specials_f64[] = {0x0ull,
                                        0x8000000000000000ull,
                                        0x7FF0000000000000ull,
                                        0xFFF0000000000000ull,
                                        0x7FF8000000000000ull,
                                        0x7FF0000000000001ull,
                                        0x7FEFFFFFFFFFFFFFull,
                                        0x0010000000000000ull,
                                        0x0000000000000001ull,
                                        0x3FF0000000000000ull,
                                        0xBFF0000000000000ull};
static const uint64_t specials_half[] = {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01,
                                         0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00};
static const uint64_t specials_bf16[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81,
                                         0x7F7F, 0xFF7F, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80};
/* true bytes other than 1: a kernel that tests one bit, or passes a byte on, shows with these */
static const uint64_t specials_bool[] = {1, 2, 0x80, 0xFF, 0x10, 0x7F};

#define PICK(arr) ((arr)[r % (sizeof(arr) / sizeof((arr)[0]))])

/* One random element of type dt, as raw bits: a special value one time in eight. */
uint64_t gen_elem(tutti_datatype_t dt, uint64_t *s)
{
    uint64_t r = next_rand(s);
    int special = (r >> 61) == 0;
    int small = ((r >> 58) & 1) != 0;

    r = next_rand(s);
    switch (dt) {
    case TUTTI_FLOAT32:
        if (special) {
            return PICK(specials_f32);
        }
        /* mostly moderate magnitudes (exponent 2^-30..2^30), else any bit pattern */
        return small ? (r & 0x807FFFFFu) | ((uint64_t)(97 + (r >> 40) % 61) << 23) : (uint32_t)r;
    case TUTTI_FLOAT64:
        if (special) {
            return PICK(specials_f64);
        }
        return small ? (r & 0x800FFFFFFFFFFFFFull) | ((993 + (r >> 52) % 61) << 52) : r;
    case TUTTI_FLOAT16:
        return special ? PICK(specials_half) : (uint16_t)r;
    case TUTTI_BFLOAT16:
        return special ? PICK(specials_bf16) : (uint16_t)r;
    case TUTTI_FP8_E4M3:
    case TUTTI_FP8_E5M2:
        return (uint8_t)r;
    case TUTTI_BOOL:
        /* false half of the time, so that "and" and "exclusive or" see both values */
        return ((r >> 63) != 0) ? 0 : special ? PICK(specials_bool) : (uint8_t)(r | 1u);
    default:
        if (special) {
            return PICK(specials_int);
        }
        return small ? (uint64_t)((int64_t)(r % 201) - 100) : r;
    }
}

/*
 * Scalars every datatype is tried with before random ones: 0, -0, 1, -1, 1/2, about 1/3,
 * +-infinity (fp8 e4m3: its largest finite values), NaN, the smallest subnormal, the largest
 * finite value, 2. The integers get 0, 1, -1, 2, 3 and the extremes of each width.
 */
static const uint64_t special_scalars[TUTTI_NUM_DATATYPES][GEN_SCALAR_SPECIALS] = {
    [TUTTI_FLOAT32] = {0x0, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0x3EAAAAAB, 0x7F800000,
                       0xFF800000, 0x7FC00000, 0x00000001, 0x7F7FFFFF, 0x40000000},
    [TUTTI_FLOAT64] = {0x0, 0x8000000000000000ull, 0x3FF0000000000000ull, 0xBFF0000000000000ull,
                       0x3FE0000000000000ull, 0x3FD5555555555555ull, 0x7FF0000000000000ull,
                       0xFFF0000000000000ull, 0x7FF8000000000000ull, 0x1, 0x7FEFFFFFFFFFFFFFull,
                       0x4000000000000000ull},
    [TUTTI_FLOAT16] = {0x0, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x3555, 0x7C00, 0xFC00, 0x7E00, 0x0001,
                       0x7BFF, 0x4000},
    [TUTTI_BFLOAT16] = {0x0, 0x8000, 0x3F80, 0xBF80, 0x3F00, 0x3EAB, 0x7F80, 0xFF80, 0x7FC0, 0x0001,
                        0x7F7F, 0x4000},
    [TUTTI_FP8_E4M3] = {0x0, 0x80, 0x38, 0xB8, 0x30, 0x2B, 0x7E, 0xFE, 0x7F, 0x01, 0xFF, 0x40},
    [TUTTI_FP8_E5M2] = {0x0, 0x80, 0x3C, 0xBC, 0x38, 0x35, 0x7C, 0xFC, 0x7E, 0x01, 0x7B, 0x40},
};
static const uint64_t special_int_scalars[GEN_SCALAR_SPECIALS] = {
    0, 1, UINT64_MAX, 2, 3, 0x7F, 0x80, 0x8000, 0x80000000u, 0x8000000000000000ull, 0xFF, 0x10001};

uint64_t gen_scalar(tutti_datatype_t dt, int k, uint64_t *seed)
{
    if (k < GEN_SCALAR_SPECIALS) {
        return dt <= TUTTI_UINT64 ? special_int_scalars[k] : special_scalars[dt][k];
    }
    return gen_elem(dt, seed);
}

/* ---- raw element access (little-endian hosts) ---- */

uint64_t get_raw(const void *buf, size_t i, size_t size)
{
    uint64_t v = 0;

    memcpy(&v, (const char *)buf + i * size, size);
    return v;
}

void put_raw(void *buf, size_t i, size_t size, uint64_t v)
{
    memcpy((char *)buf + i * size, &v, size);
}

/* ---- reference: narrow float formats ---- */

const fmt_t fmt_half = {16, 10, 5, 15, 1, 0};
const fmt_t fmt_bf16 = {16, 7, 8, 127, 1, 0};
const fmt_t fmt_e4m3 = {8, 3, 4, 7, 0, 1};
const fmt_t fmt_e5m2 = {8, 2, 5, 15, 1, 1};

static const fmt_t *fmt_of(tutti_datatype_t dt)
{
    switch (dt) {
    case TUTTI_FLOAT16:
        return &fmt_half;
    case TUTTI_BFLOAT16:
        return &fmt_bf16;
    case TUTTI_FP8_E4M3:
        return &fmt_e4m3;
    case TUTTI_FP8_E5M2:
        return &fmt_e5m2;
    default:
        return NULL;
    }
}

int ref_is_nan(const fmt_t *f, uint32_t v)
{
    uint32_t mag = v & ((1u << (f->bits - 1)) - 1u);
    uint32_t inf = ((1u << f->ebits) - 1u) << f->mbits;

    return f->has_inf ? mag > inf : mag == (inf | ((1u << f->mbits) - 1u));
}

double ref_max_finite(const fmt_t *f)
{
    int emax = (1 << f->ebits) - 1 - f->bias - (f->has_inf ? 1 : 0);

    /* all mantissa bits set, except e4m3 where S.1111.111 is NaN */
    return ldexp(2.0 - ldexp(1.0, f->has_inf ? -f->mbits : 1 - f->mbits), emax);
}

double ref_decode(const fmt_t *f, uint32_t v)
{
    int e = (int)(v >> f->mbits) & ((1 << f->ebits) - 1);
    int m = (int)v & ((1 << f->mbits) - 1);
    double x;

    if (ref_is_nan(f, v)) {
        return NAN;
    }
    if (f->has_inf && e == (1 << f->ebits) - 1) {
        x = INFINITY;
    } else if (e == 0) {
        x = ldexp(m, 1 - f->bias - f->mbits);
    } else {
        x = ldexp(m + (1 << f->mbits), e - f->bias - f->mbits);
    }
    return ((v >> (f->bits - 1)) & 1u) != 0 ? -x : x;
}

/* x rounded to the format, nearest even, then overflow to inf or saturation. */
static double ref_round(const fmt_t *f, double x)
{
    double max = ref_max_finite(f);
    double r;
    int ex;
    int q;

    if (x == 0.0 || isnan(x)) {
        return x;
    }
    if (isinf(x)) {
        return f->saturate ? copysign(max, x) : x;
    }
    frexp(x, &ex); /* the leading bit of |x| weighs 2^(ex - 1) */
    q = ((ex - 1 < 1 - f->bias) ? 1 - f->bias : ex - 1) - f->mbits; /* weight of the last bit */
    r = ldexp(nearbyint(ldexp(x, -q)), q);
    if (fabs(r) > max) {
        r = f->saturate ? copysign(max, x) : copysign(INFINITY, x);
    }
    return r;
}

/* Bits of r, a value of the format (or an infinity where it has one). */
static uint32_t ref_encode(const fmt_t *f, double r)
{
    uint32_t sign = signbit(r) ? 1u << (f->bits - 1) : 0u;
    double a = fabs(r);
    int ex;

    if (isinf(a)) {
        return sign | (((1u << f->ebits) - 1u) << f->mbits);
    }
    if (a == 0.0) {
        return sign;
    }
    frexp(a, &ex);
    if (ex - 1 + f->bias < 1) {
        return sign | (uint32_t)ldexp(a, f->bias - 1 + f->mbits);
    }
    return sign | ((uint32_t)(ex - 1 + f->bias) << f->mbits) |
           (uint32_t)(ldexp(a, f->mbits - ex + 1) - ldexp(1.0, f->mbits));
}

/* float -> format. NaN: float16 and bfloat16 keep sign and top payload bits and set the quiet
 * bit (F16C and CUDA do the same); fp8 gives 0x7F, CUDA's canonical NaN. */
uint32_t ref_from_float(const fmt_t *f, float x)
{
    uint32_t u = f32_bits(x);

    if (isnan(x)) {
        if (f == &fmt_half) {
            return ((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu);
        }
        return (f == &fmt_bf16) ? ((u >> 16) | 0x40u) : 0x7Fu;
    }
    return ref_encode(f, ref_round(f, x));
}

/* ---- reference: one element of every datatype x op ---- */

static int is_signed_int(tutti_datatype_t dt)
{
    return dt == TUTTI_INT8 || dt == TUTTI_INT16 || dt == TUTTI_INT32 || dt == TUTTI_INT64;
}

static i128 int_value(tutti_datatype_t dt, uint64_t raw)
{
    int bits = (int)tutti_datatype_size(dt) * 8;
    uint64_t mask = (bits == 64) ? UINT64_MAX : (1ull << bits) - 1u;

    raw &= mask;
    if (is_signed_int(dt) && ((raw >> (bits - 1)) & 1u) != 0) {
        return (i128)raw - ((i128)1 << bits);
    }
    return (i128)raw;
}

static uint64_t int_wrap(tutti_datatype_t dt, u128 v)
{
    int bits = (int)tutti_datatype_size(dt) * 8;

    return (uint64_t)v & ((bits == 64) ? UINT64_MAX : (1ull << bits) - 1u);
}

static uint64_t ref_int(tutti_datatype_t dt, tutti_op_t op, uint64_t ra, uint64_t rb, int div)
{
    i128 a = int_value(dt, ra);
    i128 b = int_value(dt, rb);
    i128 s = int_value(dt, int_wrap(dt, (u128)(a + b)));

    switch (op) {
    case TUTTI_SUM:
        return int_wrap(dt, (u128)s);
    case TUTTI_PROD:
        return int_wrap(dt, (u128)a * (u128)b);
    case TUTTI_MIN:
        return int_wrap(dt, (u128)(b < a ? b : a));
    case TUTTI_MAX:
        return int_wrap(dt, (u128)(a < b ? b : a));
    case TUTTI_BAND:
        return int_wrap(dt, ra & rb);
    case TUTTI_BOR:
        return int_wrap(dt, ra | rb);
    case TUTTI_BXOR:
        return int_wrap(dt, ra ^ rb);
    default:
        return int_wrap(dt, (u128)(div > 1 ? s / div : s)); /* C division truncates */
    }
}

/* MIN/MAX: a NaN operand wins (the first if both), else the smaller/larger, the first on ties. */
static int ref_pick_b(tutti_op_t op, double a, double b)
{
    if (isnan(a) || isnan(b)) {
        return !isnan(a);
    }
    return (op == TUTTI_MIN) ? b < a : a < b;
}

static uint64_t ref_f32(tutti_op_t op, uint64_t ra, uint64_t rb, int div)
{
    double a = bits_f32((uint32_t)ra);
    double b = bits_f32((uint32_t)rb);
    /* double holds sums and products of two floats well enough that one rounding to float is
     * the correctly rounded float result */
    float s = (float)(a + b);

    switch (op) {
    case TUTTI_SUM:
        return f32_bits(s);
    case TUTTI_PROD:
        return f32_bits((float)(a * b));
    case TUTTI_AVG:
        return f32_bits(div > 1 ? (float)((double)s / div) : s);
    default:
        return ref_pick_b(op, a, b) ? rb : ra;
    }
}

static uint64_t ref_f64(tutti_op_t op, uint64_t ra, uint64_t rb, int div)
{
    double a = bits_f64(ra);
    double b = bits_f64(rb);

    switch (op) {
    case TUTTI_SUM:
        return f64_bits(a + b);
    case TUTTI_PROD:
        return f64_bits(a * b);
    case TUTTI_AVG:
        return f64_bits(div > 1 ? (a + b) / div : a + b);
    default:
        return ref_pick_b(op, a, b) ? rb : ra;
    }
}

static uint64_t ref_narrow(const fmt_t *f, tutti_op_t op, uint64_t ra, uint64_t rb, int div)
{
    double a = ref_decode(f, (uint32_t)ra);
    double b = ref_decode(f, (uint32_t)rb);
    float s = (float)(a + b);

    switch (op) {
    case TUTTI_SUM:
        return ref_from_float(f, s);
    case TUTTI_PROD:
        return ref_from_float(f, (float)(a * b));
    case TUTTI_AVG:
        return ref_from_float(f, div > 1 ? (float)((double)s / div) : s);
    default:
        return ref_pick_b(op, a, b) ? rb : ra;
    }
}

/* bool: truth values of whole bytes; every result 0 or 1 (AVG has none: all ones). */
static uint64_t ref_bool(tutti_op_t op, uint64_t ra, uint64_t rb)
{
    int a = (ra & 0xFFu) != 0;
    int b = (rb & 0xFFu) != 0;

    switch (op) {
    case TUTTI_SUM:
    case TUTTI_MAX:
    case TUTTI_BOR:
        return (uint64_t)(a || b);
    case TUTTI_PROD:
    case TUTTI_MIN:
    case TUTTI_BAND:
        return (uint64_t)(a && b);
    case TUTTI_BXOR:
        return (uint64_t)(a != b);
    default:
        return UINT64_MAX;
    }
}

uint64_t ref_elem(tutti_datatype_t dt, tutti_op_t op, uint64_t a, uint64_t b, int div)
{
    if (dt == TUTTI_BOOL) {
        return ref_bool(op, a, b);
    }
    if (dt == TUTTI_FLOAT32) {
        return ref_f32(op, a, b, div);
    }
    if (dt == TUTTI_FLOAT64) {
        return ref_f64(op, a, b, div);
    }
    if (fmt_of(dt) != NULL) {
        return ref_narrow(fmt_of(dt), op, a, b, div);
    }
    return ref_int(dt, op, a, b, div);
}

/* The product is PROD's, the scalar first, and the sum SUM's: the definition of the kernels. */
uint64_t ref_scale_elem(tutti_datatype_t dt, uint64_t scalar, uint64_t x)
{
    return ref_elem(dt, TUTTI_PROD, scalar, x, 1);
}

uint64_t ref_premul_elem(tutti_datatype_t dt, uint64_t acc, uint64_t own, uint64_t scalar)
{
    return ref_elem(dt, TUTTI_SUM, acc, ref_scale_elem(dt, scalar, own), 1);
}

/* One element of tutti__reduce_div: x / div (div > 1), rounded like AVG. */
uint64_t ref_div_elem(tutti_datatype_t dt, uint64_t x, int div)
{
    const fmt_t *f = fmt_of(dt);

    if (dt == TUTTI_FLOAT32) {
        return f32_bits((float)((double)bits_f32((uint32_t)x) / div));
    }
    if (dt == TUTTI_FLOAT64) {
        return f64_bits(bits_f64(x) / div);
    }
    if (f != NULL) {
        return ref_from_float(f, (float)(ref_decode(f, (uint32_t)x) / div));
    }
    return int_wrap(dt, (u128)(int_value(dt, x) / div));
}

/* Whether v is a NaN of a float datatype (integers: never). */
int raw_is_nan(tutti_datatype_t dt, uint64_t v)
{
    if (dt == TUTTI_FLOAT32) {
        return isnan(bits_f32((uint32_t)v));
    }
    if (dt == TUTTI_FLOAT64) {
        return isnan(bits_f64(v));
    }
    return fmt_of(dt) != NULL && ref_is_nan(fmt_of(dt), (uint32_t)v);
}

/*
 * got matches want: bit for bit, except that for SUM/PROD/AVG/div of float16, bfloat16, float32
 * and float64 any NaN stands for a NaN (IEEE leaves the payload of an operation on NaNs open).
 */
int same_result(tutti_datatype_t dt, tutti_op_t op, uint64_t want, uint64_t got)
{
    int any_nan =
        op != TUTTI_MIN && op != TUTTI_MAX && dt != TUTTI_FP8_E4M3 && dt != TUTTI_FP8_E5M2;

    if (any_nan && raw_is_nan(dt, want)) {
        return raw_is_nan(dt, got);
    }
    return want == got;
}
