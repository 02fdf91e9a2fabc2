/*
 * stream.c - collectives on CUDA streams, staged through pinned host memory.
 *
 * A call with a stream (or with device buffers) is validated, queued on the communicator's
 * progress thread in issue order, gated, and returns at once. On the stream go, in order:
 *   1. copies of the device inputs into pinned staging blocks, each piece followed by a host
 *      function that opens that piece's request (it may now move data);
 *   2. for each piece, a wait until the communicator's pinned `done` word reaches the piece's
 *      ticket (the progress thread writes it when the piece completes, whatever the status),
 *      then the copy of its results back to the device;
 *   3. a host function that frees the requests and returns the staging blocks to a cache.
 * So the stream's later work sees the results (stream order), the copies of piece k+1 overlap
 * the network transfer of piece k, and no CUDA call is ever made from a host function. Tickets
 * complete in order (one progress thread per communicator), so `done` only grows.
 *
 * A failed operation still writes its ticket (the stream must not hang); the failure is the
 * communicator's asynchronous error (tutti_comm_get_async_error) and later calls return it.
 * Graph capture is refused: a captured host function would replay the same ticket.
 *
 * A communicator of one rank needs neither the network nor the host: every collective's result
 * is its input, so the call is one device-to-device copy on the stream (none in place). On an
 * H100 the staged form took 21.6 ms for 128 MiB where the copy takes 0.1 ms.
 */
#include "gpu/stream.h"
#include "base/check.h"
#include "gpu/gpu.h"
#include "gpu/devops.h"
#include "exec/op.h"
#include "base/env.h"
#include "exec/fail.h"
#include "gpu/ipc.h"
#include "base/log.h"
#include "run/request.h"
#include "base/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAGE_MIN_BYTES ((size_t)64 << 10)

struct stage {
    struct stage *next;
    size_t bytes;
    void *ptr;
};

struct tutti_stream_state {
    const struct tutti_devops *ops;
    volatile uint64_t *done; /* pinned: ticket of the last completed piece */
    uint64_t issued;         /* tickets handed out (callers: one thread at a time) */
    int batches;             /* enqueued, not yet past their last host function */
    int orphaned;            /* the communicator was aborted with batches on streams */
    pthread_mutex_t lock;    /* the cache, batches, orphaned */
    struct stage *cache;
    _Atomic size_t pinned; /* bytes of pinned memory held: the word and every block */
};

struct copy {
    void *dst;
    const void *src;
    size_t bytes;
};

struct piece {
    struct batch *b;
    tutti_request_t *req;
    uint64_t ticket;
    struct tutti_op_desc *ops; /* staged calls */
    int nops;
    struct copy *in, *out;
    int nin, nout;
};

/* Copies in per call at most: its input, its receive blocks' gaps (below), its scalar. */
#define COPIES_IN 3

struct batch {
    struct tutti_stream_state *ss;
    struct piece *pieces;
    int npieces;
    struct stage *stages;      /* back to the cache at release */
    struct tutti_op_desc *ops; /* every staged call, pieces in order */
    struct copy *in, *out;     /* per call: its copies in (COPIES_IN) and its copy out (one) */
    struct tutti_vcounts **vs; /* per call: its counts' copy, or NULL */
    int nvs;
};

static const char *devops_err(const struct tutti_devops *ops, int err)
{
    const char *s = ops->error_string != NULL ? ops->error_string(err) : NULL;
    return s != NULL ? s : "unknown error";
}

