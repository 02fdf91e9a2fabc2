/*
 * test_mlp.c - the trainer's arithmetic without communication: gemm against a naive product in
 * every transpose form and at awkward sizes, backpropagation against finite differences, the
 * SGD step, the bucket plan, the wire conversions, the data order and the shards, the hash.
 */
#include "check.h"
#include "data.h"
#include "mlp.h"
#include "sync.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float frand(uint64_t *s)
{
    return (float)(train_splitmix64(s) >> 40) * 0x1p-24f * 2.0f - 1.0f;
}

/* C = op(A) op(B) in double, the reference. */
static void naive(int ta, int tb, int m, int n, int k, const float *a, const float *b, double *c)
{
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) {
                double x = ta ? a[(size_t)p * m + i] : a[(size_t)i * k + p];
                double y = tb ? b[(size_t)j * k + p] : b[(size_t)p * n + j];
                s += x * y;
            }
            c[(size_t)i * n + j] = s;
        }
    }
}

static void check_gemm(int ta, int tb, int m, int n, int k, int accumulate)
{
    const struct train_backend_ops *be = &train_backend_cpu;
    size_t big = (size_t)(m > n ? m : n) * (size_t)(k > 0 ? k : 1);
    void *ctx = be->create(big);
    uint64_t s = 7;
    float *a = malloc((size_t)m * k * sizeof(float) + 4),
          *b = malloc((size_t)k * n * sizeof(float) + 4);
    float *c = malloc((size_t)m * n * sizeof(float));
    double *ref = malloc((size_t)m * n * sizeof(double));
    for (size_t i = 0; i < (size_t)m * k; i++) {
        a[i] = frand(&s);
    }
    for (size_t i = 0; i < (size_t)k * n; i++) {
        b[i] = frand(&s);
    }
    for (size_t i = 0; i < (size_t)m * n; i++) {
        c[i] = accumulate ? 0.5f : 1e30f; /* garbage when not accumulating */
    }
    naive(ta, tb, m, n, k, a, b, ref);
    be->gemm(ctx, ta, tb, m, n, k, a, b, c, accumulate);
    for (size_t i = 0; i < (size_t)m * n; i++) {
        double want = ref[i] + (accumulate ? 0.5 : 0.0);
        cr_assert(fabs(c[i] - want) <= 1e-5 * (k + 1),
                  "ta %d tb %d %dx%dx%d acc %d: c[%zu] %g, want %g", ta, tb, m, n, k, accumulate, i,
                  c[i], want);
    }
    free(a);
    free(b);
    free(c);
    free(ref);
    be->destroy(ctx);
}

Test(gemm, matches_naive_product_in_every_form)
{
    static const int shapes[][3] = {{1, 1, 1},  {4, 16, 8},     {5, 19, 300}, {37, 530, 263},
                                    {3, 10, 0}, {64, 256, 512}, {7, 1, 33}};
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
                check_gemm(ta, tb, shapes[i][0], shapes[i][1], shapes[i][2], 0);
                check_gemm(ta, tb, shapes[i][0], shapes[i][1], shapes[i][2], 1);
            }
        }
    }
}

/* A small model with some samples loaded. */
static void small_model(struct train_mlp *m, int rows, float *x, uint8_t *y)
{
    static const int sizes[] = {6, 5, 4, 3};
    char err[128];
    cr_assert_eq(train_mlp_create(m, &train_backend_cpu, sizes, 4, rows, err, sizeof(err)), 0, "%s",
                 err);
    train_mlp_init_params(m, 11);
    uint64_t s = 3;
    for (int i = 0; i < rows * 6; i++) {
        x[i] = frand(&s) * 2.0f;
    }
    for (int i = 0; i < rows; i++) {
        y[i] = (uint8_t)(i % 3);
    }
    train_mlp_load(m, x, y, rows);
}

static double loss_at(struct train_mlp *m)
{
    double loss;
    int correct;
    train_mlp_evaluate(m, &loss, &correct);
    return loss;
}

