/*
 * ib_ctx.c - the verbs transport's context (one per communicator) and its ops table, the top
 * of the transport: its other files do not call back into it (ib_port.c opens the device).
 *
 * init() finds the RDMA ports this rank may use (active, allowed by TUTTI_IB_HCA, with an
 * address) and publishes which link layer they have; a rank without one publishes nothing and
 * is reached by the other transports. The port is chosen when the device is first needed (a
 * connection or a registration): the rank's index among the ranks of its host, modulo the
 * usable ports, so that local ranks spread over the NICs. Connections are set up over side
 * connections of the TCP transport (ib_conn.c); check() reads them (abort notices, beats, a
 * peer's end) and the device's asynchronous events (a queue pair in error, a port going down).
 */
#include "ib.h"
#include "base/check.h"
#include "tutti/comm.h"
#include "base/env.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static tutti_status_t read_config(struct ib_ctx *ctx, const struct tutti_env *env)
{
    struct tutti_errbuf *eb = ctx->args->err;
    if (env->IB_QPS < 1 || env->IB_QPS > IB_MAX_QPS) {
        return tutti__set_error(eb, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_IB_QPS value %ld is out of range (1 to %d)", env->IB_QPS,
                                IB_MAX_QPS);
    }
    if (env->IB_SLOT_SIZE < 1 || env->IB_SLOT_SIZE > IB_SLOT_MAX) {
        return tutti__set_error(eb, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_IB_SLOT_SIZE value %zu is out of range (1 to %zu)",
                                env->IB_SLOT_SIZE, IB_SLOT_MAX);
    }
    if (env->IB_NSLOTS < 1 || env->IB_NSLOTS > 256) {
        return tutti__set_error(eb, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_IB_NSLOTS value %ld is out of range (1 to 256)",
                                env->IB_NSLOTS);
    }
    if (env->IB_TIMEOUT < 1 || env->IB_TIMEOUT > 31 || env->IB_RETRY_CNT < 0 ||
        env->IB_RETRY_CNT > 7) {
        return tutti__set_error(eb, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_IB_TIMEOUT %ld / TUTTI_IB_RETRY_CNT %ld out of range (1 to "
                                "31 / 0 to 7)",
                                env->IB_TIMEOUT, env->IB_RETRY_CNT);
    }
    if (env->IB_SL < 0 || env->IB_SL > 15 || env->IB_TC < 0 || env->IB_TC > 255 ||
        env->IB_GID_INDEX < -1 || env->IB_GID_INDEX > 255) {
        return tutti__set_error(eb, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_IB_SL %ld / TUTTI_IB_TC %ld / TUTTI_IB_GID_INDEX %ld out of "
                                "range (0 to 15 / 0 to 255 / -1 to 255)",
                                env->IB_SL, env->IB_TC, env->IB_GID_INDEX);
    }
    if (env->IB_INLINE > 1024) {
        return tutti__set_error(eb, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_IB_INLINE value %zu is out of range (0 to 1024)",
                                env->IB_INLINE);
    }
    ctx->nqps = (int)env->IB_QPS;
    ctx->slot_size = env->IB_SLOT_SIZE;
    ctx->nslots = (int)env->IB_NSLOTS;
    ctx->timeout_exp = (int)env->IB_TIMEOUT;
    ctx->retries = (int)env->IB_RETRY_CNT;
    ctx->inline_max = (int)env->IB_INLINE;
    return TUTTI_OK;
}

static tutti_status_t ib_fini(void *tctx)
{
    struct ib_ctx *ctx = tctx;
    while (ctx->list != NULL) {
        tutti__ib_close(&ctx->list->base); /* normally closed already */
    }
    tutti__ib_reg_free_all(ctx);
    tutti__ib_dev_close(&ctx->dev);
    if (ctx->kick >= 0) {
        close(ctx->kick);
    }
    free(ctx->conns);
    free(ctx);
    return TUTTI_OK;
}

static tutti_status_t ib_init(const struct tutti_tctx_args *args, void **tctx_p, void *blob)
{
    tutti_status_t status;
    struct ib_ctx *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "ib: no memory");
    }
    ctx->args = args;
    ctx->ops = &tutti__ib_ops;
    ctx->kick = -1;
    const struct tutti_env *env = args->env != NULL ? args->env : tutti__env();
    TUTTI_CHECK_GOTO(read_config(ctx, env), status, err_fini);
    ctx->conns = calloc((size_t)args->nranks * TUTTI_MAX_CHANNELS, sizeof(*ctx->conns));
    ctx->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->conns == NULL || ctx->kick < 0) {
        status = tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "ib: no memory or eventfd");
        goto err_fini;
    }
    struct tutti_ib_port ports[TUTTI_IB_MAX_PORTS];
    char why[256] = "";
    int n = tutti__ib_usable_ports(ports, TUTTI_IB_MAX_PORTS, why, sizeof(why));
    if (n < 0) { /* TUTTI_IB_HCA is malformed */
        status = tutti__set_error(args->err, TUTTI_ERR_INVALID_ARG, "%s", why);
        goto err_fini;
    }
    struct ib_blob b = {0};
    if (n > 0) {
        ctx->usable = n;
        b.magic = htole32(IB_BLOB_MAGIC);
        b.links = (uint8_t)(1u << ports[0].link);
        b.nports = (uint8_t)n;
    } else if (args->force_ib) {
        status = tutti__set_error(args->err, TUTTI_ERR_UNSUPPORTED,
                                  "TUTTI_TRANSPORT=ib, but rank %d has no usable RDMA port: %s",
                                  args->rank, why);
        goto err_fini;
    }
    memset(blob, 0, TUTTI_TRANSPORT_BLOB);
    memcpy(blob, &b, sizeof(b));
    tutti_info(TUTTI_SUBSYS_NET, "ib: rank %d: %d usable RDMA port(s)%s%s", args->rank, n,
               n > 0 ? "" : ": ", n > 0 ? "" : why);
    *tctx_p = ctx;
    return TUTTI_OK;

