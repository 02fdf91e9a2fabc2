/*
 * perf_data.c - datatype and op names, and the exact input patterns of the perf tools (see
 * perf_data.h for why every result is exact). Values are a hash of (seed, rank, index), so each
 * rank's data differs, each fill differs from the last, and any element can be recomputed by any
 * rank without communication.
 */
#include "perf_data.h"
#include "kernels/reduce.h"
#include "tutti_perf.h"
#include "tutti/coll.h"

#include <string.h>

static const struct {
    tutti_datatype_t dt;
    const char *name;     /* nccl-tests' name, printed in the "type" column */
    const char *alias[3]; /* also accepted by -d */
    int exact_int;        /* floats: every integer up to this is representable */
    int max_pow2;         /* floats: 2^max_pow2 is finite */
} dtypes[] = {
    {TUTTI_INT8, "int8", {NULL}, 0, 0},
    {TUTTI_UINT8, "uint8", {NULL}, 0, 0},
    {TUTTI_INT16, "int16", {NULL}, 0, 0},
    {TUTTI_UINT16, "uint16", {NULL}, 0, 0},
    {TUTTI_INT32, "int32", {NULL}, 0, 0},
    {TUTTI_UINT32, "uint32", {NULL}, 0, 0},
    {TUTTI_INT64, "int64", {NULL}, 0, 0},
    {TUTTI_UINT64, "uint64", {NULL}, 0, 0},
    {TUTTI_FLOAT16, "half", {"float16", "fp16", NULL}, 2048, 15},
    {TUTTI_BFLOAT16, "bfloat16", {"bf16", NULL}, 256, 127},
    {TUTTI_FLOAT32, "float", {"float32", "fp32", NULL}, 1 << 24, 127},
    {TUTTI_FLOAT64, "double", {"float64", "fp64", NULL}, 1 << 30, 1023},
    {TUTTI_FP8_E4M3, "f8e4m3", {"fp8_e4m3", "e4m3", NULL}, 16, 8},
    {TUTTI_FP8_E5M2, "f8e5m2", {"fp8_e5m2", "e5m2", NULL}, 8, 15},
};

_Static_assert(sizeof(dtypes) / sizeof(dtypes[0]) == PERF_NUM_DTYPES, "a datatype without a name");

static const char *const op_names[PERF_NUM_OPS] = {
    [TUTTI_SUM] = "sum", [TUTTI_PROD] = "prod", [TUTTI_MIN] = "min",
    [TUTTI_MAX] = "max", [TUTTI_AVG] = "avg",
};

const tutti_op_t perf_op_order[PERF_NUM_OPS] = {TUTTI_SUM, TUTTI_PROD, TUTTI_MAX, TUTTI_MIN,
                                                TUTTI_AVG};

const char *perf_dtype_name(tutti_datatype_t dt)
{
    return (unsigned)dt < PERF_NUM_DTYPES ? dtypes[dt].name : "unknown";
}

int perf_dtype_parse(const char *s)
{
    if (strcmp(s, "all") == 0) {
        return PERF_ALL;
    }
    for (int i = 0; i < PERF_NUM_DTYPES; i++) {
        if (strcmp(s, dtypes[i].name) == 0) {
            return dtypes[i].dt;
        }
        for (int a = 0; a < 3 && dtypes[i].alias[a] != NULL; a++) {
            if (strcmp(s, dtypes[i].alias[a]) == 0) {
                return dtypes[i].dt;
            }
        }
    }
    return -2;
}

const char *perf_op_name(tutti_op_t op)
{
    if (op == PERF_OP_PREMUL) {
        return "premulsum";
    }
    return (unsigned)op < PERF_NUM_OPS ? op_names[op] : "unknown";
}

int perf_op_parse(const char *s)
{
    if (strcmp(s, "all") == 0) {
        return PERF_ALL;
    }
    if (strcmp(s, "premulsum") == 0 || strcmp(s, "mulsum") == 0) {
        return PERF_OP_PREMUL;
    }
    for (int i = 0; i < PERF_NUM_OPS; i++) {
        if (strcmp(s, op_names[i]) == 0) {
            return i;
        }
    }
    return -2;
}

