/*
 * emu_train_module.c - tutti-train's GPU module (struct train_cuda_module) on the emulated GPU
 * of tests/integ/emu_dev.h, so that the trainer's GPU path runs end to end where there is no
 * GPU: sync_dev.c's streams and events, tutti's stream path on the gradients (the CUDA IPC
 * all-reduce between the ranks, emulated), the downloads of the checks.
 *
 * Device memory is PROT_NONE to the CPU, so a trainer that touched it other than through
 * download would crash. Streams are emu_dev's threads; a kernel is a function run in order on
 * its stream's thread over the memory's writable views: the bodies of train_body.cuh (through
 * emul_train.cc) for the kernels, the CPU backend's gemm for cuBLAS. An event counts its
 * records and the records its stream has reached. EMU_TRAIN_FAIL_GEMM=N makes the N-th gemm of
 * each context fail the way cuBLAS reports a failure; an allocation beyond 64 GiB fails as
 * cudaMalloc's; after a failure a context does nothing more, as the module's.
 */
#include "emu_train_module.h"
#include "emu_dev.h"
#include "emul_train.h"
#include "sync.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SYNC_MS = 600000 };
#define EMU_MEMORY ((size_t)1 << 36) /* the emulated device's memory: 64 GiB */

struct ectx {
    emu_stream_t *stream;
    long gemms, fail_gemm;
    char error[256];
};

struct event {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t recorded, reached;
};

enum kind {
    K_COPY,
    K_GEMM,
    K_BIAS,
    K_RELU,
    K_COLSUM,
    K_SOFTMAX,
    K_SGD,
    K_ENC,
    K_DEC,
    K_EVENT,
    K_WAIT
};

/* One enqueued operation: what it reads and writes, run (and freed) by its stream's thread. */
struct op {
    enum kind kind;
    struct ectx *x;
    const void *src[3];
    void *dst[2];
    size_t n;
    int i[6];
    float f[2];
    struct event *ev;
    uint64_t seq;
    double *loss_p;
    int *correct_p;
};

static void *v(const void *p, size_t bytes)
{
    return emu_dev_view(p, bytes);
}

/* The CPU backend's gemm, with scratch for this call's transposed operands (cuBLAS needs
 * none, so create() is not told how much). */
static void run_gemm(struct op *o)
{
    int ta = o->i[0], tb = o->i[1], m = o->i[2], n = o->i[3], k = o->i[4];
    size_t fa = (size_t)m * k * sizeof(float), fb = (size_t)k * n * sizeof(float);
    void *cpu = train_backend_cpu.create(fa > fb ? fa : fb);
    if (cpu == NULL) {
        fprintf(stderr, "emu_train_module: no memory for gemm scratch\n");
        abort();
    }
    train_backend_cpu.gemm(cpu, ta, tb, m, n, k, v(o->src[0], fa), v(o->src[1], fb),
                           v(o->dst[0], (size_t)m * n * sizeof(float)), o->i[5]);
    train_backend_cpu.destroy(cpu);
}

static void run_softmax(struct op *o)
{
    int rows = o->i[0], cols = o->i[1];
    size_t n = (size_t)rows * cols * sizeof(float);
    *o->loss_p =
        emul_softmax_xent(0, v(o->src[0], n), v(o->src[1], (size_t)rows), rows, cols, o->f[0],
                          o->dst[0] != NULL ? v(o->dst[0], n) : NULL, o->correct_p);
}

static void run_event(struct op *o)
{
    pthread_mutex_lock(&o->ev->lock);
    if (o->kind == K_EVENT) {
        o->ev->reached = o->ev->reached > o->seq ? o->ev->reached : o->seq;
        pthread_cond_broadcast(&o->ev->cond);
    } else {
        while (o->ev->reached < o->seq) {
            pthread_cond_wait(&o->ev->cond, &o->ev->lock);
        }
    }
    pthread_mutex_unlock(&o->ev->lock);
}