Test(mlp, backprop_matches_finite_differences)
{
    struct train_mlp m;
    float x[4 * 6];
    uint8_t y[4];
    small_model(&m, 4, x, y);
    double loss;
    int correct, bad = 0;
    train_mlp_backprop(&m, 1.0f, NULL, NULL, &loss, &correct);
    cr_assert_float_eq(loss, loss_at(&m), 1e-6, "forward passes agree");
    const float eps = 1e-2f;
    for (size_t i = 0; i < m.nparams; i++) {
        float keep = m.params[i];
        m.params[i] = keep + eps;
        double up = loss_at(&m);
        m.params[i] = keep - eps;
        double down = loss_at(&m);
        m.params[i] = keep;
        double fd = (up - down) / (2.0 * eps);
        if (fabs(fd - m.grads[i]) > 2e-3 + 2e-2 * fabs(fd)) {
            bad++;
            cr_log_error("parameter %zu: backprop %g, finite difference %g", i, m.grads[i], fd);
        }
    }
    cr_assert_eq(bad, 0, "%d of %zu gradients disagree", bad, m.nparams);
    train_mlp_destroy(&m);
}

static void count_layers(void *arg, int layer)
{
    int *seen = arg;
    seen[seen[0]++ + 1] = layer;
}

Test(mlp, hook_runs_last_layer_first_and_scale_applies)
{
    struct train_mlp m;
    float x[3 * 6];
    uint8_t y[3];
    small_model(&m, 3, x, y);
    int seen[8] = {0};
    double loss;
    int correct;
    train_mlp_backprop(&m, 1.0f, count_layers, seen, &loss, &correct);
    cr_assert_eq(seen[0], 3);
    cr_assert(seen[1] == 2 && seen[2] == 1 && seen[3] == 0);
    float *g1 = malloc(m.nparams * sizeof(float));
    memcpy(g1, m.grads, m.nparams * sizeof(float));
    train_mlp_backprop(&m, 0.25f, NULL, NULL, &loss, &correct);
    for (size_t i = 0; i < m.nparams; i++) {
        cr_assert_float_eq(m.grads[i], 0.25f * g1[i], 1e-7f);
    }
    train_mlp_load(&m, x, y, 0);
    train_mlp_backprop(&m, 1.0f, NULL, NULL, &loss, &correct);
    for (size_t i = 0; i < m.nparams; i++) {
        cr_assert_eq(m.grads[i], 0.0f, "no samples: zero gradient");
    }
    free(g1);
    train_mlp_destroy(&m);
}

Test(mlp, sgd_momentum_as_pytorch)
{
    struct train_mlp m;
    float x[6];
    uint8_t y[1];
    small_model(&m, 1, x, y);
    float w0 = m.params[0];
    m.grads[0] = 2.0f;
    train_mlp_sgd(&m, 0.1f, 0.9f); /* v = 2, w -= 0.2 */
    cr_assert_float_eq(m.params[0], w0 - 0.2f, 1e-6f);
    m.grads[0] = 1.0f;
    train_mlp_sgd(&m, 0.1f, 0.9f); /* v = 0.9 * 2 + 1 = 2.8, w -= 0.28 */
    cr_assert_float_eq(m.params[0], w0 - 0.48f, 1e-6f);
    train_mlp_destroy(&m);
}

