/*
 * test_train_gpu.c - tutti-train's GPU module (trainer/cuda/). Two suites in one binary:
 *
 * train_module (meson suite trainer, runs everywhere): the loader finds the module where it
 * was built and refuses a foreign or missing file naming it, says "built without CUDA" where
 * it was not built, and reports a machine without a usable GPU with CUDA's status.
 *
 * train_gpu (meson suite trainer_gpu): the module's backend on a real GPU against the CPU
 * backend: gemm in every transpose/accumulate form within a relative tolerance and without
 * TF32 (a product whose exact fp32 result TF32 would round away), the elementwise kernels and
 * the wire conversions bit for bit, softmax within its tolerance (kern_check.c), forward and
 * backward of a model close to the CPU's and bitwise equal from run to run and between two
 * contexts, a failure named and sticky, and the stream/event ordering the gradient sync uses.
 * Each skips, saying why, where the module was not built or no GPU is visible. Built a second
 * time with TRAIN_TEST_EMULATED (suite trainer), the train_gpu tests run on the emulated GPU
 * (emu_train_module.c), which proves the tests' own code without a GPU: there the "GPU" is
 * the CPU's arithmetic, so only their plumbing and their bitwise cases are exercised.
 */
#include "backend_load.h"
#include "check.h"
#include "cuda/train_cuda_config.h"
#include "data.h"
#include "kern_check.h"
#include "mlp.h"
#include "sync.h"

#ifdef TRAIN_TEST_EMULATED
#include "emu_dev.h"
#include "emu_train_module.h"
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Tests that ran to a verdict (passed or failed), counted in the runner: where none did (no
 * GPU, or the filter left none), main exits 77 so that meson reports SKIP rather than OK.
 * File-scope because Criterion's report hooks take no argument.
 */
static size_t ran;

ReportHook(POST_TEST)(struct criterion_test_stats *stats)
{
    ran += stats->test_status != CR_STATUS_SKIPPED;
}

#ifdef TRAIN_TEST_EMULATED
/* The same tests on the emulated GPU, installed in every process: Criterion runs each test in
 * a process of its own that does not pass through main. */
__attribute__((constructor)) static void install_emulated_gpu(void)
{
    emu_dev_install();
    train_cuda_install(&emu_train_module);
}
#endif

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int rc = 0;
    if (criterion_handle_args(argc, argv, true)) {
        rc = criterion_run_all_tests(tests) ? 0 : 1;
        rc = rc == 0 && ran == 0 ? 77 : rc;
    }
    criterion_finalize(tests);
    return rc;
}

/* ---- the loader (suite trainer) ---- */

Test(train_module, loads_where_built)
{
    const struct train_cuda_module *mod = NULL;
    char why[2048];
    int rc = train_cuda_module(&mod, why, sizeof(why));
    if (!TRAIN_CUDA_BUILT) {
        cr_assert_eq(rc, -1);
        cr_assert(strstr(why, "built without CUDA") != NULL || strstr(why, "not built") != NULL,
                  "%s", why);
        return;
    }
    cr_assert_eq(rc, 0, "the module was built but does not load: %s", why);
    cr_assert(mod->size >= sizeof(*mod) && mod->abi == TRAIN_CUDA_ABI);
    cr_assert(strstr(mod->build, "cuBLAS") != NULL, "build: %s", mod->build);
    cr_assert_str_eq(mod->backend->name, "cuda");
    cr_assert(strstr(train_cuda_module_path(), TRAIN_CUDA_FILE) != NULL);
    const void *const fns[] = {
        mod->backend->create,   mod->backend->gemm, mod->backend->softmax_xent,
        mod->backend->error,    mod->device_count,  mod->set_device,
        mod->get_device,        mod->stream_create, mod->event_record,
        mod->stream_wait_event, mod->wire_encode,   mod->wire_decode};
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        cr_assert(fns[i] != NULL, "table entry %zu is NULL", i);
    }
}

