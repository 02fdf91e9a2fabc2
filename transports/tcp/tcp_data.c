/*
 * tcp_data.c - the data path of the TCP transport: a connection's send and receive FIFOs, the
 * frames that carry their slots over the sockets, and abort notices.
 *
 * Slot k is written as one frame on socket k % nsocks, several frames per sendmsg when they
 * queue up. The receiver reads each header, checks it (type, length, sequence number), then
 * reads the payload straight into the receive slot (or into the caller's buffer placed there
 * with recv_place before the payload began), together with the next header when it is already
 * there; when every receive slot is full it stops reading, and TCP pushes back. The end
 * of a peer (EOF, reset) is remembered per socket and becomes an error only when the caller
 * needs a slot that socket can no longer bring, or wants to send.
 */
#include "tcp.h"
#include "base/check.h"
#include "tutti/comm.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define TCP_IOV_MAX 64 /* iovecs per sendmsg: up to 32 frames in one call */

/* Record the error that ends the connection; log it once, here. */
__attribute__((format(printf, 3, 4))) static tutti_status_t
conn_fail(struct tcp_conn *c, tutti_status_t st, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->status = tutti__set_error(c->ctx->args->err, st, "%s", msg);
    return st;
}

static tutti_status_t peer_closed(struct tcp_conn *c, const struct tcp_sock *s)
{
    return conn_fail(c, TUTTI_ERR_REMOTE, "%s closed the connection%s%s", c->peer_name,
                     s->cerr != 0 ? ": " : "", s->cerr != 0 ? strerror(s->cerr) : "");
}

static size_t slot_of(const struct tcp_conn *c, uint64_t k)
{
    return (size_t)(k % (uint64_t)c->nslots);
}

static struct tcp_sock *sock_of(struct tcp_conn *c, uint64_t k)
{
    return &c->socks[k % (uint64_t)c->nsocks];
}

/* Slot k has been written to the kernel completely. */
static int slot_sent(struct tcp_conn *c, uint64_t k)
{
    return sock_of(c, k)->snext > k;
}

/* Slot k has been received completely. */
static int slot_arrived(struct tcp_conn *c, uint64_t k)
{
    return sock_of(c, k)->rnext > k;
}

/* Add [base, base + len) to iov, minus the first *skip bytes of the frame (already sent). */
static void add_iov(struct iovec *iov, int *n, void *base, size_t len, size_t *skip, size_t *want)
{
    if (*skip >= len) {
        *skip -= len;
        return;
    }
    iov[*n].iov_base = (uint8_t *)base + *skip;
    iov[*n].iov_len = len - *skip;
    *want += len - *skip;
    *skip = 0;
    (*n)++;
}

/* Account r bytes written on socket s to its frames in order. */
static void consume_sent(struct tcp_conn *c, struct tcp_sock *s, size_t r)
{
    while (r > 0) {
        size_t left = TCP_HDR_BYTES + c->slen[slot_of(c, s->snext)] - s->soff;
        if (r < left) {
            s->soff += r;
            return;
        }
        r -= left;
        s->soff = 0;
        s->snext += (uint64_t)c->nsocks;
    }
}

static tutti_status_t sock_read(struct tcp_conn *c, struct tcp_sock *s, int *moved);

/* A send on s failed with errno (not EAGAIN): the error that ends the connection. */
static tutti_status_t write_failed(struct tcp_conn *c, struct tcp_sock *s)
{
    s->cerr = errno;
    if (tutti__sys_status(s->cerr) == TUTTI_ERR_REMOTE) {
        /* EPIPE, ECONNRESET. A peer that failed sent an ABORT frame before it closed; if it is
         * waiting on this socket, it says why, so read it first. */
        int ignored = 0;
        TUTTI_CHECK(sock_read(c, s, &ignored));
        return peer_closed(c, s);
    }
    return conn_fail(c, TUTTI_ERR_SYSTEM, "cannot send to %s: %s", c->peer_name, strerror(s->cerr));
}

/* Write the frames queued on socket s until the kernel takes no more. */
static tutti_status_t write_failed(struct tcp_conn *c, struct tcp_sock *s);

/* Write what is left of a pending BEAT frame; 1 when none is left. Not progress. */
static int beat_out(struct tcp_conn *c, struct tcp_sock *s, tutti_status_t *st)
{
    *st = TUTTI_OK;
    while (s->sbeat_left > 0) {
        ssize_t r = send(s->fd, s->sbeat + sizeof(s->sbeat) - s->sbeat_left, s->sbeat_left,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                *st = write_failed(c, s);
            }
            return 0;
        }
        s->sbeat_left -= (size_t)r;
    }
    return 1;
}

