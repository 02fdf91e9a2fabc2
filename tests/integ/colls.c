/*
 * colls.c - the checked collective call of colls.h: seeded inputs, an independent reference,
 * guard zones, and messages that say exactly what differed.
 */
#include "colls.h"
#include "harness.h"
#include "kernels/reduce.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD       64  /* bytes before and after every buffer that must stay untouched */
#define NAN_PERIOD  257 /* MIN/MAX inputs: element i with i % NAN_PERIOD == 3 is NaN ... */
#define MAX_REPORTS 3   /* data mismatches reported per call */

static const char *const kind_names[COLL_NKINDS] = {
    [COLL_ALLREDUCE] = "allreduce", [COLL_BROADCAST] = "broadcast",
    [COLL_REDUCE] = "reduce",       [COLL_REDUCE_SCATTER] = "reduce_scatter",
    [COLL_ALLGATHER] = "allgather", [COLL_ALLTOALL] = "alltoall",
    [COLL_SENDRECV] = "send/recv",  [COLL_BARRIER] = "barrier",
};

const char *coll_name(enum coll_kind k)
{
    return (unsigned)k < COLL_NKINDS ? kind_names[k] : "unknown";
}

int coll_is_reduction(enum coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_REDUCE_SCATTER;
}

int coll_has_inplace(enum coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_BROADCAST || k == COLL_REDUCE ||
           k == COLL_REDUCE_SCATTER || k == COLL_ALLGATHER || k == COLL_ALLTOALL;
}

static int is_float(tutti_datatype_t dt);

int coll_op_applies(tutti_datatype_t dt, tutti_op_t op)
{
    int bitwise = op == TUTTI_BAND || op == TUTTI_BOR || op == TUTTI_BXOR;
    if (dt == TUTTI_BOOL) {
        return op != TUTTI_AVG && op != COLL_PREMUL;
    }
    return !(bitwise && is_float(dt));
}

tutti_op_t coll_op_rotate(tutti_datatype_t dt, unsigned k)
{
    tutti_op_t ok[COLL_NUM_OPS];
    unsigned n = 0;
    for (int op = 0; op < COLL_NUM_OPS; op++) {
        if (coll_op_applies(dt, (tutti_op_t)op)) {
            ok[n++] = (tutti_op_t)op;
        }
    }
    return ok[k % n];
}

const char *coll_op_name(tutti_op_t op)
{
    return op == COLL_PREMUL ? "premul_sum" : tutti_op_name(op);
}

/* Rank's scalar as a number: 2, -1, 1 in turn (sums of scaled inputs stay exact, below). */
static int premul_factor(int rank)
{
    static const int f[3] = {2, -1, 1};
    return f[rank % 3];
}

/* ---------------------------------------------------------------- buffers */

/* Buffers kept between calls (a test process runs thousands of calls): the input (or in-place)
 * buffer, the output buffer, the expected output and a snapshot of the input. Each is
 * [GUARD][payload][GUARD]. */
enum { BUF_IN, BUF_OUT, BUF_EXP, BUF_SNAP, NBUFS };
static struct {
    uint8_t *mem;
    size_t cap;
    size_t len;
} bufs[NBUFS];

void coll_free_buffers(void)
{
    for (int k = 0; k < NBUFS; k++) {
        free(bufs[k].mem);
        bufs[k].mem = NULL;
        bufs[k].cap = 0;
    }
}

static uint8_t guard_byte(int k, size_t j)
{
    return (uint8_t)(0x5A + 17 * k + j);
}

/* A payload of len bytes with fresh guards; NULL when out of memory (reported). */
static uint8_t *buf_get(int k, size_t len)
{
    size_t need = len + 2 * GUARD;
    if (need > bufs[k].cap) {
        free(bufs[k].mem);
        bufs[k].mem = malloc(need);
        bufs[k].cap = bufs[k].mem != NULL ? need : 0;
        if (bufs[k].mem == NULL) {
            integ_fail("cannot allocate %zu bytes for a test buffer", need);
            return NULL;
        }
    }
    bufs[k].len = len;
    for (size_t j = 0; j < GUARD; j++) {
        bufs[k].mem[j] = guard_byte(k, j);
        bufs[k].mem[GUARD + len + j] = guard_byte(k, GUARD + j);
    }
    return bufs[k].mem + GUARD;
}

/* Byte pattern for buffers a collective must not write, and its check. */
static uint8_t junk_byte(size_t j)
{
    return (uint8_t)(0xC3 ^ (j * 7));
}

