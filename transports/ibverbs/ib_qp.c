/*
 * ib_qp.c - device contexts and RC queue pairs (ib_qp.h).
 */
#include "ib_qp.h"
#include "base/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t len, const struct tutti_ib_dev *d, const char *what, int err)
{
    snprintf(why, len, "%s:%d: %s: %s", d->port.dev, d->port.port, what, strerror(err));
    return -1;
}

int tutti__ib_dev_open(const struct tutti_ib_port *port, int cq_depth, struct tutti_ib_dev *d,
                       char *why, size_t len)
{
    memset(d, 0, sizeof(*d));
    d->port = *port;
    int ndev = 0;
    struct ibv_device **list = ibv_get_device_list(&ndev);
    for (int i = 0; list != NULL && i < ndev && d->ctx == NULL; i++) {
        if (strcmp(ibv_get_device_name(list[i]), port->dev) == 0) {
            d->ctx = ibv_open_device(list[i]);
        }
    }
    int err = errno;
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (d->ctx == NULL) {
        return fail(why, len, d, "opening the device", err ? err : ENODEV);
    }
    d->pd = ibv_alloc_pd(d->ctx);
    if (d->pd == NULL) {
        err = errno;
        tutti__ib_dev_close(d);
        return fail(why, len, d, "allocating a protection domain", err);
    }
    d->cq = cq_depth > 0 ? ibv_create_cq(d->ctx, cq_depth, NULL, NULL, 0) : NULL;
    if (cq_depth > 0 && d->cq == NULL) {
        err = errno;
        tutti__ib_dev_close(d);
        return fail(why, len, d, "creating a completion queue", err);
    }
    return 0;
}

void tutti__ib_dev_close(struct tutti_ib_dev *d)
{
    if (d->cq != NULL) {
        ibv_destroy_cq(d->cq);
    }
    if (d->pd != NULL) {
        ibv_dealloc_pd(d->pd);
    }
    if (d->ctx != NULL) {
        ibv_close_device(d->ctx);
    }
    d->cq = NULL;
    d->pd = NULL;
    d->ctx = NULL;
}

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
    return bytes >= 4096   ? IBV_MTU_4096
           : bytes >= 2048 ? IBV_MTU_2048
           : bytes >= 1024 ? IBV_MTU_1024
           : bytes >= 512  ? IBV_MTU_512
                           : IBV_MTU_256;
}

int tutti__ib_qp_create(struct tutti_ib_dev *d, struct ibv_cq *cq, int depth, int *inline_p,
                        struct ibv_qp **qp_p, struct tutti_ib_qp_addr *addr_p, char *why,
                        size_t len)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = cq,
        .recv_cq = cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = (uint32_t)depth,
                .max_recv_wr = (uint32_t)depth,
                .max_send_sge = 2,
                .max_recv_sge = 1,
                .max_inline_data = (uint32_t)*inline_p},
    };
    struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);
    if (qp == NULL && *inline_p > 0) { /* some devices take less inline data: try without */
        ia.cap.max_inline_data = 0;
        qp = ibv_create_qp(d->pd, &ia);
    }
    if (qp == NULL) {
        return fail(why, len, d, "creating a queue pair", errno);
    }
    *inline_p = (int)ia.cap.max_inline_data;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .pkey_index = 0,
                            .port_num = (uint8_t)d->port.port,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
    int err =
        ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (err != 0) {
        ibv_destroy_qp(qp);
        return fail(why, len, d, "queue pair to INIT", err);
    }
    memset(addr_p, 0, sizeof(*addr_p));
    memcpy(addr_p->gid, d->port.gid, 16);
    addr_p->qpn = qp->qp_num;
    addr_p->psn = (uint32_t)(random() & 0xffffff);
    addr_p->lid = d->port.lid;
    addr_p->gid_index = (uint8_t)(d->port.gid_index < 0 ? 0 : d->port.gid_index);
    addr_p->link = (uint8_t)d->port.link;
    addr_p->mtu = (uint32_t)d->port.mtu;
    *qp_p = qp;
    return 0;
}

int tutti__ib_qp_connect(struct tutti_ib_dev *d, struct ibv_qp *qp,
                         const struct tutti_ib_qp_addr *mine, const struct tutti_ib_qp_addr *peer,
                         int timeout_exp, int retries, char *why, size_t len)
{
    if (peer->link != mine->link) {
        snprintf(why, len, "%s:%d: the peer's port is %s, this one %s: they cannot connect",
                 d->port.dev, d->port.port, peer->link == TUTTI_IB_LINK_ETH ? "RoCE" : "InfiniBand",
                 mine->link == TUTTI_IB_LINK_ETH ? "RoCE" : "InfiniBand");
        return -1;
    }
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = mtu_enum(mine->mtu < peer->mtu ? mine->mtu : peer->mtu),
        .dest_qp_num = peer->qpn,
        .rq_psn = peer->psn,
        .max_dest_rd_atomic = 1,
        .min_rnr_timer = 12,
        .ah_attr = {.dlid = peer->lid,
                    .sl = (uint8_t)(tutti__env()->IB_SL & 15),
                    .src_path_bits = 0,
                    .port_num = (uint8_t)d->port.port},
    };
    if (mine->link == TUTTI_IB_LINK_ETH) { /* RoCE: always routed by GID */
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)d->port.gid_index;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.traffic_class = (uint8_t)(tutti__env()->IB_TC & 255);
    }
    int err = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (err != 0) {
        return fail(why, len, d, "queue pair to RTR", err);
    }
    struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS,
                            .timeout = (uint8_t)timeout_exp,
                            .retry_cnt = (uint8_t)retries,
                            .rnr_retry = 7,
                            .sq_psn = mine->psn,
                            .max_rd_atomic = 1};
    err = ibv_modify_qp(qp, &s,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (err != 0) {
        return fail(why, len, d, "queue pair to RTS", err);
    }
    return 0;
}

void tutti__ib_wc_error(const struct tutti_ib_dev *d, const struct ibv_wc *wc, char *out,
                        size_t len)
{
    snprintf(out, len, "%s:%d QP %u: %s (status %d, vendor error 0x%x)", d->port.dev, d->port.port,
             wc->qp_num, ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err);
}
