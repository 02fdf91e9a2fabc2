/*
 * sync.c - bucketed asynchronous gradient all-reduce (see sync.h): the bucket plan, the wire
 * conversions, launching buckets from the backward pass, and the waiter thread that completes
 * them and keeps the times. Host gradients go through tutti_iallreduce here; GPU gradients
 * through the stream-ordered steps of sync_dev.c, with the same thread and bookkeeping.
 */
#include "sync.h"
#include "kernels/kern_ops.h"
#include "sync_dev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *train_prec_name(enum train_prec p)
{
    static const char *const names[] = {"fp32", "bf16", "fp16", "int64-fixed"};
    return (unsigned)p < 4 ? names[p] : "unknown";
}

int train_prec_parse(const char *s, enum train_prec *p)
{
    for (int i = TRAIN_PREC_FP32; i <= TRAIN_PREC_FP16; i++) {
        if (strcmp(s, train_prec_name((enum train_prec)i)) == 0) {
            *p = (enum train_prec)i;
            return 0;
        }
    }
    return -1;
}

tutti_datatype_t train_wire_type(enum train_prec p)
{
    static const tutti_datatype_t types[] = {TUTTI_FLOAT32, TUTTI_BFLOAT16, TUTTI_FLOAT16,
                                             TUTTI_INT64};
    return types[p];
}

size_t train_wire_size(enum train_prec p)
{
    return tutti_datatype_size(train_wire_type(p));
}

/* round(g 2^32), clamped to +-2^52 (|g| <= 2^20, far beyond any gradient of this model), so
 * that sums over up to 2^11 ranks stay inside int64. */
static int64_t to_fixed(float g)
{
    double x = ldexp((double)g, TRAIN_FIXED_SHIFT);
    const double lim = 0x1p52;
    x = x > lim ? lim : x < -lim ? -lim : x;
    return (int64_t)llrint(x);
}

void train_wire_encode(enum train_prec p, const float *g, void *wire, size_t n)
{
    uint16_t *h = wire;
    int64_t *q = wire;
    switch (p) {
    case TRAIN_PREC_FP32:
        memmove(wire, g, n * sizeof(float));
        break;
    case TRAIN_PREC_BF16:
        for (size_t i = 0; i < n; i++) {
            h[i] = kern_float_to_bf16(g[i]);
        }
        break;
    case TRAIN_PREC_FP16:
        for (size_t i = 0; i < n; i++) {
            h[i] = kern_float_to_half(g[i]);
        }
        break;
    case TRAIN_PREC_FIXED:
        for (size_t i = 0; i < n; i++) {
            q[i] = to_fixed(g[i]);
        }
        break;
    }
}

void train_wire_decode(enum train_prec p, const void *wire, float *g, size_t n)
{
    const uint16_t *h = wire;
    const int64_t *q = wire;
    switch (p) {
    case TRAIN_PREC_FP32:
        memmove(g, wire, n * sizeof(float));
        break;
    case TRAIN_PREC_BF16:
        for (size_t i = 0; i < n; i++) {
            g[i] = kern_bf16_to_float(h[i]);
        }
        break;
    case TRAIN_PREC_FP16:
        for (size_t i = 0; i < n; i++) {
            g[i] = kern_half_to_float(h[i]);
        }
        break;
    case TRAIN_PREC_FIXED:
        for (size_t i = 0; i < n; i++) {
            g[i] = (float)ldexp((double)q[i], -TRAIN_FIXED_SHIFT);
        }
        break;
    }
}

int train_buckets_plan(const struct train_mlp *m, size_t cap_elems, struct train_bucket *b)
{
    int nb = 0;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const struct train_layer *L = &m->layer[l];
        size_t size = (size_t)L->in * L->out + (size_t)L->out;
        /* layers are adjacent: layer l ends where layer l + 1 starts */
        if (nb > 0 && b[nb - 1].count + size <= cap_elems) {
            b[nb - 1].off = L->w_off;
            b[nb - 1].count += size;
            b[nb - 1].layer = l;
            continue;
        }
        b[nb++] = (struct train_bucket){.off = L->w_off, .count = size, .layer = l};
    }
    return nb;
}