/* No visible GPU (CUDA_VISIBLE_DEVICES=-1 hides them where there are some): CUDA's status. */
Test(train_module, no_gpu_is_reported_with_cudas_status)
{
    setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
    struct train_gpu gpu;
    char why[2048];
    cr_assert_eq(train_cuda_open(0, &gpu, why, sizeof(why)), -1);
    if (!TRAIN_CUDA_BUILT) {
        cr_assert(strstr(why, TRAIN_CUDA_NOT_BUILT) != NULL, "%s", why);
        return;
    }
    cr_assert(strncmp(why, "no usable CUDA device: cudaGetDeviceCount: cudaError", 52) == 0, "%s",
              why);
}

Test(train_module, foreign_library_is_refused)
{
    setenv("TUTTI_TRAIN_CUDA_MODULE", "libz.so.1", 1);
    const struct train_cuda_module *mod = NULL;
    char why[2048];
    cr_assert_eq(train_cuda_module(&mod, why, sizeof(why)), -1);
    cr_assert(strstr(why, "libz.so.1: no " TRAIN_CUDA_SYMBOL) != NULL, "%s", why);
}

Test(train_module, missing_file_is_named)
{
    setenv("TUTTI_TRAIN_CUDA_MODULE", "/nonexistent/libtutti-train-cuda.so", 1);
    const struct train_cuda_module *mod = NULL;
    char why[2048];
    cr_assert_eq(train_cuda_module(&mod, why, sizeof(why)), -1);
    cr_assert(strstr(why, "/nonexistent/libtutti-train-cuda.so: cannot open") != NULL, "%s", why);
}

/* ---- on a GPU (suite trainer_gpu) ---- */

/* The module with GPU 0 current, or skip saying why there is none. */
static const struct train_cuda_module *gpu_or_skip(void)
{
    const struct train_cuda_module *mod = NULL;
    char why[2048];
    if (train_cuda_module(&mod, why, sizeof(why)) != 0) {
        if (!TRAIN_CUDA_BUILT) {
            cr_skip_test("%s", why);
        }
        cr_assert_fail("the GPU module was built but does not load: %s", why);
    }
    int count = 0, err = mod->device_count(&count);
    /* a loaded NVIDIA driver with no GPU hidden: a device that CUDA cannot use is a failure
     * (a driver older than the runtime, say), not a machine without a GPU */
    int driver = access("/proc/driver/nvidia/version", R_OK) == 0;
    cr_assert(count > 0 || !driver || getenv("CUDA_VISIBLE_DEVICES") != NULL,
              "an NVIDIA driver is loaded but CUDA finds no device: %s (%s)", mod->error_name(err),
              mod->error_string(err));
    if (count == 0) {
        cr_skip_test("no CUDA device visible: %s (%s)",
                     err != 0 ? mod->error_name(err) : "0 devices",
                     err != 0 ? mod->error_string(err) : "cudaGetDeviceCount found none");
    }
    err = mod->set_device(0);
    cr_assert_eq(err, 0, "cudaSetDevice(0): %s", mod->error_name(err));
    return mod;
}

/* A backend context on the GPU; its operations on host buffers for kern_check.c. */
struct gctx {
    const struct train_cuda_module *mod;
    const struct train_backend_ops *be;
    void *bctx;
};

static struct gctx gpu_ctx(void)
{
    struct gctx g = {.mod = gpu_or_skip()};
    g.be = g.mod->backend;
    g.bctx = g.be->create(0);
    cr_assert(g.bctx != NULL, "create: %s", g.be->error(NULL));
    return g;
}

static void expect_ok(const struct gctx *g, const char *what)
{
    const char *e = g->be->error(g->bctx);
    cr_assert(e == NULL, "%s failed on the GPU: %s", what, e);
}

/* Device copy of host memory (NULL host: uninitialised room), and back. */
static void *up(struct gctx *g, const void *host, size_t bytes)
{
    void *d = g->be->alloc(g->bctx, bytes);
    cr_assert(d != NULL, "alloc of %zu bytes: %s", bytes, g->be->error(g->bctx));
    if (host != NULL) {
        g->be->upload(g->bctx, d, host, bytes);
    }
    return d;
}

static void down(struct gctx *g, void *host, void *dev, size_t bytes)
{
    if (host != NULL) {
        g->be->download(g->bctx, host, dev, bytes);
    }
    g->be->free(g->bctx, dev);
    expect_ok(g, "a kernel or copy");
}