static void junk_fill(uint8_t *p, size_t len)
{
    for (size_t j = 0; j < len; j++) {
        p[j] = junk_byte(j);
    }
}

/* Offset of the first byte that is not junk, or len. */
static size_t junk_check(const uint8_t *p, size_t len)
{
    for (size_t j = 0; j < len; j++) {
        if (p[j] != junk_byte(j)) {
            return j;
        }
    }
    return len;
}

/* ---------------------------------------------------------------- inputs and the reference */

/*
 * Random bits of element gi of rank `rank` in the call with this seed: a multiply-xorshift hash,
 * cheap because the reference evaluates it nranks times per element.
 */
static inline uint64_t raw_bits(uint64_t seed, int rank, size_t gi)
{
    uint64_t x = (seed + (uint64_t)(rank + 1) * 0xD1B54A32D192ED03ull) ^
                 ((uint64_t)gi * 0x9E3779B97F4A7C15ull);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 32);
}

static int is_float(tutti_datatype_t dt)
{
    return dt == TUTTI_FLOAT16 || dt == TUTTI_BFLOAT16 || dt == TUTTI_FLOAT32 ||
           dt == TUTTI_FLOAT64 || dt == TUTTI_FP8_E4M3 || dt == TUTTI_FP8_E5M2;
}

static int is_signed_int(tutti_datatype_t dt)
{
    return dt == TUTTI_INT8 || dt == TUTTI_INT16 || dt == TUTTI_INT32 || dt == TUTTI_INT64;
}

static uint64_t width_mask(tutti_datatype_t dt)
{
    size_t es = tutti_datatype_size(dt);
    return es >= 8 ? ~0ull : (1ull << (8 * es)) - 1;
}

static int64_t sign_extend(uint64_t v, tutti_datatype_t dt)
{
    unsigned shift = 64 - 8 * (unsigned)tutti_datatype_size(dt);
    return (int64_t)(v << shift) >> shift;
}

/*
 * Largest integer L such that every integer of magnitude <= L is exact in dt: 2^(significand
 * bits). Partial sums of nranks values of magnitude <= L / nranks stay within L, so any order of
 * additions gives the exact sum.
 */
static double exact_limit(tutti_datatype_t dt)
{
    switch (dt) {
    case TUTTI_FP8_E5M2:
        return 8;
    case TUTTI_FP8_E4M3:
        return 16;
    case TUTTI_BFLOAT16:
        return 256;
    case TUTTI_FLOAT16:
        return 2048;
    case TUTTI_FLOAT32:
        return 16777216.0;
    default:
        return 9007199254740992.0;
    }
}

/*
 * The floating-point input of a reduction, as an exact double:
 * - SUM, AVG: an integer in [-m, m], m = exact_limit / nranks (1 for e5m2 at 8 ranks);
 * - PROD: one of -2, -1, 1, 2: |product| <= 2^nranks = 256 at 8 ranks, exact even in fp8;
 * - MIN, MAX: an integer in [-L, L], and NaN where i % NAN_PERIOD == 3 on one rank
 *   (rank (i / NAN_PERIOD) % nranks), so NaN must propagate through any rank's step.
 * struct fgen holds what is the same for every element of a call.
 */
struct fgen {
    uint64_t seed;
    tutti_op_t op;
    int nranks;
    uint64_t m; /* values lie in [-m, m] */
};

static struct fgen fgen_of(const struct coll_case *c, int nranks)
{
    double lim = exact_limit(c->dt);
    int minmax = c->op == TUTTI_MIN || c->op == TUTTI_MAX;
    /* a pre-multiplied sum scales by up to 2: half the range keeps every partial sum exact */
    double m = minmax ? lim : lim / nranks / (c->op == COLL_PREMUL ? 2 : 1);
    return (struct fgen){c->seed, c->op, nranks, (uint64_t)m};
}

static double coll_value(const struct fgen *g, int rank, size_t gi)
{
    uint64_t x = raw_bits(g->seed, rank, gi);
    if (g->op == TUTTI_PROD) {
        static const double f[4] = {-2, -1, 1, 2};
        return f[x & 3];
    }
    if ((g->op == TUTTI_MIN || g->op == TUTTI_MAX) && gi % NAN_PERIOD == 3 &&
        (int)((gi / NAN_PERIOD) % (size_t)g->nranks) == rank) {
        return NAN;
    }
    /* x scaled into [0, 2m] without a division (Lemire), then centred. */
    uint64_t v = (uint64_t)(((unsigned __int128)x * (2 * g->m + 1)) >> 64);
    return (double)v - (double)g->m;
}