static tutti_status_t sock_write(struct tcp_conn *c, struct tcp_sock *s, int *moved)
{
    tutti_status_t st;
    if (!beat_out(c, s, &st)) {
        return st;
    }
    while (s->snext < c->shead) {
        struct iovec iov[TCP_IOV_MAX];
        int n = 0;
        size_t skip = s->soff, want = 0;
        for (uint64_t k = s->snext; k < c->shead && n + 2 <= TCP_IOV_MAX; k += c->nsocks) {
            size_t slot = slot_of(c, k);
            add_iov(iov, &n, c->shdr[slot], TCP_HDR_BYTES, &skip, &want);
            const uint8_t *pay =
                c->sref[slot] != NULL ? c->sref[slot] : c->sbuf + slot * c->base.slot_size;
            add_iov(iov, &n, (void *)pay, c->slen[slot], &skip, &want);
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t r = sendmsg(s->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                return TUTTI_OK;
            }
            return write_failed(c, s);
        }
        *moved = 1;
        consume_sent(c, s, (size_t)r);
        if ((size_t)r < want) {
            return TUTTI_OK; /* the kernel buffer is full */
        }
    }
    return TUTTI_OK;
}

/* A complete header is in s->rhdr: check it before anything trusts it. */
static tutti_status_t parse_hdr(struct tcp_conn *c, struct tcp_sock *s)
{
    struct tcp_hdr h;
    char why[120];
    if (tutti__tcp_hdr_check(s->rhdr, c->base.slot_size, s->rnext, &h, why, sizeof(why)) != 0) {
        return conn_fail(c, TUTTI_ERR_REMOTE, "bad frame from %s: %s", c->peer_name, why);
    }
    s->rtype = h.type;
    s->rlen = h.len;
    s->rfp = h.fp;
    s->rpay_got = 0;
    s->rhdr_ok = 1;
    return TUTTI_OK;
}

/* An ABORT frame arrived: the connection ends with the sender's reason. */
static tutti_status_t on_abort(struct tcp_conn *c, const uint8_t *p)
{
    struct tutti_abort_info info;
    tutti__tcp_abort_decode(p, &info);
    tutti_status_t st = tutti__notice_status(&info); /* MISMATCH stays MISMATCH */
    if (info.culprit >= 0 && info.culprit != info.origin) {
        return conn_fail(c, st, "rank %d reports that rank %d failed: %s", info.origin,
                         info.culprit, info.reason);
    }
    return conn_fail(c, st, "rank %d reports: %s", info.origin, info.reason);
}

/* The payload of the frame being read on s is complete. */
static tutti_status_t frame_done(struct tcp_conn *c, struct tcp_sock *s)
{
    if (s->rtype == TCP_FRAME_ABORT) {
        return on_abort(c, s->rabort);
    }
    if (s->rtype == TCP_FRAME_BEAT) { /* out of band: the next frame keeps its number */
        int64_t now = tutti__now_ns(), age = tutti__tcp_beat_age(s->rbeat);
        int64_t at = age >= now ? 1 : now - age;
        c->base.vouched = TUTTI_MAX(c->base.vouched, at);
        s->rhdr_ok = 0;
        s->rhdr_got = 0;
        return TUTTI_OK;
    }
    size_t slot = slot_of(c, s->rnext);
    c->rlen[slot] = s->rlen;
    c->rfp[slot] = s->rfp;
    c->place[slot].landed = s->rlen > 0 ? s->rtarget : c->rbuf + slot * c->base.slot_size;
    c->rlarge = s->rlen >= TCP_POLL_MIN;
    s->rnext += (uint64_t)c->nsocks;
    s->rhdr_ok = 0;
    s->rhdr_got = 0;
    return TUTTI_OK;
}

/*
 * What the next read on s goes into: the rest of the header, or the rest of the payload plus
 * the next header (read ahead, to save a call per frame). Returns the number of iovecs; 0 when
 * s must not be read now (the slot of its next frame is still full: back-pressure); -1 when
 * the frame is complete without reading (an empty payload).
 */
