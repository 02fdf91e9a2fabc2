/*
 * tcp_conn.c - the TCP transport's context and connection set-up, and its ops table.
 *
 * Each rank listens on one socket and publishes its address in its blob. For a (peer, channel)
 * the lower rank opens nsocks sockets to the higher rank, and every socket proves the job's
 * secret with the handshake of net/handshake.h; its authenticated payload says which rank,
 * channel and socket index it is. The higher rank accepts and authenticates whatever arrives,
 * in any order, keeps authenticated sockets in a table until its own connect() for that
 * (peer, channel) claims them, and refuses everything else with one warning naming the address.
 */
#include "tcp.h"
#include "check.h"
#include "env.h"
#include "fork_gate.h"
#include "tutti/comm.h"
#include "util.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCP_MAX_INCOMING 1024 /* handshakes in progress at once; more are closed at once */

/* The handshake payload of a data socket: what the connection is for (little-endian). */
struct tcp_hello {
    uint32_t kind, from, to, channel, index, nsocks;
    uint64_t slot_size;
};

static void put_u32s(uint8_t *p, const uint32_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t le = htole32(v[i]);
        memcpy(p + 4 * i, &le, 4);
    }
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

static void hello_encode(const struct tcp_hello *h, uint8_t p[TUTTI_HS_PAYLOAD])
{
    const uint32_t v[8] = {h->kind,
                           h->from,
                           h->to,
                           h->channel,
                           h->index,
                           h->nsocks,
                           (uint32_t)h->slot_size,
                           (uint32_t)(h->slot_size >> 32)};
    put_u32s(p, v, 8);
}

static void hello_decode(const uint8_t p[TUTTI_HS_PAYLOAD], struct tcp_hello *h)
{
    h->kind = get_u32(p);
    h->from = get_u32(p + 4);
    h->to = get_u32(p + 8);
    h->channel = get_u32(p + 12);
    h->index = get_u32(p + 16);
    h->nsocks = get_u32(p + 20);
    h->slot_size = get_u32(p + 24) | (uint64_t)get_u32(p + 28) << 32;
}

static double secs(int64_t ns)
{
    return (double)ns / 1e9;
}

/* ---------------------------------------------------------------- the accepting side */

/* Close a socket that is not let in, with one warning naming where it came from. */
static void refuse(int fd, const char *from, const char *why)
{
    tutti_warn("refused connection from %s: %s", from, why);
    close(fd);
}

static const char *hs_failure(tutti_status_t st)
{
    switch (st) {
    case TUTTI_ERR_AUTH:
        return "authentication failed";
    case TUTTI_ERR_REMOTE:
        return "closed during the handshake";
    case TUTTI_ERR_TIMEOUT:
        return "no complete handshake before the deadline";
    default:
        return tutti_status_string(st);
    }
}