static void put_bits(tutti_datatype_t dt, void *buf, size_t i, uint64_t v)
{
    switch (tutti_datatype_size(dt)) {
    case 1:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)buf)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)buf)[i] = v;
        break;
    }
}

static uint64_t get_bits(tutti_datatype_t dt, const void *buf, size_t i)
{
    switch (tutti_datatype_size(dt)) {
    case 1:
        return ((const uint8_t *)buf)[i];
    case 2:
        return ((const uint16_t *)buf)[i];
    case 4:
        return ((const uint32_t *)buf)[i];
    default:
        return ((const uint64_t *)buf)[i];
    }
}

/* Store a float value, rounded to dt with the library's conversions (exact for our inputs). */
static void put_float(tutti_datatype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case TUTTI_FLOAT16:
        ((uint16_t *)buf)[i] = tutti__float_to_half((float)v);
        break;
    case TUTTI_BFLOAT16:
        ((uint16_t *)buf)[i] = tutti__float_to_bf16((float)v);
        break;
    case TUTTI_FP8_E4M3:
        ((uint8_t *)buf)[i] = tutti__float_to_e4m3((float)v);
        break;
    case TUTTI_FP8_E5M2:
        ((uint8_t *)buf)[i] = tutti__float_to_e5m2((float)v);
        break;
    case TUTTI_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    default:
        ((double *)buf)[i] = v;
        break;
    }
}

static double get_float(tutti_datatype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case TUTTI_FLOAT16:
        return tutti__half_to_float(((const uint16_t *)buf)[i]);
    case TUTTI_BFLOAT16:
        return tutti__bf16_to_float(((const uint16_t *)buf)[i]);
    case TUTTI_FP8_E4M3:
        return tutti__e4m3_to_float(((const uint8_t *)buf)[i]);
    case TUTTI_FP8_E5M2:
        return tutti__e5m2_to_float(((const uint8_t *)buf)[i]);
    case TUTTI_FLOAT32:
        return ((const float *)buf)[i];
    default:
        return ((const double *)buf)[i];
    }
}

/*
 * Fill n elements of buf with rank's input, generator indices g0 .. g0 + n - 1: reductions of
 * floating-point types follow coll_value(); everything else is random bits of any type (the
 * data-moving collectives must carry every bit pattern, NaNs included, unchanged).
 */
static void fill_input_of(const struct coll_case *c, int nranks, int rank, void *buf, size_t n,
                          size_t g0)
{
    if (coll_is_reduction(c->coll) && c->dt == TUTTI_BOOL) {
        /* half false, half true with any nonzero byte: "true" is not only 1 */
        for (size_t i = 0; i < n; i++) {
            uint64_t x = raw_bits(c->seed, rank, g0 + i);
            ((uint8_t *)buf)[i] = (x & 1) ? (uint8_t)((x >> 8) | 1) : 0;
        }
        return;
    }
    if (coll_is_reduction(c->coll) && is_float(c->dt)) {
        struct fgen g = fgen_of(c, nranks);
        for (size_t i = 0; i < n; i++) {
            put_float(c->dt, buf, i, coll_value(&g, rank, g0 + i));
        }
        return;
    }
    switch (tutti_datatype_size(c->dt)) {
    case 1:
        for (size_t i = 0; i < n; i++) {
            ((uint8_t *)buf)[i] = (uint8_t)raw_bits(c->seed, rank, g0 + i);
        }
        break;
    case 2:
        for (size_t i = 0; i < n; i++) {
            ((uint16_t *)buf)[i] = (uint16_t)raw_bits(c->seed, rank, g0 + i);
        }
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            ((uint32_t *)buf)[i] = (uint32_t)raw_bits(c->seed, rank, g0 + i);
        }
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            ((uint64_t *)buf)[i] = raw_bits(c->seed, rank, g0 + i);
        }
        break;
    }
}