/* Record the first failure of the step (under s->lock); detail NULL: tutti's last error. */
static void set_failure(struct train_sync *s, tutti_status_t st, const char *what, int bucket,
                        const char *detail)
{
    if (s->status != TUTTI_OK) {
        return;
    }
    const char *msg = detail != NULL ? detail : tutti_last_error(s->comm);
    if (msg == NULL || msg[0] == '\0') {
        msg = tutti_last_error(NULL);
    }
    s->status = st;
    snprintf(s->error, sizeof(s->error), "%s of gradient bucket %d (%zu %s elements): %s", what,
             bucket, s->b[bucket].count, train_prec_name(s->prec),
             msg != NULL && msg[0] != '\0' ? msg : tutti_status_string(st));
}

/* Host gradients: wait for bucket b's request and convert the result back to float. */
static tutti_status_t host_complete(struct train_sync *s, struct train_bucket *b)
{
    tutti_status_t st = b->req != NULL ? tutti_wait(b->req) : TUTTI_ERR_ABORTED;
    if (b->req != NULL) {
        tutti_request_free(b->req);
        b->req = NULL;
    }
    if (st == TUTTI_OK && s->wire != NULL) {
        train_wire_decode(s->prec, train_sync_buf(s, b->off), s->grads + b->off, b->count);
    }
    return st;
}

/* The waiter thread: complete the buckets in launch order. */
static void *waiter_main(void *arg)
{
    struct train_sync *s = arg;
    char msg[400] = "";
    tutti_status_t init =
        s->cuda != NULL ? train_sync_dev_thread_init(s, msg, sizeof(msg)) : TUTTI_OK;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->completed == s->launched) {
            pthread_cond_wait(&s->cond, &s->lock);
        }
        if (s->completed == s->launched) {
            break; /* stop, nothing in flight */
        }
        int i = s->completed;
        struct train_bucket *b = &s->b[i];
        pthread_mutex_unlock(&s->lock);
        tutti_status_t st = init != TUTTI_OK  ? init
                            : s->cuda != NULL ? train_sync_dev_complete(s, i, msg, sizeof(msg))
                                              : host_complete(s, b);
        double t = train_now();
        pthread_mutex_lock(&s->lock);
        if (st != TUTTI_OK) {
            set_failure(s, st, "all-reduce", i, s->cuda != NULL ? msg : NULL);
        }
        b->t_done = t;
        s->completed++;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The wire buffer, and on a GPU the stream and events. */
static void release(struct train_sync *s)
{
    if (s->cuda != NULL) {
        train_sync_dev_destroy(s);
    } else {
        if (s->win != NULL) {
            (void)tutti_comm_window_deregister(s->comm, s->win);
            s->win = NULL;
        }
        (void)tutti_mem_free(s->wire);
        s->wire = NULL;
    }
}

/* Host gradients: the buffer the all-reduces work on (grads, or wire) as a window. With the CPU
 * backend's memory (tutti_mem_alloc) every rank then reduces its share of each bucket straight
 * from the peers' buffers into theirs (tutti/mem.h). Collective: every rank is here together. */
static int host_window(struct train_sync *s, char *err, size_t errlen)
{
    size_t bytes = s->m->nparams * (s->wire != NULL ? train_wire_size(s->prec) : sizeof(float));
    void *buf = s->wire != NULL ? s->wire : (void *)s->grads;
    if (s->m->nparams == 0 || tutti_comm_window_register(s->comm, buf, bytes, &s->win) == TUTTI_OK) {
        return 0;
    }
    snprintf(err, errlen, "registering the gradients as a window: %s", tutti_last_error(s->comm));
    return -1;
}

