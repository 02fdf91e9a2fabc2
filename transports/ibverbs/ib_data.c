/*
 * ib_data.c - the data path of the verbs transport (the FIFO protocol is in ib.h).
 *
 * Nothing here makes a system call on the way of data: posting work requests and polling the
 * completion queue are user-space operations on a real NIC. The side connection is read only
 * by check() (the engine's millisecond checks) and when a completion fails, to learn whether
 * the peer said why. To sleep, pollfds() arms the completion queue and hands out its channel's
 * fd; a completion that slipped in before the arming is read there and kept (stash) for the
 * next progress(), and the context's eventfd (kick) makes the engine's poll() return at once.
 */
#include "ib.h"
#include "base/check.h"
#include "ib_wire.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Work request ids: bits 0-1 the kind, 2-5 the queue pair, 8 and up the slot number. */
enum { WR_WRITE = 0, WR_CREDIT = 1, WR_RECV = 2 };
#define WR_ID(kind, q, k) ((uint64_t)(kind) | (uint64_t)(q) << 2 | (uint64_t)(k) << 8)
#define WR_KIND(id)       ((int)((id)&3))
#define WR_QP(id)         ((int)(((id) >> 2) & 15))
#define WR_SLOT(id)       ((id) >> 8)

#define POLL_BATCH 16
#define ACK_EVERY  16 /* completion events acknowledged in batches (the ack takes a lock) */

static size_t slot_of(const struct ib_conn *c, uint64_t k)
{
    return (size_t)(k % (uint64_t)c->nslots);
}

static int qp_of(const struct ib_conn *c, uint64_t k)
{
    return (int)(k % (uint64_t)c->nqps);
}

static int arrived(const struct ib_conn *c, uint64_t k)
{
    return c->rnext[qp_of(c, k)] > k;
}

static int write_done(const struct ib_conn *c, uint64_t k)
{
    return c->snext_done[qp_of(c, k)] > k;
}

/* "rxe0:1 QP 17" of queue pair q, for messages. */
static const char *where(const struct ib_conn *c, int q, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%d QP %u", c->ctx->port.dev, c->ctx->port.port,
             c->qp[q] != NULL ? c->qp[q]->qp_num : 0);
    return buf;
}

/* A completion with an error: the peer's abort notice if it sent one, else the completion's. */
/*
 * A completion with an error. When the peer died or failed, the queue pair often learns first
 * (its memory was deregistered: "remote access error"; nothing answers: retries exhausted) and
 * the side connection's end or abort notice follows within milliseconds: wait for them up to
 * IB_GRACE_MS, so that the message says what happened to the peer, not only what the NIC saw.
 */
#define IB_GRACE_MS 250
static tutti_status_t wc_failed(struct ib_conn *c, const struct ibv_wc *wc)
{
    int64_t end = tutti__now_ns() + IB_GRACE_MS * 1000000ll;
    while (c->status == TUTTI_OK) {
        tutti_status_t st = tutti__ib_side_check(c); /* an abort notice, or the peer died */
        int64_t left = end - tutti__now_ns();
        if (st != TUTTI_OK || c->peer_bye || left <= 0) {
            break;
        }
        struct pollfd pfd;
        if (c->side->ops->pollfds(c->side, &pfd, 1) == 1) {
            (void)poll(&pfd, 1, (int)(left / 1000000 + 1));
        }
    }
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    char msg[200];
    tutti__ib_wc_error(&c->ctx->dev, wc, msg, sizeof(msg));
    return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE, "%s to %s%s", msg, c->peer_name,
                               c->peer_bye ? " (it destroyed its communicator)" : "");
}

/* The peer broke the protocol (a bug or memory corruption there): fail loudly. */
__attribute__((format(printf, 3, 4))) static tutti_status_t bad_wc(struct ib_conn *c, int q,
                                                                   const char *fmt, ...)
{
    char w[96], what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE, "%s from %s: protocol error: %s",
                               where(c, q, w, sizeof(w)), c->peer_name, what);
}

/* A data write landed in receive slot rnext[q]. */
static tutti_status_t on_data(struct ib_conn *c, int q, uint32_t imm)
{
    uint64_t k = c->rnext[q];
    uint32_t len = imm & (uint32_t)IB_SLOT_MAX;
    if ((imm >> IB_IMM_LEN_BITS) != (uint32_t)(k & 0xff)) {
        return bad_wc(c, q, "a write for slot %u (mod 256) where slot %llu was next",
                      imm >> IB_IMM_LEN_BITS, (unsigned long long)k);
    }
    if (len > c->base.slot_size || k >= c->rtail + (uint64_t)c->nslots) {
        return bad_wc(c, q,
                      "%u bytes written into slot %llu: beyond its credits (slots below %llu) "
                      "or the slot size (%zu)",
                      len, (unsigned long long)k, (unsigned long long)(c->rtail + c->nslots),
                      c->base.slot_size);
    }
    c->rlen[slot_of(c, k)] = len;
    c->rnext[q] = k + (uint64_t)c->nqps;
    return TUTTI_OK;
}