static int read_target(struct tcp_conn *c, struct tcp_sock *s, struct iovec iov[2])
{
    if (!s->rhdr_ok) {
        iov[0] = (struct iovec){s->rhdr + s->rhdr_got, TCP_HDR_BYTES - s->rhdr_got};
        return 1;
    }
    if (s->rtype == TCP_FRAME_ABORT || s->rtype == TCP_FRAME_BEAT) {
        uint8_t *p = s->rtype == TCP_FRAME_ABORT ? s->rabort : s->rbeat;
        iov[0] = (struct iovec){p + s->rpay_got, s->rlen - s->rpay_got};
        return 1; /* never empty: parse_hdr checked its length */
    }
    if (s->rnext >= c->rtail + (uint64_t)c->nslots) {
        return 0;
    }
    if (s->rpay_got == s->rlen) {
        return -1;
    }
    if (s->rpay_got == 0) { /* not begun: a placed buffer may still take it */
        size_t slot = slot_of(c, s->rnext);
        const struct tcp_place *p = &c->place[slot];
        /* the caller's memory takes only the frame of the call it expects: one of another
         * call (a mismatch) stays in the slot, where the executor finds it and fails */
        int placed = p->seq == s->rnext && p->dst != NULL && s->rlen <= p->cap &&
                     memcmp(&s->rfp, &p->want, sizeof(p->want)) == 0;
        s->rtarget = placed ? p->dst : c->rbuf + slot * c->base.slot_size;
    }
    iov[0] = (struct iovec){s->rtarget + s->rpay_got, s->rlen - s->rpay_got};
    iov[1] = (struct iovec){s->rhdr, TCP_HDR_BYTES};
    return 2;
}

/* The header in s->rhdr is complete: parse it; *real is set unless it heads a BEAT. */
static tutti_status_t header_done(struct tcp_conn *c, struct tcp_sock *s, int *real)
{
    TUTTI_CHECK(parse_hdr(c, s));
    *real |= s->rtype != TCP_FRAME_BEAT;
    return TUTTI_OK;
}

/*
 * Account r bytes read on s: payload first, then read-ahead header bytes. *real is set when
 * bytes of a data or abort frame were among them (a beat is not progress; a header counts
 * once it is whole and known not to head one).
 */
static tutti_status_t consume_read(struct tcp_conn *c, struct tcp_sock *s, size_t r, int *real)
{
    if (!s->rhdr_ok) {
        s->rhdr_got += r;
        return s->rhdr_got == TCP_HDR_BYTES ? header_done(c, s, real) : TUTTI_OK;
    }
    size_t take = TUTTI_MIN(r, (size_t)s->rlen - s->rpay_got);
    s->rpay_got += take;
    *real |= take > 0 && s->rtype != TCP_FRAME_BEAT;
    if (s->rpay_got < s->rlen) {
        return TUTTI_OK;
    }
    TUTTI_CHECK(frame_done(c, s));
    s->rhdr_got = r - take;
    return s->rhdr_got == TCP_HDR_BYTES ? header_done(c, s, real) : TUTTI_OK;
}

/* Move staged bytes of s into iov (n entries, filled in order, as recvmsg would): how many. */
static size_t take_staged(struct tcp_sock *s, const struct iovec *iov, int n)
{
    size_t got = 0;
    for (int i = 0; i < n && s->stage_at < s->stage_end; i++) {
        size_t k = TUTTI_MIN(iov[i].iov_len, (size_t)(s->stage_end - s->stage_at));
        memcpy(iov[i].iov_base, s->stage + s->stage_at, k);
        s->stage_at += (uint32_t)k;
        got += k;
    }
    return got;
}

/*
 * Read what socket s has, as far as the receive slots allow. A socket waiting for a header
 * reads up to TCP_STAGE_BYTES into its stage, and the frames are taken from there: a small
 * frame costs one read, where reading its header and then its payload cost two. Bytes stay
 * staged only while the next frame's slot is full (read_target 0), so poll never waits on a
 * socket for bytes already read; recv_release takes them as soon as a slot frees.
 */