/* The exact reduction over all ranks of floating-point element gi. O(nranks). */
static double float_reduced(const struct coll_case *c, const struct fgen *g, size_t gi)
{
    int nranks = g->nranks, pm = c->op == COLL_PREMUL;
    double acc = coll_value(g, 0, gi) * (pm ? premul_factor(0) : 1);
    for (int r = 1; r < nranks; r++) {
        double x = coll_value(g, r, gi) * (pm ? premul_factor(r) : 1);
        switch (c->op) {
        case TUTTI_PROD:
            acc *= x;
            break;
        case TUTTI_MIN:
            acc = (isnan(acc) || isnan(x)) ? NAN : (x < acc ? x : acc);
            break;
        case TUTTI_MAX:
            acc = (isnan(acc) || isnan(x)) ? NAN : (x > acc ? x : acc);
            break;
        default:
            acc += x;
            break;
        }
    }
    if (c->op == TUTTI_AVG) {
        /* One division of the exact sum: in float64 for float64, in float32 otherwise. */
        acc = c->dt == TUTTI_FLOAT64 ? acc / nranks : (double)((float)acc / (float)nranks);
    }
    return acc;
}

/* The wrapped integer reduction over all ranks of element gi. O(nranks). */
/* A bool reduction: every input true or false, the result 0 or 1 (tutti/types.h). */
static uint64_t bool_reduced(const struct coll_case *c, int nranks, size_t gi)
{
    uint8_t v[64] = {0}, acc;
    for (int r = 0; r < nranks && r < 64; r++) {
        uint64_t x = raw_bits(c->seed, r, gi);
        v[r] = (x & 1) != 0; /* what fill_input_of put there, as truth */
    }
    acc = v[0];
    for (int r = 1; r < nranks; r++) {
        int and = c->op == TUTTI_PROD || c->op == TUTTI_MIN || c->op == TUTTI_BAND;
        acc = c->op == TUTTI_BXOR ? acc ^ v[r] : and? (acc & v[r]) : (acc | v[r]);
    }
    return acc;
}

static uint64_t int_reduced(const struct coll_case *c, int nranks, size_t gi)
{
    tutti_datatype_t dt = c->dt;
    uint64_t mask = width_mask(dt);
    int sgn = is_signed_int(dt);
    uint64_t acc = raw_bits(c->seed, 0, gi) & mask;
    if (dt == TUTTI_BOOL) {
        return bool_reduced(c, nranks, gi);
    }
    switch (c->op) {
    case TUTTI_BAND:
    case TUTTI_BOR:
    case TUTTI_BXOR:
        for (int r = 1; r < nranks; r++) {
            uint64_t x = raw_bits(c->seed, r, gi);
            acc = c->op == TUTTI_BAND ? acc & x : c->op == TUTTI_BOR ? acc | x : acc ^ x;
        }
        return acc & mask;
    case COLL_PREMUL:
        acc = 0;
        for (int r = 0; r < nranks; r++) {
            /* each scaled input wraps to the width first, as the library rounds it to dt */
            acc += (raw_bits(c->seed, r, gi) * (uint64_t)(int64_t)premul_factor(r)) & mask;
        }
        return acc & mask;
    case TUTTI_PROD:
        for (int r = 1; r < nranks; r++) {
            acc *= raw_bits(c->seed, r, gi);
        }
        return acc & mask;
    case TUTTI_MIN:
    case TUTTI_MAX:
        for (int r = 1; r < nranks; r++) {
            uint64_t x = raw_bits(c->seed, r, gi) & mask;
            int less = sgn ? sign_extend(x, dt) < sign_extend(acc, dt) : x < acc;
            int take = c->op == TUTTI_MIN ? less : (!less && x != acc);
            acc = take ? x : acc;
        }
        return acc;
    default:
        for (int r = 1; r < nranks; r++) {
            acc += raw_bits(c->seed, r, gi);
        }
        acc &= mask;
        if (c->op == TUTTI_AVG) {
            acc = sgn ? (uint64_t)(sign_extend(acc, dt) / nranks) & mask : acc / (uint64_t)nranks;
        }
        return acc;
    }
}

/* buf[i] = the reduction over all ranks of element g0 + i, for i < n. */
static void fill_reduced(const struct coll_case *c, int nranks, void *buf, size_t n, size_t g0)
{
    struct fgen g = fgen_of(c, nranks);
    for (size_t i = 0; i < n; i++) {
        if (is_float(c->dt)) {
            put_float(c->dt, buf, i, float_reduced(c, &g, g0 + i));
        } else {
            put_bits(c->dt, buf, i, int_reduced(c, nranks, g0 + i));
        }
    }
}

/* ---------------------------------------------------------------- checks and reports */