/* A credit: the peer has released `imm` slots in all (mod 2^32). */
static tutti_status_t on_credit(struct ib_conn *c, uint32_t imm)
{
    uint64_t credits = c->credits + (uint32_t)(imm - (uint32_t)c->credits);
    if (credits > c->shead) {
        return bad_wc(c, 0, "a credit for %llu slots, of %llu sent", (unsigned long long)credits,
                      (unsigned long long)c->shead);
    }
    c->credits = credits;
    return TUTTI_OK;
}

static tutti_status_t on_wc(struct ib_conn *c, const struct ibv_wc *wc)
{
    if (wc->status != IBV_WC_SUCCESS) {
        return wc_failed(c, wc);
    }
    int q = WR_QP(wc->wr_id);
    if (q >= c->nqps) {
        return bad_wc(c, 0, "a completion of unknown queue pair %d", q);
    }
    switch (WR_KIND(wc->wr_id)) {
    case WR_WRITE:
        if (WR_SLOT(wc->wr_id) != c->snext_done[q]) {
            return bad_wc(c, q, "write %llu completed where %llu was next",
                          (unsigned long long)WR_SLOT(wc->wr_id),
                          (unsigned long long)c->snext_done[q]);
        }
        c->snext_done[q] += (uint64_t)c->nqps;
        c->sdone++;
        c->sq_out[q]--;
        return TUTTI_OK;
    case WR_CREDIT:
        c->sq_out[q]--;
        return TUTTI_OK;
    default: /* WR_RECV */
        c->rq_posted[q]--;
        if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            return on_data(c, q, ntohl(wc->imm_data));
        }
        if (wc->opcode == IBV_WC_RECV && (wc->wc_flags & IBV_WC_WITH_IMM) != 0 && q == 0) {
            return on_credit(c, ntohl(wc->imm_data));
        }
        return bad_wc(c, q, "a receive of opcode %d", (int)wc->opcode);
    }
}

/* Post a credit if the peer has not been told of every release and queue pair 0 has room. */
static tutti_status_t send_credit(struct ib_conn *c)
{
    if (c->credit_sent == c->rtail || c->sq_out[0] >= c->sq_depth) {
        return TUTTI_OK;
    }
    struct ibv_send_wr *bad, wr = {
                                 .wr_id = WR_ID(WR_CREDIT, 0, 0),
                                 .num_sge = 0,
                                 .opcode = IBV_WR_SEND_WITH_IMM,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .imm_data = htonl((uint32_t)c->rtail),
                             };
    int err = ibv_post_send(c->qp[0], &wr, &bad);
    if (err != 0) {
        char w[96];
        return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM, "%s to %s: posting a credit: %s",
                                   where(c, 0, w, sizeof(w)), c->peer_name, strerror(err));
    }
    c->sq_out[0]++;
    c->credit_sent = c->rtail;
    return TUTTI_OK;
}

/* Everything the completion queue holds, the stash first; receives re-posted. */
static tutti_status_t poll_cq(struct ib_conn *c, int *moved)
{
    for (int i = 0; i < c->nstash; i++) {
        TUTTI_CHECK(on_wc(c, &c->stash[i]));
        *moved = 1;
    }
    if (c->nstash > 0) {
        uint64_t v;
        c->nstash = 0;
        ssize_t r = read(c->ctx->kick, &v, sizeof(v)); /* EAGAIN when another drained it */
        (void)r;
    }
    struct ibv_wc wc[POLL_BATCH];
    int n;
    do {
        n = ibv_poll_cq(c->cq, POLL_BATCH, wc);
        if (n < 0) {
            return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM,
                                       "%s:%d: polling the completion "
                                       "queue of %s failed",
                                       c->ctx->port.dev, c->ctx->port.port, c->peer_name);
        }
        for (int i = 0; i < n; i++) {
            TUTTI_CHECK(on_wc(c, &wc[i]));
        }
        *moved |= n > 0;
    } while (n == POLL_BATCH);
    for (int q = 0; q < c->nqps; q++) {
        if (c->rq_posted[q] < c->rq_depth) {
            TUTTI_CHECK(tutti__ib_post_recvs(c, q));
        }
    }
    return send_credit(c);
}