Test(mlp, lr_schedules_decay_over_the_run)
{
    const long total = 1000;
    cr_assert_eq(train_lr_at(TRAIN_LR_NONE, 0.05f, 999, total), 0.05f);
    cr_assert_eq(train_lr_at(TRAIN_LR_COSINE, 0.05f, 0, total), 0.05f);
    cr_assert_float_eq(train_lr_at(TRAIN_LR_COSINE, 0.05f, 500, total), 0.025f, 1e-8f);
    cr_assert_float_eq(train_lr_at(TRAIN_LR_COSINE, 0.05f, 250, total),
                       0.025f * (1.0f + sqrtf(0.5f)), 1e-8f);
    float last = train_lr_at(TRAIN_LR_COSINE, 0.05f, total - 1, total);
    cr_assert(last > 0.0f && last < 1e-6f, "last cosine rate %g", (double)last);
    for (long k = 1; k < total; k++) {
        cr_assert(train_lr_at(TRAIN_LR_COSINE, 0.05f, k, total) <=
                  train_lr_at(TRAIN_LR_COSINE, 0.05f, k - 1, total));
    }
    cr_assert_eq(train_lr_at(TRAIN_LR_STEP, 0.05f, 499, total), 0.05f);
    cr_assert_float_eq(train_lr_at(TRAIN_LR_STEP, 0.05f, 500, total), 0.005f, 1e-9f);
    cr_assert_float_eq(train_lr_at(TRAIN_LR_STEP, 0.05f, 749, total), 0.005f, 1e-9f);
    cr_assert_float_eq(train_lr_at(TRAIN_LR_STEP, 0.05f, 750, total), 0.0005f, 1e-10f);
    enum train_lr_schedule s;
    cr_assert_eq(train_lr_schedule_parse("step", &s), 0);
    cr_assert_eq(s, TRAIN_LR_STEP);
    cr_assert_str_eq(train_lr_schedule_name(TRAIN_LR_COSINE), "cosine");
    cr_assert_eq(train_lr_schedule_parse("linear", &s), -1);
}

Test(mlp, init_is_uniform_in_pytorch_bounds)
{
    static const int sizes[] = {784, 512, 256, 10};
    struct train_mlp m;
    char err[128];
    cr_assert_eq(train_mlp_create(&m, &train_backend_cpu, sizes, 4, 1, err, sizeof(err)), 0);
    cr_assert_eq(m.nparams, 535818);
    train_mlp_init_params(&m, 1);
    for (int l = 0; l < 3; l++) {
        float bound = 1.0f / sqrtf((float)sizes[l]) * 1.000001f;
        double sum = 0.0;
        for (size_t i = m.layer[l].w_off; i < m.layer[l].b_off + (size_t)sizes[l + 1]; i++) {
            cr_assert(fabsf(m.params[i]) <= bound);
            sum += m.params[i];
        }
        size_t n = m.layer[l].b_off + sizes[l + 1] - m.layer[l].w_off;
        cr_assert(fabs(sum / n) < 0.1 * bound, "mean near zero");
    }
    train_mlp_destroy(&m);
}

Test(sync, buckets_cover_the_gradients_last_layer_first)
{
    static const int sizes[] = {784, 512, 256, 10};
    struct train_mlp m;
    char err[128];
    cr_assert_eq(train_mlp_create(&m, &train_backend_cpu, sizes, 4, 1, err, sizeof(err)), 0);
    struct train_bucket b[TRAIN_MAX_LAYERS];
    /* 1 MiB of fp32: layers 3 and 2 together (523 KiB), layer 1 alone (1.53 MiB) */
    int n = train_buckets_plan(&m, 262144, b);
    cr_assert_eq(n, 2);
    cr_assert(b[0].layer == 1 && b[0].off == m.layer[1].w_off && b[0].count == 131328 + 2570);
    cr_assert(b[1].layer == 0 && b[1].off == 0 && b[1].count == 401920);
    n = train_buckets_plan(&m, 1, b);
    cr_assert_eq(n, 3, "a bucket per layer");
    cr_assert(b[0].layer == 2 && b[1].layer == 1 && b[2].layer == 0);
    n = train_buckets_plan(&m, (size_t)1 << 30, b);
    cr_assert(n == 1 && b[0].off == 0 && b[0].count == m.nparams && b[0].layer == 0);
    train_mlp_destroy(&m);
}