static void g_bias_act(void *ctx, float *y, const float *bias, int rows, int cols, int relu)
{
    size_t n = (size_t)rows * cols * sizeof(float);
    float *dy = up(ctx, y, n), *db = up(ctx, bias, (size_t)cols * sizeof(float));
    ((struct gctx *)ctx)->be->bias_act(((struct gctx *)ctx)->bctx, dy, db, rows, cols, relu);
    down(ctx, y, dy, n);
    down(ctx, NULL, db, 0);
}

static void g_relu_backward(void *ctx, float *dy, const float *y, size_t n)
{
    float *d = up(ctx, dy, n * sizeof(float)), *dyv = up(ctx, y, n * sizeof(float));
    ((struct gctx *)ctx)->be->relu_backward(((struct gctx *)ctx)->bctx, d, dyv, n);
    down(ctx, dy, d, n * sizeof(float));
    down(ctx, NULL, dyv, 0);
}

static void g_col_sum(void *ctx, const float *dy, int rows, int cols, float *db)
{
    size_t n = (size_t)rows * cols * sizeof(float);
    float *d = up(ctx, dy, n), *out = up(ctx, NULL, (size_t)cols * sizeof(float));
    ((struct gctx *)ctx)->be->col_sum(((struct gctx *)ctx)->bctx, d, rows, cols, out);
    down(ctx, db, out, (size_t)cols * sizeof(float));
    down(ctx, NULL, d, 0);
}

static double g_softmax_xent(void *ctx, const float *logits, const uint8_t *labels, int rows,
                             int cols, float scale, float *dlogits, int *correct_p)
{
    struct gctx *g = ctx;
    size_t n = (size_t)rows * cols * sizeof(float);
    float *dz = up(g, logits, n), *dd = dlogits != NULL ? up(g, NULL, n) : NULL;
    uint8_t *dl = up(g, labels, (size_t)rows);
    double loss = g->be->softmax_xent(g->bctx, dz, dl, rows, cols, scale, dd, correct_p);
    if (dd != NULL) {
        down(g, dlogits, dd, n);
    }
    down(g, NULL, dz, 0);
    down(g, NULL, dl, 0);
    return loss;
}

static void g_sgd(void *ctx, float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    size_t bytes = n * sizeof(float);
    float *dw = up(ctx, w, bytes), *dv = up(ctx, v, bytes), *dg = up(ctx, g, bytes);
    ((struct gctx *)ctx)->be->sgd(((struct gctx *)ctx)->bctx, dw, dv, dg, n, lr, mu);
    down(ctx, w, dw, bytes);
    down(ctx, v, dv, bytes);
    down(ctx, NULL, dg, 0);
}

/* The wire kernels on the compute stream, so that download (same stream) sees their result. */
static void g_wire_encode(void *ctx, int wire, const float *g, void *out, size_t n)
{
    struct gctx *c = ctx;
    size_t ws = train_wire_size((enum train_prec)wire);
    float *dg = up(c, g, n * sizeof(float));
    void *dout = up(c, NULL, n * ws);
    int err = c->mod->wire_encode(wire, dg, dout, n, c->mod->compute_stream(c->bctx));
    cr_assert_eq(err, 0, "wire_encode: %s", c->mod->error_name(err));
    down(c, out, dout, n * ws);
    down(c, NULL, dg, 0);
}

static void g_wire_decode(void *ctx, int wire, const void *in, float *g, size_t n)
{
    struct gctx *c = ctx;
    size_t ws = train_wire_size((enum train_prec)wire);
    void *din = up(c, in, n * ws);
    float *dg = up(c, NULL, n * sizeof(float));
    int err = c->mod->wire_decode(wire, din, dg, n, c->mod->compute_stream(c->bctx));
    cr_assert_eq(err, 0, "wire_decode: %s", c->mod->error_name(err));
    down(c, g, dg, n * sizeof(float));
    down(c, NULL, din, 0);
}

static struct kern_impl gpu_impl(struct gctx *g)
{
    return (struct kern_impl){
        .name = "GPU",
        .ctx = g,
        .libm_exact = 0,
        .bias_act = g_bias_act,
        .relu_backward = g_relu_backward,
        .col_sum = g_col_sum,
        .softmax_xent = g_softmax_xent,
        .sgd = g_sgd,
        .wire_encode = g_wire_encode,
        .wire_decode = g_wire_decode,
    };
}

