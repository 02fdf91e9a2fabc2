/*
 * transport.h - the interface every transport implements (private to the library).
 *
 * A transport moves bytes between two ranks through slot FIFOs. Each connection (one peer, one
 * channel) has a send FIFO and a receive FIFO of fixed-size slots:
 *
 *   sender:   send_acquire -> write into the slot -> send_post(bytes, fingerprint)
 *   receiver: recv_peek    -> read the slot        -> recv_release
 *
 * so a reduction can write its result straight into the slot the peer will read (shared
 * memory) or the slot the transport ships (TCP). Messages keep their boundaries and order:
 * each post is delivered as one slot of the same length, with the 32-byte fingerprint of the
 * operation it belongs to (src/exec/fp.h), which the transport carries beside the payload (never in
 * it: payloads may travel from and into user memory) and does not interpret.
 *
 * Nothing blocks (ncclNet semantics): every call returns TUTTI_IN_PROGRESS when it cannot act
 * yet, and the engine calls again. Tables are const with designated initializers and every
 * transport fills every operation, so dispatch never tests for NULL (the side connections, an
 * optional interface, are the exception: .side is NULL where none is offered). The list of
 * transports and the choice per pair live above them, in src/exec/registry.h.
 */
#ifndef TUTTI_TRANSPORT_H
#define TUTTI_TRANSPORT_H

#include "tutti/status.h"

#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tutti_comm;
struct tutti_env;
union tutti_sockaddr;

typedef enum {
    TUTTI_TRANSPORT_SHM = 0,
    TUTTI_TRANSPORT_TCP = 1,
    TUTTI_TRANSPORT_IB = 2,
    TUTTI_TRANSPORT_COUNT
} tutti_transport_id_t;

/** Bytes each transport may publish per rank before the all-gather (its blob: TCP's address). */
#define TUTTI_TRANSPORT_BLOB 64

/** Transport properties (ops->flags). */
enum {
    /** The engine must call progress() for data to move (TCP); shm moves data in post itself. */
    TUTTI_TRANSPORT_NEEDS_PROGRESS = 1u << 0,
    /** send_post_ref ships caller memory without copying it into the slot (TCP). */
    TUTTI_TRANSPORT_SEND_REF = 1u << 1,
    /** recv_place can receive a frame straight into caller memory (TCP). */
    TUTTI_TRANSPORT_RECV_PLACE = 1u << 2,
};

/**
 * The fingerprint of the operation a slot of data belongs to, in its wire form (src/exec/fp.h
 * makes, compares and decodes it): four little-endian words. Transports carry it unchanged.
 */
struct tutti_fp {
    uint64_t w[4];
};
_Static_assert(sizeof(struct tutti_fp) == 32, "a fingerprint is 32 bytes");

/** What a failing rank tells its peers. Fixed size: it travels in frames and shared memory. */
struct tutti_abort_info {
    int32_t origin;   /* rank that detected the failure */
    int32_t culprit;  /* rank blamed, or -1 (for example a local abort) */
    int32_t status;   /* tutti_status_t */
    uint32_t seq;     /* operation sequence number at the origin */
    char reason[240]; /* room for a mismatch naming two calls and two ranks */
};
_Static_assert(sizeof(struct tutti_abort_info) == 256, "abort info is 256 bytes");

/**
 * The status a rank fails with when a peer's notice reaches it: calls that differ between
 * ranks stay TUTTI_ERR_MISMATCH on every rank; anything else is a peer that failed, REMOTE.
 */
static inline tutti_status_t tutti__notice_status(const struct tutti_abort_info *info)
{
    return info->status == TUTTI_ERR_MISMATCH ? TUTTI_ERR_MISMATCH : TUTTI_ERR_REMOTE;
}

/**
 * What the transports know of one rank of the communicator: what it published at init, handed
 * down by the communicator's layer (src/exec/connect.c fills it from the all-gathered records of
 * src/exec/peer.h, which the transport layer never sees). Every rank holds the same table.
 */
