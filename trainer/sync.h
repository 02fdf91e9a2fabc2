/*
 * sync.h - data-parallel gradient synchronisation, as PyTorch DDP does it: the gradient vector
 * is cut into buckets of whole layers (last layer first, up to a size cap), and each bucket's
 * all-reduce (SUM) is launched asynchronously as soon as the backward pass has finished its
 * layers, so communication runs while the earlier layers' gradients are still being computed.
 *
 * Each rank's gradients are already scaled by 1 / (global batch), so the SUM is the average
 * over the global batch, whatever the shard sizes. The wire precision is fp32 (in place), bf16
 * or fp16 (converted with round-to-nearest-even, reduced by tutti in float and rounded at each
 * step), or int64 fixed point (--deterministic: integer sums are exact and associative, so the
 * result does not depend on the reduction order nor on the number of ranks that formed it).
 *
 * A helper thread waits for each bucket's request in order (tutti_wait is thread-safe),
 * converts the result back to float and stamps its completion time; the training thread only
 * blocks when it needs every gradient (train_sync_finish). That gives the time communication
 * took in each step and how much of it the training thread actually waited for.
 *
 * With gradients in GPU memory (--device cuda, sync_dev.c) the same happens in stream order:
 * a bucket's launch makes a communication stream wait for the compute stream's event after
 * its layers, and enqueues there the conversion, tutti_allreduce on that stream and the
 * conversion back; the helper thread waits for each bucket's events in turn and stamps them,
 * and the SGD step (on the compute stream) waits for the last bucket's event.
 */
#ifndef TRAIN_SYNC_H
#define TRAIN_SYNC_H

#include "mlp.h"
#include "tutti.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum train_prec { TRAIN_PREC_FP32, TRAIN_PREC_BF16, TRAIN_PREC_FP16, TRAIN_PREC_FIXED };

/** "fp32", "bf16", "fp16", "int64-fixed". */
const char *train_prec_name(enum train_prec p);

/** Parse "fp32", "bf16" or "fp16"; 0 or -1. */
int train_prec_parse(const char *s, enum train_prec *p);

/** Fixed-point scale of the deterministic mode: gradients are summed as round(g * 2^32). */
#define TRAIN_FIXED_SHIFT 32

/** The tutti datatype of a wire precision (fixed point: TUTTI_INT64). */
tutti_datatype_t train_wire_type(enum train_prec p);

/** Bytes of one gradient element on the wire. */
size_t train_wire_size(enum train_prec p);

/** Gradients g[0..n) into wire elements (wire points at element 0 of the range). */
void train_wire_encode(enum train_prec p, const float *g, void *wire, size_t n);

/** Wire elements back into float gradients. */
void train_wire_decode(enum train_prec p, const void *wire, float *g, size_t n);

/** A contiguous range of the gradient vector reduced by one all-reduce. */
struct train_bucket {
    size_t off, count; /* elements */
    int layer;         /* launched once the backward pass has finished this layer */
    tutti_request_t *req;
    double t_launch, t_done; /* this step's times (seconds, monotonic clock) */
};

/**
 * Cut the model's gradients into buckets of whole layers, last layer first, closing a bucket
 * before it would pass cap_elems (a layer larger than the cap is a bucket of its own).
 * Returns the number of buckets written to b (at most TRAIN_MAX_LAYERS).
 */
int train_buckets_plan(const struct train_mlp *m, size_t cap_elems, struct train_bucket *b);

struct train_cuda_module;

/** One step's communication, as the training thread saw it. */
struct train_sync_stats {
    double comm_s;    /* time some bucket was in flight: union of launch..completion */
    double exposed_s; /* the training thread's wait for the last buckets, plus conversions */
};

struct train_sync {
    tutti_comm_t *comm;
    enum train_prec prec;
    float *grads; /* the model's gradients (reduced in place, or through wire) */
    void *wire;   /* staging for bf16/fp16/fixed; NULL for fp32 */
    tutti_window_t *win; /* host: the buffer all-reduced (grads or wire) as a tutti window */
    int nbuckets;
    struct train_bucket b[TRAIN_MAX_LAYERS];
    double encode_s; /* this step's conversions on the training thread */
    /* gradients in GPU memory (sync_dev.c); cuda is NULL for host memory */
    const struct train_cuda_module *cuda;
    const struct train_mlp *m;     /* whose backend holds grads and wire */
    int device;                    /* the GPU of m's backend */
    void *compute, *stream;        /* the model's compute stream; the communication stream */
    void *ready[TRAIN_MAX_LAYERS]; /* per bucket: its layers' gradients are computed */
    void *done[TRAIN_MAX_LAYERS];  /* per bucket: reduced and converted back */
    /* the waiter thread and what it shares with the training thread, under lock */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int launched, completed, stop;
    tutti_status_t status; /* first failure of this step */
    char error[512];       /* what failed, with tutti's message */
};

/**
 * Set up synchronisation of m's gradients over comm and start the waiter thread. cuda: NULL
 * when m's backend keeps host memory, else the GPU module whose backend m uses (the calling
 * thread's current device is m's).
 * @return 0, or -1 with the reason in err.
 */
int train_sync_init(struct train_sync *s, tutti_comm_t *comm, const struct train_mlp *m,
                    const struct train_cuda_module *cuda, enum train_prec prec,
                    size_t bucket_cap_elems, char *err, size_t errlen);

/** The backward pass finished `layer`: launch the buckets that were waiting for it. */
void train_sync_layer_ready(struct train_sync *s, int layer);

/**
 * Wait until every bucket of this step is reduced and back in the gradients.
 * @return TUTTI_OK, or the first failure (s->error says what failed and why).
 */
tutti_status_t train_sync_finish(struct train_sync *s, struct train_sync_stats *st);

/** Stop the waiter thread (after train_sync_finish) and free the staging memory. */
void train_sync_destroy(struct train_sync *s);

/** Seconds on the monotonic clock. */
double train_now(void);

#endif /* TRAIN_SYNC_H */
