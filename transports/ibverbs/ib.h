/*
 * ib.h - private structures of the RDMA verbs transport.
 *
 * A context (one per communicator) holds the RDMA port this rank uses, its device, protection
 * domain and registrations, and the connections. A connection (one peer, one channel) is:
 *
 *   - a side connection of another transport (transport.h, struct tutti_side_ops: TCP's):
 *     authenticated with the job's secret like every tutti connection, it carries the set-up
 *     (queue pair addresses and the receive buffer's address and key, then "ready"), abort
 *     notices and beats, and its end tells that the peer's process ended;
 *   - nqps RC queue pairs on one completion queue (with a completion channel to sleep on);
 *   - a send FIFO and a receive FIFO of nslots slots of slot_size bytes, both registered.
 *
 * Slot k goes as one RDMA WRITE WITH IMMEDIATE on queue pair k % nqps into slot k % nslots of
 * the peer's receive FIFO; the immediate carries (k mod 256) << 24 | length, so the receiver
 * knows the length and checks the order. The immediate is full, so the fingerprint of the
 * operation (src/exec/fp.h, 32 bytes) travels as a trailer: a second scatter-gather element of the
 * same write, from the send slot's spare room, lands right after the payload in the receive
 * slot (slots are IB_SLOT_PAD bytes longer than slot_size for it). The payload itself may come
 * from registered user memory (send_post_ref) without a copy. Each queue pair delivers in order, so
 * the receiver counts per queue pair which slot comes next (as TCP does per socket). When the
 * receiver releases a slot it returns a credit: a SEND WITH IMMEDIATE of no bytes on queue pair 0
 * whose immediate is the number of slots released so far (mod 2^32). A slot may be written again
 * once the peer has released it and its own write has completed here.
 *
 * Threads: a context and its connections are driven by one thread at a time, like TCP's.
 */
#ifndef TUTTI_IB_H
#define TUTTI_IB_H

#include "ib_qp.h"
#include "transports/transport.h"

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#define IB_MAX_QPS      8
#define IB_IMM_LEN_BITS 24 /* the length field of a data immediate: slots below 16 MiB */
#define IB_SLOT_MAX     (((size_t)1 << IB_IMM_LEN_BITS) - 1)
#define IB_STASH        4 /* completions read while arming the channel, handled by the next progress */
#define IB_SLOT_PAD     64 /* room after a slot's payload for the fingerprint trailer */

/* What every rank publishes in its blob (little-endian), for can_connect before any set-up. */
struct ib_blob {
    uint32_t magic; /* IB_BLOB_MAGIC, or 0: no usable port */
    uint8_t links;  /* bit (1 << enum tutti_ib_link) per link layer of its usable ports */
    uint8_t nports; /* usable ports */
    uint8_t pad[2];
};
#define IB_BLOB_MAGIC 0x31564249u /* "IBV1" */

/* Set-up stages of a connection. */
enum ib_stage {
    IB_STAGE_SIDE,  /* connecting the side connection */
    IB_STAGE_HELLO, /* our hello sent; waiting for the peer's */
    IB_STAGE_READY, /* queue pairs ready and "ready" sent; waiting for the peer's */
    IB_STAGE_UP,    /* usable */
};

struct ib_ctx;

struct ib_conn {
    struct tutti_tconn base; /* first member: the engine sees this */
    struct ib_ctx *ctx;
    struct ib_conn *prev, *next; /* the context's connections */
    tutti_status_t status;       /* sticky: the error that ended the connection */
    char peer_name[128];         /* "rank 3 (host node7, pid 4242)" */
    enum ib_stage stage;
    int64_t deadline_ns; /* of the set-up */
    struct tutti_tconn *side;
    int nqps, nslots;
    int inline_max; /* bytes a write may carry inline (what the device granted) */
    int peer_bye;   /* the peer closed on purpose (its side connection said "bye") */
    struct ibv_comp_channel *chan;
    struct ibv_cq *cq;
    int armed;        /* the completion queue is armed (ibv_req_notify_cq) */
    unsigned unacked; /* completion events taken, not yet acknowledged */
    struct ibv_qp *qp[IB_MAX_QPS];
    struct tutti_ib_qp_addr mine[IB_MAX_QPS];
    uint8_t *sbuf, *rbuf; /* the FIFOs, nslots * slot_size each */
    struct ibv_mr *smr, *rmr;
    uint64_t raddr; /* the peer's receive FIFO */
    uint32_t rkey;
    int sq_depth, rq_depth;
    int sq_out[IB_MAX_QPS]; /* send work requests not completed */
    int rq_posted[IB_MAX_QPS];
    /* sending */
    uint64_t shead;                  /* slots posted */
    uint64_t snext_done[IB_MAX_QPS]; /* per queue pair: the next slot whose write has not
                                        completed (slot k is done when snext_done[k % nqps] > k) */
    uint64_t sdone;                  /* writes completed */
    uint64_t credits;                /* slots the peer has released */
    int sacquired;
    /* receiving */
    uint64_t rnext[IB_MAX_QPS]; /* per queue pair: the next slot it brings */
    uint32_t *rlen;             /* per slot: its length */
    struct tutti_fp rfp;        /* the peeked slot's fingerprint, copied out of its trailer
                                   (which follows the payload, unaligned) */
    uint64_t rtail;             /* next slot to peek */
    uint64_t credit_sent;       /* the release count last sent back */
    struct ibv_wc stash[IB_STASH];
    int nstash;
};

struct ib_reg; /* ib_mr.c */