struct tutti_tpeer {
    int host;             /* the lowest rank on this rank's host: equal values share a host */
    uint32_t pid;         /* its process, for messages */
    const char *hostname; /* its host's name, for messages (NULL: unknown); see tutti__tpeer_name */
    uint8_t blob[TUTTI_TRANSPORT_COUNT][TUTTI_TRANSPORT_BLOB]; /* what each transport published */
};

/** "rank 3 (host node7, pid 4242)" for rank r of peers (or "rank 3" without a host name), in buf
 * (a message needs its peer's name only when it is written: names are not kept per peer). */
const char *tutti__tpeer_name(const struct tutti_tpeer *peers, int r, char *buf, size_t len);

/**
 * Everything a transport's per-communicator context may know about its communicator. The
 * struct lives in the communicator as long as the context does, so a context may keep the
 * pointer. `peers` points at the communicator's table from init() on; its records are filled
 * after the all-gather and may be read from attach() on.
 */
struct tutti_tctx_args {
    struct tutti_errbuf *err; /* the communicator's, for tutti__set_error() */
    int rank;
    int nranks;
    uint64_t comm_id;
    const uint8_t *secret; /* TUTTI_SECRET_BYTES */
    const struct tutti_env *env;
    int nchannels;                         /* most channels any collective will use */
    int64_t timeout_ns;                    /* longest wait without progress */
    const union tutti_sockaddr *root_hint; /* address toward the root, or NULL */
    const struct tutti_tpeer *peers;       /* nranks records, after the all-gather */
    void *side_tctx; /* the context of the transport that offers side connections (TCP),
                        set once it exists: ops->side of side_ops opens them (verbs' control) */
    const struct tutti_transport_ops *side_ops;
    int force_ib;      /* TUTTI_TRANSPORT=ib: verbs for every pair, or an error */
    char nic_hint[16]; /* the RDMA NIC nearest this rank's GPU (topology), or "": set at attach */
    /* Ranks per CPU on the most crowded machine, set before attach (0: unknown, as if every
     * rank had a CPU of its own). */
    double cpu_load;
};

/** Per-process sleeping support: one futex word per rank that local peers ring (shm). */
struct tutti_doorbell {
    _Alignas(64) uint32_t seq;      /* futex word: bumped by whoever wakes the owner */
    _Alignas(64) uint32_t sleeping; /* set by the owner just before it sleeps */
};

/**
 * A rank's operation counters (sequence numbers of the last operation posted and completed),
 * kept where local peers can read them (shm: the control segment), so that a rank that times
 * out can name the local ranks that never started the operation it waits in. fresh: the
 * CLOCK_MONOTONIC time (one clock for the whole host) of the latest progress the owner made or
 * vouched for while waiting (published at most every millisecond), so that a rank waiting on a
 * local peer that is itself busy on a slow link does not time out while data still moves.
 */
struct tutti_seq_board {
    _Alignas(64) _Atomic uint64_t posted;
    _Atomic uint64_t completed;
    _Atomic int64_t fresh;
};

/** Common head of every connection; each transport embeds it as its first member. */
/** What a communicator holds now, for its footprint report (tutti__fabric_footprint). */
struct tutti_footprint {
    int conns[TUTTI_TRANSPORT_COUNT]; /* connections, by transport */
    size_t shared;                    /* shared-memory segments this rank made (/dev/shm) */
    size_t registered;                /* memory registered with an RDMA device */
    size_t pinned;                    /* page-locked host memory (the GPU stream path's staging) */
};

/* How the engine writes this connection's send slots (exec/fill.c): through the caches, or
 * streamed past them with non-temporal stores, which need no read-for-ownership of lines the
 * receiver's core holds. A cached write into shared memory costs little when the two cores share
 * a cache and several times more when they do not (a VM's vCPUs may move between the two), so
 * the engine times its writes of large frames and streams them while cached writes run at under
 * a quarter of the rate of streamed ones. */
