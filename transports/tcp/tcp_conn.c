/*
 * tcp_conn.c - the TCP transport's context and connection set-up, and its ops table.
 *
 * Each rank listens on one socket and publishes its address in its blob. For a (peer, channel)
 * the lower rank opens nsocks sockets to the higher rank, and every socket proves the job's
 * secret with the handshake of net/handshake.h; its authenticated payload says which rank,
 * channel and socket index it is. The higher rank accepts and authenticates whatever arrives,
 * in any order (tcp_accept.c), keeps authenticated sockets in a table until its own connect()
 * for that (peer, channel) claims them, and refuses everything else; under a flood of strangers
 * it evicts handshakes, and a rank whose handshake was closed connects again.
 */
#include "tcp.h"
#include "base/check.h"
#include "base/env.h"
#include "base/fork_gate.h"
#include "tutti/comm.h"
#include "base/util.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The address `peer` published, and its name for messages. */
static tutti_status_t peer_addr(struct tcp_ctx *ctx, int peer, union tutti_sockaddr *to, char *name,
                                size_t len)
{
    const struct tutti_tpeer *p = &ctx->args->peers[peer];
    struct tutti_wire_addr w;
    memcpy(&w, p->blob[TUTTI_TRANSPORT_TCP], sizeof(w));
    tutti__tpeer_name(ctx->args->peers, peer, name, len);
    if (tutti__wire_addr_decode(&w, to) != TUTTI_OK) {
        return tutti__set_error(ctx->args->err, TUTTI_ERR_REMOTE,
                                "%s published no tcp address (family %u)", name, w.family);
    }
    return TUTTI_OK;
}

/* Start socket i of a link to `peer` (again, after its handshake was closed). */
static tutti_status_t sock_start(struct tcp_ctx *ctx, struct tcp_link *l, int i, int peer)
{
    union tutti_sockaddr to;
    char name[128], addr[80];
    TUTTI_CHECK(peer_addr(ctx, peer, &to, name, sizeof(name)));
    tutti_status_t st = tutti__sock_connect_start(&to, &l->fds[i]);
    if (st == TUTTI_ERR_REMOTE) {
        int err = errno; /* refused at once: the peer is gone */
        return tutti__set_error(ctx->args->err, st, "cannot connect to %s at %s: %s", name,
                                tutti__sockaddr_str(&to, addr, sizeof(addr)), strerror(err));
    }
    l->stage[i] = 0;
    return st;
}