static inline int is_float(tutti_datatype_t dt)
{
    return dt >= TUTTI_FLOAT16;
}

static inline int is_signed(tutti_datatype_t dt)
{
    return dt == TUTTI_INT8 || dt == TUTTI_INT16 || dt == TUTTI_INT32 || dt == TUTTI_INT64;
}

/* Width in bits of each integer datatype (0 for floats), looked up once per element. */
static const uint8_t int_bits[PERF_NUM_DTYPES] = {
    [TUTTI_INT8] = 8,   [TUTTI_UINT8] = 8,   [TUTTI_INT16] = 16, [TUTTI_UINT16] = 16,
    [TUTTI_INT32] = 32, [TUTTI_UINT32] = 32, [TUTTI_INT64] = 64, [TUTTI_UINT64] = 64,
};

/* Integer bits truncated to the width of dt, sign- or zero-extended back to 64 bits. */
static inline uint64_t int_norm(tutti_datatype_t dt, uint64_t u)
{
    unsigned bits = int_bits[dt];
    if (bits >= 64) {
        return u;
    }
    uint64_t mask = (1ull << bits) - 1;
    u &= mask;
    if (is_signed(dt) && (u >> (bits - 1)) != 0) {
        u |= ~mask;
    }
    return u;
}

void perf_gen_init(struct perf_gen *g, tutti_datatype_t dt, tutti_op_t op, int nranks,
                   uint64_t seed)
{
    memset(g, 0, sizeof(*g));
    op = op == PERF_OP_PREMUL ? TUTTI_SUM : op; /* the scalar is 1: SUM's data and results */
    g->dt = dt;
    g->op = op;
    g->nranks = nranks < 1 ? 1 : nranks;
    g->seed = seed;
    g->is_float = is_float(dt);
    int64_t n = g->nranks;
    if (!g->is_float) {
        if (op == TUTTI_AVG) { /* no wrap-around: the sum of n values stays in range */
            unsigned bits = int_bits[dt];
            int64_t max = bits >= 64 ? (int64_t)1 << 61 : (int64_t)((1ull << bits) - 1);
            max = is_signed(dt) ? max / 2 : max;
            g->lo = is_signed(dt) ? -(max / n) : 0;
            g->span = (uint64_t)(max / n - g->lo + 1);
        }
        return;
    }
    int64_t lim = dtypes[dt].exact_int;
    if (op == TUTTI_SUM || op == TUTTI_AVG) {
        lim /= n; /* every partial sum of n values stays within the exact range */
    } else if (op == TUTTI_PROD) {
        g->pow2 = n <= dtypes[dt].max_pow2;
        return;
    }
    g->lo = -lim;
    g->span = (uint64_t)(2 * lim + 1);
}