struct tutti_fill_clock {
    uint32_t mode;       /* TUTTI_FILL_*: what the transport asks for */
    uint32_t stream;     /* slots are streamed now */
    uint32_t warm;       /* cached writes after a streamed one that still meet streamed slots
                          * (the FIFO's slots): their times say nothing about cached writes */
    uint32_t cold;       /* cached writes still to come before the next is timed */
    uint32_t burst;      /* cached writes left in a probe made while streaming */
    uint32_t sburst;     /* streamed writes left in a probe made while cached */
    uint32_t gap;        /* frames between probes (doubles while they change nothing) */
    uint32_t nsamples;   /* rates taken so far in the probe under way */
    uint64_t frames;     /* frames timed */
    uint64_t next_probe; /* when the other way is timed again */
    double rate[2];      /* bytes per ns, cached and streamed; 0: not timed yet */
    double sample[3];    /* the probe's rates: their median is the rate it found */
};
enum { TUTTI_FILL_CACHED = 0, TUTTI_FILL_STREAMED = 1, TUTTI_FILL_TIMED = 2 };

struct tutti_tconn {
    const struct tutti_transport_ops *ops;
    int peer; /* rank of the other end */
    int channel;
    size_t slot_size; /* capacity of one slot in bytes */
    /* Set by the engine before send_acquire: the bytes it will post in that slot; 0 when it does
     * not know (shm places a small frame at a rotating offset in its slot) */
    size_t next_bytes;
    /* send_post_ref pays only in calls that reduce nothing and move at most this many bytes
     * per rank (sent plus received); 0: any call (shm: a frame read by reference costs the
     * receiver the sender's copy, which a reduction's receiver cannot spare) */
    size_t ref_max;
    /* ...and only for frames of at least this many bytes: the engine copies smaller ones into
     * the slot itself, as its fill clock says (shm: TUTTI_SHM_CMA_MIN, or none where the peer
     * cannot read this process); 0: any frame */
    size_t ref_min;
    /* In a call where this rank only sends, every share_every-th frame that could go by
     * reference goes through the slot instead; 0: none (shm: the receiver copies a frame out of
     * a slot faster than it reads one from the sender, and the sender has nothing else to do) */
    uint32_t share_every;
    /* Where not 0, instead: every frame where it sends more than this many bytes in the call
     * (more where it also copies data of its own, less where its receiver takes other ranks'
     * data too: exec.c, lone_need), and no frame of a smaller call (shm: TUTTI_SHM_CMA_LONE,
     * where the kernel's copy costs more than a memcpy); 0: no limit */
    size_t lone_max;
    struct tutti_fill_clock fill; /* zeroed: every slot written through the caches (TCP, verbs) */
    /* CLOCK_MONOTONIC time here of the latest progress the peer vouched for with a beat (its
     * own data moving, or data it saw move further on), or 0: see beat() */
    int64_t vouched;
};

/**
 * Side connections: a transport without a control path of its own (verbs) opens one of another
 * transport's connections to the same peer (tutti_tctx_args.side_ops, side_tctx) and drives it
 * through that transport's ops (c->ops); a transport that offers them (TCP) answers these too.
 * The two transports know each other only through transport.h.
 */
struct tutti_side_ops {
    /** A connection to peer on channel that the engine never sees (its own, not in the
     * connection table). */
    tutti_status_t (*connect)(void *tctx, int peer, int channel, struct tutti_tconn **conn_p);
    /** Whether a received slot is there to peek (no error when none is and the peer left). */
    int (*recv_ready)(const struct tutti_tconn *c);
    /** Whether the peer has closed its end (its process ended). */
    int (*peer_gone)(const struct tutti_tconn *c);
};

struct tutti_transport_ops {
    size_t size; /* sizeof(struct tutti_transport_ops): lets a loader check plugin tables */
    tutti_transport_id_t id;
    const char *name;
    uint32_t flags; /* TUTTI_TRANSPORT_* */

