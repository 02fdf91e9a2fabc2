/*
 * sim.c - in-process network for schedule tests (see sim.h). The FIFOs are bounded like the
 * real ones, so a schedule that would deadlock on full FIFOs deadlocks here too.
 */
#include "sim.h"
#include "exec/fabric.h"
#include "exec/peer.h"

#include <stdlib.h>
#include <string.h>

struct sim_fifo {
    unsigned char *data; /* nslots * slot_bytes, allocated on first use */
    size_t *len;
    struct tutti_fp *fp; /* per slot: the fingerprint it was posted with */
    unsigned long head, tail;
};

struct sim_ctx {
    struct sim_net *net;
    int rank;
};

struct sim_net {
    int nranks, nslots;
    size_t slot_bytes;
    struct sim_fifo *fifos; /* [src][dst][channel] */
    struct sim_ctx *ctxs;
    struct tutti_fabric **fabs;
    char msg[512]; /* sim_error's copy */
    /* sim_net_refs: connections take frames by reference, share_every and lone_max as given;
     * the frames each rank posted by reference and copied into a slot */
    int refs;
    uint32_t share_every;
    size_t lone_max;
    uint32_t fill; /* sim_net_fill: how the connections' slots are written (TUTTI_FILL_*) */
    unsigned long *by_ref, *copied;
};

struct sim_conn {
    struct tutti_tconn base;
    struct sim_net *net;
    int rank;
    struct sim_fifo *out, *in;
};

static struct sim_fifo *fifo(struct sim_net *net, int src, int dst, int ch)
{
    struct sim_fifo *f = &net->fifos[((size_t)src * net->nranks + dst) * TUTTI_MAX_CHANNELS + ch];
    if (f->data == NULL) {
        f->data = malloc((size_t)net->nslots * net->slot_bytes);
        f->len = calloc((size_t)net->nslots, sizeof(*f->len));
        f->fp = calloc((size_t)net->nslots, sizeof(*f->fp));
    }
    return f;
}

static tutti_status_t sim_acquire(struct tutti_tconn *c, void **buf_p, size_t *cap_p)
{
    struct sim_conn *s = (struct sim_conn *)c;
    if (s->out->head - s->out->tail >= (unsigned long)s->net->nslots) {
        return TUTTI_IN_PROGRESS;
    }
    *buf_p = s->out->data + (s->out->head % s->net->nslots) * s->net->slot_bytes;
    *cap_p = s->net->slot_bytes;
    return TUTTI_OK;
}

static tutti_status_t sim_post(struct tutti_tconn *c, size_t bytes, const struct tutti_fp *fp)
{
    struct sim_conn *s = (struct sim_conn *)c;
    if (bytes > s->net->slot_bytes) {
        return TUTTI_ERR_INTERNAL; /* a plan step larger than a slot: a schedule bug */
    }
    s->out->len[s->out->head % s->net->nslots] = bytes;
    s->out->fp[s->out->head % s->net->nslots] = fp != NULL ? *fp : (struct tutti_fp){{0}};
    s->out->head++;
    s->net->copied[s->rank] += bytes > 0;
    return TUTTI_OK;
}

/* By reference: the data is copied here (one process), but counted apart. */
static tutti_status_t sim_post_ref(struct tutti_tconn *c, const void *buf, size_t bytes,
                                   const struct tutti_fp *fp)
{
    struct sim_conn *s = (struct sim_conn *)c;
    if (bytes > s->net->slot_bytes) {
        return TUTTI_ERR_INTERNAL;
    }
    memcpy(s->out->data + (s->out->head % s->net->nslots) * s->net->slot_bytes, buf, bytes);
    tutti_status_t st = sim_post(c, bytes, fp);
    s->net->copied[s->rank] -= bytes > 0;
    s->net->by_ref[s->rank]++;
    return st;
}

