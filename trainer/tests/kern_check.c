/*
 * kern_check.c - kern_check.h: each kernel of an implementation against backend_cpu.c's
 * operation (or sync.c's conversion) on the same inputs.
 */
#include "kern_check.h"
#include "backend.h"
#include "data.h"
#include "sync.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const float specials[] = {0.0f,    -0.0f,   INFINITY, -INFINITY, NAN,   1e-40f,
                                 -3e-39f, 3.4e38f, -1e30f,   65504.0f,  1e-8f, -1.0f};

void kern_fill(float *x, size_t n, float scale, uint64_t seed, int with_specials)
{
    uint64_t s = seed;
    size_t ns = sizeof(specials) / sizeof(specials[0]);
    for (size_t i = 0; i < n; i++) {
        float u = (float)(train_splitmix64(&s) >> 40) * 0x1p-24f;
        x[i] = (2.0f * u - 1.0f) * scale;
        if (with_specials && i % 7 == 3) {
            x[i] = specials[(i / 7) % ns];
        }
    }
}

static float *floats(size_t n)
{
    float *p = malloc((n > 0 ? n : 1) * sizeof(float));
    cr_assert(p != NULL);
    return p;
}

/* Same bits, or both NaN (the payload of a computed NaN is the machine's choice). */
static void expect_same(const char *what, const char *impl, const float *got, const float *want,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int same =
            memcmp(&got[i], &want[i], sizeof(float)) == 0 || (isnan(got[i]) && isnan(want[i]));
        cr_assert(same, "%s (%s): element %zu is %a, the CPU's %a", what, impl, i, (double)got[i],
                  (double)want[i]);
    }
}

void kern_check_bias_act(const struct kern_impl *k)
{
    static const int shapes[][2] = {{1, 1}, {3, 10}, {64, 512}, {128, 256}, {7, 1000}, {2, 300}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *y = floats(n), *want = floats(n), *bias = floats((size_t)cols);
        for (int relu = 0; relu < 2; relu++) {
            kern_fill(y, n, 2.0f, 11 + s, 1);
            kern_fill(bias, (size_t)cols, 0.5f, 13 + s, 0);
            memcpy(want, y, n * sizeof(float));
            train_backend_cpu.bias_act(NULL, want, bias, rows, cols, relu);
            k->bias_act(k->ctx, y, bias, rows, cols, relu);
            expect_same(relu ? "bias_act relu" : "bias_act", k->name, y, want, n);
        }
        free(y);
        free(want);
        free(bias);
    }
}

void kern_check_relu_backward(const struct kern_impl *k)
{
    static const size_t sizes[] = {1, 255, 256, 257, 32768, 300001};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        float *dy = floats(n), *want = floats(n), *y = floats(n);
        kern_fill(dy, n, 1.0f, 21 + s, 1);
        kern_fill(y, n, 1.0f, 23 + s, 1);
        memcpy(want, dy, n * sizeof(float));
        train_backend_cpu.relu_backward(NULL, want, y, n);
        k->relu_backward(k->ctx, dy, y, n);
        expect_same("relu_backward", k->name, dy, want, n);
        free(dy);
        free(want);
        free(y);
    }
}

void kern_check_col_sum(const struct kern_impl *k)
{
    static const int shapes[][2] = {{0, 5}, {1, 1}, {2, 10}, {64, 512}, {128, 256}, {33, 300}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *dy = floats(n), *db = floats((size_t)cols), *want = floats((size_t)cols);
        kern_fill(dy, n, 1.0f, 31 + s, 0);
        if (n > 3) {
            dy[3] = -0.0f; /* a column of one -0.0 sums to +0.0 from the 0.0 it starts at */
        }
        memset(db, 0x7f, (size_t)cols * sizeof(float)); /* not read, all written */
        train_backend_cpu.col_sum(NULL, dy, rows, cols, want);
        k->col_sum(k->ctx, dy, rows, cols, db);
        expect_same("col_sum", k->name, db, want, (size_t)cols);
        free(dy);
        free(db);
        free(want);
    }
}

/* The logits of one case: rows x cols in [-8, 8), with ties in some rows. */
static void softmax_case(float *z, uint8_t *labels, int rows, int cols, uint64_t seed)
{
    uint64_t s = seed;
    kern_fill(z, (size_t)rows * cols, 8.0f, seed, 0);
    for (int i = 0; i < rows; i++) {
        labels[i] = (uint8_t)(train_splitmix64(&s) % (uint64_t)cols);
        if (i % 5 == 1 && cols > 1) {
            z[(size_t)i * cols + 1] = z[(size_t)i * cols]; /* the first of equal maxima counts */
        }
    }
}