    /* ---- per communicator ---- */

    /**
     * Create the context of one communicator and publish this rank's address in `blob`
     * (TUTTI_TRANSPORT_BLOB bytes; TCP: its listening address). Called before the all-gather.
     */
    tutti_status_t (*init)(const struct tutti_tctx_args *args, void **tctx_p, void *blob);

    /**
     * After the all-gather (args->peers is set): attach to what peers published. Returns
     * TUTTI_ERR_UNSUPPORTED when this transport cannot serve this communicator after all (for
     * example /dev/shm is missing); the caller then agrees with every rank on not using it.
     * `phase` counts calls, with a bootstrap barrier between them: shm's host's first rank makes
     * its directory in phase 0, the other local ranks join it in phase 1, names go in phase 2.
     */
    tutti_status_t (*attach)(void *tctx, int phase);

    /** Free the context. Connections were closed before. */
    tutti_status_t (*fini)(void *tctx);

    /**
     * Can this transport carry the traffic between ranks a and b (a != b, either may be this
     * rank)? *score_p: 0 no, else yes (higher is better: shm 10, verbs 5, TCP 1). Called after
     * attach, for this rank's pairs and for one pair of each kind of every pair
     * (tutti__transport_used), since chunk size and channel count derive from the transports
     * that any pair uses and must agree on all ranks: so the answer depends only on what every
     * rank knows alike, and only on whether the two share a host and on their verbs blobs
     * (args->peers), and the communicator's settings, never on this rank's own state. Whether the
     * transport is in use at all is the caller's business (it asks only contexts every rank kept).
     * The caller asks the transports in the registry's order (tutti__transport_pick) and takes
     * the first that says yes; TCP, last, says yes to every pair.
     */
    tutti_status_t (*can_connect)(void *tctx, int a, int b, int *score_p);

    /**
     * Connect to `peer` on `channel`. Both ends call it (the need for a connection is
     * symmetric). Returns TUTTI_OK with *conn_p NULL while not yet connected; call again.
     */
    tutti_status_t (*connect)(void *tctx, int peer, int channel, struct tutti_tconn **conn_p);

    /**
     * Check the context while waiting: shared-memory abort notices, peer processes that died.
     * Returns TUTTI_OK or the error, recorded with tutti__set_error naming the peer.
     */
    tutti_status_t (*check)(void *tctx);

    /** Tell every peer reachable through this context that this rank failed (best effort). */
    tutti_status_t (*abort)(void *tctx, const struct tutti_abort_info *info);

    /** The doorbell local peers ring for this rank, or NULL if this transport has none. */
    struct tutti_doorbell *(*doorbell)(void *tctx);

    /**
     * The counters of `rank`: this rank's own (it writes them), a local peer's (read only), or
     * NULL (a rank on another host, or a transport that has none).
     */
    struct tutti_seq_board *(*seq_board)(void *tctx, int rank);

    /**
     * Optional (NULL: nothing to register). Register [buf, buf + len) of user memory, so that
     * send_post_ref sends from it without a copy (verbs). *handle_p: the transport's handle.
     * TUTTI_ERR_UNSUPPORTED: this transport has nothing to do for this communicator.
     */
    tutti_status_t (*reg_mem)(void *tctx, void *buf, size_t len, void **handle_p);

    /** Optional, with reg_mem: undo one registration. */
    tutti_status_t (*dereg_mem)(void *tctx, void *handle);

    /** Optional (NULL: holds no memory worth counting). Add the memory the context holds now
     * (segments it made, registrations) to *fp; the executor counts connections. */
    void (*footprint)(void *tctx, struct tutti_footprint *fp);

    /* ---- per connection ---- */

    /** Next free send slot: *buf_p, *cap_p (>= slot_size, or >= c->next_bytes when that is not
     * 0). TUTTI_IN_PROGRESS when full. */
    tutti_status_t (*send_acquire)(struct tutti_tconn *c, void **buf_p, size_t *cap_p);

