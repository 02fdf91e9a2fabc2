/*
 * ib_qp.h - the verbs building blocks of the transport (issue 8): a device context (device,
 * protection domain, completion queue) on one port, reliable-connected queue pairs brought to
 * RTS from the peer's address, memory registration, and the error text of a completion.
 * Connection set-up information travels outside (the transport's side channel; a test's pipe).
 */
#ifndef TUTTI_TRANSPORTS_IB_QP_H
#define TUTTI_TRANSPORTS_IB_QP_H

#include "ib_devices.h"

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

struct tutti_ib_dev {
    struct tutti_ib_port port; /* the port this context uses (ib_devices.h) */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq; /* a shared completion queue, or NULL (cq_depth 0) */
};

/** What the other end needs to connect a queue pair to this one (fixed size, on the wire). */
struct tutti_ib_qp_addr {
    uint8_t gid[16];
    uint32_t qpn;
    uint32_t psn;
    uint16_t lid;
    uint8_t gid_index; /* the sender's own; informational */
    uint8_t link;      /* enum tutti_ib_link */
    uint32_t mtu;      /* active MTU in bytes */
};
_Static_assert(sizeof(struct tutti_ib_qp_addr) == 32, "qp address is 32 bytes");

/** Open the device of `port`, allocate a PD and, when cq_depth > 0, a CQ of cq_depth entries.
 * 0 or -1 + why. */
int tutti__ib_dev_open(const struct tutti_ib_port *port, int cq_depth, struct tutti_ib_dev *d,
                       char *why, size_t len);
void tutti__ib_dev_close(struct tutti_ib_dev *d);

/**
 * An RC queue pair in INIT on completion queue `cq` with room for `depth` work requests each
 * way and *inline_p bytes inline (set to what the device granted); *addr_p gets what the peer
 * needs. 0 or -1 + why.
 */
int tutti__ib_qp_create(struct tutti_ib_dev *d, struct ibv_cq *cq, int depth, int *inline_p,
                        struct ibv_qp **qp_p, struct tutti_ib_qp_addr *addr_p, char *why,
                        size_t len);

/**
 * Bring qp to RTR then RTS against the peer's address (RoCE: a GRH to its GID; InfiniBand: its
 * LID). `timeout_exp` is the local ACK timeout exponent (4.096 us x 2^exp) and `retries` the
 * retry count: a dead peer turns into a completion error after about retries x that time.
 */
int tutti__ib_qp_connect(struct tutti_ib_dev *d, struct ibv_qp *qp,
                         const struct tutti_ib_qp_addr *mine, const struct tutti_ib_qp_addr *peer,
                         int timeout_exp, int retries, char *why, size_t len);

/** "rxe0:1 QP 17: transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR)". */
void tutti__ib_wc_error(const struct tutti_ib_dev *d, const struct ibv_wc *wc, char *out,
                        size_t len);

#endif /* TUTTI_TRANSPORTS_IB_QP_H */