static size_t wire_size(int wire)
{
    return train_wire_size((enum train_prec)wire);
}

static void run(void *arg)
{
    struct op *o = arg;
    size_t fl = o->n * sizeof(float);
    switch (o->kind) {
    case K_COPY:
        memcpy(v(o->dst[0], o->n), v(o->src[0], o->n), o->n);
        break;
    case K_GEMM:
        run_gemm(o);
        break;
    case K_BIAS:
        emul_bias_act(0, v(o->dst[0], fl), v(o->src[0], (size_t)o->i[1] * sizeof(float)), o->i[0],
                      o->i[1], o->i[2]);
        break;
    case K_RELU:
        emul_relu_backward(0, v(o->dst[0], fl), v(o->src[0], fl), o->n);
        break;
    case K_COLSUM:
        emul_col_sum(0, v(o->src[0], (size_t)o->i[0] * o->i[1] * sizeof(float)), o->i[0], o->i[1],
                     v(o->dst[0], (size_t)o->i[1] * sizeof(float)));
        break;
    case K_SOFTMAX:
        run_softmax(o);
        break;
    case K_SGD:
        emul_sgd(0, v(o->dst[0], fl), v(o->dst[1], fl), v(o->src[0], fl), o->n, o->f[0], o->f[1]);
        break;
    case K_ENC:
        emul_wire_encode(0, o->i[0], v(o->src[0], fl), v(o->dst[0], o->n * wire_size(o->i[0])),
                         o->n);
        break;
    case K_DEC:
        emul_wire_decode(0, o->i[0], v(o->src[0], o->n * wire_size(o->i[0])), v(o->dst[0], fl),
                         o->n);
        break;
    case K_EVENT:
    case K_WAIT:
        run_event(o);
        break;
    }
    free(o);
}

static void enqueue(emu_stream_t *s, struct op o)
{
    struct op *p = malloc(sizeof(*p));
    if (p == NULL) {
        fprintf(stderr, "emu_train_module: no memory\n");
        abort();
    }
    *p = o;
    emu_stream_run(s, run, p);
}

static void wait_stream(emu_stream_t *s)
{
    if (emu_stream_sync(s, SYNC_MS) != 0) {
        fprintf(stderr, "emu_train_module: a stream did not finish within %d ms\n", SYNC_MS);
        abort();
    }
}

/* ---- the backend ---- */

static void *e_create(size_t scratch_floats)
{
    (void)scratch_floats;
    struct ectx *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return NULL;
    }
    const char *fail = getenv("EMU_TRAIN_FAIL_GEMM");
    x->fail_gemm = fail != NULL ? atol(fail) : 0;
    x->stream = emu_stream_create();
    return x;
}

static void e_destroy(void *ctx)
{
    struct ectx *x = ctx;
    wait_stream(x->stream);
    emu_stream_destroy(x->stream);
    free(x);
}

/* More than the emulated device holds fails as cudaMalloc does, and the context stops. */
static void *e_alloc(void *ctx, size_t bytes)
{
    struct ectx *x = ctx;
    if (x->error[0] == '\0' && bytes > EMU_MEMORY) {
        snprintf(x->error, sizeof(x->error),
                 "cudaMalloc: cudaErrorMemoryAllocation (emulated: "
                 "%zu bytes, more than %zu)",
                 bytes, (size_t)EMU_MEMORY);
    }
    return x->error[0] != '\0' ? NULL : emu_dev_malloc(bytes); /* shared memory: zeroed */
}

static void e_free(void *ctx, void *p)
{
    struct ectx *x = ctx;
    wait_stream(x->stream); /* as cudaFree, which waits for the device */
    if (p != NULL) {
        emu_dev_free(p);
    }
}

static void e_upload(void *ctx, void *dst, const void *host, size_t bytes)
{
    struct ectx *x = ctx;
    enqueue(x->stream, (struct op){.kind = K_COPY, .dst = {dst}, .src = {host}, .n = bytes});
    wait_stream(x->stream);
}

