/*
 * sync_dev.c - the gradient sync of a model whose gradients are in GPU memory (see sync.h and
 * sync_dev.h): a communication stream beside the backend's compute stream, two events per
 * bucket, and the wire buffer in device memory. Bucket i runs on the communication stream after
 * the compute stream's ready[i] event (its layers' gradients are computed): the encode kernel,
 * tutti_allreduce with that stream (tutti's stream path: CUDA IPC between the ranks of a host,
 * else staged through pinned memory), the decode kernel, then the done[i] event. So the
 * communication of the last layers runs while the compute stream computes the earlier ones,
 * buckets run in launch order, and nothing here waits on the whole device.
 */
#include "sync_dev.h"
#include "cuda/train_cuda.h"

#include <stdio.h>
#include <string.h>

_Static_assert((int)TRAIN_PREC_BF16 == TRAIN_CUDA_WIRE_BF16 &&
                   (int)TRAIN_PREC_FP16 == TRAIN_CUDA_WIRE_FP16 &&
                   (int)TRAIN_PREC_FIXED == TRAIN_CUDA_WIRE_FIXED,
               "the module's wire formats are enum train_prec's values");
_Static_assert(TRAIN_FIXED_SHIFT == TRAIN_CUDA_FIXED_SHIFT, "one fixed-point scale");

/* "call: cudaErrorX (message)" into msg; the status of a failed CUDA call. */
static tutti_status_t cuda_failed(const struct train_sync *s, int err, const char *call, char *msg,
                                  size_t len)
{
    snprintf(msg, len, "%s: %s (%s)", call, s->cuda->error_name(err), s->cuda->error_string(err));
    return TUTTI_ERR_CUDA;
}

int train_sync_dev_init(struct train_sync *s, char *err, size_t errlen)
{
    const struct train_cuda_module *c = s->cuda;
    const struct train_mlp *m = s->m;
    char msg[400] = "";
    int e = c->get_device(&s->device);
    const char *call = "cudaGetDevice";
    if (e == 0) {
        call = "cudaStreamCreateWithFlags";
        e = c->stream_create(&s->stream);
    }
    for (int i = 0; e == 0 && i < s->nbuckets; i++) {
        call = "cudaEventCreateWithFlags";
        e = c->event_create(&s->ready[i]);
        e = e != 0 ? e : c->event_create(&s->done[i]);
    }
    if (e != 0) {
        cuda_failed(s, e, call, msg, sizeof(msg));
        snprintf(err, errlen, "setting up the gradient sync on the GPU: %s", msg);
        return -1;
    }
    s->compute = c->compute_stream(m->bctx);
    if (s->prec != TRAIN_PREC_FP32) {
        s->wire = m->be->alloc(m->bctx, m->nparams * train_wire_size(s->prec));
        if (s->wire == NULL) {
            const char *why = m->be->error(m->bctx);
            snprintf(err, errlen, "no GPU memory for %zu %s gradients: %s", m->nparams,
                     train_prec_name(s->prec), why != NULL ? why : "allocation failed");
            return -1;
        }
    }
    return 0;
}

void train_sync_dev_destroy(struct train_sync *s)
{
    const struct train_cuda_module *c = s->cuda;
    /* Best effort at teardown: whatever failed was reported where it happened. */
    if (s->stream != NULL) {
        (void)c->stream_synchronize(s->stream);
    }
    for (int i = 0; i < s->nbuckets; i++) {
        if (s->ready[i] != NULL) {
            (void)c->event_destroy(s->ready[i]);
        }
        if (s->done[i] != NULL) {
            (void)c->event_destroy(s->done[i]);
        }
        s->ready[i] = s->done[i] = NULL;
    }
    if (s->stream != NULL) {
        (void)c->stream_destroy(s->stream);
        s->stream = NULL;
    }
    if (s->wire != NULL) {
        s->m->be->free(s->m->bctx, s->wire);
        s->wire = NULL;
    }
}