err_fini:
    ib_fini(ctx);
    return status;
}

static tutti_status_t ib_attach(void *tctx, int phase)
{
    (void)tctx;
    (void)phase;
    return TUTTI_OK; /* the device is opened when a connection or registration needs it */
}

/* Both ranks published a port of one link layer (a rank without a usable port publishes none). */
static tutti_status_t ib_can_connect(void *tctx, int a, int b, int *score_p)
{
    const struct ib_ctx *ctx = tctx;
    const struct tutti_tpeer *p = ctx->args->peers;
    int both =
        tutti__ib_blob_compatible(p[a].blob[TUTTI_TRANSPORT_IB], p[b].blob[TUTTI_TRANSPORT_IB]);
    *score_p = both ? 5 : 0; /* above TCP (1), below shared memory (10) */
    return TUTTI_OK;
}

/* A queue pair's connection, or NULL. */
static struct ib_conn *conn_of_qp(struct ib_ctx *ctx, const struct ibv_qp *qp)
{
    for (struct ib_conn *c = ctx->list; c != NULL; c = c->next) {
        for (int q = 0; q < c->nqps; q++) {
            if (c->qp[q] == qp) {
                return c;
            }
        }
    }
    return NULL;
}

/* One asynchronous event of the device: the error it means for the communicator, or OK. */
static tutti_status_t on_async_event(struct ib_ctx *ctx, const struct ibv_async_event *ev)
{
    const char *what = ibv_event_type_str(ev->event_type);
    struct tutti_errbuf *eb = ctx->args->err;
    switch (ev->event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR: {
        struct ib_conn *c = conn_of_qp(ctx, ev->element.qp);
        if (c == NULL) {
            return TUTTI_OK; /* a queue pair being closed */
        }
        return tutti__ib_conn_fail(c, TUTTI_ERR_REMOTE, "%s:%d QP %u to %s: %s", ctx->port.dev,
                                   ctx->port.port, ev->element.qp->qp_num, c->peer_name, what);
    }
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_PORT_ERR:
        if (ev->event_type == IBV_EVENT_PORT_ERR && ev->element.port_num != ctx->port.port) {
            return TUTTI_OK;
        }
        return tutti__set_error(eb, TUTTI_ERR_REMOTE, "%s:%d: %s%s", ctx->port.dev, ctx->port.port,
                                what,
                                ev->event_type == IBV_EVENT_PORT_ERR
                                    ? " (the port left the active state: its link is down)"
                                    : "");
    default:
        tutti_info(TUTTI_SUBSYS_NET, "ib: %s:%d: event %s", ctx->port.dev, ctx->port.port, what);
        return TUTTI_OK;
    }
}

