/*
 * ib_conn.c - set-up and close of verbs connections (ib.h).
 *
 * Both ranks call connect() for (peer, channel). Each makes the TCP side connection (the lower
 * rank connects, both authenticate with the job's secret), then its queue pairs, completion
 * queue and registered FIFOs, posts its receives and sends a hello: its queue pairs' addresses
 * and where its receive FIFO is. On the peer's hello it brings its queue pairs to RTR and RTS
 * against the peer's, and sends "ready"; the connection is usable once the peer's "ready"
 * arrives, so that no RDMA WRITE reaches a queue pair that cannot receive yet. Why a TCP side
 * connection rather than rdma_cm: tutti's handshake (the job's secret, HMAC over nonces),
 * abort notices and progress beats already live on TCP, and a side connection that stays open
 * tells at once when the peer's process ends, which queue pairs learn only after their retries.
 */
#include "ib.h"
#include "base/check.h"
#include "tutti/comm.h"
#include "ib_wire.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

tutti_status_t tutti__ib_conn_fail(struct ib_conn *c, tutti_status_t st, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->status == TUTTI_OK) {
        c->status = tutti__set_error(c->ctx->args->err, st, "%s", msg);
    }
    return c->status;
}

/* Receives carry no buffer (data arrives by RDMA WRITE, credits are empty sends); their work
 * request id is (queue pair << 2) | 2, which ib_data.c decodes. Posted as one chain. */
tutti_status_t tutti__ib_post_recvs(struct ib_conn *c, int q)
{
    struct ibv_recv_wr wr[32], *bad;
    int n = c->rq_depth - c->rq_posted[q];
    n = n > 32 ? 32 : n;
    for (int i = 0; i < n; i++) {
        wr[i] = (struct ibv_recv_wr){.wr_id = (uint64_t)q << 2 | 2,
                                     .sg_list = NULL,
                                     .num_sge = 0,
                                     .next = i + 1 < n ? &wr[i + 1] : NULL};
    }
    int err = n > 0 ? ibv_post_recv(c->qp[q], wr, &bad) : 0;
    if (err != 0) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM, "%s:%d QP %u to %s: posting receives: %s",
                                   c->ctx->port.dev, c->ctx->port.port, c->qp[q]->qp_num,
                                   c->peer_name, strerror(err));
    }
    c->rq_posted[q] += n;
    return c->rq_posted[q] < c->rq_depth ? tutti__ib_post_recvs(c, q) : TUTTI_OK;
}

/* Completion channel, completion queue, queue pairs, FIFOs; receives posted. */
static tutti_status_t resources_new(struct ib_conn *c)
{
    struct ib_ctx *ctx = c->ctx;
    struct tutti_ib_dev *d = &ctx->dev;
    char why[256];
    size_t fifo = (size_t)c->nslots * ib_stride(c);
    c->sq_depth = 2 * c->nslots + 4; /* writes and credits */
    c->rq_depth = 2 * c->nslots + 4;
    c->chan = ibv_create_comp_channel(d->ctx);
    int fl = c->chan != NULL ? fcntl(c->chan->fd, F_GETFL) : -1;
    if (fl < 0 || fcntl(c->chan->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM, "%s:%d: completion channel: %s",
                                   ctx->port.dev, ctx->port.port, strerror(errno));
    }
    c->cq = ibv_create_cq(d->ctx, c->nqps * (c->sq_depth + c->rq_depth), c, c->chan, 0);
    if (c->cq == NULL) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM, "%s:%d: completion queue: %s",
                                   ctx->port.dev, ctx->port.port, strerror(errno));
    }
    int inl = ctx->inline_max;
    for (int q = 0; q < c->nqps; q++) {
        int got = ctx->inline_max;
        if (tutti__ib_qp_create(d, c->cq, c->sq_depth, &got, &c->qp[q], &c->mine[q], why,
                                sizeof(why)) != 0) {
            return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM, "ib: %s", why);
        }
        inl = got < inl ? got : inl;
    }
    c->inline_max = inl;
    c->rlen = calloc((size_t)c->nslots, sizeof(*c->rlen));
    if (c->rlen == NULL || posix_memalign((void **)&c->sbuf, 4096, fifo) != 0 ||
        posix_memalign((void **)&c->rbuf, 4096, fifo) != 0) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_NO_MEMORY,
                                   "ib: cannot allocate 2 x %zu bytes "
                                   "of FIFOs for %s",
                                   fifo, c->peer_name);
    }
    c->smr = tutti__ib_reg(ctx, c->sbuf, fifo, 0);
    c->rmr = c->smr != NULL ? tutti__ib_reg(ctx, c->rbuf, fifo, 1) : NULL;
    if (c->rmr == NULL) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM,
                                   "%s:%d: cannot register 2 x %zu bytes of FIFOs: %s (is the "
                                   "locked-memory limit, ulimit -l, large enough?)",
                                   ctx->port.dev, ctx->port.port, fifo, strerror(errno));
    }
    for (int q = 0; q < c->nqps; q++) {
        c->snext_done[q] = (uint64_t)q;
        c->rnext[q] = (uint64_t)q;
        TUTTI_CHECK(tutti__ib_post_recvs(c, q));
    }
    return TUTTI_OK;
}

