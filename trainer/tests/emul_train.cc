// emul_train.cc - emul_train.h: the trainer's GPU kernel bodies run by the CPU, every thread of
// the grid in turn (compiled with -ffp-contract=off, as nvcc's -fmad=false).
#include "emul_train.h"
#include "trainer/cuda/train_body.cuh"

#include <vector>

using namespace train_cuda;

namespace {

// Run body(t, nt) for every thread t of a grid of `blocks` (0: the launcher's for `items`).
template <class Body> void run_grid(unsigned blocks, size_t items, Body body)
{
    size_t nt = (size_t)(blocks > 0 ? blocks : grid_blocks(items)) * THREADS;
    for (size_t t = 0; t < nt; t++) {
        body(t, nt);
    }
}

} // namespace

void emul_bias_act(unsigned blocks, float *y, const float *bias, int rows, int cols, int relu)
{
    run_grid(blocks, (size_t)rows * (size_t)cols,
             [&](size_t t, size_t nt) { bias_act(t, nt, y, bias, rows, cols, relu); });
}

void emul_relu_backward(unsigned blocks, float *dy, const float *y, size_t n)
{
    run_grid(blocks, n, [&](size_t t, size_t nt) { relu_backward(t, nt, dy, y, n); });
}

void emul_col_sum(unsigned blocks, const float *dy, int rows, int cols, float *db)
{
    run_grid(blocks, (size_t)cols,
             [&](size_t t, size_t nt) { col_sum(t, nt, dy, rows, cols, db); });
}

double emul_softmax_xent(unsigned blocks, const float *logits, const uint8_t *labels, int rows,
                         int cols, float scale, float *dlogits, int *correct_p)
{
    std::vector<float> loss((size_t)rows);
    std::vector<int> correct((size_t)rows);
    run_grid(blocks, (size_t)rows, [&](size_t t, size_t nt) {
        softmax_rows(t, nt, logits, labels, rows, cols, scale, dlogits, loss.data(),
                     correct.data());
    });
    double sum = 0.0;
    int n = 0;
    for (int i = 0; i < rows; i++) {
        sum += (double)loss[(size_t)i];
        n += correct[(size_t)i];
    }
    *correct_p = n;
    return sum;
}

void emul_sgd(unsigned blocks, float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    run_grid(blocks, n, [&](size_t t, size_t nt) { sgd(t, nt, w, v, g, n, lr, mu); });
}

void emul_wire_encode(unsigned blocks, int wire, const float *g, void *out, size_t n)
{
    run_grid(blocks, n, [&](size_t t, size_t nt) { wire_encode(t, nt, wire, g, out, n); });
}

void emul_wire_decode(unsigned blocks, int wire, const void *in, float *g, size_t n)
{
    run_grid(blocks, n, [&](size_t t, size_t nt) { wire_decode(t, nt, wire, in, g, n); });
}