static void e_download(void *ctx, void *host, const void *src, size_t bytes)
{
    struct ectx *x = ctx;
    if (x->error[0] != '\0') {
        memset(host, 0, bytes); /* as the module: zeros after a failure */
        return;
    }
    enqueue(x->stream, (struct op){.kind = K_COPY, .dst = {host}, .src = {src}, .n = bytes});
    wait_stream(x->stream);
}

static void e_gemm(void *ctx, int ta, int tb, int m, int n, int k, const float *a, const float *b,
                   float *c, int accumulate)
{
    struct ectx *x = ctx;
    if (x->error[0] != '\0') {
        return;
    }
    if (x->fail_gemm > 0 && ++x->gemms == x->fail_gemm) {
        snprintf(x->error, sizeof(x->error),
                 "cublasSgemm: CUBLAS_STATUS_EXECUTION_FAILED "
                 "(emulated failure, EMU_TRAIN_FAIL_GEMM=%ld)",
                 x->fail_gemm);
        return;
    }
    enqueue(
        x->stream,
        (struct op){
            .kind = K_GEMM, .x = x, .src = {a, b}, .dst = {c}, .i = {ta, tb, m, n, k, accumulate}});
}

static void e_bias_act(void *ctx, float *y, const float *bias, int rows, int cols, int relu)
{
    enqueue(((struct ectx *)ctx)->stream, (struct op){.kind = K_BIAS,
                                                      .dst = {y},
                                                      .src = {bias},
                                                      .n = (size_t)rows * cols,
                                                      .i = {rows, cols, relu}});
}

static void e_relu_backward(void *ctx, float *dy, const float *y, size_t n)
{
    enqueue(((struct ectx *)ctx)->stream,
            (struct op){.kind = K_RELU, .dst = {dy}, .src = {y}, .n = n});
}

static void e_col_sum(void *ctx, const float *dy, int rows, int cols, float *db)
{
    enqueue(((struct ectx *)ctx)->stream,
            (struct op){.kind = K_COLSUM, .dst = {db}, .src = {dy}, .i = {rows, cols}});
}

static double e_softmax_xent(void *ctx, const float *logits, const uint8_t *labels, int rows,
                             int cols, float scale, float *dlogits, int *correct_p)
{
    struct ectx *x = ctx;
    double loss = 0.0;
    enqueue(x->stream, (struct op){.kind = K_SOFTMAX,
                                   .src = {logits, labels},
                                   .dst = {dlogits},
                                   .i = {rows, cols},
                                   .f = {scale},
                                   .loss_p = &loss,
                                   .correct_p = correct_p});
    wait_stream(x->stream);
    return loss;
}

static void e_sgd(void *ctx, float *w, float *vel, const float *g, size_t n, float lr, float mu)
{
    enqueue(((struct ectx *)ctx)->stream,
            (struct op){.kind = K_SGD, .dst = {w, vel}, .src = {g}, .n = n, .f = {lr, mu}});
}

static const char *e_error(void *ctx)
{
    struct ectx *x = ctx;
    return x == NULL ? "emulated create failed" : x->error[0] != '\0' ? x->error : NULL;
}

static const struct train_backend_ops emu_backend = {
    .name = "cuda",
    .create = e_create,
    .destroy = e_destroy,
    .alloc = e_alloc,
    .free = e_free,
    .upload = e_upload,
    .download = e_download,
    .gemm = e_gemm,
    .bias_act = e_bias_act,
    .relu_backward = e_relu_backward,
    .col_sum = e_col_sum,
    .softmax_xent = e_softmax_xent,
    .sgd = e_sgd,
    .error = e_error,
};

/* ---- the module's other members ---- */

static const char *m_error_name(int err)
{
    return err == 0 ? "cudaSuccess" : "cudaErrorEmulated";
}

static const char *m_error_string(int err)
{
    return err == 0 ? "no error" : "emulated error";
}

static int m_device_count(int *count_p)
{
    *count_p = 1;
    return 0;
}

