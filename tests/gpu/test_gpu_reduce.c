/*
 * test_gpu_reduce.c - the GPU reduction kernels (kernels/cuda/, through the module's table)
 * against the CPU kernels (kernels/reduce.h), which test_kernels.c checks against an independent
 * reference: every supported datatype x op (bool and the bitwise ops included; the others must
 * be refused), 1..8 sources into 1..2 destinations, 16-byte aligned and unaligned pointers,
 * counts around the vector width, a count that wraps the grid-stride loop, and destinations
 * that are sources (in place). The premul kernels likewise against tutti__scale, with the
 * scalar on the host and on the device. Results must be equal bit for bit, but for the
 * payload of a NaN that SUM/PROD/AVG produce (IEEE leaves it open; GPUs make it canonical):
 * kern_ref.c's same_result.
 *
 * Without the module or a GPU (CI, most laptops) those tests skip with the reason. Two kinds of
 * test need neither: the module loads where it was built and reports no device cleanly; and
 * suite gpu_emul runs the very same checks on the kernels' body (reduce_body.cuh) built for the
 * CPU and run thread by thread (emul_reduce.cc), where a C++ compiler was found.
 */
#include "emul_reduce.h"
#include "kern_ref.h"
#include "kernels/cuda/tutti_cuda.h"
#include "kernels/cuda_config.h"
#include "kernels/reduce.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of slack before and after every buffer, filled with GUARD and checked afterwards. */
#define PAD   64
#define GUARD 0xA5

/* The module, or skip the test saying why there is no GPU to run it on. */
static const tutti_cuda_module_t *gpu_or_skip(void)
{
    const tutti_cuda_module_t *mod = NULL;
    int count = 0;
    int err;

    if (tutti__cuda_module(&mod) != TUTTI_OK) {
        cr_skip_test("no GPU module: %s", tutti__cuda_why());
    }
    err = mod->device_count(&count);
    if (count == 0) {
        cr_skip_test("no CUDA device visible: %s (%s)",
                     err != 0 ? mod->error_name(err) : "0 devices",
                     err != 0 ? mod->error_string(err) : "cudaGetDeviceCount found none");
    }
    return mod;
}

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        int err_ = (call);                                                                         \
        cr_assert(err_ == 0, "%s: %s", #call, mod->error_name(err_));                              \
    } while (0)

/* One device buffer of `bytes` plus PAD on both sides, guard-filled; ptr = base + PAD + off. */
typedef struct {
    unsigned char *base;
    unsigned char *ptr;
    size_t bytes;
} dbuf_t;

static void dbuf_init(const tutti_cuda_module_t *mod, dbuf_t *b, size_t bytes, size_t off,
                      const void *content)
{
    size_t total = bytes + 2 * PAD;
    unsigned char *host = malloc(total);

    cr_assert(host != NULL);
    memset(host, GUARD, total);
    if (content != NULL) {
        memcpy(host + PAD + off, content, bytes - off);
    }
    CUDA_OK(mod->malloc((void **)&b->base, total));
    CUDA_OK(mod->memcpy(b->base, host, total, TUTTI_CUDA_H2D));
    b->ptr = b->base + PAD + off;
    b->bytes = bytes;
    free(host);
}

/* Copy the element region back to `out` and check the guard bytes around it. */
static void dbuf_fetch(const tutti_cuda_module_t *mod, dbuf_t *b, size_t off, void *out, size_t len)
{
    size_t total = b->bytes + 2 * PAD;
    unsigned char *host = malloc(total);

    cr_assert(host != NULL);
    CUDA_OK(mod->memcpy(host, b->base, total, TUTTI_CUDA_D2H));
    for (size_t i = 0; i < total; i++) {
        int inside = i >= PAD + off && i < PAD + off + len;
        cr_assert(inside || host[i] == GUARD, "byte %zd outside the result was written",
                  (ptrdiff_t)i - (ptrdiff_t)(PAD + off));
    }
    memcpy(out, host + PAD + off, len);
    free(host);
}

/*
 * The CPU's answer: the left fold with tutti__reduce, source by source, as the engine runs it
 * (AVG sums and divides in the last step only); one source is a copy, or the division of AVG,
 * or for bool the source made 0/1 (x or x).
 */