tutti_status_t tutti__stream_wanted(struct tutti_gpu *gpu, const struct tutti_op_desc *op,
                                    void *stream, int *use_p)
{
    const char *name = tutti__coll_name(op->coll);
    const struct tutti_devops *ops = tutti__devops();
    *use_p = 0;
    if (ops == NULL) {
        if (stream != NULL) {
            return tutti__set_error(&gpu->fab->err, TUTTI_ERR_UNSUPPORTED,
                                    "%s: a stream was given, but no GPU runtime is usable: %s",
                                    name, tutti__devops_why());
        }
        return TUTTI_OK; /* no driver in this process: no pointer can be device memory */
    }
    size_t sl, rl;
    tutti__op_extents(gpu->fab, op, &sl, &rl);
    int sdev = 0, rdev = 0, err = 0;
    if (sl > 0) {
        err = ops->is_device(op->sendbuf, &sdev);
    }
    if (err == 0 && rl > 0) {
        err = ops->is_device(op->recvbuf, &rdev);
    }
    if (err == 0 && op->scalar_ptr != NULL) { /* a pre-multiplied sum's scalar on the device */
        int cdev = 0;
        err = ops->is_device(op->scalar_ptr, &cdev);
        sdev |= cdev;
    }
    if (err != 0) {
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_SYSTEM,
                                "%s: asking %s what a buffer is: %s", name, ops->name,
                                devops_err(ops, err));
    }
    if (stream == NULL && !sdev && !rdev) {
        return TUTTI_OK;
    }
    int capturing = 0;
    err = ops->capturing(stream, &capturing);
    if (err != 0 || capturing) {
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_UNSUPPORTED, "%s: %s", name,
                                err != 0 ? devops_err(ops, err)
                                         : "the stream is being captured into a CUDA graph, "
                                           "which tutti does not support (each call's host "
                                           "function and wait belong to one run)");
    }
    *use_p = 1;
    return TUTTI_OK;
}

static tutti_status_t state_get(struct tutti_gpu *gpu, struct tutti_stream_state **ss_p)
{
    if (gpu->stream != NULL) {
        *ss_p = gpu->stream;
        return TUTTI_OK;
    }
    struct tutti_stream_state *ss = calloc(1, sizeof(*ss));
    if (ss == NULL) {
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_NO_MEMORY,
                                "no memory for the stream state");
    }
    const struct tutti_devops *ops = tutti__devops();
    ss->ops = ops;
    void *word = NULL;
    int err = ops->host_alloc(&word, 64);
    if (err != 0) {
        free(ss);
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_SYSTEM,
                                "pinned memory for the stream path: %s", devops_err(ops, err));
    }
    ss->done = word;
    *ss->done = 0;
    atomic_init(&ss->pinned, 64);
    pthread_mutex_init(&ss->lock, NULL);
    gpu->stream = ss;
    *ss_p = ss;
    return TUTTI_OK;
}

/* A pinned block of at least `bytes`: from the cache when one fits, else a new one. */
static tutti_status_t stage_get(struct tutti_gpu *gpu, struct tutti_stream_state *ss,
                                struct batch *b, size_t bytes, void **ptr_p)
{
    size_t want = STAGE_MIN_BYTES;
    while (want < bytes) {
        want *= 2;
    }
    pthread_mutex_lock(&ss->lock);
    struct stage **pp = &ss->cache;
    while (*pp != NULL && (*pp)->bytes != want) {
        pp = &(*pp)->next;
    }
    struct stage *st = *pp;
    if (st != NULL) {
        *pp = st->next;
    }
    pthread_mutex_unlock(&ss->lock);
    if (st == NULL) {
        st = calloc(1, sizeof(*st));
        int err = st != NULL ? ss->ops->host_alloc(&st->ptr, want) : 0;
        if (st == NULL || err != 0) {
            free(st);
            return tutti__set_error(&gpu->fab->err, TUTTI_ERR_NO_MEMORY,
                                    "%zu bytes of pinned memory to stage device buffers: %s", want,
                                    st == NULL ? "no memory" : devops_err(ss->ops, err));
        }
        st->bytes = want;
        atomic_fetch_add(&ss->pinned, want);
    }
    st->next = b->stages;
    b->stages = st;
    *ptr_p = st->ptr;
    return TUTTI_OK;
}

/* Blocks back to the cache (a host function may not free pinned memory: that is a runtime
 * call). The cache holds what the largest calls in flight needed; fini frees it. */
static void stages_return(struct tutti_stream_state *ss, struct stage *list)
{
    pthread_mutex_lock(&ss->lock);
    while (list != NULL) {
        struct stage *next = list->next;
        list->next = ss->cache;
        ss->cache = list;
        list = next;
    }
    pthread_mutex_unlock(&ss->lock);
}

static void stages_free(struct tutti_stream_state *ss, struct stage *list)
{
    while (list != NULL) {
        struct stage *next = list->next;
        (void)ss->ops->host_free(list->ptr);
        free(list);
        list = next;
    }
}