Test(sync, wire_conversions)
{
    float g[4] = {1.0f, -0.5f, 3.0e-6f, 1.0f / 3.0f}, back[4];
    uint16_t h[4];
    int64_t q[4];
    train_wire_encode(TRAIN_PREC_BF16, g, h, 4);
    cr_assert_eq(h[0], 0x3F80);
    cr_assert_eq(h[1], 0xBF00);
    train_wire_decode(TRAIN_PREC_BF16, h, back, 4);
    cr_assert_float_eq(back[3], 1.0f / 3.0f, 2e-3f);
    train_wire_encode(TRAIN_PREC_FP16, g, h, 4);
    cr_assert_eq(h[0], 0x3C00);
    train_wire_encode(TRAIN_PREC_FIXED, g, q, 4);
    cr_assert_eq(q[0], (int64_t)1 << TRAIN_FIXED_SHIFT);
    cr_assert_eq(q[1], -((int64_t)1 << (TRAIN_FIXED_SHIFT - 1)));
    q[0] += q[1]; /* 1 - 0.5, exactly */
    train_wire_decode(TRAIN_PREC_FIXED, q, back, 4);
    cr_assert_eq(back[0], 0.5f);
    cr_assert_float_eq(back[2], 3.0e-6f, 1e-9f);
    cr_assert_eq(train_wire_size(TRAIN_PREC_FIXED), 8);
    cr_assert_eq(train_wire_size(TRAIN_PREC_BF16), 2);
}

Test(data, shuffle_is_a_seeded_permutation)
{
    enum { N = 1000 };
    uint32_t a[N], b[N], c[N];
    train_shuffle(5, 0, a, N);
    train_shuffle(5, 0, b, N);
    train_shuffle(5, 1, c, N);
    cr_assert_eq(memcmp(a, b, sizeof(a)), 0, "same seed and epoch, same order");
    cr_assert_neq(memcmp(a, c, sizeof(a)), 0, "another epoch, another order");
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        cr_assert_lt(a[i], N);
        cr_assert_eq(seen[a[i]]++, 0);
    }
}

Test(data, shards_partition_every_batch)
{
    for (size_t b = 1; b <= 130; b++) {
        for (int n = 1; n <= 9; n++) {
            cr_assert_eq(train_shard_begin(b, 0, n), 0);
            cr_assert_eq(train_shard_begin(b, n, n), b);
            for (int r = 0; r < n; r++) {
                size_t size = train_shard_begin(b, r + 1, n) - train_shard_begin(b, r, n);
                cr_assert(size == b / n || size == b / n + 1, "balanced shards");
            }
        }
    }
}

Test(check, hash_sees_every_bit)
{
    float w[1001];
    for (int i = 0; i < 1001; i++) {
        w[i] = (float)i;
    }
    uint64_t h = train_hash(w, sizeof(w));
    cr_assert_eq(h, train_hash(w, sizeof(w)));
    for (int i = 0; i < 1001; i += 97) {
        uint32_t bits;
        memcpy(&bits, &w[i], 4);
        bits ^= 1u << (i % 32);
        float keep = w[i];
        memcpy(&w[i], &bits, 4);
        cr_assert_neq(train_hash(w, sizeof(w)), h, "bit flip in element %d", i);
        w[i] = keep;
    }
}

Test(check, compare_reports_relative_difference)
{
    static const int sizes[] = {3, 2};
    struct train_mlp m;
    char err[128];
    cr_assert_eq(train_mlp_create(&m, &train_backend_cpu, sizes, 2, 1, err, sizeof(err)), 0);
    float a[8] = {1, -2, 4, 0, 0, 0, 1, 1}, ref[8] = {1, -2, 4, 0, 0, 0, 1, 1};
    struct train_diff d;
    train_compare(&m, a, ref, &d);
    cr_assert(d.max_rel == 0.0 && d.ndiff == 0);
    a[1] = -2.0004f; /* 4e-4 / max |W| 4 = 1e-4 */
    train_compare(&m, a, ref, &d);
    cr_assert_float_eq(d.max_rel, 1e-4, 1e-6);
    cr_assert(d.ndiff == 1 && d.worst_layer == 0 && !d.worst_is_bias);
    a[7] = NAN;
    train_compare(&m, a, ref, &d);
    cr_assert(isinf(d.max_rel) && d.worst_is_bias);
    train_mlp_destroy(&m);
}