static void describe(const struct coll_case *c, char *out, size_t len)
{
    char root[24] = "";
    if (c->coll == COLL_BROADCAST || c->coll == COLL_REDUCE) {
        snprintf(root, sizeof(root), " root %d", c->root);
    }
    snprintf(out, len, "%s %s%s%s %s count %zu%s", coll_name(c->coll), tutti_datatype_name(c->dt),
             coll_is_reduction(c->coll) ? " " : "",
             coll_is_reduction(c->coll) ? coll_op_name(c->op) : "",
             c->inplace ? "in-place" : "out-of-place", c->count, root);
}

static void fmt_elem(tutti_datatype_t dt, const void *buf, size_t i, char *out, size_t len)
{
    uint64_t b = get_bits(dt, buf, i);
    int hexw = 2 * (int)tutti_datatype_size(dt);
    if (is_float(dt)) {
        snprintf(out, len, "0x%0*" PRIx64 " (%.9g)", hexw, b, get_float(dt, buf, i));
    } else if (is_signed_int(dt)) {
        snprintf(out, len, "%" PRId64 " (0x%0*" PRIx64 ")", sign_extend(b, dt), hexw, b);
    } else {
        snprintf(out, len, "%" PRIu64 " (0x%0*" PRIx64 ")", b, hexw, b);
    }
}

static int same_elem(tutti_datatype_t dt, const void *got, const void *exp, size_t i)
{
    if (get_bits(dt, got, i) == get_bits(dt, exp, i)) {
        return 1;
    }
    /* MIN/MAX promise a NaN where an input was NaN, not which NaN. */
    return is_float(dt) && isnan(get_float(dt, exp, i)) && isnan(get_float(dt, got, i));
}

/* Compare n elements of got with exp; report the first bad index. `what` names the buffer. */
static int compare(const struct coll_case *c, const char *what, const void *got, const void *exp,
                   size_t n)
{
    size_t es = tutti_datatype_size(c->dt);
    if (n == 0 || memcmp(got, exp, n * es) == 0) {
        return 0;
    }
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++) {
        if (!same_elem(c->dt, got, exp, i)) {
            first = first == n ? i : first;
            bad++;
        }
    }
    if (bad == 0) {
        return 0;
    }
    char desc[160], g[64], e[64];
    describe(c, desc, sizeof(desc));
    fmt_elem(c->dt, got, first, g, sizeof(g));
    fmt_elem(c->dt, exp, first, e, sizeof(e));
    integ_fail("%s: %s: first bad index %zu (%zu of %zu elements bad): got %s, expected %s", desc,
               what, first, bad, n, g, e);
    return 1;
}

/* The guards of buffer k must be intact. */
static int check_guards(const struct coll_case *c, int k, const char *what)
{
    const uint8_t *m = bufs[k].mem;
    size_t len = bufs[k].len;
    for (size_t j = 0; j < GUARD; j++) {
        long off = -1;
        if (m[j] != guard_byte(k, j)) {
            off = (long)j - GUARD;
        } else if (m[GUARD + len + j] != guard_byte(k, GUARD + j)) {
            off = (long)(len + j);
        }
        if (off != -1) {
            char desc[160];
            describe(c, desc, sizeof(desc));
            return integ_fail("%s: byte %ld relative to %s (of %zu bytes) was overwritten", desc,
                              off, what, len);
        }
    }
    return 0;
}

/* A buffer that must not have been written still holds its junk. */
static int check_untouched(const struct coll_case *c, const uint8_t *p, size_t len,
                           const char *what)
{
    size_t j = junk_check(p, len);
    if (j < len) {
        char desc[160];
        describe(c, desc, sizeof(desc));
        return integ_fail("%s: %s must not be written, but byte %zu changed", desc, what, j);
    }
    return 0;
}

static int call_failed(const struct coll_case *c, const char *call, tutti_status_t st)
{
    char desc[160];
    describe(c, desc, sizeof(desc));
    integ_fail("%s: %s returned %s: %s", desc, call, tutti_status_name(st), tutti_last_error(NULL));
    return -1;
}

/* ---------------------------------------------------------------- the collectives */

struct call {
    const struct coll_case *c;
    tutti_comm_t *comm;
    int rank, nranks;
    size_t es;
};

/* Fill n elements of buf with rank's input, generator indices from g0. */
static void fill_input(const struct call *k, int rank, void *buf, size_t n, size_t g0)
{
    fill_input_of(k->c, k->nranks, rank, buf, n, g0);
}

