/*
 * ib_port.c - which RDMA port this rank uses: the usable ports of one link layer, what a rank's
 * blob says of them, whether any peer is reached over verbs, and opening the chosen device when
 * a connection or a registration first needs it.
 */
#include "ib.h"
#include "base/check.h"
#include "base/log.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

/* The usable ports of one link layer (the first usable port's), in enumeration order. */
int tutti__ib_usable_ports(struct tutti_ib_port *out, int max, char *why, size_t len)
{
    struct tutti_ib_port all[TUTTI_IB_MAX_PORTS];
    int n = tutti__ib_ports(all, TUTTI_IB_MAX_PORTS, why, len);
    int k = 0, link = 0;
    for (int i = 0; i < n && k < max; i++) {
        const struct tutti_ib_port *p = &all[i];
        int addr = p->link == TUTTI_IB_LINK_IB ? p->lid != 0 : p->gid_index >= 0;
        if (p->active && p->allowed && addr && (link == 0 || p->link == link)) {
            link = p->link;
            out[k++] = *p;
        }
    }
    if (n > 0 && k == 0) {
        snprintf(why, len,
                 "%d RDMA port(s), none active, allowed by TUTTI_IB_HCA and addressed "
                 "(tutti-info --rdma)",
                 n);
    }
    return n < 0 ? -1 : k;
}

static void blob_decode(const uint8_t *p, struct ib_blob *b)
{
    memcpy(b, p, sizeof(*b));
    b->magic = le32toh(b->magic);
}

int tutti__ib_blob_compatible(const uint8_t *a, const uint8_t *b)
{
    struct ib_blob x, y;
    blob_decode(a, &x);
    blob_decode(b, &y);
    return x.magic == IB_BLOB_MAGIC && y.magic == IB_BLOB_MAGIC && (x.links & y.links) != 0;
}

int tutti__ib_pick_port(const struct tutti_ib_port *ports, int n, int local, const char *hint)
{
    for (int i = 0; hint != NULL && hint[0] != '\0' && i < n; i++) {
        if (strcmp(ports[i].dev, hint) == 0) {
            return i;
        }
    }
    return n > 0 ? local % n : 0;
}

tutti_status_t tutti__ib_ctx_open(struct ib_ctx *ctx)
{
    if (ctx->dev.ctx != NULL) {
        return TUTTI_OK;
    }
    const struct tutti_tctx_args *a = ctx->args;
    struct tutti_ib_port ports[TUTTI_IB_MAX_PORTS];
    char why[256] = "";
    int n = tutti__ib_usable_ports(ports, TUTTI_IB_MAX_PORTS, why, sizeof(why));
    if (n <= 0) {
        return tutti__set_error(a->err, TUTTI_ERR_UNSUPPORTED,
                                "ib: rank %d has no usable RDMA port any more: %s", a->rank, why);
    }
    int local = 0; /* this rank's index among the ranks of its host */
    for (int r = 0; r < a->rank; r++) {
        local += a->peers[r].host == a->peers[a->rank].host;
    }
    ctx->port = ports[tutti__ib_pick_port(ports, n, local, a->nic_hint)];
    if (tutti__ib_dev_open(&ctx->port, 0, &ctx->dev, why, sizeof(why)) != 0) {
        return tutti__set_error(a->err, TUTTI_ERR_SYSTEM, "ib: %s", why);
    }
    int fl = fcntl(ctx->dev.ctx->async_fd, F_GETFL);
    if (fl < 0 || fcntl(ctx->dev.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        return tutti__set_error(a->err, TUTTI_ERR_SYSTEM,
                                "ib: %s:%d: cannot make the event channel non-blocking: %s",
                                ctx->port.dev, ctx->port.port, strerror(errno));
    }
    tutti_info(
        TUTTI_SUBSYS_NET, "ib: rank %d uses %s:%d (%s, mtu %d; %s)", a->rank, ctx->port.dev,
        ctx->port.port, ctx->port.link == TUTTI_IB_LINK_ETH ? "RoCE" : "InfiniBand", ctx->port.mtu,
        strcmp(ctx->port.dev, a->nic_hint) == 0 ? "nearest its GPU" : "by its index on the host");
    return TUTTI_OK;
}

int tutti__ib_needed(const struct ib_ctx *ctx)
{
    const struct tutti_tctx_args *a = ctx->args;
    if (!ctx->usable || a->peers == NULL) {
        return 0;
    }
    const struct tutti_tpeer *me = &a->peers[a->rank];
    for (int r = 0; r < a->nranks; r++) {
        int remote = a->force_ib || a->peers[r].host != me->host;
        if (r != a->rank && remote &&
            tutti__ib_blob_compatible(me->blob[TUTTI_TRANSPORT_IB],
                                      a->peers[r].blob[TUTTI_TRANSPORT_IB])) {
            return 1;
        }
    }
    return 0;
}