static tutti_status_t sock_read(struct tcp_conn *c, struct tcp_sock *s, int *moved)
{
    int drained = 0;
    while (!s->closed) {
        struct iovec iov[2];
        int n = read_target(c, s, iov);
        if (n <= 0) {
            if (n == 0) {
                return TUTTI_OK;
            }
            TUTTI_CHECK(frame_done(c, s)); /* an empty frame */
            continue;
        }
        if (s->stage_at < s->stage_end) {
            TUTTI_CHECK(consume_read(c, s, take_staged(s, iov, n), moved));
            continue;
        }
        if (drained) {
            return TUTTI_OK;
        }
        int staging = !s->rhdr_ok;
        if (staging) {
            iov[0] = (struct iovec){s->stage, TCP_STAGE_BYTES};
            n = 1;
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t r = recvmsg(s->fd, &msg, MSG_DONTWAIT);
        if (r <= 0) {
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                return TUTTI_OK;
            }
            s->closed = 1; /* remembered; an error only when someone needs what is missing */
            s->cerr = r < 0 ? errno : 0;
            tutti_debug(TUTTI_SUBSYS_NET, "%s closed socket %d of channel %d%s%s", c->peer_name,
                        (int)(s - c->socks), c->base.channel, s->cerr != 0 ? ": " : "",
                        s->cerr != 0 ? strerror(s->cerr) : "");
            return TUTTI_OK;
        }
        size_t asked = iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0);
        drained = (size_t)r < asked; /* nothing more to read now */
        if (staging) {
            s->stage_at = 0;
            s->stage_end = (uint32_t)r;
            continue;
        }
        TUTTI_CHECK(consume_read(c, s, (size_t)r, moved));
    }
    return TUTTI_OK;
}

/*
 * Whether sock_read on s can do anything: bytes already staged, an empty frame to finish, or
 * the kernel has data, an end or an error for it (revents from a poll the caller made, or -1 to
 * poll s here). While large frames stream in both ways, asking poll is cheaper than a recvmsg
 * that finds nothing: recvmsg takes the socket's lock, which the sender's delivery on loopback
 * needs at the same moment, and packets that find the lock taken wait for the reader to process
 * them. The callers ask only on a connection whose last data frame was large (c->rlarge): for
 * small frames the poll would be a second system call per frame.
 */
static int sock_readable(const struct tcp_sock *s, int revents)
{
    if (s->stage_at < s->stage_end || (s->rhdr_ok && s->rpay_got == s->rlen)) {
        return 1; /* staged bytes, or an empty frame that waited for its slot */
    }
    if (s->closed) {
        return 0;
    }
    if (revents < 0) {
        struct pollfd pf = {.fd = s->fd, .events = POLLIN};
        return poll(&pf, 1, 0) != 0; /* ready, or poll failed: read, as without the poll */
    }
    return revents != 0;
}

tutti_status_t tutti__tcp_send_acquire(struct tutti_tconn *tc, void **buf_p, size_t *cap_p)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    for (int i = 0; i < c->nsocks; i++) {
        if (c->socks[i].closed) {
            return peer_closed(c, &c->socks[i]);
        }
    }
    if (c->shead >= (uint64_t)c->nslots && !slot_sent(c, c->shead - c->nslots)) {
        int moved = 0;
        TUTTI_CHECK(sock_write(c, sock_of(c, c->shead - c->nslots), &moved));
        if (!slot_sent(c, c->shead - c->nslots)) {
            return TUTTI_IN_PROGRESS;
        }
    }
    c->sacquired = 1;
    *buf_p = c->sbuf + slot_of(c, c->shead) * c->base.slot_size;
    *cap_p = c->base.slot_size;
    return TUTTI_OK;
}

static tutti_status_t post(struct tcp_conn *c, const uint8_t *ref, size_t bytes,
                           const struct tutti_fp *fp);

tutti_status_t tutti__tcp_send_post(struct tutti_tconn *tc, size_t bytes, const struct tutti_fp *fp)
{
    return post((struct tcp_conn *)tc, NULL, bytes, fp);
}

tutti_status_t tutti__tcp_send_post_ref(struct tutti_tconn *tc, const void *buf, size_t bytes,
                                        const struct tutti_fp *fp)
{
    return post((struct tcp_conn *)tc, buf, bytes, fp);
}