static tutti_status_t sim_peek(struct tutti_tconn *c, const void **buf_p, size_t *len_p,
                               const struct tutti_fp **fp_p)
{
    struct sim_conn *s = (struct sim_conn *)c;
    if (s->in->head == s->in->tail) {
        return TUTTI_IN_PROGRESS;
    }
    *buf_p = s->in->data + (s->in->tail % s->net->nslots) * s->net->slot_bytes;
    *len_p = s->in->len[s->in->tail % s->net->nslots];
    if (fp_p != NULL) {
        *fp_p = &s->in->fp[s->in->tail % s->net->nslots];
    }
    return TUTTI_OK;
}

static tutti_status_t sim_release(struct tutti_tconn *c)
{
    ((struct sim_conn *)c)->in->tail++;
    return TUTTI_OK;
}

static tutti_status_t sim_progress(struct tutti_tconn *c, int *moved_p)
{
    (void)c;
    *moved_p = 0;
    return TUTTI_OK;
}

static tutti_status_t sim_flushed(struct tutti_tconn *c, int *done_p)
{
    (void)c;
    *done_p = 1;
    return TUTTI_OK;
}

static tutti_status_t sim_close(struct tutti_tconn *c)
{
    free(c);
    return TUTTI_OK;
}

static tutti_status_t sim_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p);

static const struct tutti_transport_ops sim_ops = {
    .size = sizeof(struct tutti_transport_ops),
    .id = TUTTI_TRANSPORT_SHM,
    .name = "sim",
    .connect = sim_connect,
    .send_acquire = sim_acquire,
    .send_post = sim_post,
    .recv_peek = sim_peek,
    .recv_release = sim_release,
    .progress = sim_progress,
    .flushed = sim_flushed,
    .close = sim_close,
};

static const struct tutti_transport_ops sim_ref_ops = {
    .size = sizeof(struct tutti_transport_ops),
    .id = TUTTI_TRANSPORT_SHM,
    .name = "sim-ref",
    .flags = TUTTI_TRANSPORT_SEND_REF,
    .connect = sim_connect,
    .send_acquire = sim_acquire,
    .send_post = sim_post,
    .send_post_ref = sim_post_ref,
    .recv_peek = sim_peek,
    .recv_release = sim_release,
    .progress = sim_progress,
    .flushed = sim_flushed,
    .close = sim_close,
};

static tutti_status_t sim_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p)
{
    struct sim_ctx *ctx = tctx;
    struct sim_conn *c = calloc(1, sizeof(*c));
    c->base.ops = ctx->net->refs ? &sim_ref_ops : &sim_ops;
    c->base.share_every = ctx->net->share_every;
    c->base.lone_max = ctx->net->lone_max;
    c->base.fill = (struct tutti_fill_clock){.mode = ctx->net->fill,
                                             .stream = ctx->net->fill == TUTTI_FILL_STREAMED,
                                             .warm = (uint32_t)ctx->net->nslots};
    c->rank = ctx->rank;
    c->base.peer = peer;
    c->base.channel = channel;
    c->base.slot_size = ctx->net->slot_bytes;
    c->net = ctx->net;
    c->out = fifo(ctx->net, ctx->rank, peer, channel);
    c->in = fifo(ctx->net, peer, ctx->rank, channel);
    *conn_p = &c->base;
    return TUTTI_OK;
}

struct sim_net *sim_net_new(int nranks, int nslots, size_t slot_bytes)
{
    struct sim_net *net = calloc(1, sizeof(*net));
    net->nranks = nranks;
    net->nslots = nslots;
    net->slot_bytes = slot_bytes;
    net->fifos = calloc((size_t)nranks * nranks * TUTTI_MAX_CHANNELS, sizeof(*net->fifos));
    net->ctxs = calloc((size_t)nranks, sizeof(*net->ctxs));
    net->fabs = calloc((size_t)nranks, sizeof(*net->fabs));
    net->by_ref = calloc((size_t)nranks, sizeof(*net->by_ref));
    net->copied = calloc((size_t)nranks, sizeof(*net->copied));
    return net;
}