static tutti_status_t ib_check(void *tctx)
{
    struct ib_ctx *ctx = tctx;
    struct ibv_async_event ev;
    while (ctx->dev.ctx != NULL && ibv_get_async_event(ctx->dev.ctx, &ev) == 0) {
        tutti_status_t st = on_async_event(ctx, &ev);
        ibv_ack_async_event(&ev);
        TUTTI_CHECK(st);
    }
    for (struct ib_conn *c = ctx->list; c != NULL; c = c->next) {
        if (c->stage == IB_STAGE_UP) {
            TUTTI_CHECK(tutti__ib_side_check(c));
        }
    }
    return TUTTI_OK;
}

static tutti_status_t ib_abort(void *tctx, const struct tutti_abort_info *info)
{
    /* The notices travel on the side connections, which the TCP transport's abort() reaches
     * (they are its connections too); here only the queue pairs stop. */
    (void)info;
    struct ib_ctx *ctx = tctx;
    for (struct ib_conn *c = ctx->list; c != NULL; c = c->next) {
        if (c->status == TUTTI_OK) {
            c->status = TUTTI_ERR_ABORTED;
        }
    }
    return TUTTI_OK;
}

static struct tutti_doorbell *ib_doorbell(void *tctx)
{
    (void)tctx;
    return NULL;
}

static struct tutti_seq_board *ib_seq_board(void *tctx, int rank)
{
    (void)tctx;
    (void)rank;
    return NULL;
}

tutti_status_t tutti__ib_debug_qp_error(void *tctx, int peer)
{
    struct ib_ctx *ctx = tctx;
    for (struct ib_conn *c = ctx->list; c != NULL; c = c->next) {
        if (c->base.peer == peer && c->stage == IB_STAGE_UP) {
            struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
            int err = ibv_modify_qp(c->qp[0], &a, IBV_QP_STATE);
            tutti_warn("ib: test hook: %s:%d QP %u to %s forced into the error state%s%s",
                       ctx->port.dev, ctx->port.port, c->qp[0]->qp_num, c->peer_name,
                       err != 0 ? ": " : "", err != 0 ? strerror(err) : "");
            return err == 0 ? TUTTI_OK : TUTTI_ERR_SYSTEM;
        }
    }
    return TUTTI_ERR_INVALID_ARG;
}

const struct tutti_transport_ops tutti__ib_ops = {
    .size = sizeof(struct tutti_transport_ops),
    .id = TUTTI_TRANSPORT_IB,
    .name = "ib",
    .flags = TUTTI_TRANSPORT_NEEDS_PROGRESS | TUTTI_TRANSPORT_SEND_REF,
    .init = ib_init,
    .attach = ib_attach,
    .fini = ib_fini,
    .can_connect = ib_can_connect,
    .connect = tutti__ib_connect,
    .check = ib_check,
    .abort = ib_abort,
    .doorbell = ib_doorbell,
    .seq_board = ib_seq_board,
    .reg_mem = tutti__ib_reg_mem,
    .dereg_mem = tutti__ib_dereg_mem,
    .footprint = tutti__ib_footprint,
    .send_acquire = tutti__ib_send_acquire,
    .send_post = tutti__ib_send_post,
    .send_post_ref = tutti__ib_send_post_ref,
    .recv_peek = tutti__ib_recv_peek,
    .recv_release = tutti__ib_recv_release,
    .progress = tutti__ib_progress,
    .beat = tutti__ib_beat,
    .flushed = tutti__ib_flushed,
    .pollfds = tutti__ib_pollfds,
    .close = tutti__ib_close,
};