/* Queue the acquired slot as frame shead, its payload in the slot or at ref. */
static tutti_status_t post(struct tcp_conn *c, const uint8_t *ref, size_t bytes,
                           const struct tutti_fp *fp)
{
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (!c->sacquired || bytes > c->base.slot_size) {
        return tutti__set_error(c->ctx->args->err, TUTTI_ERR_INVALID_USAGE,
                                "tcp send_post of %zu bytes to %s %s", bytes, c->peer_name,
                                c->sacquired ? "exceeds the slot size" : "without a slot");
    }
    uint64_t k = c->shead++;
    size_t slot = slot_of(c, k);
    tutti__tcp_hdr_encode(c->shdr[slot], TCP_FRAME_DATA, (uint32_t)bytes, k, fp);
    c->slen[slot] = (uint32_t)bytes;
    c->sref[slot] = ref;
    c->sacquired = 0;
    struct tcp_sock *s = sock_of(c, k);
    if (s->snext == k) {
        int moved = 0;
        return sock_write(c, s, &moved); /* first in line on its socket: send now (latency) */
    }
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_recv_peek(struct tutti_tconn *tc, const void **buf_p, size_t *len_p,
                                    const struct tutti_fp **fp_p)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    if (!slot_arrived(c, c->rtail)) {
        struct tcp_sock *s = sock_of(c, c->rtail);
        int moved = 0;
        if (!c->rlarge || sock_readable(s, -1)) {
            TUTTI_CHECK(sock_read(c, s, &moved));
        }
        if (!slot_arrived(c, c->rtail)) {
            return s->closed ? peer_closed(c, s) : TUTTI_IN_PROGRESS;
        }
    }
    size_t slot = slot_of(c, c->rtail);
    *buf_p = c->place[slot].landed;
    *len_p = c->rlen[slot];
    if (fp_p != NULL) {
        *fp_p = &c->rfp[slot];
    }
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_peek_fp(struct tutti_tconn *tc, const struct tutti_fp **fp_p)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (c->status != TUTTI_OK || !slot_arrived(c, c->rtail)) {
        return TUTTI_IN_PROGRESS;
    }
    *fp_p = &c->rfp[slot_of(c, c->rtail)];
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_recv_place(struct tutti_tconn *tc, uint32_t ahead, void *dst, size_t cap,
                                     const struct tutti_fp *want)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (ahead >= (uint32_t)c->nslots) {
        return TUTTI_IN_PROGRESS;
    }
    uint64_t k = c->rtail + ahead;
    if (!slot_arrived(c, k)) { /* an arrived frame keeps where it landed */
        struct tcp_place *p = &c->place[slot_of(c, k)];
        p->seq = k;
        p->dst = dst;
        p->cap = cap;
        p->want = *want;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_recv_release(struct tutti_tconn *tc)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (!slot_arrived(c, c->rtail)) {
        return tutti__set_error(c->ctx->args->err, TUTTI_ERR_INVALID_USAGE,
                                "tcp recv_release from %s without a received slot", c->peer_name);
    }
    c->place[slot_of(c, c->rtail)].seq = UINT64_MAX;
    c->rtail++;
    for (int i = 0; i < c->nsocks; i++) { /* bytes staged while the slots were full */
        struct tcp_sock *s = &c->socks[i];
        int moved = 0;
        if (s->stage_at < s->stage_end) {
            TUTTI_CHECK(sock_read(c, s, &moved));
        }
    }
    return TUTTI_OK;
}

/* Polls a connection of large frames once for all its sockets (pf[i] for socket i); returns 0
 * when it did not: small frames skip the poll, and a failed one (EINTR, ENOMEM) reads every
 * socket, as without it. */
static int poll_socks(const struct tcp_conn *c, struct pollfd *pf)
{
    if (!c->rlarge) {
        return 0;
    }
    for (int i = 0; i < c->nsocks; i++) {
        pf[i] = (struct pollfd){.fd = c->socks[i].closed ? -1 : c->socks[i].fd, .events = POLLIN};
    }
    return poll(pf, (nfds_t)c->nsocks, 0) >= 0;
}

/*
 * The socket that brings the earliest frame not yet received. Small frames come one or a few at
 * a time: a recvmsg on each of the other sockets would find nothing and cost a system call each
 * (all-reduce of 16 B-1 KiB over 4 sockets took 1.13-1.17x its time over 2).
 */
static int next_sock(const struct tcp_conn *c)
{
    int best = 0;
    for (int i = 1; i < c->nsocks; i++) {
        if (c->socks[i].rnext < c->socks[best].rnext) {
            best = i;
        }
    }
    return best;
}

tutti_status_t tutti__tcp_progress(struct tutti_tconn *tc, int *moved_p)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    int moved = 0;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    /* Large frames: one poll for all the sockets, then a read only where there is something to
     * read. Small frames: a read of the socket of the next frame in sequence, and of all of
     * them once in TCP_SWEEP calls. */
    struct pollfd pf[TCP_MAX_SOCKS];
    int polled = poll_socks(c, pf);
    int all = c->rlarge || c->nsocks == 1 || (++c->sweeps & (TCP_SWEEP - 1)) == 0;
    int next = all ? -1 : next_sock(c);
    for (int i = 0; i < c->nsocks; i++) {
        struct tcp_sock *s = &c->socks[i];
        TUTTI_CHECK(sock_write(c, s, &moved));
        if (polled ? sock_readable(s, pf[i].revents) : (all || i == next)) {
            TUTTI_CHECK(sock_read(c, s, &moved));
        }
        if (s->closed && s->snext < c->shead) {
            return peer_closed(c, s); /* what is queued for it can never be delivered */
        }
    }
    *moved_p = moved;
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_flushed(struct tutti_tconn *tc, int *done_p)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    int done = 1;
    for (int i = 0; i < c->nsocks; i++) {
        done = done && c->socks[i].snext >= c->shead;
    }
    *done_p = done;
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_beat(struct tutti_tconn *tc, int64_t age_ns)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    if (c->status != TUTTI_OK) {
        return c->status;
    }
    /* One socket is enough (the receiver reads them all, on small frames once in TCP_SWEEP
     * progress calls); at a frame boundary only. */
    for (int i = 0; i < c->nsocks; i++) {
        struct tcp_sock *s = &c->socks[i];
        if (s->soff == 0 && s->sbeat_left == 0 && !s->closed) {
            tutti__tcp_beat_encode(s->sbeat, s->snext, age_ns);
            s->sbeat_left = sizeof(s->sbeat);
            int moved = 0;
            return sock_write(c, s, &moved);
        }
    }
    return TUTTI_OK;
}