struct ib_ctx {
    const struct tutti_tctx_args *args;    /* owned by the communicator */
    const struct tutti_transport_ops *ops; /* tutti__ib_ops, for the connections it makes */
    int usable;                            /* this rank has a port to use */
    struct tutti_ib_port port;             /* the port it uses (after attach) */
    struct tutti_ib_dev dev;               /* opened at attach when needed */
    int nqps, nslots, inline_max, timeout_exp, retries;
    size_t slot_size;
    int kick;               /* eventfd: readable while a stashed completion waits (see ib_data.c) */
    struct ib_conn **conns; /* [peer * TUTTI_MAX_CHANNELS + channel] once created */
    struct ib_conn *list;   /* every connection, for abort and check */
    struct ib_reg *regs;    /* registered user memory (ib_mr.c) */
};

/** The transport's table (listed in src/exec/registry.c). */
extern const struct tutti_transport_ops tutti__ib_ops;

/** Bytes from one slot of a FIFO to the next: the slot and room for the trailer. */
static inline size_t ib_stride(const struct ib_conn *c)
{
    return c->base.slot_size + IB_SLOT_PAD;
}

/* ib_ctx.c */

/** Open the device of the chosen port once (attach or the first connect needs it). */
/** The usable ports of one link layer (the first usable port's), in enumeration order; -1 with
 * why filled when none can be listed (ib_port.c). */
int tutti__ib_usable_ports(struct tutti_ib_port *out, int max, char *why, size_t len);

tutti_status_t tutti__ib_ctx_open(struct ib_ctx *ctx);

/**
 * The port a rank uses among the n usable ones: the first port of device `hint` (the RDMA NIC
 * nearest its GPU) when one is usable, else the `local`-th modulo n (local ranks spread over
 * the NICs). Pure.
 */
int tutti__ib_pick_port(const struct tutti_ib_port *ports, int n, int local, const char *hint);

/** Whether some peer will be reached over verbs (TUTTI_TRANSPORT=ib, or a peer on another host
 * with a compatible port). */
int tutti__ib_needed(const struct ib_ctx *ctx);

/* ib_conn.c: set-up and close. */

/** Create (first call) and advance the set-up of the connection to (peer, channel). */
tutti_status_t tutti__ib_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p);
tutti_status_t tutti__ib_close(struct tutti_tconn *tc);

/** Record the error that ends the connection and log it once; returns st. */
tutti_status_t tutti__ib_conn_fail(struct ib_conn *c, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Post receive work requests on queue pair q until rq_depth are posted. */
tutti_status_t tutti__ib_post_recvs(struct ib_conn *c, int q);

/* ib_data.c: the data path. */
tutti_status_t tutti__ib_send_acquire(struct tutti_tconn *tc, void **buf_p, size_t *cap_p);
tutti_status_t tutti__ib_send_post(struct tutti_tconn *tc, size_t bytes, const struct tutti_fp *fp);
tutti_status_t tutti__ib_send_post_ref(struct tutti_tconn *tc, const void *buf, size_t bytes,
                                       const struct tutti_fp *fp);
tutti_status_t tutti__ib_recv_peek(struct tutti_tconn *tc, const void **buf_p, size_t *len_p,
                                   const struct tutti_fp **fp_p);
tutti_status_t tutti__ib_recv_release(struct tutti_tconn *tc);
tutti_status_t tutti__ib_progress(struct tutti_tconn *tc, int *moved_p);
tutti_status_t tutti__ib_flushed(struct tutti_tconn *tc, int *done_p);
tutti_status_t tutti__ib_beat(struct tutti_tconn *tc, int64_t age_ns);
int tutti__ib_pollfds(struct tutti_tconn *tc, struct pollfd *fds, int max);

/** Read the side connection (abort notices, beats, its end); the error of an abort notice. */
tutti_status_t tutti__ib_side_check(struct ib_conn *c);

/* ib_mr.c: registrations. */

/** Register `len` bytes at `buf` in the context's protection domain (counted, see below). */
struct ibv_mr *tutti__ib_reg(struct ib_ctx *ctx, void *buf, size_t len, int remote_write);
void tutti__ib_dereg(struct ibv_mr *mr);

/** The registration of user memory that covers [buf, buf + len), or NULL. */
struct ibv_mr *tutti__ib_reg_find(const struct ib_ctx *ctx, const void *buf, size_t len);

/** The reg_mem / dereg_mem ops (transport.h). */
tutti_status_t tutti__ib_reg_mem(void *tctx, void *buf, size_t len, void **handle_p);
tutti_status_t tutti__ib_dereg_mem(void *tctx, void *handle);

/** footprint op: the connections' FIFOs and the user memory registered. */
void tutti__ib_footprint(void *tctx, struct tutti_footprint *fp);

/** Forget every user registration of the context (deregistering them). */
void tutti__ib_reg_free_all(struct ib_ctx *ctx);

/** Memory regions this process has registered and not deregistered (tests: no leak). */
long tutti__ib_live_mrs(void);

/** Writes sent straight from registered user memory, in this process (tests), and the count. */
long tutti__ib_zero_copy_writes(void);
void tutti__ib_count_zero_copy(void);

/** Whether two blobs (TUTTI_TRANSPORT_BLOB bytes each) have a usable link layer in common. */
int tutti__ib_blob_compatible(const uint8_t *a, const uint8_t *b);

/** Test hook (fault tests): force the first queue pair to `peer` into the error state. */
tutti_status_t tutti__ib_debug_qp_error(void *tctx, int peer);

#endif /* TUTTI_IB_H */