/* The slot size connections of `kind` use. */
static size_t kind_slot_size(const struct tcp_ctx *ctx, uint32_t kind)
{
    return kind == TCP_KIND_SIDE ? TCP_SIDE_SLOT_SIZE : ctx->slot_size;
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
    } else if (h->slot_size != kind_slot_size(ctx, h->kind)) {
        snprintf(why, len, "rank %u uses TUTTI_TCP_SLOT_SIZE %llu, this rank %zu", h->from,
                 (unsigned long long)h->slot_size, kind_slot_size(ctx, h->kind));
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
    hello_decode(in->hs.payload, &h);
    if (bad_payload(ctx, &h, why, sizeof(why))) {
        refuse(in->hs.fd, in->from, why);
        return TUTTI_OK;
    }
    if (reserve((void **)&ctx->ready, &ctx->capready, ctx->nready, sizeof(*ctx->ready)) != 0) {
        close(in->hs.fd);
        return tutti__set_error(ctx->args->comm, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
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

/* Accept every pending connection, then move every handshake forward. */
static tutti_status_t accept_all(struct tcp_ctx *ctx)
{
    for (;;) {
        int fd;
        union tutti_sockaddr from;
        tutti_status_t st = tutti__sock_accept(ctx->lfd, &fd, &from);
        if (st == TUTTI_IN_PROGRESS) {
            break;
        }
        TUTTI_CHECK(st);
        char name[80];
        tutti__sockaddr_str(&from, name, sizeof(name));
        if (ctx->nin >= TCP_MAX_INCOMING ||
            reserve((void **)&ctx->in, &ctx->capin, ctx->nin, sizeof(*ctx->in)) != 0) {
            refuse(fd, name, "too many handshakes in progress");
            continue;
        }
        struct tcp_incoming *in = &ctx->in[ctx->nin++];
        tutti__hs_init_accept(&in->hs, fd, ctx->secret, ctx->args->comm_id,
                              tutti__now_ns() + ctx->timeout_ns);
        memcpy(in->from, name, sizeof(in->from));
    }
    tutti_status_t status = TUTTI_OK;
    for (int i = 0; i < ctx->nin;) {
        struct tcp_incoming *in = &ctx->in[i];
        tutti_status_t st = tutti__hs_progress(&in->hs);
        if (st == TUTTI_IN_PROGRESS) {
            i++;
            continue;
        }
        if (st == TUTTI_OK) {
            status = admit(ctx, in);
        } else {
            refuse(in->hs.fd, in->from, hs_failure(st));
        }
        ctx->in[i] = ctx->in[--ctx->nin];
        if (status != TUTTI_OK) {
            return status;
        }
    }
    return TUTTI_OK;
}

/* The sockets of (kind, peer, channel) are ready[i]. */
static int ready_for(const struct tcp_ready *r, int kind, int peer, int channel)
{
    return r->kind == kind && r->peer == peer && r->channel == channel;
}

/* Claim the sockets of (kind, peer, channel) once all of them are authenticated. */
static tutti_status_t claim(struct tcp_ctx *ctx, int kind, int peer, int channel,
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

/* ---------------------------------------------------------------- the connecting side */

static void link_free(struct tcp_ctx *ctx, int idx)
{
    struct tcp_link *l = ctx->links[idx];
    for (int i = 0; i < l->nsocks; i++) {
        if (l->fds[i] >= 0) {
            close(l->fds[i]);
        }
    }
    free(l);
    ctx->links[idx] = NULL;
}

/* Start nsocks connections to the address `peer` published. */
static tutti_status_t link_start(struct tcp_ctx *ctx, struct tcp_link *l, int nsocks, int peer,
                                 char *name, size_t len)
{
    const struct tutti_peer_info *p = &ctx->args->peers[peer];
    struct tutti_wire_addr w;
    union tutti_sockaddr to;
    char addr[80];
    memcpy(&w, p->blob[TUTTI_TRANSPORT_TCP], sizeof(w));
    tutti__peer_str(p, name, len);
    if (tutti__wire_addr_decode(&w, &to) != TUTTI_OK) {
        return tutti__set_error(ctx->args->comm, TUTTI_ERR_REMOTE,
                                "%s published no tcp address (family %u)", name, w.family);
    }
    for (int i = 0; i < nsocks; i++) {
        tutti_status_t st = tutti__sock_connect_start(&to, &l->fds[i]);
        if (st == TUTTI_ERR_REMOTE) {
            int err = errno; /* refused at once: the peer is gone */
            return tutti__set_error(ctx->args->comm, st, "cannot connect to %s at %s: %s", name,
                                    tutti__sockaddr_str(&to, addr, sizeof(addr)), strerror(err));
        }
        TUTTI_CHECK(st);
        l->nsocks = i + 1;
    }
    return TUTTI_OK;
}

/* Error of the handshake of a socket this rank opened. */
static tutti_status_t connect_hs_error(struct tcp_ctx *ctx, tutti_status_t st, const char *name,
                                       int channel)
{
    switch (st) {
    case TUTTI_ERR_AUTH:
        return tutti__set_error(ctx->args->comm, st,
                                "the listener of %s failed to authenticate channel %d (another "
                                "job, or a different secret)",
                                name, channel);
    case TUTTI_ERR_REMOTE:
        return tutti__set_error(ctx->args->comm, st,
                                "%s closed the connection during the handshake of channel %d "
                                "(its log says why)",
                                name, channel);
    case TUTTI_ERR_TIMEOUT:
        return tutti__set_error(ctx->args->comm, st,
                                "%s did not complete the handshake of channel %d within %.1f s",
                                name, channel, secs(ctx->timeout_ns));
    default:
        return tutti__set_error(ctx->args->comm, st, "handshake with %s on channel %d: %s", name,
                                channel, tutti_status_string(st));
    }
}

/* Move this rank's sockets to (kind, peer, channel) forward; build the connection when all
 * are in. */
static tutti_status_t connect_out(struct tcp_ctx *ctx, struct tcp_link *l, int kind, int peer,
                                  int channel, const char *name, struct tcp_conn **conn_p)
{
    int ready = 0;
    for (int i = 0; i < l->nsocks; i++) {
        int err = 0;
        if (l->stage[i] == 0) {
            tutti_status_t st = tutti__sock_connect_check(l->fds[i], &err);
            if (st == TUTTI_ERR_REMOTE) {
                return tutti__set_error(ctx->args->comm, st, "cannot connect to %s: %s", name,
                                        strerror(err));
            }
            if (st == TUTTI_OK) {
                struct tcp_hello h = {
                    .kind = (uint32_t)kind,
                    .from = (uint32_t)ctx->args->rank,
                    .to = (uint32_t)peer,
                    .channel = (uint32_t)channel,
                    .index = (uint32_t)i,
                    .nsocks = (uint32_t)l->nsocks,
                    .slot_size = kind_slot_size(ctx, (uint32_t)kind),
                };
                uint8_t payload[TUTTI_HS_PAYLOAD];
                hello_encode(&h, payload);
                tutti__hs_init_connect(&l->hs[i], l->fds[i], ctx->secret, ctx->args->comm_id,
                                       payload, sizeof(payload), l->deadline_ns);
                l->stage[i] = 1;
            }
        }
        if (l->stage[i] == 1) {
            tutti_status_t st = tutti__hs_progress(&l->hs[i]);
            if (st < 0) {
                return connect_hs_error(ctx, st, name, channel);
            }
            l->stage[i] = st == TUTTI_OK ? 2 : 1;
        }
        ready += l->stage[i] == 2;
    }
    if (ready == l->nsocks) {
        TUTTI_CHECK(tutti__tcp_conn_new(ctx, kind, peer, channel, l->fds, l->nsocks, conn_p));
        l->nsocks = 0; /* the connection owns the sockets now */
        return TUTTI_OK;
    }
    if (tutti__now_ns() > l->deadline_ns) {
        return tutti__set_error(ctx->args->comm, TUTTI_ERR_TIMEOUT,
                                "connecting to %s on channel %d took more than %.1f s", name,
                                channel, secs(ctx->timeout_ns));
    }
    return TUTTI_OK;
}

/* ---------------------------------------------------------------- ops */

/* connect() of either kind of connection. */
static tutti_status_t connect_kind(struct tcp_ctx *ctx, int kind, int peer, int channel,
                                   struct tutti_tconn **conn_p)
{
    const struct tutti_tctx_args *args = ctx->args;
    if (peer < 0 || peer >= args->nranks || peer == args->rank || channel < 0 ||
        channel >= TUTTI_MAX_CHANNELS || args->peers == NULL) {
        return tutti__set_error(args->comm, TUTTI_ERR_INVALID_ARG,
                                "tcp connect of rank %d to rank %d channel %d%s", args->rank, peer,
                                channel, args->peers == NULL ? " before attach" : "");
    }
    int idx = tutti__tcp_pair(ctx, kind, peer, channel);
    if (ctx->connected[idx]) {
        return tutti__set_error(args->comm, TUTTI_ERR_INVALID_USAGE,
                                "tcp: rank %d channel %d is already connected", peer, channel);
    }
    char name[128];
    tutti__peer_str(&args->peers[peer], name, sizeof(name));
    tutti_status_t status = TUTTI_OK;
    struct tcp_conn *conn = NULL;
    if (ctx->links[idx] == NULL) {
        struct tcp_link *l = calloc(1, sizeof(*l));
        if (l == NULL) {
            return tutti__set_error(args->comm, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
        }
        memset(l->fds, -1, sizeof(l->fds));
        l->deadline_ns = tutti__now_ns() + ctx->timeout_ns;
        ctx->links[idx] = l;
        if (peer > args->rank) {
            int nsocks = kind == TCP_KIND_SIDE ? 1 : ctx->nsocks;
            TUTTI_CHECK_GOTO(link_start(ctx, l, nsocks, peer, name, sizeof(name)), status,
                             err_free_link);
        }
    }
    if (peer > args->rank) {
        TUTTI_CHECK_GOTO(connect_out(ctx, ctx->links[idx], kind, peer, channel, name, &conn),
                         status, err_free_link);
    } else {
        TUTTI_CHECK_GOTO(accept_all(ctx), status, err_free_link);
        TUTTI_CHECK_GOTO(claim(ctx, kind, peer, channel, &conn), status, err_free_link);
        if (conn == NULL && tutti__now_ns() > ctx->links[idx]->deadline_ns) {
            status = tutti__set_error(args->comm, TUTTI_ERR_TIMEOUT,
                                      "%s did not connect channel %d within %.1f s", name, channel,
                                      secs(ctx->timeout_ns));
            goto err_free_link;
        }
    }
    if (conn != NULL) {
        link_free(ctx, idx);
        tutti_debug(TUTTI_SUBSYS_NET, "tcp: connected to %s on channel %d with %d sockets%s", name,
                    channel, conn->nsocks, kind == TCP_KIND_SIDE ? " (side)" : "");
    }
    *conn_p = conn != NULL ? &conn->base : NULL;
    return TUTTI_OK;

err_free_link:
    link_free(ctx, idx);
    return status;
}

static tutti_status_t tcp_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p)
{
    return connect_kind(tctx, TCP_KIND_DATA, peer, channel, conn_p);
}

tutti_status_t tutti__tcp_side_connect(void *tcp_tctx, int peer, int channel,
                                       struct tutti_tconn **conn_p)
{
    return connect_kind(tcp_tctx, TCP_KIND_SIDE, peer, channel, conn_p);
}

static tutti_status_t read_config(struct tcp_ctx *ctx, const struct tutti_tctx_args *args)
{
    const struct tutti_env *env = args->env != NULL ? args->env : tutti__env();
    if (env->NSOCKS < 1 || env->NSOCKS > TCP_MAX_SOCKS) {
        return tutti__set_error(args->comm, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_NSOCKS value %ld is out of range (1 to %d)", env->NSOCKS,
                                TCP_MAX_SOCKS);
    }
    if (env->TCP_SLOT_SIZE < 1 || env->TCP_SLOT_SIZE > (1u << 30)) {
        return tutti__set_error(args->comm, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_TCP_SLOT_SIZE value %zu is out of range (1 to 1G)",
                                env->TCP_SLOT_SIZE);
    }
    if (env->TCP_NSLOTS < 1 || env->TCP_NSLOTS > 1024) {
        return tutti__set_error(args->comm, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_TCP_NSLOTS value %ld is out of range (1 to 1024)",
                                env->TCP_NSLOTS);
    }
    ctx->nsocks = (int)env->NSOCKS;
    ctx->slot_size = env->TCP_SLOT_SIZE;
    ctx->nslots = (int)env->TCP_NSLOTS;
    ctx->timeout_ns = args->timeout_ns > 0 ? args->timeout_ns : env->TIMEOUT;
    return TUTTI_OK;
}

static tutti_status_t tcp_fini(void *tctx)
{
    struct tcp_ctx *ctx = tctx;
    while (ctx->conns != NULL) {
        tutti__tcp_close(&ctx->conns->base); /* normally closed already */
    }
    for (int i = 0; i < ctx->nin; i++) {
        close(ctx->in[i].hs.fd);
    }
    for (int i = 0; i < ctx->nready; i++) {
        close(ctx->ready[i].fd);
    }
    for (int i = 0; ctx->links != NULL && i < 2 * ctx->npairs; i++) {
        if (ctx->links[i] != NULL) {
            link_free(ctx, i);
        }
    }
    if (ctx->lfd >= 0) {
        tutti__fork_gate_fd_del(ctx->lfd);
        close(ctx->lfd);
    }
    free(ctx->in);
    free(ctx->ready);
    free(ctx->links);
    free(ctx->connected);
    free(ctx);
    return TUTTI_OK;
}

static tutti_status_t tcp_init(const struct tutti_tctx_args *args, void **tctx_p, void *blob)
{
    tutti_status_t status;
    struct tcp_ctx *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return tutti__set_error(args->comm, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
    }
    ctx->args = args;
    ctx->lfd = -1;
    memcpy(ctx->secret, args->secret, TUTTI_SECRET_BYTES);
    ctx->npairs = args->nranks * TUTTI_MAX_CHANNELS;
    ctx->links = calloc(2 * (size_t)ctx->npairs, sizeof(*ctx->links));
    ctx->connected = calloc(2 * (size_t)ctx->npairs, 1);
    if (ctx->links == NULL || ctx->connected == NULL) {
        status = tutti__set_error(args->comm, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
        goto err_fini;
    }
    TUTTI_CHECK_GOTO(read_config(ctx, args), status, err_fini);
    union tutti_sockaddr local;
    TUTTI_CHECK_GOTO(tutti__sock_local_addr(args->root_hint, &local), status, err_fini);
    TUTTI_CHECK_GOTO(tutti__sock_listen(&local, &ctx->lfd, &ctx->laddr), status, err_fini);
    (void)tutti__fork_gate_fd_add(ctx->lfd); /* a forked child must not keep taking connections */
    struct tutti_wire_addr w;
    tutti__wire_addr_encode(&ctx->laddr, &w);
    memset(blob, 0, TUTTI_TRANSPORT_BLOB);
    memcpy(blob, &w, sizeof(w));
    char s[80];
    tutti_info(TUTTI_SUBSYS_NET, "tcp: rank %d listens on %s (%d sockets, %d slots of %zu bytes)",
               args->rank, tutti__sockaddr_str(&ctx->laddr, s, sizeof(s)), ctx->nsocks, ctx->nslots,
               ctx->slot_size);
    *tctx_p = ctx;
    return TUTTI_OK;

err_fini:
    tcp_fini(ctx);
    return status;
}

static tutti_status_t tcp_attach(void *tctx, int phase)
{
    (void)tctx;
    (void)phase;
    return TUTTI_OK; /* nothing to map: peers are reached through their published addresses */
}

static tutti_status_t tcp_can_connect(void *tctx, int peer, int *score_p)
{
    (void)tctx;
    (void)peer;
    *score_p = 1; /* TCP reaches everyone; anything local is better */
    return TUTTI_OK;
}

static tutti_status_t tcp_check(void *tctx)
{
    return accept_all(tctx); /* so that strangers are refused promptly */
}

static tutti_status_t tcp_abort(void *tctx, const struct tutti_abort_info *info)
{
    struct tcp_ctx *ctx = tctx;
    for (struct tcp_conn *c = ctx->conns; c != NULL; c = c->next) {
        tutti__tcp_conn_abort(c, info);
    }
    return TUTTI_OK;
}

static struct tutti_doorbell *tcp_doorbell(void *tctx)
{
    (void)tctx;
    return NULL;
}

static struct tutti_seq_board *tcp_seq_board(void *tctx, int rank)
{
    (void)tctx;
    (void)rank;
    return NULL;
}

const struct tutti_transport_ops tutti__tcp_ops = {
    .size = sizeof(struct tutti_transport_ops),
    .id = TUTTI_TRANSPORT_TCP,
    .name = "tcp",
    .flags = TUTTI_TRANSPORT_NEEDS_PROGRESS | TUTTI_TRANSPORT_SEND_REF | TUTTI_TRANSPORT_RECV_PLACE,
    .init = tcp_init,
    .attach = tcp_attach,
    .fini = tcp_fini,
    .can_connect = tcp_can_connect,
    .connect = tcp_connect,
    .check = tcp_check,
    .abort = tcp_abort,
    .doorbell = tcp_doorbell,
    .seq_board = tcp_seq_board,
    .send_acquire = tutti__tcp_send_acquire,
    .send_post = tutti__tcp_send_post,
    .send_post_ref = tutti__tcp_send_post_ref,
    .recv_place = tutti__tcp_recv_place,
    .recv_peek = tutti__tcp_recv_peek,
    .recv_release = tutti__tcp_recv_release,
    .progress = tutti__tcp_progress,
    .beat = tutti__tcp_beat,
    .flushed = tutti__tcp_flushed,
    .pollfds = tutti__tcp_pollfds,
    .close = tutti__tcp_close,
};
