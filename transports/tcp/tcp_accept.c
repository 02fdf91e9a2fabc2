/*
 * tcp_accept.c - the TCP transport's accepting side: sockets that peers of lower rank open to
 * this rank's listener. Each one runs the handshake (net/handshake.h); an authenticated one waits
 * in the ready table until this rank's connect() for its (peer, channel) claims it; a stranger is
 * closed. Strangers cannot starve the listener (net/admit.h): each has a short deadline, one
 * address holds a bounded share, a full table evicts its oldest, and their refusals are summed
 * up in the log rather than written one line each.
 */
#include "tcp.h"
#include "base/check.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct tutti_admit_cfg admit_cfg = {
    .max_total = TCP_MAX_INCOMING,
    .max_per_addr = TCP_MAX_PER_ADDR,
};

static const struct tutti_admit_slot *in_slot(const void *table, int i)
{
    return &((const struct tcp_incoming *)table)[i].adm;
}

/* What a failed handshake tells the log. */
static enum tutti_admit_why hs_why(tutti_status_t st, const char **detail_p)
{
    switch (st) {
    case TUTTI_ERR_AUTH:
        *detail_p = "authentication failed";
        return TUTTI_ADMIT_AUTH;
    case TUTTI_ERR_TIMEOUT:
        *detail_p = "no complete handshake before the deadline";
        return TUTTI_ADMIT_DEADLINE;
    case TUTTI_ERR_REMOTE:
        *detail_p = "closed during the handshake";
        return TUTTI_ADMIT_OTHER;
    default:
        *detail_p = tutti_status_string(st);
        return TUTTI_ADMIT_OTHER;
    }
}

/* Close handshake i, a stranger's (or a rank's that will connect again), and forget it. */
static void evict(struct tcp_ctx *ctx, int i, enum tutti_admit_why why, const char *detail)
{
    struct tcp_incoming *in = &ctx->in[i];
    tutti__admit_closed(&ctx->alog, why, in->from, detail, tutti__now_ns());
    close(in->hs.fd);
    ctx->in[i] = ctx->in[--ctx->nin];
}

/* Why an authenticated payload cannot be admitted into `why`; 0 when it can. */
static int bad_payload(const struct tcp_ctx *ctx, const struct tcp_hello *h, char *why, size_t len)
{
    int rank = ctx->args->rank;
    if (h->kind != TCP_KIND_DATA && h->kind != TCP_KIND_SIDE) {
        snprintf(why, len, "not a data or side connection (kind %u)", h->kind);
    } else if (h->to != (uint32_t)rank) {
        snprintf(why, len, "meant for rank %u, this is rank %d", h->to, rank);
    } else if (h->from >= (uint32_t)rank) {
        snprintf(why, len, "claims rank %u, which does not connect to rank %d", h->from, rank);
    } else if (h->channel >= TUTTI_MAX_CHANNELS || h->nsocks < 1 || h->nsocks > TCP_MAX_SOCKS ||
               h->index >= h->nsocks || (h->kind == TCP_KIND_SIDE && h->nsocks != 1)) {
        snprintf(why, len, "channel %u, socket %u of %u out of range", h->channel, h->index,
                 h->nsocks);
    } else if (h->slot_size != tutti__tcp_kind_slot_size(ctx, h->kind)) {
        snprintf(why, len, "rank %u uses TUTTI_TCP_SLOT_SIZE %llu, this rank %zu", h->from,
                 (unsigned long long)h->slot_size, tutti__tcp_kind_slot_size(ctx, h->kind));
    } else if (ctx->connected[tutti__tcp_pair(ctx, (int)h->kind, (int)h->from, (int)h->channel)]) {
        snprintf(why, len, "rank %u channel %u is already connected", h->from, h->channel);
    } else {
        for (int i = 0; i < ctx->nready; i++) {
            const struct tcp_ready *r = &ctx->ready[i];
            if (r->kind == (int)h->kind && r->peer == (int)h->from &&
                r->channel == (int)h->channel &&
                (r->index == (int)h->index || r->nsocks != (int)h->nsocks)) {
                snprintf(why, len, "socket %u of %u of rank %u channel %u %s", h->index, h->nsocks,
                         h->from, h->channel,
                         r->index == (int)h->index ? "is a duplicate" : "disagrees on nsocks");
                return 1;
            }
        }
        return 0;
    }
    return 1;
}