static void cpu_fold(void *dst, void *const *src, int nsrc, size_t count, tutti_datatype_t dt,
                     tutti_op_t op, int divisor)
{
    tutti_op_t mid = (op == TUTTI_AVG) ? TUTTI_SUM : op;

    if (nsrc == 1) {
        if (op == TUTTI_AVG) {
            tutti__reduce_div(dst, src[0], count, dt, divisor);
        } else if (dt == TUTTI_BOOL) {
            tutti__reduce(dst, NULL, src[0], src[0], count, dt, TUTTI_BOR, 1);
        } else {
            memcpy(dst, src[0], count * tutti_datatype_size(dt));
        }
        return;
    }
    tutti__reduce(dst, NULL, src[0], src[1], count, dt, nsrc == 2 ? op : mid, divisor);
    for (int s = 2; s < nsrc; s++) {
        tutti__reduce(dst, NULL, dst, src[s], count, dt, s == nsrc - 1 ? op : mid, divisor);
    }
}

typedef struct {
    int nsrc, ndst;
    size_t count;
    size_t src_off, dst_off; /* byte offsets from a 16-byte boundary */
    int in_place;            /* dst[0] is src[0] */
    int divisor;
} shape_t;

/* The destinations of a call shaped sh, guard-filled: the first one src0 itself when in place. */
static void dsts_init(const tutti_cuda_module_t *mod, const shape_t *sh, size_t bytes,
                      const dbuf_t *src0, dbuf_t *ddst, void **dstp)
{
    for (int d = 0; d < sh->ndst; d++) {
        if (d == 0 && sh->in_place) {
            dstp[d] = src0->ptr;
        } else {
            dbuf_init(mod, &ddst[d], bytes + sh->dst_off, sh->dst_off, NULL);
            dstp[d] = ddst[d].ptr;
        }
    }
}

static void dsts_free(const tutti_cuda_module_t *mod, const shape_t *sh, dbuf_t *ddst)
{
    for (int d = sh->in_place ? 1 : 0; d < sh->ndst; d++) {
        CUDA_OK(mod->free(ddst[d].base));
    }
}

/* Destination d of dsts_init into got (guards checked); the index of its first element that is
 * not want's (same_result for op), or sh->count (callers print element i % count: Criterion may
 * format a message that passed). */
static size_t dst_mismatch(const tutti_cuda_module_t *mod, const shape_t *sh, int d, dbuf_t *src0,
                           dbuf_t *ddst, tutti_datatype_t dt, tutti_op_t op, const void *want,
                           void *got)
{
    size_t size = tutti_datatype_size(dt);
    int here = d == 0 && sh->in_place;

    dbuf_fetch(mod, here ? src0 : &ddst[d], here ? sh->src_off : sh->dst_off, got,
               sh->count * size);
    for (size_t i = 0; i < sh->count; i++) {
        if (!same_result(dt, op, get_raw(want, i, size), get_raw(got, i, size))) {
            return i;
        }
    }
    return sh->count;
}