    /**
     * Publish the acquired slot with `bytes` of data (0 <= bytes <= slot_size) and the
     * fingerprint *fp (copied; NULL: all zero) of the operation it belongs to.
     */
    tutti_status_t (*send_post)(struct tutti_tconn *c, size_t bytes, const struct tutti_fp *fp);

    /**
     * Publish the acquired slot, but with its `bytes` taken from `buf` instead of the slot, with
     * no copy: buf must stay valid and unchanged until flushed() reports it sent. Only with
     * TUTTI_TRANSPORT_SEND_REF.
     */
    tutti_status_t (*send_post_ref)(struct tutti_tconn *c, const void *buf, size_t bytes,
                                    const struct tutti_fp *fp);

    /**
     * Oldest received slot: *buf_p, *len_p, and in *fp_p (unless fp_p is NULL) the fingerprint
     * it came with, valid until recv_release. TUTTI_IN_PROGRESS when none is there yet.
     */
    tutti_status_t (*recv_peek)(struct tutti_tconn *c, const void **buf_p, size_t *len_p,
                                const struct tutti_fp **fp_p);

    /**
     * Ask for the frame `ahead` places after the next one to peek (0: the next) to be received
     * straight into dst (up to cap bytes) instead of a slot: recv_peek then returns dst. Best
     * effort: a frame that started arriving before the call, or is larger than cap, stays in
     * its slot, and so does a frame whose fingerprint is not `want`: the caller's memory takes
     * only the data of the call it expects (a mismatched call is found in the slot, the buffer
     * untouched). dst must stay valid until that frame is released. TUTTI_IN_PROGRESS: `ahead`
     * is beyond the receive window (nothing recorded). Only with TUTTI_TRANSPORT_RECV_PLACE.
     */
    tutti_status_t (*recv_place)(struct tutti_tconn *c, uint32_t ahead, void *dst, size_t cap,
                                 const struct tutti_fp *want);

    /** Give the peeked slot back to the sender. */
    tutti_status_t (*recv_release)(struct tutti_tconn *c);

    /**
     * The fingerprint of the next frame when it has arrived whole (TUTTI_OK), else
     * TUTTI_IN_PROGRESS; nothing else: no reading, no pulling, no verdict on a closed peer.
     * For a look at what waits on a connection that no step reads now. Optional (NULL).
     */
    tutti_status_t (*peek_fp)(struct tutti_tconn *c, const struct tutti_fp **fp_p);

    /**
     * Move bytes without blocking (TCP: read and write sockets). *moved_p is set non-zero when
     * anything moved. Transports without NEEDS_PROGRESS return TUTTI_OK at once.
     */
    tutti_status_t (*progress)(struct tutti_tconn *c, int *moved_p);

    /**
     * Optional (NULL: the transport has none; local peers use the seq board's `fresh`). Tell
     * the peer, out of band of the slots, that this rank (or a rank it waits on) last moved
     * data age_ns ago; the peer records it in its connection's `vouched`. Receiving a beat is
     * not progress (so two waiting ranks cannot keep each other alive), and a beat that cannot
     * go out now (a frame is half written) is dropped.
     */
    tutti_status_t (*beat)(struct tutti_tconn *c, int64_t age_ns);

    /** *done_p = 1 when every posted slot has left this process (TCP: written to the kernel). */
    tutti_status_t (*flushed)(struct tutti_tconn *c, int *done_p);

    /** File descriptors to poll() while sleeping (TCP sockets); returns how many were filled. */
    int (*pollfds)(struct tutti_tconn *c, struct pollfd *fds, int max);

    /** Close and free. Pending data is dropped; the peer sees the connection end. */
    tutti_status_t (*close)(struct tutti_tconn *c);

    /** Side connections this transport offers another (NULL: none). */
    const struct tutti_side_ops *side;
};

#endif /* TUTTI_TRANSPORT_H */