void kern_check_softmax(const struct kern_impl *k)
{
    static const int shapes[][2] = {{0, 10}, {1, 10}, {5, 3}, {64, 10}, {128, 10}, {256, 10}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *z = floats(n), *d = floats(n), *want = floats(n);
        uint8_t *labels = malloc((size_t)rows + 1);
        cr_assert(labels != NULL);
        softmax_case(z, labels, rows, cols, 41 + s);
        float scale = 1.0f / 128.0f;
        int c_want = -1, c_got = -2;
        double l_want =
            train_backend_cpu.softmax_xent(NULL, z, labels, rows, cols, scale, want, &c_want);
        double l_got = k->softmax_xent(k->ctx, z, labels, rows, cols, scale, d, &c_got);
        cr_assert_eq(c_got, c_want, "softmax (%s) %dx%d: %d correct, the CPU %d", k->name, rows,
                     cols, c_got, c_want);
        if (k->libm_exact) {
            cr_assert(l_got == l_want, "softmax loss (%s): %a, the CPU's %a", k->name, l_got,
                      l_want);
            expect_same("softmax gradient", k->name, d, want, n);
        } else {
            /* CUDA's expf is within 2 ulp, logf within 1 ulp: a few ulp per row's loss, and
             * per gradient element a few ulp of the probability, times scale */
            cr_assert(fabs(l_got - l_want) <= 1e-6 * (fabs(l_want) + rows),
                      "softmax loss (%s): %.9g, the CPU's %.9g", k->name, l_got, l_want);
            for (size_t i = 0; i < n; i++) {
                cr_assert(fabsf(d[i] - want[i]) <= 1e-6f * scale,
                          "softmax gradient (%s): "
                          "element %zu is %.9g, the CPU's %.9g",
                          k->name, i, d[i], want[i]);
            }
        }
        /* without a gradient: the same loss and count, nothing written */
        int c2 = -1;
        double l2 = k->softmax_xent(k->ctx, z, labels, rows, cols, 0.0f, NULL, &c2);
        cr_assert(l2 == l_got && c2 == c_got, "softmax (%s) without dlogits differs", k->name);
        free(z);
        free(d);
        free(want);
        free(labels);
    }
}

void kern_check_sgd(const struct kern_impl *k)
{
    static const size_t sizes[] = {1, 1000, 262145, 535818};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        float *w = floats(n), *v = floats(n), *g = floats(n), *w_want = floats(n),
              *v_want = floats(n);
        kern_fill(w, n, 0.1f, 51 + s, 0);
        kern_fill(v, n, 0.01f, 53 + s, 0);
        kern_fill(g, n, 0.01f, 57 + s, 1);
        memcpy(w_want, w, n * sizeof(float));
        memcpy(v_want, v, n * sizeof(float));
        train_backend_cpu.sgd(NULL, w_want, v_want, g, n, 0.05f, 0.9f);
        k->sgd(k->ctx, w, v, g, n, 0.05f, 0.9f);
        expect_same("sgd momentum", k->name, v, v_want, n);
        expect_same("sgd weights", k->name, w, w_want, n);
        free(w);
        free(v);
        free(g);
        free(w_want);
        free(v_want);
    }
}

/* Encode n floats (random, specials, values around the fixed-point clamp) both ways. */
static void check_encode(const struct kern_impl *k, int wire, size_t n)
{
    size_t ws = train_wire_size((enum train_prec)wire);
    float *g = floats(n);
    void *got = malloc(n * ws), *want = malloc(n * ws);
    cr_assert(got != NULL && want != NULL);
    kern_fill(g, n, wire == TRAIN_PREC_FIXED ? 1.5e6f : 3.0f, 61 + n, 1);
    if (n > 5) {
        g[1] = 0x1p20f * 1.5f; /* beyond the fixed-point clamp (2^52 / 2^32 = 2^20) */
        g[2] = -0x1p20f;
        g[4] = 0x1p-33f; /* half a fixed-point unit: ties go to even */
        g[5] = 3.0f * 0x1p-33f;
    }
    train_wire_encode((enum train_prec)wire, g, want, n);
    memset(got, 0x5a, n * ws);
    k->wire_encode(k->ctx, wire, g, got, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert(memcmp((char *)got + i * ws, (char *)want + i * ws, ws) == 0,
                  "wire %s encode (%s): element %zu (%a) differs",
                  train_prec_name((enum train_prec)wire), k->name, i, (double)g[i]);
    }
    free(g);
    free(got);
    free(want);
}

/* Decode: every 16-bit pattern, or int64 values of every magnitude (sums of many ranks). */
static void check_decode(const struct kern_impl *k, int wire)
{
    size_t n = wire == TRAIN_PREC_FIXED ? 100003 : 65536;
    void *in = malloc(n * 8);
    float *got = floats(n), *want = floats(n);
    cr_assert(in != NULL);
    uint64_t s = 71;
    for (size_t i = 0; i < n; i++) {
        if (wire == TRAIN_PREC_FIXED) {
            int64_t q = (int64_t)(train_splitmix64(&s) >> (1 + i % 63));
            ((int64_t *)in)[i] = i % 2 ? -q : q;
        } else {
            ((uint16_t *)in)[i] = (uint16_t)i;
        }
    }
    train_wire_decode((enum train_prec)wire, in, want, n);
    k->wire_decode(k->ctx, wire, in, got, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                  "wire %s decode (%s): element %zu gives %a, the CPU %a",
                  train_prec_name((enum train_prec)wire), k->name, i, (double)got[i],
                  (double)want[i]);
    }
    free(in);
    free(got);
    free(want);
}

void kern_check_wire(const struct kern_impl *k)
{
    static const size_t sizes[] = {1, 17, 4096, 300001};
    for (int wire = TRAIN_PREC_BF16; wire <= TRAIN_PREC_FIXED; wire++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            check_encode(k, wire, sizes[s]);
        }
        check_decode(k, wire);
    }
}