static int m_set_device(int device)
{
    return device == 0 ? 0 : 101; /* cudaErrorInvalidDevice */
}

static int m_get_device(int *device_p)
{
    *device_p = 0;
    return 0;
}

static int m_device_name(int device, char *name, size_t len)
{
    (void)device;
    snprintf(name, len, "emulated GPU (tests/integ/emu_dev.c)");
    return 0;
}

static int m_stream_create(void **stream_p)
{
    *stream_p = emu_stream_create();
    return 0;
}

static int m_stream_destroy(void *stream)
{
    emu_stream_destroy(stream);
    return 0;
}

static int m_stream_synchronize(void *stream)
{
    wait_stream(stream);
    return 0;
}

static void *m_compute_stream(void *ctx)
{
    return ((struct ectx *)ctx)->stream;
}

static int m_event_create(void **event_p)
{
    struct event *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return 2; /* cudaErrorMemoryAllocation */
    }
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    *event_p = e;
    return 0;
}

static int m_event_destroy(void *event)
{
    struct event *e = event;
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
    return 0;
}

/* Record: the stream marks the event reached when it gets there. */
static int m_event_record(void *event, void *stream)
{
    struct event *e = event;
    pthread_mutex_lock(&e->lock);
    uint64_t seq = ++e->recorded;
    pthread_mutex_unlock(&e->lock);
    enqueue(stream, (struct op){.kind = K_EVENT, .ev = e, .seq = seq});
    return 0;
}

/* As cudaStreamWaitEvent: the stream waits for the event's latest record at the time of the
 * call (an event never recorded is complete). */
static int m_stream_wait_event(void *stream, void *event)
{
    struct event *e = event;
    pthread_mutex_lock(&e->lock);
    uint64_t seq = e->recorded;
    pthread_mutex_unlock(&e->lock);
    enqueue(stream, (struct op){.kind = K_WAIT, .ev = e, .seq = seq});
    return 0;
}

static int m_event_synchronize(void *event)
{
    struct event *e = event;
    pthread_mutex_lock(&e->lock);
    while (e->reached < e->recorded) {
        pthread_cond_wait(&e->cond, &e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return 0;
}

/* As the module: another format is cudaErrorInvalidValue. */
static int known_wire(int wire)
{
    return wire == TRAIN_PREC_BF16 || wire == TRAIN_PREC_FP16 || wire == TRAIN_PREC_FIXED;
}

static int m_wire_encode(int wire, const float *g, void *out, size_t n, void *stream)
{
    if (!known_wire(wire)) {
        return 1;
    }
    enqueue(stream, (struct op){.kind = K_ENC, .src = {g}, .dst = {out}, .n = n, .i = {wire}});
    return 0;
}

static int m_wire_decode(int wire, const void *in, float *g, size_t n, void *stream)
{
    if (!known_wire(wire)) {
        return 1;
    }
    enqueue(stream, (struct op){.kind = K_DEC, .src = {in}, .dst = {g}, .n = n, .i = {wire}});
    return 0;
}

const struct train_cuda_module emu_train_module = {
    .size = sizeof(struct train_cuda_module),
    .abi = TRAIN_CUDA_ABI,
    .build = "emulated GPU (no CUDA)",
    .backend = &emu_backend,
    .error_name = m_error_name,
    .error_string = m_error_string,
    .device_count = m_device_count,
    .set_device = m_set_device,
    .get_device = m_get_device,
    .device_name = m_device_name,
    .stream_create = m_stream_create,
    .stream_destroy = m_stream_destroy,
    .stream_synchronize = m_stream_synchronize,
    .compute_stream = m_compute_stream,
    .event_create = m_event_create,
    .event_destroy = m_event_destroy,
    .event_record = m_event_record,
    .stream_wait_event = m_stream_wait_event,
    .event_synchronize = m_event_synchronize,
    .wire_encode = m_wire_encode,
    .wire_decode = m_wire_decode,
};