tutti_status_t tutti__ib_progress(struct tutti_tconn *tc, int *moved_p)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (c->armed) { /* take the events of the channel, if any (non-blocking fd) */
        struct ibv_cq *cq;
        void *ctx;
        while (ibv_get_cq_event(c->chan, &cq, &ctx) == 0) {
            c->unacked++;
            c->armed = 0;
        }
        if (c->unacked >= ACK_EVERY) {
            ibv_ack_cq_events(c->cq, c->unacked);
            c->unacked = 0;
        }
    }
    int moved = 0;
    TUTTI_CHECK(poll_cq(c, &moved));
    *moved_p = moved;
    return TUTTI_OK;
}

tutti_status_t tutti__ib_send_acquire(struct tutti_tconn *tc, void **buf_p, size_t *cap_p)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (c->peer_bye) {
        return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE,
                                   "%s destroyed its communicator while "
                                   "this rank still sends to it",
                                   c->peer_name);
    }
    uint64_t k = c->shead;
    int q = qp_of(c, k);
    for (int tries = 0; tries < 2; tries++) {
        int free_slot = k - c->credits < (uint64_t)c->nslots &&
                        (k < (uint64_t)c->nslots || write_done(c, k - (uint64_t)c->nslots));
        if (free_slot && c->sq_out[q] < c->sq_depth - 1) {
            c->sacquired = 1;
            *buf_p = c->sbuf + slot_of(c, k) * ib_stride(c);
            *cap_p = c->base.slot_size;
            return TUTTI_OK;
        }
        int moved = 0;
        TUTTI_CHECK(poll_cq(c, &moved));
    }
    return TUTTI_IN_PROGRESS;
}

/*
 * RDMA WRITE WITH IMMEDIATE of the acquired slot's `bytes`, read from src (lkey), followed by
 * the fingerprint trailer, which the second scatter-gather element reads from the send slot's
 * spare room: it lands right after the payload in the peer's slot.
 */
static tutti_status_t post_write(struct ib_conn *c, const void *src, size_t bytes, uint32_t lkey,
                                 const struct tutti_fp *fp)
{
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (!c->sacquired || bytes > c->base.slot_size) {
        return tutti__set_error(c->ctx->args->err, TUTTI_ERR_INVALID_USAGE,
                                "ib send_post of %zu bytes to %s %s", bytes, c->peer_name,
                                c->sacquired ? "exceeds the slot size" : "without a slot");
    }
    uint64_t k = c->shead;
    int q = qp_of(c, k);
    uint8_t *trailer = c->sbuf + slot_of(c, k) * ib_stride(c) + c->base.slot_size;
    if (fp != NULL) {
        memcpy(trailer, fp, sizeof(*fp));
    } else {
        memset(trailer, 0, sizeof(*fp));
    }
    struct ibv_sge sge[2] = {
        {.addr = (uint64_t)(uintptr_t)src, .length = (uint32_t)bytes, .lkey = lkey},
        {.addr = (uint64_t)(uintptr_t)trailer, .length = sizeof(*fp), .lkey = c->smr->lkey},
    };
    uint32_t imm = (uint32_t)(k & 0xff) << IB_IMM_LEN_BITS | (uint32_t)bytes;
    int inl = bytes + sizeof(*fp) <= (size_t)c->inline_max;
    struct ibv_send_wr *bad,
        wr = {
            .wr_id = WR_ID(WR_WRITE, q, k),
            .sg_list = bytes > 0 ? &sge[0] : &sge[1],
            .num_sge = bytes > 0 ? 2 : 1,
            .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
            .send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0),
            .imm_data = htonl(imm),
            .wr.rdma = {.remote_addr = c->raddr + slot_of(c, k) * ib_stride(c), .rkey = c->rkey},
        };
    int err = ibv_post_send(c->qp[q], &wr, &bad);
    if (err != 0) {
        char w[96];
        return tutti__ib_conn_fail(c, TUTTI_ERR_SYSTEM, "%s to %s: posting a write: %s",
                                   where(c, q, w, sizeof(w)), c->peer_name, strerror(err));
    }
    c->sq_out[q]++;
    c->shead++;
    c->sacquired = 0;
    return TUTTI_OK;
}

tutti_status_t tutti__ib_send_post(struct tutti_tconn *tc, size_t bytes, const struct tutti_fp *fp)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    return post_write(c, c->sbuf + slot_of(c, c->shead) * ib_stride(c), bytes, c->smr->lkey, fp);
}

