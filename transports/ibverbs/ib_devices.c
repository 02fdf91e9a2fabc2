/*
 * ib_devices.c - enumeration of the RDMA ports (ib_devices.h) with libibverbs.
 */
#include "ib_devices.h"
#include "base/env.h"
#include "ib_hca.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <string.h>
#include <unistd.h>

enum { MAX_GIDS = 256 };

/* A GID's preference for RoCE (higher is better; 0: unusable): v2 over v1, IPv4-mapped over
 * IPv6, never link-local for v2 (it does not route) unless nothing else is there. */
static int gid_rank(const struct ibv_gid_entry *g)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const uint8_t *raw = g->gid.raw;
    int zero = 1;
    for (int i = 0; i < 16; i++) {
        zero &= raw[i] == 0;
    }
    if (zero) {
        return 0;
    }
    int v4 = memcmp(raw, v4mapped, 12) == 0;
    int linklocal = raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
    if (g->gid_type == IBV_GID_TYPE_ROCE_V2) {
        return v4 ? 6 : linklocal ? 3 : 5;
    }
    return v4 ? 2 : 1;
}

static double rate_gbps(const struct ibv_port_attr *a)
{
    static const int width_lanes[] = {0, 1, 4, 0, 8, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 2};
    double lane = 0;
    switch (a->active_speed) {
    case 1:
        lane = 2.5;
        break;
    case 2:
        lane = 5;
        break;
    case 4:
    case 8:
        lane = 10;
        break;
    case 16:
        lane = 14;
        break;
    case 32:
        lane = 25;
        break;
    case 64:
        lane = 50;
        break;
    case 128:
        lane = 100;
        break;
    default:
        lane = 0;
        break;
    }
    int lanes = a->active_width < sizeof(width_lanes) / sizeof(width_lanes[0])
                    ? width_lanes[a->active_width]
                    : 0;
    return lane * lanes;
}

/* Pick the GID of a RoCE port, or GID 0 of an InfiniBand one. */
static void pick_gid(struct ibv_context *ctx, struct tutti_ib_port *p)
{
    struct ibv_gid_entry g[MAX_GIDS];
    ssize_t n = ibv_query_gid_table(ctx, g, MAX_GIDS, 0);
    long want = tutti__env()->IB_GID_INDEX; /* RoCE: the user's choice, or -1 */
    int best = 0;
    p->gid_index = -1;
    for (ssize_t i = 0; i < n; i++) {
        if ((int)g[i].port_num != p->port) {
            continue;
        }
        int r = p->link == TUTTI_IB_LINK_IB ? (g[i].gid_index == 0 ? 1 : 0)
                : want >= 0                 ? (g[i].gid_index == want && gid_rank(&g[i]) > 0)
                                            : gid_rank(&g[i]);
        if (r > best) {
            best = r;
            p->gid_index = (int)g[i].gid_index;
            p->gid_type = g[i].gid_type == IBV_GID_TYPE_ROCE_V2   ? TUTTI_IB_GID_ROCE_V2
                          : g[i].gid_type == IBV_GID_TYPE_ROCE_V1 ? TUTTI_IB_GID_ROCE_V1
                                                                  : TUTTI_IB_GID_IB;
            memcpy(p->gid, g[i].gid.raw, 16);
        }
    }
}

int tutti__ib_ports(struct tutti_ib_port *ports, int max, char *why, size_t len)
{
    struct tutti_ib_hca_spec spec;
    if (tutti__ib_hca_parse(tutti__env()->IB_HCA, &spec, why, len) != 0) {
        return -1;
    }
    int ndev = 0, n = 0;
    struct ibv_device **list = ibv_get_device_list(&ndev);
    if (list == NULL || ndev == 0) {
        snprintf(why, len, "no RDMA device (libibverbs found %d; %s)", ndev,
                 access("/sys/class/infiniband", F_OK) == 0
                     ? "/sys/class/infiniband exists: is the user-space provider installed?"
                     : "the kernel has no RDMA device: /sys/class/infiniband is absent");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return 0;
    }
    for (int d = 0; d < ndev && n < max; d++) {
        struct ibv_context *ctx = ibv_open_device(list[d]);
        struct ibv_device_attr da;
        if (ctx == NULL || ibv_query_device(ctx, &da) != 0) {
            if (ctx != NULL) {
                ibv_close_device(ctx);
            }
            continue;
        }
        for (int port = 1; port <= da.phys_port_cnt && n < max; port++) {
            struct ibv_port_attr pa;
            if (ibv_query_port(ctx, (uint8_t)port, &pa) != 0) {
                continue;
            }
            struct tutti_ib_port *p = &ports[n++];
            memset(p, 0, sizeof(*p));
            snprintf(p->dev, sizeof(p->dev), "%s", ibv_get_device_name(list[d]));
            p->port = port;
            p->active = pa.state == IBV_PORT_ACTIVE;
            p->link =
                pa.link_layer == IBV_LINK_LAYER_ETHERNET ? TUTTI_IB_LINK_ETH : TUTTI_IB_LINK_IB;
            p->mtu = 128 << pa.active_mtu;
            p->gbps = rate_gbps(&pa);
            p->lid = pa.lid;
            pick_gid(ctx, p);
            p->allowed = tutti__ib_hca_allows(&spec, p->dev, port);
        }
        ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    if (n == 0) {
        snprintf(why, len, "%d RDMA device(s), but no port could be queried", ndev);
    }
    return n;
}

void tutti__ib_gid_str(const uint8_t gid[16], char *out, size_t len)
{
    char buf[INET6_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET6, gid, buf, sizeof(buf));
    snprintf(out, len, "%s", buf);
}

int tutti__ib_info(FILE *out)
{
    struct tutti_ib_port ports[TUTTI_IB_MAX_PORTS];
    char why[256] = "";
    int n = tutti__ib_ports(ports, TUTTI_IB_MAX_PORTS, why, sizeof(why));
    if (n <= 0) {
        fprintf(out, "rdma: none: %s\n", why);
        return 0;
    }
    int usable = 0;
    for (int i = 0; i < n; i++) {
        const struct tutti_ib_port *p = &ports[i];
        char gid[64];
        tutti__ib_gid_str(p->gid, gid, sizeof(gid));
        int use = p->active && p->allowed && p->gid_index >= 0;
        usable += use;
        fprintf(out, "rdma: %s:%d %s %s mtu %d", p->dev, p->port, p->active ? "active" : "down",
                p->link == TUTTI_IB_LINK_ETH ? "RoCE" : "InfiniBand", p->mtu);
        if (p->gbps > 0) {
            fprintf(out, " %.0f Gb/s", p->gbps);
        }
        if (p->link == TUTTI_IB_LINK_IB) {
            fprintf(out, " lid %u", p->lid);
        }
        if (p->gid_index >= 0) {
            fprintf(out, " gid[%d] %s %s", p->gid_index,
                    p->gid_type == TUTTI_IB_GID_ROCE_V2   ? "RoCEv2"
                    : p->gid_type == TUTTI_IB_GID_ROCE_V1 ? "RoCEv1"
                                                          : "IB",
                    gid);
        } else if (p->link == TUTTI_IB_LINK_ETH && tutti__env()->IB_GID_INDEX >= 0) {
            fprintf(out, " no gid %ld (TUTTI_IB_GID_INDEX)", tutti__env()->IB_GID_INDEX);
        } else {
            fprintf(out, " no usable gid");
        }
        fprintf(out, "%s\n", use ? ": usable" : !p->allowed ? ": left out by TUTTI_IB_HCA" : "");
    }
    return usable;
}