/* Run one reduction on the GPU and compare every destination with the CPU's fold. */
static void check_one(const tutti_cuda_module_t *mod, tutti_datatype_t dt, tutti_op_t op,
                      const shape_t *sh, uint64_t seed)
{
    size_t size = tutti_datatype_size(dt);
    size_t bytes = sh->count * size;
    void *host_src[TUTTI_CUDA_MAX_SRC];
    dbuf_t dsrc[TUTTI_CUDA_MAX_SRC], ddst[TUTTI_CUDA_MAX_DST];
    const void *srcp[TUTTI_CUDA_MAX_SRC];
    void *dstp[TUTTI_CUDA_MAX_DST];
    unsigned char *want = malloc(bytes + 1);
    unsigned char *got = malloc(bytes + 1);

    cr_assert(want != NULL && got != NULL);
    for (int s = 0; s < sh->nsrc; s++) {
        host_src[s] = malloc(bytes + 1);
        cr_assert(host_src[s] != NULL);
        for (size_t i = 0; i < sh->count; i++) {
            put_raw(host_src[s], i, size, gen_elem(dt, &seed));
        }
        dbuf_init(mod, &dsrc[s], bytes + sh->src_off, sh->src_off, host_src[s]);
        srcp[s] = dsrc[s].ptr;
    }
    dsts_init(mod, sh, bytes, &dsrc[0], ddst, dstp);
    cpu_fold(want, host_src, sh->nsrc, sh->count, dt, op, sh->divisor);
    CUDA_OK(mod->reduce(srcp, sh->nsrc, dstp, sh->ndst, sh->count, dt, op, sh->divisor, NULL));
    CUDA_OK(mod->synchronize());
    for (int d = 0; d < sh->ndst; d++) {
        size_t i = dst_mismatch(mod, sh, d, &dsrc[0], ddst, dt, op, want, got);
        cr_assert(i == sh->count,
                  "%s %s: %d sources -> dst %d of %d, count %zu, offsets %zu/%zu%s, "
                  "divisor %d: element %zu is 0x%llx, the CPU gives 0x%llx",
                  tutti_datatype_name(dt), tutti_op_name(op), sh->nsrc, d, sh->ndst, sh->count,
                  sh->src_off, sh->dst_off, sh->in_place ? ", in place" : "", sh->divisor, i,
                  (unsigned long long)get_raw(got, i % sh->count, size),
                  (unsigned long long)get_raw(want, i % sh->count, size));
    }
    for (int s = 0; s < sh->nsrc; s++) {
        CUDA_OK(mod->free(dsrc[s].base));
        free(host_src[s]);
    }
    dsts_free(mod, sh, ddst);
    free(want);
    free(got);
}

/*
 * What the module must refuse before CUDA is asked anything: a datatype x op that
 * tutti__reduce_supported refuses (also as AVG with divisor 1, which becomes SUM only after the
 * check), and premul of bool, without a scalar or with 0 or 3 destinations.
 */