tutti_status_t tutti__ib_send_post_ref(struct tutti_tconn *tc, const void *buf, size_t bytes,
                                       const struct tutti_fp *fp)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    struct ibv_mr *mr = c->ctx->regs != NULL ? tutti__ib_reg_find(c->ctx, buf, bytes) : NULL;
    if (mr != NULL) {
        tutti__ib_count_zero_copy();
        return post_write(c, buf, bytes, mr->lkey, fp); /* registered by the program: no copy */
    }
    if (c->sacquired && bytes <= c->base.slot_size) {
        memcpy(c->sbuf + slot_of(c, c->shead) * ib_stride(c), buf, bytes);
    }
    return tutti__ib_send_post(tc, bytes, fp);
}

tutti_status_t tutti__ib_recv_peek(struct tutti_tconn *tc, const void **buf_p, size_t *len_p,
                                   const struct tutti_fp **fp_p)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (!arrived(c, c->rtail)) {
        int moved = 0;
        TUTTI_CHECK(poll_cq(c, &moved));
        if (!arrived(c, c->rtail)) {
            if (c->peer_bye) {
                return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE,
                                           "%s destroyed its communicator "
                                           "while this rank still needed it",
                                           c->peer_name);
            }
            return TUTTI_IN_PROGRESS;
        }
    }
    size_t slot = slot_of(c, c->rtail);
    const uint8_t *p = c->rbuf + slot * ib_stride(c);
    *buf_p = p;
    *len_p = c->rlen[slot];
    if (fp_p != NULL) {
        memcpy(&c->rfp, p + c->rlen[slot], sizeof(c->rfp)); /* the trailer after the payload */
        *fp_p = &c->rfp;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__ib_recv_release(struct tutti_tconn *tc)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    if (!arrived(c, c->rtail)) {
        return tutti__set_error(c->ctx->args->err, TUTTI_ERR_INVALID_USAGE,
                                "ib recv_release from %s without a received slot", c->peer_name);
    }
    c->rtail++;
    return c->status == TUTTI_OK ? send_credit(c) : c->status;
}

tutti_status_t tutti__ib_flushed(struct tutti_tconn *tc, int *done_p)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (c->sdone < c->shead) {
        int moved = 0;
        TUTTI_CHECK(poll_cq(c, &moved));
    }
    *done_p = c->sdone == c->shead;
    return TUTTI_OK;
}

tutti_status_t tutti__ib_beat(struct tutti_tconn *tc, int64_t age_ns)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    return c->status == TUTTI_OK ? c->side->ops->beat(c->side, age_ns) : c->status;
}

tutti_status_t tutti__ib_side_check(struct ib_conn *c)
{
    int moved = 0;
    tutti_status_t st = c->side->ops->progress(c->side, &moved);
    if (st != TUTTI_OK) { /* an abort notice or a broken socket: tcp recorded the reason */
        c->status = c->status == TUTTI_OK ? st : c->status;
        return st;
    }
    c->base.vouched = TUTTI_MAX(c->base.vouched, c->side->vouched);
    const void *msg;
    size_t len;
    while (c->side->ops->side->recv_ready(c->side) &&
           c->side->ops->recv_peek(c->side, &msg, &len, NULL) == TUTTI_OK) {
        if (tutti__ib_msg_kind(msg, len) != IB_MSG_BYE) {
            return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE,
                                       "ib: unexpected message of %zu bytes "
                                       "from %s on the side connection",
                                       len, c->peer_name);
        }
        c->peer_bye = 1;
        TUTTI_CHECK(c->side->ops->recv_release(c->side));
    }
    if (!c->peer_bye && c->side->ops->side->peer_gone(c->side)) {
        char w[96];
        return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE,
                                   "%s died (its connection ended without "
                                   "a goodbye; %s)",
                                   c->peer_name, where(c, 0, w, sizeof(w)));
    }
    return TUTTI_OK;
}

int tutti__ib_pollfds(struct tutti_tconn *tc, struct pollfd *fds, int max)
{
    struct ib_conn *c = (struct ib_conn *)tc;
    if (max < 3 || c->status != TUTTI_OK) {
        return 0;
    }
    if (!c->armed && ibv_req_notify_cq(c->cq, 0) == 0) {
        c->armed = 1;
        /* A completion that came before the arming raises no event: look once more. */
        int n = ibv_poll_cq(c->cq, IB_STASH - c->nstash, c->stash + c->nstash);
        c->nstash += n > 0 ? n : 0;
    }
    int k = c->side->ops->pollfds(c->side, fds, 1);
    fds[k++] = (struct pollfd){.fd = c->chan->fd, .events = POLLIN};
    if (c->nstash > 0) {
        uint64_t one = 1;
        ssize_t r = write(c->ctx->kick, &one, sizeof(one));
        (void)r;
        fds[k++] = (struct pollfd){.fd = c->ctx->kick, .events = POLLIN};
    }
    return k;
}