/* Start nsocks connections to the address `peer` published. */
static tutti_status_t link_start(struct tcp_ctx *ctx, struct tcp_link *l, int nsocks, int peer)
{
    for (int i = 0; i < nsocks; i++) {
        TUTTI_CHECK(sock_start(ctx, l, i, peer));
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
        return tutti__set_error(ctx->args->err, st,
                                "the listener of %s failed to authenticate channel %d (another "
                                "job, or a different secret)",
                                name, channel);
    case TUTTI_ERR_REMOTE:
        return tutti__set_error(ctx->args->err, st,
                                "%s closed the connection during the handshake of channel %d "
                                "(its log says why)",
                                name, channel);
    case TUTTI_ERR_TIMEOUT:
        return tutti__set_error(ctx->args->err, st,
                                "%s did not complete the handshake of channel %d within %.1f s",
                                name, channel, (double)ctx->timeout_ns / 1e9);
    default:
        return tutti__set_error(ctx->args->err, st, "handshake with %s on channel %d: %s", name,
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
                return tutti__set_error(ctx->args->err, st, "cannot connect to %s: %s", name,
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
                    .slot_size = tutti__tcp_kind_slot_size(ctx, (uint32_t)kind),
                };
                uint8_t payload[TUTTI_HS_PAYLOAD];
                tutti__tcp_hello_encode(&h, payload);
                tutti__hs_init_connect(&l->hs[i], l->fds[i], ctx->secret, ctx->args->comm_id,
                                       payload, sizeof(payload), l->deadline_ns);
                l->stage[i] = 1;
            }
        }
        if (l->stage[i] == 1) {
            tutti_status_t st = tutti__hs_progress(&l->hs[i]);
            if (st == TUTTI_ERR_REMOTE && tutti__now_ns() < l->deadline_ns) {
                /* Closed before it proved anything: a flooded listener evicts handshakes
                 * (net/admit.h), and a rank must not pay for strangers. Again; if the peer has
                 * gone, the new connection is refused. */
                tutti_debug(TUTTI_SUBSYS_NET,
                            "tcp: %s closed the handshake of socket %d of "
                            "channel %d; connecting again",
                            name, i, channel);
                close(l->fds[i]);
                l->fds[i] = -1;
                TUTTI_CHECK(sock_start(ctx, l, i, peer));
                continue;
            }
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
        return tutti__set_error(ctx->args->err, TUTTI_ERR_TIMEOUT,
                                "connecting to %s on channel %d took more than %.1f s", name,
                                channel, (double)ctx->timeout_ns / 1e9);
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
        return tutti__set_error(args->err, TUTTI_ERR_INVALID_ARG,
                                "tcp connect of rank %d to rank %d channel %d%s", args->rank, peer,
                                channel, args->peers == NULL ? " before attach" : "");
    }
    int idx = tutti__tcp_pair(ctx, kind, peer, channel);
    if (ctx->connected[idx]) {
        return tutti__set_error(args->err, TUTTI_ERR_INVALID_USAGE,
                                "tcp: rank %d channel %d is already connected", peer, channel);
    }
    char name[128];
    tutti__tpeer_name(args->peers, peer, name, sizeof(name));
    tutti_status_t status = TUTTI_OK;
    struct tcp_conn *conn = NULL;
    if (ctx->links[idx] == NULL) {
        struct tcp_link *l = calloc(1, sizeof(*l));
        if (l == NULL) {
            return tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
        }
        memset(l->fds, -1, sizeof(l->fds));
        l->deadline_ns = tutti__now_ns() + ctx->timeout_ns;
        ctx->links[idx] = l;
        if (peer > args->rank) {
            int nsocks = kind == TCP_KIND_SIDE ? 1 : tutti__tcp_nsocks(ctx);
            TUTTI_CHECK_GOTO(link_start(ctx, l, nsocks, peer), status, err_free_link);
        }
    }
    if (peer > args->rank) {
        TUTTI_CHECK_GOTO(connect_out(ctx, ctx->links[idx], kind, peer, channel, name, &conn),
                         status, err_free_link);
    } else {
        TUTTI_CHECK_GOTO(tutti__tcp_accept_all(ctx), status, err_free_link);
        TUTTI_CHECK_GOTO(tutti__tcp_claim(ctx, kind, peer, channel, &conn), status, err_free_link);
        if (conn == NULL && tutti__now_ns() > ctx->links[idx]->deadline_ns) {
            status = tutti__set_error(args->err, TUTTI_ERR_TIMEOUT,
                                      "%s did not connect channel %d within %.1f s", name, channel,
                                      (double)ctx->timeout_ns / 1e9);
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

/*
 * Sockets per connection when TUTTI_NSOCKS is 0 (its default). More sockets keep more of a large
 * transfer in the kernel at once: on loopback, 2 ranks, 4 sockets took 0.61-0.91 of 2's time for
 * send/recv from 64 KiB and 0.77-0.89 for broadcast from 256 KiB, and within 6% of it below 64
 * KiB (perf/results/2026-12-01-tcp-channels.md). Every socket is a descriptor, and a rank may
 * connect to all its peers on several channels: larger communicators keep 2. So do ranks that
 * outnumber their machine's CPUs (cpu_load > 1): the sweep of every socket and the poll of a
 * large frame cost a CPU that a peer needs: with 4 ranks on 2 CPUs, 2 sockets took 0.85-0.98 of
 * 4's time for all-reduce at 8 B-32 KiB in two runs, 0.96-1.02 at 2-16 MiB
 * (perf/results/2026-12-01-tcp-crowded.md).
 * Read at each connect, as the load is known only after the records are gathered.
 */
#define TCP_AUTO_SOCKS       4
#define TCP_AUTO_SOCKS_RANKS 8

int tutti__tcp_nsocks(const struct tcp_ctx *ctx)
{
    if (ctx->nsocks_set > 0) {
        return ctx->nsocks_set;
    }
    const struct tutti_tctx_args *a = ctx->args;
    return a->nranks <= TCP_AUTO_SOCKS_RANKS && a->cpu_load <= 1.0 ? TCP_AUTO_SOCKS : 2;
}

static tutti_status_t read_config(struct tcp_ctx *ctx, const struct tutti_tctx_args *args)
{
    const struct tutti_env *env = args->env != NULL ? args->env : tutti__env();
    if (env->NSOCKS < 0 || env->NSOCKS > TCP_MAX_SOCKS) {
        return tutti__set_error(args->err, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_NSOCKS value %ld is out of range (0 to %d)", env->NSOCKS,
                                TCP_MAX_SOCKS);
    }
    if (env->TCP_SLOT_SIZE < 1 || env->TCP_SLOT_SIZE > (1u << 30)) {
        return tutti__set_error(args->err, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_TCP_SLOT_SIZE value %zu is out of range (1 to 1G)",
                                env->TCP_SLOT_SIZE);
    }
    if (env->TCP_NSLOTS < 1 || env->TCP_NSLOTS > 1024) {
        return tutti__set_error(args->err, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_TCP_NSLOTS value %ld is out of range (1 to 1024)",
                                env->TCP_NSLOTS);
    }
    ctx->nsocks_set = (int)env->NSOCKS;
    ctx->slot_size = env->TCP_SLOT_SIZE;
    ctx->nslots = (int)env->TCP_NSLOTS;
    ctx->timeout_ns = args->timeout_ns > 0 ? args->timeout_ns : env->TIMEOUT;
    ctx->hs_timeout_ns = TUTTI_MIN(env->HANDSHAKE_TIMEOUT, ctx->timeout_ns);
    return TUTTI_OK;
}

static tutti_status_t tcp_fini(void *tctx)
{
    struct tcp_ctx *ctx = tctx;
    while (ctx->conns != NULL) {
        tutti__tcp_close(&ctx->conns->base); /* normally closed already */
    }
    tutti__tcp_accept_fini(ctx);
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
        return tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
    }
    ctx->args = args;
    ctx->lfd = -1;
    snprintf(ctx->alog.who, sizeof(ctx->alog.who), "tcp: rank %d", args->rank);
    memcpy(ctx->secret, args->secret, TUTTI_SECRET_BYTES);
    ctx->npairs = args->nranks * TUTTI_MAX_CHANNELS;
    ctx->links = calloc(2 * (size_t)ctx->npairs, sizeof(*ctx->links));
    ctx->connected = calloc(2 * (size_t)ctx->npairs, 1);
    if (ctx->links == NULL || ctx->connected == NULL) {
        status = tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "tcp: no memory");
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
    char socks[16] = "auto";
    if (ctx->nsocks_set > 0) {
        snprintf(socks, sizeof(socks), "%d", ctx->nsocks_set);
    }
    tutti_info(TUTTI_SUBSYS_NET, "tcp: rank %d listens on %s (%s sockets, %d slots of %zu bytes)",
               args->rank, tutti__sockaddr_str(&ctx->laddr, s, sizeof(s)), socks, ctx->nslots,
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

static tutti_status_t tcp_can_connect(void *tctx, int a, int b, int *score_p)
{
    (void)tctx;
    (void)a;
    (void)b;
    *score_p = 1; /* TCP reaches everyone; anything local is better */
    return TUTTI_OK;
}

static tutti_status_t tcp_check(void *tctx)
{
    return tutti__tcp_accept_all(tctx); /* so that strangers are refused promptly */
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

static const struct tutti_side_ops tcp_side = {
    .connect = tutti__tcp_side_connect,
    .recv_ready = tutti__tcp_recv_ready,
    .peer_gone = tutti__tcp_peer_gone,
};

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
    .peek_fp = tutti__tcp_peek_fp,
    .recv_peek = tutti__tcp_recv_peek,
    .recv_release = tutti__tcp_recv_release,
    .progress = tutti__tcp_progress,
    .beat = tutti__tcp_beat,
    .flushed = tutti__tcp_flushed,
    .pollfds = tutti__tcp_pollfds,
    .close = tutti__tcp_close,
    .side = &tcp_side,
};