static void expect_refusals(const tutti_cuda_module_t *mod)
{
    int x = 0;
    const void *src[1] = {&x};
    void *dst[1] = {&x};

    for (int dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            if (!tutti__reduce_supported((tutti_datatype_t)dt, (tutti_op_t)op)) {
                for (int div = 1; div <= 3; div += 2) {
                    cr_assert_eq(mod->reduce(src, 2, dst, 1, 1, (tutti_datatype_t)dt,
                                             (tutti_op_t)op, div, NULL),
                                 TUTTI_CUDA_ERR_INVALID_VALUE, "%s %s", tutti_datatype_name(dt),
                                 tutti_op_name(op));
                }
            }
        }
    }
    cr_assert_eq(mod->reduce(src, 1, dst, 1, 1, TUTTI_INT8, TUTTI_NUM_OPS, 1, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->premul(src[0], dst, 1, 1, TUTTI_BOOL, &x, 0, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->premul(src[0], dst, 1, 1, TUTTI_INT32, NULL, 0, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->premul(src[0], dst, 0, 1, TUTTI_INT32, &x, 0, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->premul(src[0], dst, 3, 1, TUTTI_INT32, &x, 0, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->premul(NULL, dst, 1, 1, TUTTI_INT32, &x, 0, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->premul(src[0], dst, 1, 0, TUTTI_INT32, &x, 0, NULL), 0);
}

/*
 * One premul on the module against tutti__scale: sh->count elements at sh's offsets into
 * sh->ndst destinations (the first one the source when in place), the scalar on the host or, at
 * an odd offset, on the device.
 */
static void check_premul(const tutti_cuda_module_t *mod, tutti_datatype_t dt, const shape_t *sh,
                         uint64_t scalar, int on_device, uint64_t seed)
{
    size_t size = tutti_datatype_size(dt);
    size_t bytes = sh->count * size;
    unsigned char *host = malloc(bytes + 1);
    unsigned char *want = malloc(bytes + 1);
    unsigned char *got = malloc(bytes + 1);
    dbuf_t dsrc, dscalar, ddst[TUTTI_CUDA_MAX_DST];
    void *dstp[TUTTI_CUDA_MAX_DST];
    uint64_t s = scalar;
    const void *sp = &s;

    cr_assert(host != NULL && want != NULL && got != NULL);
    for (size_t i = 0; i < sh->count; i++) {
        put_raw(host, i, size, gen_elem(dt, &seed));
    }
    dbuf_init(mod, &dsrc, bytes + sh->src_off, sh->src_off, host);
    dsts_init(mod, sh, bytes, &dsrc, ddst, dstp);
    if (on_device) {
        dbuf_init(mod, &dscalar, size + 1, 1, &s);
        sp = dscalar.ptr;
    }
    tutti__scale(want, NULL, host, sh->count, dt, &scalar);
    CUDA_OK(mod->premul(dsrc.ptr, dstp, sh->ndst, sh->count, dt, sp, on_device, NULL));
    s = ~s; /* a host scalar was read by the call: what it holds now must not matter */
    CUDA_OK(mod->synchronize());
    for (int d = 0; d < sh->ndst; d++) {
        size_t i = dst_mismatch(mod, sh, d, &dsrc, ddst, dt, TUTTI_PROD, want, got);
        cr_assert(i == sh->count,
                  "premul %s by 0x%llx (%s): count %zu -> dst %d of %d, offsets %zu/%zu%s: "
                  "element %zu (0x%llx) is 0x%llx, the CPU gives 0x%llx",
                  tutti_datatype_name(dt), (unsigned long long)scalar,
                  on_device ? "device" : "host", sh->count, d, sh->ndst, sh->src_off, sh->dst_off,
                  sh->in_place ? ", in place" : "", i,
                  (unsigned long long)get_raw(host, i % sh->count, size),
                  (unsigned long long)get_raw(got, i % sh->count, size),
                  (unsigned long long)get_raw(want, i % sh->count, size));
    }
    CUDA_OK(mod->free(dsrc.base));
    dsts_free(mod, sh, ddst);
    if (on_device) {
        CUDA_OK(mod->free(dscalar.base));
    }
    free(host);
    free(want);
    free(got);
}

/* ---- no GPU needed ---- */

Test(gpu, module_reports_no_device_cleanly, .timeout = 60)
{
    const tutti_cuda_module_t *mod = NULL;
    tutti_cuda_mem_t kind = TUTTI_CUDA_MEM_DEVICE;
    int dev = 7;
    int count = -1;
    int host_value = 0;
    int err;

    if (!TUTTI_CUDA_BUILT) {
        cr_assert_eq(tutti__cuda_module(&mod), TUTTI_ERR_UNSUPPORTED);
        cr_assert(strstr(tutti_last_error(NULL), "built without") != NULL, "message: %s",
                  tutti_last_error(NULL));
        cr_assert_null(mod);
        return;
    }
    cr_assert_eq(tutti__cuda_module(&mod), TUTTI_OK, "the module was built but: %s",
                 tutti__cuda_why());
    cr_assert(strstr(mod->build, "CUDA") != NULL, "build: %s", mod->build);
    err = mod->device_count(&count);
    cr_assert(count >= 0, "the count is defined whatever the status (%d)", err);
    cr_assert(err == 0 || count == 0);
    cr_assert_not_null(mod->error_name(err));
    /* host memory is never device memory, driver or not */
    cr_assert_eq(mod->pointer_kind(&host_value, &kind, &dev), 0);
    cr_assert_eq(kind, TUTTI_CUDA_MEM_HOST);
    cr_assert_eq(dev, -1);
    /* bad arguments are refused before CUDA is asked anything */
    const void *src[1] = {&host_value};
    void *dst[1] = {&host_value};
    cr_assert_eq(mod->reduce(src, 0, dst, 1, 1, TUTTI_INT32, TUTTI_SUM, 1, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->reduce(src, 1, dst, 3, 1, TUTTI_INT32, TUTTI_SUM, 1, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->reduce(src, 1, dst, 1, 1, TUTTI_NUM_DATATYPES, TUTTI_SUM, 1, NULL),
                 TUTTI_CUDA_ERR_INVALID_VALUE);
    cr_assert_eq(mod->reduce(src, 1, dst, 1, 0, TUTTI_INT32, TUTTI_SUM, 1, NULL), 0);
    expect_refusals(mod);
    if (count == 0) {
        /* with no device a real launch fails with CUDA's status, and does not hang or crash */
        cr_assert_neq(mod->reduce(src, 1, dst, 1, 1, TUTTI_INT32, TUTTI_SUM, 1, NULL), 0);
        cr_assert_neq(mod->premul(src[0], dst, 1, 1, TUTTI_INT32, &host_value, 0, NULL), 0);
        cr_log_info("no device, as expected here: %s", mod->error_name(err));
    }
}

/* ---- the checks, on a module: the GPU's, or the host emulation of its kernels ---- */

/*
 * One datatype: every op, 1, 2, 3 and 8 sources, 1 and 2 destinations, counts around one and
 * two vectors and around one block's step, aligned, one element off, and only one pointer off.
 */
static void every_op_and_shape(const tutti_cuda_module_t *mod, tutti_datatype_t dt)
{
    size_t sz = tutti_datatype_size(dt);
    size_t e = 16 / sz;
    size_t counts[] = {1, e - 1, e, e + 1, 2 * e + 3, 512 * 4 * e - 1, 512 * 4 * e + e + 1};
    int nsrcs[] = {1, 2, 3, 8};
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)dt;

    for (int op = 0; op < TUTTI_NUM_OPS; op++) {
        if (!tutti__reduce_supported(dt, (tutti_op_t)op)) {
            continue; /* expect_refusals */
        }
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (int n = 0; n < 4; n++) {
                shape_t shapes[] = {
                    {nsrcs[n], 1, counts[c], 0, 0, 0, 3},
                    {nsrcs[n], 2, counts[c], 0, 0, 0, 5},
                    {nsrcs[n], 2, counts[c], sz, sz, 0, 3},
                    {nsrcs[n], 2, counts[c], 0, sz, 0, 8},
                };
                for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
                    if (shapes[k].count > 0) {
                        check_one(mod, dt, (tutti_op_t)op, &shapes[k], seed++);
                    }
                }
            }
        }
    }
}

/* Destination 0 is source 0 (the in-place all-reduce step), aligned and not. */
static void in_place(const tutti_cuda_module_t *mod)
{
    tutti_datatype_t types[] = {TUTTI_FLOAT32, TUTTI_BFLOAT16, TUTTI_INT64, TUTTI_FP8_E4M3,
                                TUTTI_BOOL};

    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        for (int op = 0; op < TUTTI_NUM_OPS; op++) {
            size_t sz = tutti_datatype_size(types[t]);

            if (!tutti__reduce_supported(types[t], (tutti_op_t)op)) {
                continue;
            }
            shape_t a = {2, 2, 1000, 0, 0, 1, 2};
            shape_t b = {3, 1, 1001, sz, 0, 1, 3};
            check_one(mod, types[t], (tutti_op_t)op, &a, 11 + (uint64_t)op);
            check_one(mod, types[t], (tutti_op_t)op, &b, 17 + (uint64_t)op);
        }
    }
}

/* A count past two full grids (the cap of the launch shape), so the grid-stride loop wraps. */
static void count_wraps_the_grid(const tutti_cuda_module_t *mod)
{
    tutti_datatype_t types[] = {TUTTI_FLOAT32, TUTTI_FLOAT16, TUTTI_UINT8, TUTTI_FLOAT64};
    int blocks = 0;
    int threads = 0;

    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        size_t e = 16 / tutti_datatype_size(types[t]);

        CUDA_OK(mod->launch_shape((size_t)1 << 40, types[t], &blocks, &threads));
        /* 8 vectors per thread per grid covers any unroll up to 8 */
        size_t grid = (size_t)blocks * (size_t)threads * 8 * e;
        shape_t sh = {2, 2, 2 * grid + e + 3, 0, 0, 0, 2};
        check_one(mod, types[t], TUTTI_SUM, &sh, 23);
        check_one(mod, types[t], TUTTI_AVG, &sh, 29);
    }
}

/*
 * premul of one datatype: the special scalars and two random ones, each on the host and on the
 * device, counts around one and two vectors and one block's step, 1 and 2 destinations, aligned,
 * one element off, only the destination off, and in place. Bool is refused (expect_refusals).
 */
static void premul_every_shape(const tutti_cuda_module_t *mod, tutti_datatype_t dt)
{
    size_t sz = tutti_datatype_size(dt);
    size_t e = 16 / sz;
    size_t counts[] = {1, e - 1, e, 2 * e + 3, 512 * 4 * e + e + 1};
    uint64_t seed = 0xC2B2AE3D27D4EB4Full ^ (uint64_t)dt;

    if (dt == TUTTI_BOOL) {
        return;
    }
    for (int k = 0; k < GEN_SCALAR_SPECIALS + 2; k++) {
        uint64_t scalar = gen_scalar(dt, k, &seed);

        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            shape_t shapes[] = {
                {1, 1, counts[c], 0, 0, 0, 0},
                {1, 2, counts[c], sz, sz, 0, 0},
                {1, 2, counts[c], 0, sz, 0, 0},
                {1, 2, counts[c], sz, 0, 1, 0},
            };
            for (size_t h = 0; h < sizeof(shapes) / sizeof(shapes[0]); h++) {
                if (shapes[h].count > 0) {
                    check_premul(mod, dt, &shapes[h], scalar, (int)((k + h) % 2), seed++);
                }
            }
        }
    }
}

static tutti_datatype_t all_types[TUTTI_NUM_DATATYPES];

static struct criterion_test_params every_type(void)
{
    for (int i = 0; i < TUTTI_NUM_DATATYPES; i++) {
        all_types[i] = (tutti_datatype_t)i;
    }
    return cr_make_param_array(tutti_datatype_t, all_types, TUTTI_NUM_DATATYPES);
}

/* ---- on a GPU ---- */

ParameterizedTestParameters(gpu, every_op_and_shape)
{
    return every_type();
}

ParameterizedTest(tutti_datatype_t *dt, gpu, every_op_and_shape, .timeout = 120)
{
    every_op_and_shape(gpu_or_skip(), *dt);
}

Test(gpu, in_place, .timeout = 60)
{
    in_place(gpu_or_skip());
}

ParameterizedTestParameters(gpu, premul_every_shape)
{
    return every_type();
}

ParameterizedTest(tutti_datatype_t *dt, gpu, premul_every_shape, .timeout = 120)
{
    premul_every_shape(gpu_or_skip(), *dt);
}

Test(gpu, count_wraps_the_grid, .timeout = 120)
{
    count_wraps_the_grid(gpu_or_skip());
}

/* ---- the same on the CPU: the kernels' body run thread by thread (emul_reduce.h) ---- */

#if TUTTI_TEST_EMUL
static const char *host_error_name(int err)
{
    return err == 0 ? "cudaSuccess" : "host emulation error";
}

static int host_malloc(void **ptr_p, size_t bytes)
{
    *ptr_p = malloc(bytes);
    return *ptr_p == NULL ? 2 : 0; /* cudaErrorMemoryAllocation */
}

static int host_free(void *ptr)
{
    free(ptr);
    return 0;
}

static int host_memcpy(void *dst, const void *src, size_t bytes, tutti_cuda_copy_t dir)
{
    (void)dir;
    memcpy(dst, src, bytes);
    return 0;
}

static int host_synchronize(void)
{
    return 0;
}

static const tutti_cuda_module_t emulator = {
    .size = sizeof(tutti_cuda_module_t),
    .abi = TUTTI_CUDA_ABI,
    .build = "host emulation of the GPU kernels",
    .error_name = host_error_name,
    .error_string = host_error_name,
    .reduce = emul_reduce,
    .malloc = host_malloc,
    .free = host_free,
    .memcpy = host_memcpy,
    .synchronize = host_synchronize,
    .launch_shape = emul_launch_shape,
    .premul = emul_premul,
};

ParameterizedTestParameters(gpu_emul, every_op_and_shape)
{
    return every_type();
}

ParameterizedTest(tutti_datatype_t *dt, gpu_emul, every_op_and_shape, .timeout = 120)
{
    every_op_and_shape(&emulator, *dt);
}

Test(gpu_emul, in_place, .timeout = 60)
{
    in_place(&emulator);
}

Test(gpu_emul, refuses_what_the_cpu_does_not_support, .timeout = 60)
{
    expect_refusals(&emulator);
}

ParameterizedTestParameters(gpu_emul, premul_every_shape)
{
    return every_type();
}

ParameterizedTest(tutti_datatype_t *dt, gpu_emul, premul_every_shape, .timeout = 120)
{
    premul_every_shape(&emulator, *dt);
}

Test(gpu_emul, count_wraps_the_grid, .timeout = 120)
{
    count_wraps_the_grid(&emulator);
}
#endif