void sim_net_refs(struct sim_net *net, uint32_t share_every, size_t lone_max)
{
    net->refs = 1;
    net->share_every = share_every;
    net->lone_max = lone_max;
}

void sim_net_fill(struct sim_net *net, uint32_t mode)
{
    net->fill = mode;
}

void sim_posts(const struct sim_net *net, int rank, unsigned long *by_ref_p,
               unsigned long *copied_p)
{
    *by_ref_p = net->by_ref[rank];
    *copied_p = net->copied[rank];
}

struct tutti_fabric *sim_fabric(struct sim_net *net, int rank, int nchannels)
{
    if (net->fabs[rank] != NULL) {
        return net->fabs[rank];
    }
    struct tutti_fabric *f = calloc(1, sizeof(*f));
    f->rank = rank;
    f->nranks = net->nranks;
    f->peers = calloc((size_t)net->nranks, sizeof(*f->peers));
    for (int r = 0; r < net->nranks; r++) {
        f->peers[r].rank = r;
        strcpy(f->peers[r].hostname, "sim");
    }
    f->cfg.nchannels = nchannels;
    f->cfg.chunk_bytes = net->slot_bytes;
    f->cfg.timeout_ns = 1000000000;
    pthread_mutex_init(&f->err.lock, NULL);
    f->net.conns = calloc((size_t)net->nranks * TUTTI_MAX_CHANNELS, sizeof(*f->net.conns));
    f->net.peer_transport = calloc((size_t)net->nranks, 1); /* all 0 = SHM slot: sim_ops */
    f->net.ops[TUTTI_TRANSPORT_SHM] = &sim_ops;
    net->ctxs[rank].net = net;
    net->ctxs[rank].rank = rank;
    f->net.tctx[TUTTI_TRANSPORT_SHM] = &net->ctxs[rank];
    f->state.wakefd = -1;
    net->fabs[rank] = f;
    return f;
}

const char *sim_error(struct sim_net *net, int rank)
{
    net->msg[0] = '\0';
    if (net->fabs[rank] != NULL) {
        tutti__errbuf_read(&net->fabs[rank]->err, net->msg, sizeof(net->msg));
    }
    return net->msg;
}

void sim_net_free(struct sim_net *net)
{
    for (int r = 0; r < net->nranks; r++) {
        struct tutti_fabric *f = net->fabs[r];
        if (f == NULL) {
            continue;
        }
        for (size_t i = 0; i < (size_t)net->nranks * TUTTI_MAX_CHANNELS; i++) {
            if (f->net.conns[i] != NULL) {
                free(f->net.conns[i]);
            }
        }
        free(f->net.conns);
        free(f->net.peer_transport);
        free(f->peers);
        pthread_mutex_destroy(&f->err.lock);
        free(f);
    }
    for (size_t i = 0; i < (size_t)net->nranks * net->nranks * TUTTI_MAX_CHANNELS; i++) {
        free(net->fifos[i].data);
        free(net->fifos[i].len);
        free(net->fifos[i].fp);
    }
    free(net->fifos);
    free(net->ctxs);
    free(net->fabs);
    free(net->by_ref);
    free(net->copied);
    free(net);
}

int sim_run(struct tutti_exec *exs, int n)
{
    int *done = calloc((size_t)n, sizeof(*done));
    int left = n, rc = 0;
    while (left > 0 && rc == 0) {
        int moved = 0;
        for (int r = 0; r < n; r++) {
            if (done[r]) {
                continue;
            }
            int p = 0;
            tutti_status_t st = tutti__exec_advance(&exs[r], &p);
            moved |= p;
            if (st == TUTTI_OK) {
                done[r] = 1;
                left--;
                moved = 1;
            } else if (st != TUTTI_IN_PROGRESS) {
                rc = st;
            }
        }
        if (!moved && rc == 0) {
            rc = -1;
        }
    }
    free(done);
    return rc;
}