/* Send one message on the side connection (its slots are far larger than any of them). */
static tutti_status_t side_send(struct ib_conn *c, const uint8_t *msg, size_t len)
{
    void *slot;
    size_t cap;
    tutti_status_t st = c->side->ops->send_acquire(c->side, &slot, &cap);
    if (st == TUTTI_IN_PROGRESS) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_INTERNAL, "ib: side connection to %s is full",
                                   c->peer_name);
    }
    TUTTI_CHECK(st);
    memcpy(slot, msg, len);
    return c->side->ops->send_post(c->side, len, NULL);
}

/* The next message on the side connection: *len_p bytes at *msg_p, or IN_PROGRESS. */
static tutti_status_t side_peek(struct ib_conn *c, const uint8_t **msg_p, size_t *len_p)
{
    int moved = 0;
    TUTTI_CHECK(c->side->ops->progress(c->side, &moved));
    const void *buf;
    tutti_status_t st = c->side->ops->recv_peek(c->side, &buf, len_p, NULL);
    *msg_p = buf;
    return st;
}

static tutti_status_t send_hello(struct ib_conn *c)
{
    struct ib_hello h = {.nqps = (uint32_t)c->nqps,
                         .nslots = (uint32_t)c->nslots,
                         .slot_size = (uint32_t)c->base.slot_size,
                         .addr = (uint64_t)(uintptr_t)c->rbuf,
                         .rkey = c->rmr->rkey};
    memcpy(h.qp, c->mine, sizeof(c->mine[0]) * (size_t)c->nqps);
    uint8_t msg[IB_HELLO_MAX];
    return side_send(c, msg, tutti__ib_hello_encode(&h, msg));
}

/* The peer's hello arrived: connect the queue pairs and say "ready". */
static tutti_status_t on_hello(struct ib_conn *c, const uint8_t *msg, size_t len)
{
    struct ib_ctx *ctx = c->ctx;
    struct ib_hello h;
    char why[300];
    if (tutti__ib_hello_decode(msg, len, (uint32_t)c->nqps, (uint32_t)c->nslots,
                               (uint32_t)c->base.slot_size, &h, why, sizeof(why)) != 0) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE, "ib: set-up with %s: %s", c->peer_name,
                                   why);
    }
    c->raddr = h.addr;
    c->rkey = h.rkey;
    for (int q = 0; q < c->nqps; q++) {
        if (tutti__ib_qp_connect(&ctx->dev, c->qp[q], &c->mine[q], &h.qp[q], ctx->timeout_exp,
                                 ctx->retries, why, sizeof(why)) != 0) {
            return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE, "ib: connecting to %s: %s",
                                       c->peer_name, why);
        }
    }
    uint8_t ready[4];
    tutti__ib_msg_encode(IB_MSG_READY, ready);
    return side_send(c, ready, sizeof(ready));
}

/* Move the set-up of c forward. */
static tutti_status_t advance(struct ib_conn *c)
{
    struct ib_ctx *ctx = c->ctx;
    if (c->stage == IB_STAGE_SIDE) {
        TUTTI_CHECK(ctx->args->side_ops->side->connect(ctx->args->side_tctx, c->base.peer,
                                                       c->base.channel, &c->side));
        if (c->side == NULL) {
            return TUTTI_OK; /* the TCP transport keeps its own deadline */
        }
        TUTTI_CHECK(tutti__ib_ctx_open(ctx));
        TUTTI_CHECK(resources_new(c));
        TUTTI_CHECK(send_hello(c));
        c->stage = IB_STAGE_HELLO;
    }
    while (c->stage == IB_STAGE_HELLO || c->stage == IB_STAGE_READY) {
        const uint8_t *msg;
        size_t len;
        tutti_status_t st = side_peek(c, &msg, &len);
        if (st == TUTTI_IN_PROGRESS) {
            break;
        }
        TUTTI_CHECK(st);
        if (c->stage == IB_STAGE_HELLO) {
            st = on_hello(c, msg, len);
        } else if (tutti__ib_msg_kind(msg, len) != IB_MSG_READY) {
            st = tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE,
                                     "ib: set-up with %s: expected \"ready\", got %zu bytes",
                                     c->peer_name, len);
        }
        TUTTI_CHECK(st);
        TUTTI_CHECK(c->side->ops->recv_release(c->side));
        c->stage = c->stage == IB_STAGE_HELLO ? IB_STAGE_READY : IB_STAGE_UP;
    }
    if (c->stage != IB_STAGE_UP && tutti__now_ns() > c->deadline_ns) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_TIMEOUT,
                                   "ib: %s did not complete the set-up of channel %d within "
                                   "%.1f s",
                                   c->peer_name, c->base.channel,
                                   (double)ctx->args->timeout_ns / 1e9);
    }
    return TUTTI_OK;
}