/* Grow *arr (of *cap elements of size sz) to hold n + 1. Returns 0, or -1 without memory. */
static int reserve(void **arr, int *cap, int n, size_t sz)
{
    if (n < *cap) {
        return 0;
    }
    int ncap = *cap > 0 ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)ncap * sz);
    if (p == NULL) {
        return -1;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}

/* A handshake succeeded: keep the socket for its (peer, channel), or refuse it. */
static tutti_status_t admit(struct tcp_ctx *ctx, const struct tcp_incoming *in)
{
    struct tcp_hello h;
    char why[160];
    tutti__tcp_hello_decode(in->hs.payload, &h);
    if (bad_payload(ctx, &h, why, sizeof(why))) {
        /* It holds the secret: a rank of this job misconfigured, never summed up. */
        tutti_warn("%s refused connection from %s: %s", ctx->alog.who, in->from, why);
        close(in->hs.fd);
        return TUTTI_OK;
    }
    if (reserve((void **)&ctx->ready, &ctx->capready, ctx->nready, sizeof(*ctx->ready)) != 0) {
        close(in->hs.fd);
        return tutti__set_error(ctx->args->err, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
    }
    ctx->ready[ctx->nready++] = (struct tcp_ready){
        .fd = in->hs.fd,
        .kind = (int)h.kind,
        .peer = (int)h.from,
        .channel = (int)h.channel,
        .index = (int)h.index,
        .nsocks = (int)h.nsocks,
    };
    tutti_debug(TUTTI_SUBSYS_NET, "tcp: socket %u/%u of rank %u channel %u from %s", h.index,
                h.nsocks, h.from, h.channel, in->from);
    return TUTTI_OK;
}

/* Move every handshake forward: admit the authenticated, close the failed. */
static tutti_status_t progress_incoming(struct tcp_ctx *ctx)
{
    for (int i = 0; i < ctx->nin;) {
        tutti_status_t st = tutti__hs_progress(&ctx->in[i].hs);
        if (st == TUTTI_IN_PROGRESS) {
            i++;
        } else if (st == TUTTI_OK) {
            struct tcp_incoming done = ctx->in[i];
            ctx->in[i] = ctx->in[--ctx->nin];
            TUTTI_CHECK(admit(ctx, &done));
        } else {
            const char *detail;
            enum tutti_admit_why why = hs_why(st, &detail);
            evict(ctx, i, why, detail);
        }
    }
    return TUTTI_OK;
}

/*
 * Out of descriptors (RLIMIT_NOFILE): close the oldest handshake if it has had its chance (a
 * stranger, most likely, and the connection waiting in the queue may be a rank's); else leave
 * the queue as it is until the next look. Returns whether a descriptor was freed.
 */
static int starved(struct tcp_ctx *ctx, int err, int64_t now)
{
    if (!ctx->fd_starved) {
        ctx->fd_starved = 1;
        tutti_warn("%s: accept: %s (RLIMIT_NOFILE): connections wait in the listen queue while "
                   "the oldest handshakes are closed; raise the limit (ulimit -n) if this "
                   "rank's own connections need more",
                   ctx->alog.who, strerror(err));
    }
    int64_t wait;
    int o = ctx->nin > 0 ? tutti__admit_room(ctx->in, ctx->nin, in_slot,
                                             &(struct tutti_admit_cfg){.max_total = 0}, now, &wait)
                         : -2;
    if (o >= 0) {
        evict(ctx, o, TUTTI_ADMIT_FULL, "closed: out of descriptors");
    }
    return o >= 0;
}

/* Take one connection from the listen queue into the table; *more_p = 0 when there is no more
 * (or no room) for now. */
static tutti_status_t accept_one(struct tcp_ctx *ctx, int *more_p)
{
    int64_t now = tutti__now_ns(), wait;
    int room = tutti__admit_room(ctx->in, ctx->nin, in_slot, &admit_cfg, now, &wait);
    int fd;
    union tutti_sockaddr from;
    tutti_status_t st = room == -2 ? TUTTI_IN_PROGRESS : tutti__sock_accept(ctx->lfd, &fd, &from);
    if (st == TUTTI_ERR_NO_MEMORY) {
        *more_p = starved(ctx, errno, now);
        return TUTTI_OK;
    }
    if (st == TUTTI_IN_PROGRESS) {
        *more_p = 0;
        return TUTTI_OK;
    }
    TUTTI_CHECK(st);
    if (room >= 0) {
        evict(ctx, room, TUTTI_ADMIT_FULL, "too many handshakes in progress; the oldest is closed");
    }
    uint64_t addr = tutti__admit_addr_key(&from);
    int victim = tutti__admit_addr_victim(ctx->in, ctx->nin, in_slot, addr, &admit_cfg, now);
    if (victim >= 0) {
        evict(ctx, victim, TUTTI_ADMIT_ADDR, "too many handshakes from its address");
    }
    char name[80];
    tutti__sockaddr_str(&from, name, sizeof(name));
    if (reserve((void **)&ctx->in, &ctx->capin, ctx->nin, sizeof(*ctx->in)) != 0) {
        tutti__admit_closed(&ctx->alog, TUTTI_ADMIT_OTHER, name, "no memory", now);
        close(fd);
        return TUTTI_OK;
    }
    struct tcp_incoming *in = &ctx->in[ctx->nin++];
    tutti__hs_init_accept(&in->hs, fd, ctx->secret, ctx->args->comm_id, now + ctx->hs_timeout_ns);
    in->adm = (struct tutti_admit_slot){.since_ns = now, .addr = addr};
    memcpy(in->from, name, sizeof(in->from));
    *more_p = 1;
    return TUTTI_OK;
}

tutti_status_t tutti__tcp_accept_all(struct tcp_ctx *ctx)
{
    /* Answers that came since the last look first: a rank's handshake that is done is never
     * evicted for being old. */
    TUTTI_CHECK(progress_incoming(ctx));
    int more = 1;
    for (int k = 0; k < TCP_ACCEPT_BATCH && more; k++) {
        TUTTI_CHECK(accept_one(ctx, &more));
    }
    TUTTI_CHECK(progress_incoming(ctx)); /* the newcomers' HELLO */
    tutti__admit_flush(&ctx->alog, tutti__now_ns(), 0);
    return TUTTI_OK;
}

/* The sockets of (kind, peer, channel) are ready[i]. */
static int ready_for(const struct tcp_ready *r, int kind, int peer, int channel)
{
    return r->kind == kind && r->peer == peer && r->channel == channel;
}

/* Claim the sockets of (kind, peer, channel) once all of them are authenticated. */
tutti_status_t tutti__tcp_claim(struct tcp_ctx *ctx, int kind, int peer, int channel,
                                struct tcp_conn **conn_p)
{
    int fds[TCP_MAX_SOCKS], nsocks = 0, found = 0;
    for (int i = 0; i < ctx->nready; i++) {
        const struct tcp_ready *r = &ctx->ready[i];
        if (ready_for(r, kind, peer, channel)) {
            nsocks = r->nsocks;
            fds[r->index] = r->fd; /* admit() checked index < nsocks and no duplicates */
            found++;
        }
    }
    if (found == 0 || found < nsocks) {
        return TUTTI_OK;
    }
    TUTTI_CHECK(tutti__tcp_conn_new(ctx, kind, peer, channel, fds, nsocks, conn_p));
    int n = 0;
    for (int i = 0; i < ctx->nready; i++) {
        if (!ready_for(&ctx->ready[i], kind, peer, channel)) {
            ctx->ready[n++] = ctx->ready[i];
        }
    }
    ctx->nready = n;
    return TUTTI_OK;
}

void tutti__tcp_accept_fini(struct tcp_ctx *ctx)
{
    for (int i = 0; i < ctx->nin; i++) {
        close(ctx->in[i].hs.fd);
    }
    ctx->nin = 0;
    for (int i = 0; i < ctx->nready; i++) {
        close(ctx->ready[i].fd);
    }
    ctx->nready = 0;
    tutti__admit_flush(&ctx->alog, tutti__now_ns(), 1);
}