/* splitmix64 finaliser over seed, rank and index. */
static inline uint64_t hash3(uint64_t seed, int rank, size_t idx)
{
    uint64_t x = seed ^ ((uint64_t)(rank + 1) * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)idx * 0xD1B54A32D192ED03ull);
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* h mapped onto 0 .. span - 1 by a multiplication (Lemire's fast range): no division. */
static inline uint64_t below(uint64_t h, uint64_t span)
{
    return (uint64_t)(((unsigned __int128)h * span) >> 64);
}

/* An input that is a small integer (floats, except PROD): lo .. lo + span - 1. */
static inline int64_t small_input(const struct perf_gen *g, int rank, size_t idx)
{
    return g->lo + (int64_t)below(hash3(g->seed, rank, idx), g->span);
}

perf_val_t perf_gen_input(const struct perf_gen *g, int rank, size_t idx)
{
    uint64_t h = hash3(g->seed, rank, idx);
    perf_val_t v;
    if (g->is_float && g->op == TUTTI_PROD) {
        double mag = (g->pow2 && (h & 2) != 0) ? 2.0 : 1.0;
        v.f = (h & 1) != 0 ? -mag : mag;
    } else if (g->is_float) {
        v.f = (double)small_input(g, rank, idx);
    } else if (g->span != 0) {
        v.u = int_norm(g->dt, (uint64_t)(g->lo + (int64_t)below(h, g->span)));
    } else {
        /* PROD: odd factors keep products from collapsing to zero. */
        v.u = int_norm(g->dt, g->op == TUTTI_PROD ? (h | 1) : h);
    }
    return v;
}

/* Integer reduction: wrap-around arithmetic in 64 bits, truncated at the end. */
static perf_val_t reduce_int(const struct perf_gen *g, size_t idx)
{
    uint64_t acc = perf_gen_input(g, 0, idx).u;
    int sgn = is_signed(g->dt);
    for (int r = 1; r < g->nranks; r++) {
        uint64_t x = perf_gen_input(g, r, idx).u;
        int less = sgn ? (int64_t)x < (int64_t)acc : x < acc;
        switch (g->op) {
        case TUTTI_PROD:
            acc *= x;
            break;
        case TUTTI_MIN:
            acc = less ? x : acc;
            break;
        case TUTTI_MAX:
            acc = less ? acc : x;
            break;
        default: /* SUM, AVG */
            acc += x;
            break;
        }
    }
    if (g->op == TUTTI_AVG) { /* the sum did not wrap: divide, truncating toward zero */
        acc = sgn ? (uint64_t)((int64_t)acc / g->nranks) : acc / (uint64_t)g->nranks;
    }
    return (perf_val_t){.u = int_norm(g->dt, acc)};
}

perf_val_t perf_gen_reduced(const struct perf_gen *g, size_t idx)
{
    if (!g->is_float) {
        return reduce_int(g, idx);
    }
    double acc = perf_gen_input(g, 0, idx).f;
    for (int r = 1; r < g->nranks; r++) {
        double x = perf_gen_input(g, r, idx).f;
        switch (g->op) {
        case TUTTI_PROD:
            acc *= x;
            break;
        case TUTTI_MIN:
            acc = x < acc ? x : acc;
            break;
        case TUTTI_MAX:
            acc = x > acc ? x : acc;
            break;
        default:
            acc += x;
            break;
        }
    }
    perf_val_t v = {.f = acc};
    if (g->op == TUTTI_AVG) {
        /* One division of the exact sum: in double for float64, else in float32, then one
         * rounding to the type (a store and a load do it). */
        char tmp[8];
        v.f = g->dt == TUTTI_FLOAT64 ? acc / g->nranks : (double)((float)acc / (float)g->nranks);
        perf_store(tmp, 0, g->dt, v);
        v = perf_load(tmp, 0, g->dt);
    }
    return v;
}

void perf_store(void *buf, size_t idx, tutti_datatype_t dt, perf_val_t v)
{
    switch (dt) {
    case TUTTI_INT8:
    case TUTTI_UINT8:
        ((uint8_t *)buf)[idx] = (uint8_t)v.u;
        break;
    case TUTTI_INT16:
    case TUTTI_UINT16:
        ((uint16_t *)buf)[idx] = (uint16_t)v.u;
        break;
    case TUTTI_INT32:
    case TUTTI_UINT32:
        ((uint32_t *)buf)[idx] = (uint32_t)v.u;
        break;
    case TUTTI_INT64:
    case TUTTI_UINT64:
        ((uint64_t *)buf)[idx] = v.u;
        break;
    case TUTTI_FLOAT16:
        ((uint16_t *)buf)[idx] = tutti__float_to_half((float)v.f);
        break;
    case TUTTI_BFLOAT16:
        ((uint16_t *)buf)[idx] = tutti__float_to_bf16((float)v.f);
        break;
    case TUTTI_FLOAT32:
        ((float *)buf)[idx] = (float)v.f;
        break;
    case TUTTI_FLOAT64:
        ((double *)buf)[idx] = v.f;
        break;
    case TUTTI_FP8_E4M3:
        ((uint8_t *)buf)[idx] = tutti__float_to_e4m3((float)v.f);
        break;
    default:
        ((uint8_t *)buf)[idx] = tutti__float_to_e5m2((float)v.f);
        break;
    }
}

perf_val_t perf_load(const void *buf, size_t idx, tutti_datatype_t dt)
{
    perf_val_t v;
    switch (dt) {
    case TUTTI_INT8:
    case TUTTI_UINT8:
        v.u = int_norm(dt, ((const uint8_t *)buf)[idx]);
        break;
    case TUTTI_INT16:
    case TUTTI_UINT16:
        v.u = int_norm(dt, ((const uint16_t *)buf)[idx]);
        break;
    case TUTTI_INT32:
    case TUTTI_UINT32:
        v.u = int_norm(dt, ((const uint32_t *)buf)[idx]);
        break;
    case TUTTI_INT64:
    case TUTTI_UINT64:
        v.u = ((const uint64_t *)buf)[idx];
        break;
    case TUTTI_FLOAT16:
        v.f = tutti__half_to_float(((const uint16_t *)buf)[idx]);
        break;
    case TUTTI_BFLOAT16:
        v.f = tutti__bf16_to_float(((const uint16_t *)buf)[idx]);
        break;
    case TUTTI_FLOAT32:
        v.f = ((const float *)buf)[idx];
        break;
    case TUTTI_FLOAT64:
        v.f = ((const double *)buf)[idx];
        break;
    case TUTTI_FP8_E4M3:
        v.f = tutti__e4m3_to_float(((const uint8_t *)buf)[idx]);
        break;
    default:
        v.f = tutti__e5m2_to_float(((const uint8_t *)buf)[idx]);
        break;
    }
    return v;
}

static int val_equal(tutti_datatype_t dt, perf_val_t a, perf_val_t b)
{
    return is_float(dt) ? a.f == b.f : a.u == b.u; /* a NaN equals nothing */
}

/* float32 with small-integer inputs (the benchmarks' default) has loops of its own: the general
 * path's per-element datatype switch costs more than the collective on large buffers. */
static int fast_f32(const struct perf_gen *g)
{
    return g->dt == TUTTI_FLOAT32 && g->op != TUTTI_PROD && g->op != TUTTI_AVG;
}

static float f32_reduced(const struct perf_gen *g, size_t idx)
{
    int64_t acc = small_input(g, 0, idx);
    for (int r = 1; r < g->nranks; r++) {
        int64_t x = small_input(g, r, idx);
        if (g->op == TUTTI_SUM) {
            acc += x;
        } else if (g->op == TUTTI_MIN ? x < acc : x > acc) {
            acc = x;
        }
    }
    return (float)acc;
}

void perf_fill_input(const struct perf_gen *g, void *buf, int rank, size_t first, size_t n)
{
    if (fast_f32(g)) {
        for (size_t i = 0; i < n; i++) {
            ((float *)buf)[i] = (float)small_input(g, rank, first + i);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        perf_store(buf, i, g->dt, perf_gen_input(g, rank, first + i));
    }
}

void perf_poison(void *buf, size_t n, tutti_datatype_t dt)
{
    /* All ones is a NaN in every float type; 0xa5 bytes are far from the small AVG inputs. */
    memset(buf, is_float(dt) ? 0xff : 0xa5, n * tutti_datatype_size(dt));
}

size_t perf_check_input(const struct perf_gen *g, const void *buf, int rank, size_t first, size_t n)
{
    size_t wrong = 0;
    if (fast_f32(g)) {
        for (size_t i = 0; i < n; i++) {
            wrong += ((const float *)buf)[i] != (float)small_input(g, rank, first + i);
        }
        return wrong;
    }
    for (size_t i = 0; i < n; i++) {
        wrong += !val_equal(g->dt, perf_load(buf, i, g->dt), perf_gen_input(g, rank, first + i));
    }
    return wrong;
}

size_t perf_check_reduced(const struct perf_gen *g, const void *buf, size_t first, size_t n)
{
    size_t wrong = 0;
    if (fast_f32(g)) {
        for (size_t i = 0; i < n; i++) {
            wrong += ((const float *)buf)[i] != f32_reduced(g, first + i);
        }
        return wrong;
    }
    for (size_t i = 0; i < n; i++) {
        wrong += !val_equal(g->dt, perf_load(buf, i, g->dt), perf_gen_reduced(g, first + i));
    }
    return wrong;
}