/* A device scalar of a pre-multiplied sum is read when the call runs: staged, as an input. */
static tutti_status_t stage_scalar(struct tutti_gpu *gpu, struct tutti_stream_state *ss,
                                   struct batch *b, struct tutti_op_desc *op, struct copy *in,
                                   int *nin)
{
    int cdev = 0;
    if (op->scalar_ptr == NULL || ss->ops->is_device(op->scalar_ptr, &cdev) != 0 || !cdev) {
        return TUTTI_OK;
    }
    void *blk = NULL;
    size_t es = tutti_datatype_size(op->dt);
    TUTTI_CHECK(stage_get(gpu, ss, b, es, &blk));
    in[(*nin)++] = (struct copy){blk, op->scalar_ptr, es};
    op->scalar_ptr = blk;
    return TUTTI_OK;
}

/*
 * Stage one call: device buffers are replaced by pinned blocks, with the copies in (inputs) and
 * out (results) to make. The in-place forms share one block covering both ranges. The receive
 * blocks of a blockwise call may leave gaps in the range copied out: those are copied in first,
 * so the copy out writes back what the user had there.
 */
static tutti_status_t stage_call(struct tutti_gpu *gpu, struct tutti_stream_state *ss,
                                 struct batch *b, struct tutti_op_desc *op, struct copy *in,
                                 int *nin, struct copy *out, int *nout)
{
    TUTTI_CHECK(stage_scalar(gpu, ss, b, op, in, nin));
    size_t sl, rl;
    tutti__op_extents(gpu->fab, op, &sl, &rl);
    int gaps = rl > 0 && tutti__op_recv_gaps(op, gpu->fab->rank, gpu->fab->nranks);
    int sdev = 0, rdev = 0;
    if (sl > 0) {
        (void)ss->ops->is_device(op->sendbuf, &sdev);
    }
    if (rl > 0) {
        (void)ss->ops->is_device(op->recvbuf, &rdev);
    }
    uintptr_t s = (uintptr_t)op->sendbuf, r = (uintptr_t)op->recvbuf;
    if (sdev && rdev && s < r + rl && r < s + sl) {
        uintptr_t lo = TUTTI_MIN(s, r), hi = TUTTI_MAX(s + sl, r + rl);
        void *blk = NULL;
        TUTTI_CHECK(stage_get(gpu, ss, b, hi - lo, &blk));
        if (gaps) {
            in[(*nin)++] = (struct copy){(char *)blk + (r - lo), op->recvbuf, rl};
        }
        in[(*nin)++] = (struct copy){(char *)blk + (s - lo), op->sendbuf, sl};
        out[(*nout)++] = (struct copy){op->recvbuf, (char *)blk + (r - lo), rl};
        op->sendbuf = (char *)blk + (s - lo);
        op->recvbuf = (char *)blk + (r - lo);
        return TUTTI_OK;
    }
    if (sdev) {
        void *blk = NULL;
        TUTTI_CHECK(stage_get(gpu, ss, b, sl, &blk));
        in[(*nin)++] = (struct copy){blk, op->sendbuf, sl};
        op->sendbuf = blk;
    }
    if (rdev) {
        void *blk = NULL;
        TUTTI_CHECK(stage_get(gpu, ss, b, rl, &blk));
        if (gaps) {
            in[(*nin)++] = (struct copy){blk, op->recvbuf, rl};
        }
        out[(*nout)++] = (struct copy){op->recvbuf, blk, rl};
        op->recvbuf = blk;
    }
    return TUTTI_OK;
}

/* Pieces of one call: all-reduce, broadcast and reduce cut into TUTTI_STAGE_CHUNK bytes. */
static size_t piece_elems(const struct tutti_op_desc *op)
{
    size_t es = tutti_datatype_size(op->dt);
    int cuttable = op->coll == TUTTI_COLL_ALLREDUCE || op->coll == TUTTI_COLL_BROADCAST ||
                   op->coll == TUTTI_COLL_REDUCE;
    size_t chunk = tutti__env()->STAGE_CHUNK / es;
    if (!cuttable || chunk == 0 || op->count <= chunk) {
        return op->count > 0 ? op->count : 1;
    }
    return chunk;
}

