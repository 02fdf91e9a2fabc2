// backend_cuda.cu - the trainer's backend on a GPU (struct train_backend_ops, backend.h): device
// memory, cuBLAS sgemm for the three products, the kernels of train_body.cuh for the rest.
//
// A context belongs to the device that was current when it was made; it owns a compute stream
// (non-blocking: tutti's calls on the legacy stream never serialise with it), a cuBLAS handle
// bound to that stream with a workspace of its own (cuBLAS's advice for reproducible results;
// set after cublasSetStream, which resets it) and CUBLAS_PEDANTIC_MATH (no TF32 or other
// reduced-precision shortcut, so fp32 products keep fp32 accuracy), and the buffers through
// which softmax_xent hands its per-row results to the host. Every operation is enqueued on the
// compute stream in call order. A failing CUDA or cuBLAS call is recorded with the call's name
// and CUDA's name and message of the status; the context then does nothing more (error()).
#include "trainer/cuda/cuda_internal.h"

#include <cublas_v2.h>
#include <new>
#include <stdio.h>
#include <string.h>

namespace train_cuda {

namespace {

// cuBLAS's recommended workspace on Hopper (4 MiB suffices before it); one per context.
constexpr size_t BLAS_WORKSPACE = (size_t)32 << 20;

struct Ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *workspace;
    float *row_loss; // device: softmax_xent's per-row losses, then correct flags (ints)
    void *row_host;  // pinned: the same, for the host's sum in row order
    size_t rows_cap; // rows they hold
    char error[512]; // the first failure; "" while none
};

// Why the calling thread's last create() failed: read by error(NULL) on the same thread.
thread_local char create_error[512];

void note(char *buf, size_t len, const char *call, const char *name, const char *msg)
{
    snprintf(buf, len, "%s: %s (%s)", call, name, msg);
}

// Record a CUDA failure (the first one counts); true when err is success.
bool cuda_ok(Ctx *x, cudaError_t err, const char *call)
{
    if (err == cudaSuccess) {
        return true;
    }
    if (x->error[0] == '\0') {
        note(x->error, sizeof(x->error), call, cudaGetErrorName(err), cudaGetErrorString(err));
    }
    return false;
}

bool blas_ok(Ctx *x, cublasStatus_t st, const char *call)
{
    if (st == CUBLAS_STATUS_SUCCESS) {
        return true;
    }
    if (x->error[0] == '\0') {
        note(x->error, sizeof(x->error), call, cublasGetStatusName(st), cublasGetStatusString(st));
    }
    return false;
}

// Before an operation: nothing after a failure, and the context's device current on this
// thread (cheap when it already is).
bool enter(Ctx *x)
{
    return x->error[0] == '\0' && cuda_ok(x, cudaSetDevice(x->device), "cudaSetDevice");
}

void release(Ctx *x)
{
    // Best effort: the context may be broken; every handle is released whatever happened.
    (void)cudaSetDevice(x->device);
    if (x->stream != nullptr) {
        (void)cudaStreamSynchronize(x->stream);
    }
    if (x->blas != nullptr) {
        (void)cublasDestroy(x->blas);
    }
    (void)cudaFree(x->workspace);
    (void)cudaFree(x->row_loss);
    (void)cudaFreeHost(x->row_host);
    if (x->stream != nullptr) {
        (void)cudaStreamDestroy(x->stream);
    }
    delete x;
}

// The cuBLAS handle: on the compute stream, its own workspace, no reduced precision.
bool blas_setup(Ctx *x)
{
    return blas_ok(x, cublasCreate(&x->blas), "cublasCreate") &&
           blas_ok(x, cublasSetStream(x->blas, x->stream), "cublasSetStream") &&
           cuda_ok(x, cudaMalloc(&x->workspace, BLAS_WORKSPACE), "cudaMalloc (cuBLAS workspace)") &&
           blas_ok(x, cublasSetWorkspace(x->blas, x->workspace, BLAS_WORKSPACE),
                   "cublasSetWorkspace") &&
           blas_ok(x, cublasSetMathMode(x->blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode") &&
           blas_ok(x, cublasSetPointerMode(x->blas, CUBLAS_POINTER_MODE_HOST),
                   "cublasSetPointerMode") &&
           blas_ok(x, cublasSetAtomicsMode(x->blas, CUBLAS_ATOMICS_NOT_ALLOWED),
                   "cublasSetAtomicsMode");
}

// The transposed operands need no scratch here: cuBLAS reads them in place.
void *op_create(size_t scratch_floats)
{
    (void)scratch_floats;
    Ctx *x = new (std::nothrow) Ctx();
    if (x == nullptr) {
        snprintf(create_error, sizeof(create_error), "no memory for a CUDA backend context");
        return nullptr;
    }
    bool ok = cuda_ok(x, cudaGetDevice(&x->device), "cudaGetDevice") &&
              cuda_ok(x, cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking),
                      "cudaStreamCreateWithFlags") &&
              blas_setup(x);
    if (!ok) {
        snprintf(create_error, sizeof(create_error), "%s", x->error);
        release(x);
        return nullptr;
    }
    create_error[0] = '\0';
    return x;
}

void op_destroy(void *ctx)
{
    if (ctx != nullptr) {
        release((Ctx *)ctx);
    }
}

// Zeroed device memory (at least one byte, so that no size gives NULL on success).
void *op_alloc(void *ctx, size_t bytes)
{
    Ctx *x = (Ctx *)ctx;
    void *p = nullptr;
    size_t n = bytes > 0 ? bytes : 1;
    if (!enter(x) || !cuda_ok(x, cudaMalloc(&p, n), "cudaMalloc")) {
        return nullptr;
    }
    if (!cuda_ok(x, cudaMemsetAsync(p, 0, n, x->stream), "cudaMemsetAsync") ||
        !cuda_ok(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize")) {
        (void)cudaFree(p);
        return nullptr;
    }
    return p;
}

void op_free(void *ctx, void *p)
{
    Ctx *x = (Ctx *)ctx;
    if (p != nullptr) {
        (void)cudaSetDevice(x->device); // even after a failure: the memory goes back
        cuda_ok(x, cudaFree(p), "cudaFree");
    }
}

// Pageable host memory is taken at once by cudaMemcpyAsync, pinned memory only as the copy
// runs: the synchronisation makes "host_src may be reused" true for both.
void op_upload(void *ctx, void *dst, const void *host_src, size_t bytes)
{
    Ctx *x = (Ctx *)ctx;
    if (bytes == 0 || !enter(x)) {
        return;
    }
    (void)(cuda_ok(x, cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, x->stream),
                   "cudaMemcpyAsync (host to device)") &&
           cuda_ok(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize"));
}

// After a failure the host gets zeros, never stale or uninitialised bytes.
void op_download(void *ctx, void *host_dst, const void *src, size_t bytes)
{
    Ctx *x = (Ctx *)ctx;
    if (bytes == 0) {
        return;
    }
    bool ok = enter(x) &&
              cuda_ok(x, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, x->stream),
                      "cudaMemcpyAsync (device to host)") &&
              cuda_ok(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
    if (!ok) {
        memset(host_dst, 0, bytes);
    }
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS sees each stored
// row-major matrix as its transpose, so B comes first, each operand keeps its own transpose
// flag, and the leading dimensions are the stored row lengths.
void op_gemm(void *ctx, int ta, int tb, int m, int n, int k, const float *a, const float *b,
             float *c, int accumulate)
{
    Ctx *x = (Ctx *)ctx;
    if (m <= 0 || n <= 0 || !enter(x)) {
        return;
    }
    if (k <= 0) { // an empty sum (a rank's empty shard): C = 0, or C unchanged
        if (!accumulate) {
            cuda_ok(x, cudaMemsetAsync(c, 0, (size_t)m * (size_t)n * sizeof(float), x->stream),
                    "cudaMemsetAsync");
        }
        return;
    }
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f; // beta 0: C is not read
    blas_ok(x,
            cublasSgemm(x->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                        m, k, &one, b, tb ? k : n, a, ta ? m : k, &beta, c, n),
            "cublasSgemm");
}

void op_bias_act(void *ctx, float *y, const float *bias, int rows, int cols, int relu)
{
    Ctx *x = (Ctx *)ctx;
    if (enter(x)) {
        cuda_ok(x, launch_bias_act(y, bias, rows, cols, relu, x->stream), "bias_act kernel");
    }
}

void op_relu_backward(void *ctx, float *dy, const float *y, size_t n)
{
    Ctx *x = (Ctx *)ctx;
    if (enter(x)) {
        cuda_ok(x, launch_relu_backward(dy, y, n, x->stream), "relu_backward kernel");
    }
}

void op_col_sum(void *ctx, const float *dy, int rows, int cols, float *db)
{
    Ctx *x = (Ctx *)ctx;
    if (enter(x)) {
        cuda_ok(x, launch_col_sum(dy, rows, cols, db, x->stream), "col_sum kernel");
    }
}

// Room for `rows` per-row results on the device and in pinned host memory (grows rarely: the
// largest batch comes first or second).
bool rows_room(Ctx *x, int rows)
{
    if ((size_t)rows <= x->rows_cap) {
        return true;
    }
    size_t cap = (size_t)rows, bytes = cap * (sizeof(float) + sizeof(int));
    if (!cuda_ok(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize")) {
        return false;
    }
    (void)cudaFree(x->row_loss);
    (void)cudaFreeHost(x->row_host);
    x->row_loss = nullptr;
    x->row_host = nullptr;
    x->rows_cap = 0;
    if (!cuda_ok(x, cudaMalloc(&x->row_loss, bytes), "cudaMalloc (softmax rows)") ||
        !cuda_ok(x, cudaHostAlloc(&x->row_host, bytes, cudaHostAllocDefault),
                 "cudaHostAlloc (softmax rows)")) {
        return false;
    }
    x->rows_cap = cap;
    return true;
}

// The kernel leaves a loss and a correct flag per row; the host adds them in row order, in
// double, as the CPU backend does (so the sum does not depend on the grid either).
double op_softmax_xent(void *ctx, const float *logits, const uint8_t *labels, int rows, int cols,
                       float scale, float *dlogits, int *correct_p)
{
    Ctx *x = (Ctx *)ctx;
    *correct_p = 0;
    if (rows <= 0 || !enter(x) || !rows_room(x, rows)) {
        return 0.0;
    }
    int *row_correct = (int *)(x->row_loss + x->rows_cap);
    size_t bytes = x->rows_cap * (sizeof(float) + sizeof(int));
    bool ok =
        cuda_ok(x,
                launch_softmax(logits, labels, rows, cols, scale, dlogits, x->row_loss, row_correct,
                               x->stream),
                "softmax_xent kernel") &&
        cuda_ok(x,
                cudaMemcpyAsync(x->row_host, x->row_loss, bytes, cudaMemcpyDeviceToHost, x->stream),
                "cudaMemcpyAsync (softmax rows)") &&
        cuda_ok(x, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
    if (!ok) {
        return 0.0;
    }
    const float *loss = (const float *)x->row_host;
    const int *correct = (const int *)(loss + x->rows_cap);
    double sum = 0.0;
    int n = 0;
    for (int i = 0; i < rows; i++) {
        sum += (double)loss[i];
        n += correct[i];
    }
    *correct_p = n;
    return sum;
}

void op_sgd(void *ctx, float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    Ctx *x = (Ctx *)ctx;
    if (enter(x)) {
        cuda_ok(x, launch_sgd(w, v, g, n, lr, mu, x->stream), "sgd kernel");
    }
}

const char *op_error(void *ctx)
{
    const char *e = ctx != nullptr ? ((Ctx *)ctx)->error : create_error;
    return e[0] != '\0' ? e : nullptr;
}

} // namespace

void *compute_stream(void *ctx)
{
    return ((Ctx *)ctx)->stream;
}

const struct train_backend_ops backend = {
    .name = "cuda",
    .create = op_create,
    .destroy = op_destroy,
    .alloc = op_alloc,
    .free = op_free,
    .upload = op_upload,
    .download = op_download,
    .gemm = op_gemm,
    .bias_act = op_bias_act,
    .relu_backward = op_relu_backward,
    .col_sum = op_col_sum,
    .softmax_xent = op_softmax_xent,
    .sgd = op_sgd,
    .error = op_error,
};

} // namespace train_cuda