Test(train_gpu, elementwise_kernels_bitwise)
{
    struct gctx g = gpu_ctx();
    struct kern_impl k = gpu_impl(&g);
    kern_check_bias_act(&k);
    kern_check_relu_backward(&k);
    kern_check_col_sum(&k);
    kern_check_sgd(&k);
    g.be->destroy(g.bctx);
}

Test(train_gpu, softmax_within_tolerance)
{
    struct gctx g = gpu_ctx();
    struct kern_impl k = gpu_impl(&g);
    kern_check_softmax(&k);
    g.be->destroy(g.bctx);
}

Test(train_gpu, wire_kernels_bitwise)
{
    struct gctx g = gpu_ctx();
    struct kern_impl k = gpu_impl(&g);
    kern_check_wire(&k);
    int err = g.mod->wire_encode(7, NULL, NULL, 1, g.mod->compute_stream(g.bctx));
    cr_assert_neq(err, 0, "an unknown wire format is refused");
    g.be->destroy(g.bctx);
}

/*
 * |gpu - cpu| <= 2 (k + 2) 2^-24 (sum over p of |a_ip b_pj| + |c_ij|): the forward error
 * bound of any order of fp32 sums (k u each), for both, so no summation order cuBLAS picks can
 * fail it; precision lost in the products themselves is train_gpu/gemm_keeps_fp32_precision's.
 */
static void gemm_case(struct gctx *g, void *cpu, int ta, int tb, int m, int n, int k, int acc)
{
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *c = malloc(nc * 4 + 4),
          *want = malloc(nc * 4 + 4);
    cr_assert(a != NULL && b != NULL && c != NULL && want != NULL);
    kern_fill(a, na, 1.0f, 81 + (uint64_t)m, 0);
    kern_fill(b, nb, 1.0f, 83 + (uint64_t)n, 0);
    kern_fill(want, nc, 0.5f, 85, 0);
    memcpy(c, want, nc * sizeof(float));
    train_backend_cpu.gemm(cpu, ta, tb, m, n, k, a, b, want, acc);
    float *da = up(g, a, na * 4 + 4), *db = up(g, b, nb * 4 + 4), *dc = up(g, c, nc * 4 + 4);
    g->be->gemm(g->bctx, ta, tb, m, n, k, da, db, dc, acc);
    float *c0 = malloc(nc * 4 + 4);
    cr_assert(c0 != NULL);
    memcpy(c0, c, nc * sizeof(float));
    down(g, c, dc, nc * sizeof(float));
    down(g, NULL, da, 0);
    down(g, NULL, db, 0);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double mag = acc ? fabs((double)c0[(size_t)i * n + j]) : 0.0;
            for (int p = 0; p < k; p++) {
                mag += fabs((double)(ta ? a[(size_t)p * m + i] : a[(size_t)i * k + p]) *
                            (double)(tb ? b[(size_t)j * k + p] : b[(size_t)p * n + j]));
            }
            size_t e = (size_t)i * n + j;
            double tol = 2.0 * (k + 2) * 0x1p-24 * mag;
            cr_assert(fabs((double)c[e] - (double)want[e]) <= tol,
                      "gemm ta %d tb %d %dx%dx%d acc %d: c[%d][%d] %.9g, the CPU's %.9g", ta, tb, m,
                      n, k, acc, i, j, c[e], want[e]);
        }
    }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(want);
}

Test(train_gpu, gemm_matches_cpu_in_every_form, .timeout = 300)
{
    static const int shapes[][3] = {{1, 1, 1},      {4, 16, 8},     {5, 19, 300}, {37, 530, 263},
                                    {3, 10, 0},     {64, 256, 512}, {7, 1, 33},   {64, 512, 784},
                                    {784, 512, 64}, {64, 784, 512}};
    struct gctx g = gpu_ctx();
    void *cpu = train_backend_cpu.create(784 * 512);
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
                for (int acc = 0; acc < 2; acc++) {
                    gemm_case(&g, cpu, ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], acc);
                }
            }
        }
    }
    train_backend_cpu.destroy(cpu);
    g.be->destroy(g.bctx);
}