static void offset_call(struct tutti_op_desc *op, size_t first, size_t n)
{
    size_t off = first * tutti_datatype_size(op->dt);
    if (op->sendbuf != NULL) {
        op->sendbuf = (const char *)op->sendbuf + off;
    }
    if (op->recvbuf != NULL) {
        op->recvbuf = (char *)op->recvbuf + off;
    }
    op->count = n;
}

static void on_piece_done(void *arg, tutti_status_t st)
{
    (void)st; /* a failure is the communicator's error; the stream goes on either way */
    struct piece *p = arg;
    __atomic_store_n(p->b->ss->done, p->ticket, __ATOMIC_RELEASE);
}

static void host_open(void *arg)
{
    struct piece *p = arg;
    struct tutti_stream_state *ss = p->b->ss;
    pthread_mutex_lock(&ss->lock); /* an abort frees the communicator only once orphaned */
    if (!ss->orphaned) {
        tutti__request_open(p->req);
    }
    pthread_mutex_unlock(&ss->lock);
}

static void batch_free(struct batch *b)
{
    for (int i = 0; i < b->npieces; i++) {
        if (b->pieces[i].req != NULL) {
            tutti__request_release(b->pieces[i].req);
        }
    }
    for (int i = 0; b->vs != NULL && i < b->nvs; i++) {
        free(b->vs[i]);
    }
    free(b->vs);
    free(b->pieces);
    free(b->ops);
    free(b->in);
    free(b->out);
    free(b);
}

static void host_release(void *arg)
{
    struct batch *b = arg;
    struct tutti_stream_state *ss = b->ss;
    stages_return(ss, b->stages);
    b->stages = NULL;
    batch_free(b);
    pthread_mutex_lock(&ss->lock);
    int last = (--ss->batches == 0 && ss->orphaned);
    pthread_mutex_unlock(&ss->lock);
    if (last) { /* aborted: the pinned blocks leak, as a host function cannot free them */
        pthread_mutex_destroy(&ss->lock);
        free(ss);
    }
}

static void batches_add(struct tutti_stream_state *ss, int d)
{
    pthread_mutex_lock(&ss->lock);
    ss->batches += d;
    pthread_mutex_unlock(&ss->lock);
}

/* Cut the calls into pieces and stage them. */
static tutti_status_t batch_build(struct tutti_gpu *gpu, struct tutti_stream_state *ss,
                                  const struct tutti_op_desc *ops, int n, struct batch **b_p)
{
    size_t step = n == 1 ? piece_elems(&ops[0]) : 0;
    int np = n == 1 ? (int)((ops[0].count + step - 1) / step) : 1;
    np = TUTTI_MAX(np, 1);
    int ncalls = n == 1 ? np : n;
    struct batch *b = calloc(1, sizeof(*b));
    if (b != NULL) {
        b->ss = ss;
        b->npieces = np;
        b->pieces = calloc((size_t)np, sizeof(*b->pieces));
        b->ops = calloc((size_t)ncalls, sizeof(*b->ops));
        b->in = calloc((size_t)ncalls * COPIES_IN, sizeof(*b->in));
        b->out = calloc((size_t)ncalls, sizeof(*b->out));
        b->vs = calloc((size_t)ncalls, sizeof(*b->vs));
        b->nvs = ncalls;
    }
    if (b == NULL || b->pieces == NULL || b->ops == NULL || b->in == NULL || b->out == NULL ||
        b->vs == NULL) {
        if (b != NULL) {
            batch_free(b);
        }
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_NO_MEMORY,
                                "no memory for a stream batch");
    }
    *b_p = b;
    for (int k = 0; k < np; k++) {
        struct piece *p = &b->pieces[k];
        p->b = b;
        p->nops = n == 1 ? 1 : n;
        p->ops = b->ops + (n == 1 ? k : 0);
        p->in = b->in + (n == 1 ? k : 0) * COPIES_IN;
        p->out = b->out + (n == 1 ? k : 0);
        for (int i = 0; i < p->nops; i++) {
            p->ops[i] = ops[n == 1 ? 0 : i];
            int failed = 0;
            b->vs[(n == 1 ? k : 0) + i] =
                tutti__op_own_counts(&p->ops[i], gpu->fab->nranks, &failed);
            if (failed) {
                return tutti__set_error(&gpu->fab->err, TUTTI_ERR_NO_MEMORY,
                                        "no memory for a call's counts");
            }
            if (n == 1 && np > 1) {
                size_t first = (size_t)k * step;
                offset_call(&p->ops[i], first, TUTTI_MIN(step, ops[0].count - first));
            }
            TUTTI_CHECK(stage_call(gpu, ss, b, &p->ops[i], p->in, &p->nin, p->out, &p->nout));
        }
    }
    return TUTTI_OK;
}