/* This rank's input into buf, and a snapshot of it for check_input_kept(). -1: no memory. */
static int make_input(const struct call *k, void *buf, size_t n)
{
    uint8_t *snap = buf_get(BUF_SNAP, n * k->es);
    if (snap == NULL) {
        return -1;
    }
    fill_input(k, k->rank, buf, n, 0);
    memcpy(snap, buf, n * k->es);
    return 0;
}

/* The input must still be there (out-of-place inputs are const; so is a non-root's buffer). */
static int check_input_kept(const struct call *k, const void *buf, size_t n)
{
    return compare(k->c, "sendbuf (must stay unchanged)", buf, bufs[BUF_SNAP].mem + GUARD, n);
}

/*
 * Buffers of a collective whose input has nin, output nout and expected output nexp elements.
 * In place, the smaller of input and output lies in the larger at this rank's block (NCCL's
 * in-place forms; the same buffer when the sizes are equal). This rank's input is filled in
 * (and kept for check_input_kept); the output of an out-of-place call is junk.
 * -1 when out of memory (reported).
 */
struct bufs {
    uint8_t *in, *out, *exp;
};

static int get_bufs(const struct call *k, size_t nin, size_t nout, size_t nexp, struct bufs *b)
{
    const struct coll_case *c = k->c;
    size_t at = (size_t)k->rank * c->count * k->es;
    b->exp = buf_get(BUF_EXP, nexp * k->es);
    if (c->inplace && nout > nin) {
        b->out = buf_get(BUF_OUT, nout * k->es);
        b->in = b->out != NULL ? b->out + at : NULL;
    } else {
        b->in = buf_get(BUF_IN, nin * k->es);
        b->out = !c->inplace ? buf_get(BUF_OUT, nout * k->es)
                             : (b->in != NULL ? b->in + (nin > nout ? at : 0) : NULL);
    }
    if (b->in == NULL || b->out == NULL || b->exp == NULL) {
        return -1;
    }
    if (!c->inplace) {
        junk_fill(b->out, nout * k->es);
    }
    return make_input(k, b->in, nin);
}

/* After the call: the guards of every buffer, and an out-of-place input unchanged. */
static int check_bufs(const struct call *k, const struct bufs *b, size_t nin)
{
    const struct coll_case *c = k->c;
    int gather_in_place = c->inplace && c->coll == COLL_ALLGATHER; /* sendbuf is in recvbuf */
    int bad = gather_in_place ? 0 : check_guards(c, BUF_IN, "sendbuf");
    bad |= c->inplace && !gather_in_place ? 0 : check_guards(c, BUF_OUT, "recvbuf");
    return bad | (c->inplace ? 0 : check_input_kept(k, b->in, nin));
}

static int run_allreduce(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count;
    struct bufs b;
    if (get_bufs(k, n, n, n, &b) != 0) {
        return -1;
    }
    tutti_op_t op;
    int made;
    if (coll_op_get(k->comm, c, k->rank, &op, &made) != 0) {
        return -1;
    }
    tutti_status_t st = tutti_allreduce(b.in, b.out, n, c->dt, op, k->comm, NULL);
    if (made) {
        (void)tutti_op_destroy(op, k->comm);
    }
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_allreduce", st);
    }
    int bad = check_bufs(k, &b, n);
    fill_reduced(c, k->nranks, b.exp, n, 0);
    return bad | compare(c, "recvbuf", b.out, b.exp, n);
}

static int run_broadcast(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count;
    int root = k->rank == c->root;
    /* Out of place, a non-root passes NULL as sendbuf on odd seeds, its own data otherwise. */
    int null_send = !c->inplace && !root && (c->seed & 1);
    struct bufs b;
    if (get_bufs(k, n, n, n, &b) != 0) {
        return -1;
    }
    if (c->inplace && !root) {
        junk_fill(b.in, n * k->es); /* what is there is overwritten */
    }
    tutti_status_t st =
        tutti_broadcast(null_send ? NULL : b.in, b.out, n, c->dt, c->root, k->comm, NULL);
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_broadcast", st);
    }
    int bad = check_bufs(k, &b, n);
    fill_input(k, c->root, b.exp, n, 0);
    return bad | compare(c, "recvbuf", b.out, b.exp, n);
}