static struct ib_conn *conn_new(struct ib_ctx *ctx, int peer, int channel)
{
    struct ib_conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->base.ops = ctx->ops;
    c->base.peer = peer;
    c->base.channel = channel;
    c->base.slot_size = ctx->slot_size;
    c->ctx = ctx;
    c->nqps = ctx->nqps;
    c->nslots = ctx->nslots;
    c->stage = IB_STAGE_SIDE;
    c->deadline_ns = tutti__now_ns() + ctx->args->timeout_ns;
    tutti__tpeer_name(ctx->args->peers, peer, c->peer_name, sizeof(c->peer_name));
    c->next = ctx->list;
    if (ctx->list != NULL) {
        ctx->list->prev = c;
    }
    ctx->list = c;
    ctx->conns[peer * TUTTI_MAX_CHANNELS + channel] = c;
    return c;
}

tutti_status_t tutti__ib_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p)
{
    struct ib_ctx *ctx = tctx;
    const struct tutti_tctx_args *a = ctx->args;
    if (peer < 0 || peer >= a->nranks || peer == a->rank || channel < 0 ||
        channel >= TUTTI_MAX_CHANNELS || a->peers == NULL || a->side_ops == NULL) {
        return tutti__set_error(a->err, TUTTI_ERR_INVALID_ARG,
                                "ib connect of rank %d to rank %d channel %d", a->rank, peer,
                                channel);
    }
    struct ib_conn *c = ctx->conns[peer * TUTTI_MAX_CHANNELS + channel];
    if (c == NULL && (c = conn_new(ctx, peer, channel)) == NULL) {
        return tutti__set_error(a->err, TUTTI_ERR_NO_MEMORY, "ib: no memory");
    }
    if (c->stage == IB_STAGE_UP) {
        return tutti__set_error(a->err, TUTTI_ERR_INVALID_USAGE,
                                "ib: rank %d channel %d is already connected", peer, channel);
    }
    tutti_status_t st = advance(c);
    if (st != TUTTI_OK) {
        tutti__ib_close(&c->base);
        return st;
    }
    if (c->stage == IB_STAGE_UP) {
        tutti_debug(TUTTI_SUBSYS_NET, "ib: connected to %s on channel %d: %s:%d, %d QP(s) from %u",
                    c->peer_name, channel, ctx->port.dev, ctx->port.port, c->nqps,
                    c->qp[0]->qp_num);
    }
    *conn_p = c->stage == IB_STAGE_UP ? &c->base : NULL;
    return TUTTI_OK;
}

/* Tell the peer this is a close on purpose, best effort (its side connection then ends). */
static void say_bye(struct ib_conn *c)
{
    if (c->side == NULL || c->stage != IB_STAGE_UP || c->status != TUTTI_OK) {
        return;
    }
    uint8_t bye[4];
    void *slot;
    size_t cap;
    tutti__ib_msg_encode(IB_MSG_BYE, bye);
    if (c->side->ops->send_acquire(c->side, &slot, &cap) == TUTTI_OK) {
        memcpy(slot, bye, sizeof(bye));
        int moved = 0;
        if (c->side->ops->send_post(c->side, sizeof(bye), NULL) == TUTTI_OK) {
            (void)c->side->ops->progress(c->side, &moved);
        }
    }
}

tutti_status_t tutti__ib_close(struct tutti_tconn *tc)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    struct ib_ctx *ctx = c->ctx;
    say_bye(c);
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        ctx->list = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    ctx->conns[c->base.peer * TUTTI_MAX_CHANNELS + c->base.channel] = NULL;
    for (int q = 0; q < c->nqps; q++) {
        if (c->qp[q] != NULL) {
            ibv_destroy_qp(c->qp[q]);
        }
    }
    if (c->cq != NULL) {
        ibv_ack_cq_events(c->cq, c->unacked);
        ibv_destroy_cq(c->cq);
    }
    if (c->chan != NULL) {
        ibv_destroy_comp_channel(c->chan);
    }
    tutti__ib_dereg(c->smr);
    tutti__ib_dereg(c->rmr);
    free(c->sbuf);
    free(c->rbuf);
    free(c->rlen);
    if (c->side != NULL) {
        c->side->ops->close(c->side);
    }
    free(c);
    return TUTTI_OK;
}