/* A stream operation failed after some pieces were queued: the communicator cannot continue
 * (its peers would wait for calls this rank cannot run in order). */
static tutti_status_t stream_broken(struct tutti_gpu *gpu, const char *what, int err)
{
    tutti__set_error(&gpu->fab->err, TUTTI_ERR_SYSTEM, "enqueueing on the stream (%s): %s", what,
                     devops_err(gpu->stream->ops, err));
    return tutti__fabric_fail(gpu->fab, TUTTI_ERR_SYSTEM, gpu->fab->rank);
}

/* One rank: each collective is a copy of sendbuf into recvbuf (sizes equal for every kind when
 * nranks is 1), and in a group of sends to and receives from oneself the k-th receive gets the
 * k-th send (the order tutti_send documents). Sends and receives that do not pair up that way
 * keep the general path, which reports them. 1 when done. */
static int one_rank(struct tutti_gpu *gpu, const struct tutti_op_desc *ops, int n, void *stream,
                    tutti_status_t *st_p)
{
    if (gpu->fab->nranks != 1) {
        return 0;
    }
    int nsend = 0, nrecv = 0;
    for (int i = 0; i < n; i++) {
        nsend += ops[i].coll == TUTTI_COLL_SEND;
        nrecv += ops[i].coll == TUTTI_COLL_RECV;
    }
    int nc = 0, kr = 0;
    struct copy c[64];
    if (nsend != nrecv || n > 64) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int transformed = tutti__coll_reduces(ops[i].coll) &&
                          ((int)ops[i].op == TUTTI_OP_PREMUL || ops[i].dt == TUTTI_BOOL);
        if (tutti__coll_is_blockwise(ops[i].coll) || transformed) {
            return 0; /* blocks at displacements, a scaled or 0/1 input: not a plain copy */
        }
    }
    for (int i = 0; i < n; i++) {
        size_t sl, rl;
        tutti__op_extents(gpu->fab, &ops[i], &sl, &rl);
        if (ops[i].coll == TUTTI_COLL_RECV) {
            continue;
        }
        if (ops[i].coll == TUTTI_COLL_SEND) {
            while (ops[kr].coll != TUTTI_COLL_RECV) { /* the receive of the same rank */
                kr++;
            }
            size_t rs, rr;
            tutti__op_extents(gpu->fab, &ops[kr], &rs, &rr);
            if (rr != sl) {
                return 0; /* sizes differ: the general path names the mismatch */
            }
            c[nc++] = (struct copy){ops[kr++].recvbuf, ops[i].sendbuf, sl};
        } else {
            c[nc++] = (struct copy){ops[i].recvbuf, ops[i].sendbuf, TUTTI_MIN(sl, rl)};
        }
    }
    const struct tutti_devops *d = tutti__devops();
    *st_p = TUTTI_OK;
    for (int i = 0; i < nc; i++) {
        if (c[i].bytes == 0 || c[i].dst == c[i].src) {
            continue;
        }
        int err = d->copy_async(c[i].dst, c[i].src, c[i].bytes, stream);
        if (err != 0) {
            *st_p = tutti__set_error(&gpu->fab->err, TUTTI_ERR_SYSTEM,
                                     "%s of one rank: the copy on the stream: %s",
                                     tutti__coll_name(ops[0].coll), devops_err(d, err));
            return 1;
        }
    }
    return 1;
}