int train_sync_init(struct train_sync *s, tutti_comm_t *comm, const struct train_mlp *m,
                    const struct train_cuda_module *cuda, enum train_prec prec,
                    size_t bucket_cap_elems, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->comm = comm;
    s->prec = prec;
    s->grads = m->grads;
    s->m = m;
    s->cuda = cuda;
    s->nbuckets = train_buckets_plan(m, bucket_cap_elems, s->b);
    if (cuda != NULL) {
        if (train_sync_dev_init(s, err, errlen) != 0) {
            train_sync_dev_destroy(s);
            return -1;
        }
    } else {
        if (prec != TRAIN_PREC_FP32 &&
            tutti_mem_alloc(&s->wire, m->nparams * train_wire_size(prec)) != TUTTI_OK) {
            snprintf(err, errlen, "no memory for %zu %s gradients: %s", m->nparams,
                     train_prec_name(prec), tutti_last_error(NULL));
            return -1;
        }
        if (host_window(s, err, errlen) != 0) {
            release(s);
            return -1;
        }
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    int e = pthread_create(&s->thread, NULL, waiter_main, s);
    if (e != 0) {
        snprintf(err, errlen, "cannot start the gradient waiter thread: %s", strerror(e));
        release(s);
        return -1;
    }
    return 0;
}

/* Host gradients: convert bucket b for the wire and start its all-reduce. */
static tutti_status_t host_launch(struct train_sync *s, struct train_bucket *b)
{
    if (s->wire != NULL) {
        double t0 = train_now();
        train_wire_encode(s->prec, s->grads + b->off, train_sync_buf(s, b->off), b->count);
        s->encode_s += train_now() - t0;
    }
    void *buf = train_sync_buf(s, b->off);
    b->t_launch = train_now();
    tutti_status_t st =
        tutti_iallreduce(buf, buf, b->count, train_wire_type(s->prec), TUTTI_SUM, s->comm, &b->req);
    if (st != TUTTI_OK) {
        b->req = NULL; /* the waiter completes it as failed */
    }
    return st;
}

void train_sync_layer_ready(struct train_sync *s, int layer)
{
    char msg[400] = "";
    for (int i = s->launched; i < s->nbuckets && s->b[i].layer == layer; i = s->launched) {
        struct train_bucket *b = &s->b[i];
        tutti_status_t st =
            s->cuda != NULL ? train_sync_dev_launch(s, i, msg, sizeof(msg)) : host_launch(s, b);
        pthread_mutex_lock(&s->lock);
        if (st != TUTTI_OK) {
            set_failure(s, st, "launching the all-reduce", i, s->cuda != NULL ? msg : NULL);
        }
        s->launched++;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
    }
}

tutti_status_t train_sync_finish(struct train_sync *s, struct train_sync_stats *st)
{
    if (s->cuda != NULL) {
        /* only this thread launches: s->launched is stable here */
        char msg[400] = "";
        tutti_status_t bw = train_sync_dev_backward_done(s, s->launched, msg, sizeof(msg));
        if (bw != TUTTI_OK) {
            pthread_mutex_lock(&s->lock);
            set_failure(s, bw, "the backward pass before the all-reduce", s->nbuckets - 1, msg);
            pthread_mutex_unlock(&s->lock);
        }
    }
    double t0 = train_now(); /* on a GPU: the backward pass is over, the rest is communication */
    pthread_mutex_lock(&s->lock);
    while (s->completed < s->launched) {
        pthread_cond_wait(&s->cond, &s->lock);
    }
    tutti_status_t status = s->status;
    int missing = s->launched < s->nbuckets;
    pthread_mutex_unlock(&s->lock);
    double waited = train_now() - t0;
    if (status == TUTTI_OK && missing) {
        status = TUTTI_ERR_INTERNAL;
        snprintf(s->error, sizeof(s->error), "only %d of %d gradient buckets were launched",
                 s->launched, s->nbuckets);
    }
    /* buckets run one after the other: the union of their intervals */
    double comm = 0.0, prev_done = 0.0;
    for (int i = 0; i < s->completed; i++) {
        double from = s->b[i].t_launch > prev_done ? s->b[i].t_launch : prev_done;
        comm += s->b[i].t_done > from ? s->b[i].t_done - from : 0.0;
        prev_done = s->b[i].t_done > prev_done ? s->b[i].t_done : prev_done;
    }
    st->comm_s = comm + s->encode_s;
    st->exposed_s = waited + s->encode_s;
    /* ready for the next step */
    pthread_mutex_lock(&s->lock);
    s->launched = s->completed = 0;
    s->status = TUTTI_OK;
    pthread_mutex_unlock(&s->lock);
    s->encode_s = 0.0;
    return status;
}

void train_sync_destroy(struct train_sync *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    release(s);
}