/*
 * 64 products of (1 + 2^-12) and 1: every partial sum j (1 + 2^-12) has at most 19 significant
 * bits, so fp32 gives 64 + 2^-6 exactly in any order. TF32 (10 mantissa bits) or bf16 inputs
 * would round 1 + 2^-12 to 1 and give 64.
 */
Test(train_gpu, gemm_keeps_fp32_precision)
{
    enum { M = 32, N = 48, K = 64 };
    struct gctx g = gpu_ctx();
    static float a[M * K], b[K * N], c[M * N];
    for (int form = 0; form < 4; form++) {
        int ta = form & 1, tb = form >> 1;
        for (int i = 0; i < M * K; i++) {
            a[i] = form == 3 ? 1.0f : 1.0f + 0x1p-12f;
        }
        for (int i = 0; i < K * N; i++) {
            b[i] = form == 3 ? 1.0f + 0x1p-12f : 1.0f;
        }
        float *da = up(&g, a, sizeof(a)), *db = up(&g, b, sizeof(b)), *dc = up(&g, NULL, sizeof(c));
        g.be->gemm(g.bctx, ta, tb, M, N, K, da, db, dc, 0);
        down(&g, c, dc, sizeof(c));
        down(&g, NULL, da, 0);
        down(&g, NULL, db, 0);
        for (int i = 0; i < M * N; i++) {
            cr_assert(c[i] == 64.0f + 0x1p-6f, "ta %d tb %d: c[%d] = %.9g, not 64.015625 (TF32?)",
                      ta, tb, i, c[i]);
        }
    }
    g.be->destroy(g.bctx);
}

static const int mlp_sizes[] = {784, 512, 256, 10};

/* A model of the trainer's shape on backend be with the seed's weights and a batch of 64. */
static void mlp_with_batch(struct train_mlp *m, const struct train_backend_ops *be, int rows)
{
    char err[600];
    cr_assert_eq(train_mlp_create(m, be, mlp_sizes, 4, 64, err, sizeof(err)), 0, "%s", err);
    train_mlp_init_params(m, 3);
    static float x[64 * 784];
    static uint8_t y[64];
    uint64_t s = 9;
    for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
        x[i] = (float)(train_splitmix64(&s) >> 40) * 0x1p-24f;
    }
    for (int i = 0; i < 64; i++) {
        y[i] = (uint8_t)(train_splitmix64(&s) % 10);
    }
    train_mlp_load(m, x, y, rows);
}

static float *backprop_grads(struct train_mlp *m, double *loss_p, int *correct_p)
{
    float *grads = malloc(m->nparams * sizeof(float));
    cr_assert(grads != NULL);
    train_mlp_backprop(m, 1.0f / 64.0f, NULL, NULL, loss_p, correct_p);
    train_mlp_get_grads(m, grads);
    const char *e = m->be->error(m->bctx);
    cr_assert(e == NULL, "backprop on the %s backend: %s", m->be->name, e);
    return grads;
}

Test(train_gpu, backprop_close_to_cpu_and_deterministic, .timeout = 120)
{
    const struct train_cuda_module *mod = gpu_or_skip();
    struct train_mlp gm, gm2, cm;
    mlp_with_batch(&gm, mod->backend, 64);
    mlp_with_batch(&gm2, mod->backend, 64);
    mlp_with_batch(&cm, &train_backend_cpu, 64);
    double l1, l2, l3, lc;
    int c1, c2, c3, cc;
    float *g1 = backprop_grads(&gm, &l1, &c1), *g2 = backprop_grads(&gm, &l2, &c2);
    float *g3 = backprop_grads(&gm2, &l3, &c3), *gc = backprop_grads(&cm, &lc, &cc);
    size_t bytes = gm.nparams * sizeof(float);
    cr_assert(memcmp(g1, g2, bytes) == 0 && l1 == l2 && c1 == c2, "two runs differ");
    cr_assert(memcmp(g1, g3, bytes) == 0 && l1 == l3, "two contexts differ");
    struct train_diff d;
    train_compare(&gm, g1, gc, &d);
    cr_assert(d.max_rel <= 1e-4, "gradients %.3g from the CPU's (layer %d %s)", d.max_rel,
              d.worst_layer + 1, d.worst_is_bias ? "bias" : "weights");
    cr_assert(fabs(l1 - lc) <= 1e-5 * fabs(lc), "loss %.9g, the CPU's %.9g", l1, lc);
    cr_assert(abs(c1 - cc) <= 1, "%d correct, the CPU %d", c1, cc);
    /* an empty shard: every gradient is 0 again (gemm with k = 0, sums over no rows) */
    train_mlp_load(&gm, NULL, NULL, 0);
    float *g0 = backprop_grads(&gm, &l1, &c1);
    for (size_t i = 0; i < gm.nparams; i++) {
        cr_assert(g0[i] == 0.0f, "gradient %zu is %g after no samples", i, g0[i]);
    }
    cr_assert(l1 == 0.0 && c1 == 0);
    free(g0);
    free(g1);
    free(g2);
    free(g3);
    free(gc);
    train_mlp_destroy(&gm);
    train_mlp_destroy(&gm2);
    train_mlp_destroy(&cm);
}