static int run_reduce(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count;
    int root = k->rank == c->root;
    /* Out of place, a non-root passes NULL as recvbuf on odd seeds, a junk buffer otherwise. */
    int null_recv = !c->inplace && !root && (c->seed & 1);
    struct bufs b;
    if (get_bufs(k, n, n, n, &b) != 0) {
        return -1;
    }
    tutti_op_t op;
    int made;
    if (coll_op_get(k->comm, c, k->rank, &op, &made) != 0) {
        return -1;
    }
    tutti_status_t st =
        tutti_reduce(b.in, null_recv ? NULL : b.out, n, c->dt, op, c->root, k->comm, NULL);
    if (made) {
        (void)tutti_op_destroy(op, k->comm);
    }
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_reduce", st);
    }
    int bad = check_bufs(k, &b, n);
    if (!root) {
        /* Nothing of a non-root may change: its input (in place too) and its recvbuf. */
        bad |= c->inplace ? check_input_kept(k, b.in, n)
                          : check_untouched(c, b.out, n * k->es, "a non-root's recvbuf");
        return bad;
    }
    fill_reduced(c, k->nranks, b.exp, n, 0);
    return bad | compare(c, "recvbuf", b.out, b.exp, n);
}

static int run_reduce_scatter(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count, total = n * (size_t)k->nranks;
    struct bufs b;
    if (get_bufs(k, total, n, n, &b) != 0) {
        return -1;
    }
    tutti_op_t op;
    int made;
    if (coll_op_get(k->comm, c, k->rank, &op, &made) != 0) {
        return -1;
    }
    tutti_status_t st = tutti_reduce_scatter(b.in, b.out, n, c->dt, op, k->comm, NULL);
    if (made) {
        (void)tutti_op_destroy(op, k->comm);
    }
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_reduce_scatter", st);
    }
    int bad = check_bufs(k, &b, total);
    fill_reduced(c, k->nranks, b.exp, n, (size_t)k->rank * n);
    return bad | compare(c, "recvbuf (this rank's block)", b.out, b.exp, n);
}

static int run_allgather(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count, total = n * (size_t)k->nranks;
    struct bufs b;
    if (get_bufs(k, n, total, total, &b) != 0) {
        return -1;
    }
    tutti_status_t st = tutti_allgather(b.in, b.out, n, c->dt, k->comm, NULL);
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_allgather", st);
    }
    int bad = check_bufs(k, &b, n);
    for (int q = 0; q < k->nranks; q++) {
        fill_input(k, q, b.exp + (size_t)q * n * k->es, n, 0);
    }
    return bad | compare(c, "recvbuf", b.out, b.exp, total);
}

static int run_alltoall(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count, total = n * (size_t)k->nranks;
    struct bufs b;
    /* Block j of the input, for rank j, holds generator indices j * n .. (j + 1) * n - 1. */
    if (get_bufs(k, total, total, total, &b) != 0) {
        return -1;
    }
    tutti_status_t st = tutti_alltoall(b.in, b.out, n, c->dt, k->comm, NULL);
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_alltoall", st);
    }
    int bad = check_bufs(k, &b, total);
    for (int q = 0; q < k->nranks; q++) {
        fill_input(k, q, b.exp + (size_t)q * n * k->es, n, (size_t)k->rank * n);
    }
    return bad | compare(c, "recvbuf", b.out, b.exp, total);
}

/* A blocking exchange with rank ^ 1 (even ranks send first), then a ring shift in a group. */
static int run_sendrecv(const struct call *k)
{
    const struct coll_case *c = k->c;
    size_t n = c->count;
    int r = k->rank, partner = r ^ 1;
    struct bufs b;
    if (get_bufs(k, n, n, n, &b) != 0) {
        return -1;
    }
    int bad = 0;
    if (partner < k->nranks) {
        tutti_status_t st;
        if ((r & 1) == 0) {
            st = tutti_send(b.in, n, c->dt, partner, k->comm, NULL);
            st = st == TUTTI_OK ? tutti_recv(b.out, n, c->dt, partner, k->comm, NULL) : st;
        } else {
            st = tutti_recv(b.out, n, c->dt, partner, k->comm, NULL);
            st = st == TUTTI_OK ? tutti_send(b.in, n, c->dt, partner, k->comm, NULL) : st;
        }
        if (st != TUTTI_OK) {
            return call_failed(c, "blocking tutti_send/tutti_recv with rank ^ 1", st);
        }
        fill_input(k, partner, b.exp, n, 0);
        bad |= compare(c, "recv buf of the pair exchange", b.out, b.exp, n);
    }
    /* Ring shift: every rank sends to the next and receives from the previous; with one rank
     * that is a send to itself, which only a group allows. */
    int next = (r + 1) % k->nranks, prev = (r + k->nranks - 1) % k->nranks;
    junk_fill(b.out, n * k->es);
    tutti_status_t st = tutti_group_start();
    st = st == TUTTI_OK ? tutti_send(b.in, n, c->dt, next, k->comm, NULL) : st;
    st = st == TUTTI_OK ? tutti_recv(b.out, n, c->dt, prev, k->comm, NULL) : st;
    tutti_status_t end = tutti_group_end();
    if (st != TUTTI_OK || end != TUTTI_OK) {
        return call_failed(c, "grouped tutti_send/tutti_recv ring shift",
                           st != TUTTI_OK ? st : end);
    }
    fill_input(k, prev, b.exp, n, 0);
    bad |= compare(c, "recv buf of the ring shift", b.out, b.exp, n);
    return bad | check_bufs(k, &b, n);
}

