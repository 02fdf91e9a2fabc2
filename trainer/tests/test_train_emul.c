/*
 * test_train_emul.c - tutti-train's GPU kernel bodies (trainer/cuda/train_body.cuh), built by
 * the host C++ compiler and run thread by thread (emul_train.cc), against the CPU backend and
 * sync.c's wire conversions: bitwise, softmax included (here expf and logf are glibc's on both
 * sides). Each check runs twice: on the grid kernels.cu launches for the work, and on a grid
 * of 3 blocks, so that every grid-stride loop wraps. Needs no GPU and no CUDA.
 */
#include "emul_train.h"
#include "kern_check.h"

#include <criterion/criterion.h>

static void e_bias_act(void *ctx, float *y, const float *bias, int rows, int cols, int relu)
{
    emul_bias_act(*(unsigned *)ctx, y, bias, rows, cols, relu);
}

static void e_relu_backward(void *ctx, float *dy, const float *y, size_t n)
{
    emul_relu_backward(*(unsigned *)ctx, dy, y, n);
}

static void e_col_sum(void *ctx, const float *dy, int rows, int cols, float *db)
{
    emul_col_sum(*(unsigned *)ctx, dy, rows, cols, db);
}

static double e_softmax_xent(void *ctx, const float *logits, const uint8_t *labels, int rows,
                             int cols, float scale, float *dlogits, int *correct_p)
{
    return emul_softmax_xent(*(unsigned *)ctx, logits, labels, rows, cols, scale, dlogits,
                             correct_p);
}

static void e_sgd(void *ctx, float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    emul_sgd(*(unsigned *)ctx, w, v, g, n, lr, mu);
}

static void e_wire_encode(void *ctx, int wire, const float *g, void *out, size_t n)
{
    emul_wire_encode(*(unsigned *)ctx, wire, g, out, n);
}

static void e_wire_decode(void *ctx, int wire, const void *in, float *g, size_t n)
{
    emul_wire_decode(*(unsigned *)ctx, wire, in, g, n);
}

/* The launcher's grid (blocks 0) and a 3-block one. */
static unsigned grids[2] = {0, 3};

static struct kern_impl impl(int small_grid)
{
    return (struct kern_impl){
        .name = small_grid ? "emulated, 3 blocks" : "emulated, the launcher's grid",
        .ctx = &grids[small_grid],
        .libm_exact = 1,
        .bias_act = e_bias_act,
        .relu_backward = e_relu_backward,
        .col_sum = e_col_sum,
        .softmax_xent = e_softmax_xent,
        .sgd = e_sgd,
        .wire_encode = e_wire_encode,
        .wire_decode = e_wire_decode,
    };
}

#define BOTH_GRIDS(check)                                                                          \
    for (int g_ = 0; g_ < 2; g_++) {                                                               \
        struct kern_impl k_ = impl(g_);                                                            \
        check(&k_);                                                                                \
    }

Test(train_emul, bias_act_bitwise)
{
    BOTH_GRIDS(kern_check_bias_act);
}

Test(train_emul, relu_backward_bitwise)
{
    BOTH_GRIDS(kern_check_relu_backward);
}

Test(train_emul, col_sum_in_row_order_bitwise)
{
    BOTH_GRIDS(kern_check_col_sum);
}

Test(train_emul, softmax_xent_bitwise)
{
    BOTH_GRIDS(kern_check_softmax);
}

Test(train_emul, sgd_bitwise)
{
    BOTH_GRIDS(kern_check_sgd);
}

Test(train_emul, wire_encode_decode_bitwise, .timeout = 120)
{
    BOTH_GRIDS(kern_check_wire);
}