Test(train_gpu, failure_is_named_and_sticky)
{
    struct gctx g = gpu_ctx();
    cr_assert(g.be->error(g.bctx) == NULL);
    void *p = g.be->alloc(g.bctx, (size_t)1 << 52); /* 4 PiB */
    cr_assert(p == NULL);
    const char *e = g.be->error(g.bctx);
    cr_assert(e != NULL && strstr(e, "cudaMalloc: cudaErrorMemoryAllocation") != NULL, "%s",
              e != NULL ? e : "no error recorded");
    cr_assert(g.be->alloc(g.bctx, 4) == NULL, "a failed context does nothing more");
    float host = 1.0f;
    g.be->download(g.bctx, &host, NULL, sizeof(host));
    cr_assert(host == 0.0f, "a download after a failure gives zeros");
    g.be->destroy(g.bctx);
}

/* The gradient sync's pattern: work on the compute stream, an event, a second stream waiting
 * on it and converting the result. Without the wait the encode would read stale weights. */
Test(train_gpu, second_stream_waits_for_compute_event)
{
    enum { N = 1 << 22 };
    struct gctx g = gpu_ctx();
    const struct train_cuda_module *mod = g.mod;
    float *w = malloc(N * 4), *v = malloc(N * 4), *gr = malloc(N * 4);
    uint16_t *got = malloc(N * 2), *want = malloc(N * 2);
    cr_assert(w && v && gr && got && want);
    kern_fill(w, N, 1.0f, 91, 0);
    kern_fill(v, N, 0.1f, 93, 0);
    kern_fill(gr, N, 0.1f, 95, 0);
    float *dw = up(&g, w, N * 4), *dv = up(&g, v, N * 4), *dg = up(&g, gr, N * 4);
    uint16_t *dout = up(&g, NULL, N * 2);
    void *stream = NULL, *ev = NULL;
    cr_assert_eq(mod->stream_create(&stream), 0);
    cr_assert_eq(mod->event_create(&ev), 0);
    for (int rep = 0; rep < 8; rep++) { /* long enough that an unordered encode would race */
        g.be->sgd(g.bctx, dw, dv, dg, N, 0.05f, 0.9f);
        train_backend_cpu.sgd(NULL, w, v, gr, N, 0.05f, 0.9f);
    }
    cr_assert_eq(mod->event_record(ev, mod->compute_stream(g.bctx)), 0);
    cr_assert_eq(mod->stream_wait_event(stream, ev), 0);
    cr_assert_eq(mod->wire_encode(TRAIN_PREC_BF16, dw, dout, N, stream), 0);
    cr_assert_eq(mod->stream_synchronize(stream), 0);
    train_wire_encode(TRAIN_PREC_BF16, w, want, N);
    down(&g, got, dout, N * 2);
    cr_assert(memcmp(got, want, N * 2) == 0, "the encode did not see the updated weights");
    cr_assert_eq(mod->event_destroy(ev), 0);
    cr_assert_eq(mod->stream_destroy(stream), 0);
    down(&g, NULL, dw, 0);
    down(&g, NULL, dv, 0);
    down(&g, NULL, dg, 0);
    free(w);
    free(v);
    free(gr);
    free(got);
    free(want);
    g.be->destroy(g.bctx);
}
