/*
 * backend.h - the boundary between the trainer and the machine that does its arithmetic.
 *
 * The model (mlp.c) keeps every array in memory the backend allocated and does all its math
 * through these operations, so a GPU backend (device memory, cuBLAS for gemm, small kernels for
 * the rest) slots in beside the CPU one without touching the model, the gradient sync or the
 * checks. Only upload/download move data between host memory and the backend's; the gradient
 * buffers handed to tutti are the backend's memory (tutti takes device pointers with a stream
 * where CUDA is built in).
 *
 * Every operation is deterministic: the same inputs and shapes give bitwise the same outputs,
 * which the trainer's bitwise checks rely on. Matrices are row-major.
 *
 * A backend may run its operations asynchronously (the CUDA one enqueues them on a stream, in
 * call order): the caller reads its memory only through download, which returns the data as
 * of every operation called before it. Operations return no status, since on a GPU most
 * failures surface later: a failed operation records its cause, later ones do nothing, and the
 * caller asks error() after each step.
 */
#ifndef TRAIN_BACKEND_H
#define TRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct train_backend_ops {
    const char *name;
    /**
     * A backend context, or NULL when out of memory. scratch_floats: the largest transposed
     * operand gemm will be given (m x k for ta, k x n for tb).
     */
    void *(*create)(size_t scratch_floats);
    void (*destroy)(void *ctx);
    /** Zeroed memory of the backend for `bytes`, or NULL. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p);
    /** Copy host memory in; host_src may be reused as soon as this returns. */
    void (*upload)(void *ctx, void *dst, const void *host_src, size_t bytes);
    /** Copy out to host memory, after every operation called before (it waits for them). */
    void (*download)(void *ctx, void *host_dst, const void *src, size_t bytes);
    /**
     * C (m x n) = op(A) op(B) (+ C when accumulate), op(A) m x k, op(B) k x n. With ta, A is
     * stored k x m (op(A) = A^T); with tb, B is stored n x k. Leading dimensions are the
     * stored row lengths. Every element of C sums its k products in order of k.
     */
    void (*gemm)(void *ctx, int ta, int tb, int m, int n, int k, const float *a, const float *b,
                 float *c, int accumulate);
    /** y (rows x cols) += bias on every row, then max(y, 0) when relu. */
    void (*bias_act)(void *ctx, float *y, const float *bias, int rows, int cols, int relu);
    /** dy[i] = 0 where the layer's ReLU output y[i] is 0 (the gradient stops there). */
    void (*relu_backward)(void *ctx, float *dy, const float *y, size_t n);
    /** db[j] = sum over rows of dy[i][j], in order of i. */
    void (*col_sum)(void *ctx, const float *dy, int rows, int cols, float *db);
    /**
     * Softmax cross-entropy of the logits (rows x cols) against labels: returns the sum of
     * the rows' losses, counts the rows whose largest logit is the label in *correct_p, and
     * when dlogits is not NULL writes the gradient of scale x (sum of losses) there.
     */
    double (*softmax_xent)(void *ctx, const float *logits, const uint8_t *labels, int rows,
                           int cols, float scale, float *dlogits, int *correct_p);
    /** SGD with momentum, as PyTorch: v = mu v + g; w -= lr v. */
    void (*sgd)(void *ctx, float *w, float *v, const float *g, size_t n, float lr, float mu);
    /**
     * NULL while every operation of ctx succeeded, else what failed first ("cublasSgemm:
     * CUBLAS_STATUS_EXECUTION_FAILED ..."). With ctx NULL, after create() returned NULL on this
     * thread: why. The CPU backend never fails once created.
     */
    const char *(*error)(void *ctx);
};

/** The host CPU backend (backend_cpu.c). */
extern const struct train_backend_ops train_backend_cpu;

#endif /* TRAIN_BACKEND_H */