int tutti__tcp_peer_gone(const struct tutti_tconn *tc)
{
    const struct tcp_conn *c = (const struct tcp_conn *)tc;
    for (int i = 0; i < c->nsocks; i++) {
        if (c->socks[i].closed) {
            return 1;
        }
    }
    return 0;
}

int tutti__tcp_recv_ready(const struct tutti_tconn *tc)
{
    const struct tcp_conn *c = (const struct tcp_conn *)tc;
    return c->status == TUTTI_OK && c->socks[c->rtail % (uint64_t)c->nsocks].rnext > c->rtail;
}

int tutti__tcp_pollfds(struct tutti_tconn *tc, struct pollfd *fds, int max)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    int n = TUTTI_MIN(max, c->nsocks);
    for (int i = 0; i < n; i++) {
        struct tcp_sock *s = &c->socks[i];
        struct iovec iov[2];
        /* A closed socket would always poll readable: leave it out (fd -1 is ignored). */
        fds[i].fd = s->closed ? -1 : s->fd;
        fds[i].events = (short)((read_target(c, s, iov) != 0 ? POLLIN : 0) |
                                (s->snext < c->shead || s->sbeat_left > 0 ? POLLOUT : 0));
        fds[i].revents = 0;
    }
    return n;
}

void tutti__tcp_conn_abort(struct tcp_conn *c, const struct tutti_abort_info *info)
{
    for (int i = 0; i < c->nsocks; i++) {
        struct tcp_sock *s = &c->socks[i];
        int moved = 0;
        if ((s->soff > 0 || s->sbeat_left > 0) && c->status == TUTTI_OK) {
            (void)sock_write(c, s, &moved); /* a frame is half out: try to finish it */
        }
        if (s->soff == 0 && s->sbeat_left == 0 && !s->closed) {
            /* At a frame boundary the notice takes the place of the next frame. */
            uint8_t frame[TCP_HDR_BYTES + sizeof(struct tutti_abort_info)];
            tutti__tcp_hdr_encode(frame, TCP_FRAME_ABORT, TCP_ABORT_BYTES, s->snext, NULL);
            tutti__tcp_abort_encode(frame + TCP_HDR_BYTES, info);
            (void)send(s->fd, frame, sizeof(frame), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        /* FIN after what is queued; no RST, which could destroy the notice in flight. The read
         * side stays open: close drains it (tcp_fifo.c), since closing with unread data is a
         * reset (and after SHUT_RD Linux answers reads with 0 while the data stays). */
        (void)shutdown(s->fd, SHUT_WR);
    }
    if (c->status == TUTTI_OK) {
        c->status = TUTTI_ERR_ABORTED;
    }
}