tutti_status_t train_sync_dev_launch(struct train_sync *s, int i, char *msg, size_t len)
{
    const struct train_cuda_module *c = s->cuda;
    const struct train_bucket *b = &s->b[i];
    void *buf = train_sync_buf(s, b->off);
    float *g = s->grads + b->off;
    int e = c->event_record(s->ready[i], s->compute);
    if (e != 0) {
        return cuda_failed(s, e, "cudaEventRecord (gradients computed)", msg, len);
    }
    e = c->stream_wait_event(s->stream, s->ready[i]);
    if (e != 0) {
        return cuda_failed(s, e, "cudaStreamWaitEvent", msg, len);
    }
    if (s->wire != NULL && (e = c->wire_encode((int)s->prec, g, buf, b->count, s->stream)) != 0) {
        return cuda_failed(s, e, "launching the wire encode kernel", msg, len);
    }
    tutti_status_t st = tutti_allreduce(buf, buf, b->count, train_wire_type(s->prec), TUTTI_SUM,
                                        s->comm, s->stream);
    if (st != TUTTI_OK) {
        const char *why = tutti_last_error(s->comm);
        snprintf(msg, len, "%s", why != NULL && why[0] != '\0' ? why : tutti_status_string(st));
        return st;
    }
    if (s->wire != NULL && (e = c->wire_decode((int)s->prec, buf, g, b->count, s->stream)) != 0) {
        return cuda_failed(s, e, "launching the wire decode kernel", msg, len);
    }
    e = c->event_record(s->done[i], s->stream);
    return e != 0 ? cuda_failed(s, e, "cudaEventRecord (bucket reduced)", msg, len) : TUTTI_OK;
}

tutti_status_t train_sync_dev_complete(struct train_sync *s, int i, char *msg, size_t len)
{
    const struct train_cuda_module *c = s->cuda;
    /* A bucket becomes communication when its layers are done, or when the one before it is
     * (the stream runs them in order): stamped late in the second case, which the union of
     * intervals in train_sync_finish takes as it should. */
    int e = c->event_synchronize(s->ready[i]);
    s->b[i].t_launch = train_now();
    if (e == 0) {
        e = c->event_synchronize(s->done[i]);
    }
    if (e != 0) {
        return cuda_failed(s, e, "cudaEventSynchronize", msg, len);
    }
    /* tutti's stream path writes its results even when the call failed (the stream must not
     * hang); the failure is the communicator's asynchronous error. */
    tutti_status_t st = TUTTI_OK;
    if (tutti_comm_get_async_error(s->comm, &st) != TUTTI_OK || st != TUTTI_OK) {
        st = st != TUTTI_OK ? st : TUTTI_ERR_INTERNAL;
        const char *why = tutti_last_error(s->comm);
        snprintf(msg, len, "%s", why != NULL && why[0] != '\0' ? why : tutti_status_string(st));
    }
    return st;
}

tutti_status_t train_sync_dev_backward_done(struct train_sync *s, int launched, char *msg,
                                            size_t len)
{
    const struct train_cuda_module *c = s->cuda;
    if (launched == 0) {
        return TUTTI_OK;
    }
    int e = c->stream_wait_event(s->compute, s->done[launched - 1]);
    if (e != 0) {
        return cuda_failed(s, e, "cudaStreamWaitEvent (SGD after the last bucket)", msg, len);
    }
    e = c->event_synchronize(s->ready[launched - 1]);
    return e != 0 ? cuda_failed(s, e, "cudaEventSynchronize (backward pass)", msg, len) : TUTTI_OK;
}

tutti_status_t train_sync_dev_thread_init(struct train_sync *s, char *msg, size_t len)
{
    int e = s->cuda->set_device(s->device);
    return e != 0 ? cuda_failed(s, e, "cudaSetDevice (gradient waiter thread)", msg, len)
                  : TUTTI_OK;
}