int coll_check(tutti_comm_t *comm, const struct coll_case *c)
{
    struct call k = {.c = c, .comm = comm, .es = tutti_datatype_size(c->dt)};
    if (tutti_comm_rank(comm, &k.rank) != TUTTI_OK ||
        tutti_comm_size(comm, &k.nranks) != TUTTI_OK) {
        return call_failed(c, "tutti_comm_rank/size", TUTTI_ERR_INVALID_ARG);
    }
    switch (c->coll) {
    case COLL_ALLREDUCE:
        return run_allreduce(&k);
    case COLL_BROADCAST:
        return run_broadcast(&k);
    case COLL_REDUCE:
        return run_reduce(&k);
    case COLL_REDUCE_SCATTER:
        return run_reduce_scatter(&k);
    case COLL_ALLGATHER:
        return run_allgather(&k);
    case COLL_ALLTOALL:
        return run_alltoall(&k);
    case COLL_SENDRECV:
        return run_sendrecv(&k);
    default: {
        tutti_status_t st = tutti_barrier(comm, NULL);
        return st == TUTTI_OK ? 0 : call_failed(c, "tutti_barrier", st);
    }
    }
}

int coll_check_nth(tutti_comm_t *comm, int nranks, struct coll_case c, size_t *ncalls,
                   uint64_t salt)
{
    c.root = (int)(*ncalls % (size_t)nranks);
    c.seed = salt ^ (*ncalls * 0x9E3779B97F4A7C15ull);
    ++*ncalls;
    return coll_check(comm, &c);
}

uint64_t coll_hash(const void *buf, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ ((const uint8_t *)buf)[i]) * 1099511628211ull;
    }
    return h;
}

void coll_fill_random_float(tutti_datatype_t dt, void *buf, size_t count, uint64_t seed, int rank)
{
    for (size_t i = 0; i < count; i++) {
        /* A uniform value in (-1, 1) scaled by 2^(-8..7): sums round differently by order. */
        uint64_t x = raw_bits(seed, rank, i);
        double v =
            ((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0) * ldexp(1.0, (int)(x & 15) - 8);
        put_float(dt, buf, i, v);
    }
}

void coll_premul_scalar(tutti_datatype_t dt, int rank, void *buf)
{
    double f = premul_factor(rank);
    if (is_float(dt)) {
        put_float(dt, buf, 0, f);
    } else {
        put_bits(dt, buf, 0, (uint64_t)(int64_t)f);
    }
}

int coll_op_get(tutti_comm_t *comm, const struct coll_case *c, int rank, tutti_op_t *op_p,
                int *made_p)
{
    *made_p = 0;
    *op_p = c->op;
    if (c->op != COLL_PREMUL) {
        return 0;
    }
    uint64_t scalar = 0;
    coll_premul_scalar(c->dt, rank, &scalar);
    tutti_status_t st =
        tutti_op_create_premul_sum(&scalar, c->dt, TUTTI_SCALAR_HOST_IMMEDIATE, comm, op_p);
    if (st != TUTTI_OK) {
        return call_failed(c, "tutti_op_create_premul_sum", st);
    }
    *made_p = 1;
    return 0;
}

void coll_input(const struct coll_case *c, int nranks, int rank, void *buf, size_t n, size_t g0)
{
    fill_input_of(c, nranks, rank, buf, n, g0);
}

void coll_reduced(const struct coll_case *c, int nranks, void *buf, size_t n, size_t g0)
{
    fill_reduced(c, nranks, buf, n, g0);
}

int coll_compare(const struct coll_case *c, const char *what, const void *got, const void *exp,
                 size_t n)
{
    return compare(c, what, got, exp, n);
}