tutti_status_t tutti__stream_enqueue(struct tutti_gpu *gpu, const struct tutti_op_desc *ops, int n,
                                     void *stream)
{
    tutti_status_t one = TUTTI_OK;
    if (one_rank(gpu, ops, n, stream, &one)) {
        return one;
    }
    int ipc = 0;
    if (n == 1) {
        TUTTI_CHECK(tutti__ipc_wanted(gpu, &ops[0], &ipc));
    }
    if (ipc) {
        return tutti__ipc_allreduce(gpu, &ops[0], stream);
    }
    struct tutti_stream_state *ss = NULL;
    TUTTI_CHECK(state_get(gpu, &ss));
    struct batch *b = NULL;
    tutti_status_t st = batch_build(gpu, ss, ops, n, &b);
    if (st != TUTTI_OK) {
        if (b != NULL) {
            stages_free(ss, b->stages);
            batch_free(b);
        }
        return st;
    }
    /* Queue every piece first: they take their places in issue order now. */
    for (int k = 0; k < b->npieces; k++) {
        struct piece *p = &b->pieces[k];
        p->ticket = ++ss->issued;
        for (int i = 0; i < p->nops; i++) {
            tutti__fp_issue(gpu->fab, &p->ops[i]); /* each piece is a call of its own */
        }
        st = tutti__submit_gated(gpu->run, p->ops, p->nops, on_piece_done, p, &p->req);
        if (st != TUTTI_OK) {
            tutti__fabric_fail(gpu->fab, st, gpu->fab->rank); /* the earlier pieces are queued */
            for (int j = 0; j < k; j++) {
                tutti__request_open(b->pieces[j].req);
            }
            return st;
        }
    }
    batches_add(ss, 1);
    const struct tutti_devops *d = ss->ops;
    int err = 0;
    for (int k = 0; k < b->npieces && err == 0; k++) {
        struct piece *p = &b->pieces[k];
        for (int i = 0; i < p->nin && err == 0; i++) {
            err = d->copy_async(p->in[i].dst, p->in[i].src, p->in[i].bytes, stream);
        }
        if (err == 0) {
            err = d->host_func(stream, host_open, p);
        }
    }
    for (int k = 0; k < b->npieces && err == 0; k++) {
        struct piece *p = &b->pieces[k];
        err = d->wait_geq(stream, ss->done, p->ticket);
        for (int i = 0; i < p->nout && err == 0; i++) {
            err = d->copy_async(p->out[i].dst, p->out[i].src, p->out[i].bytes, stream);
        }
    }
    if (err == 0) {
        err = d->host_func(stream, host_release, b);
    }
    if (err != 0) {
        /* The communicator fails, so its gated requests complete (with its error) and write
         * their tickets. The batch is not freed: host functions already on the stream may
         * still run and use it (after a runtime error they normally never do). */
        batches_add(ss, -1);
        return stream_broken(gpu, tutti__coll_name(ops[0].coll), err);
    }
    return TUTTI_OK;
}

size_t tutti__stream_pinned(const struct tutti_gpu *gpu)
{
    return gpu->stream != NULL ? atomic_load(&gpu->stream->pinned) : 0;
}

void tutti__stream_fini(struct tutti_gpu *gpu, int aborting)
{
    struct tutti_stream_state *ss = gpu->stream;
    if (ss == NULL) {
        return;
    }
    gpu->stream = NULL;
    /* Every ticket is written by now (the queue drained); this also frees streams of a
     * communicator that failed before all its tickets were written. */
    __atomic_store_n(ss->done, UINT64_MAX, __ATOMIC_RELEASE);
    pthread_mutex_lock(&ss->lock);
    int left = ss->batches;
    if (aborting && left > 0) {
        ss->orphaned = 1; /* the last host_release frees ss; the communicator goes now */
    }
    pthread_mutex_unlock(&ss->lock);
    if (aborting && left > 0) {
        tutti_info(TUTTI_SUBSYS_COLL,
                   "abort: %d stream batches not yet run; their streams go on "
                   "without this communicator",
                   left);
        return;
    }
    int64_t start = tutti__now_ns(), warned = start;
    for (;;) {
        pthread_mutex_lock(&ss->lock);
        left = ss->batches;
        pthread_mutex_unlock(&ss->lock);
        if (left == 0) {
            break;
        }
        if (tutti__now_ns() - warned > tutti__env()->TIMEOUT) {
            tutti_warn("tutti_comm_destroy: %d stream batches not yet past their last host "
                       "function after %.1f s (is a stream blocked?); still waiting",
                       left, (double)(tutti__now_ns() - start) / 1e9);
            warned = tutti__now_ns();
        }
        usleep(100);
    }
    stages_free(ss, ss->cache);
    (void)ss->ops->host_free((void *)ss->done);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}
