/*
 * tcp.h - private structures of the TCP transport.
 *
 * A context (one per communicator) owns a listening socket, the handshakes of sockets accepted
 * from it, the authenticated sockets that wait for their connection to be claimed, and the
 * connections being set up by this rank. A connection (one peer, one channel) owns nsocks
 * sockets and two FIFOs of nslots slots. Slot k travels as one frame on socket k % nsocks:
 *
 *   frame = header (48 bytes, little-endian) + payload (header.len bytes)
 *   header = { u32 type (TCP_FRAME_DATA, _ABORT or _BEAT), u32 len, u64 seq (= k),
 *              fingerprint (32 bytes: the operation a DATA frame belongs to, src/exec/fp.h; zero
 *              in other frames) }
 *
 * The fingerprint is in the header, not the payload, because payloads travel from and into
 * user memory (send_post_ref, recv_place); this layer carries it without reading it (the
 * executor checks it, and a fingerprint that does not parse is a protocol error there).
 * Each socket keeps its frames in order, so the receiver knows which sequence number comes
 * next on every socket and checks it. An ABORT frame carries a struct tutti_abort_info. A BEAT
 * frame (between two data frames, carrying the next one's sequence number, which it does not
 * use up) carries a u64: how many nanoseconds ago the sender last saw data move.
 *
 * Threads: a context and its connections are driven by one thread at a time (the communicator
 * serialises its operations); abort() included.
 */
#ifndef TUTTI_TCP_H
#define TUTTI_TCP_H

#include "net/admit.h"
#include "net/handshake.h"
#include "net/sock.h"
#include "transports/transport.h"
#include "tutti/comm.h"

#include <stddef.h>
#include <stdint.h>

#define TCP_MAX_SOCKS   16
#define TCP_HDR_BYTES   48
#define TCP_ABORT_BYTES ((uint32_t)sizeof(struct tutti_abort_info)) /* ABORT frame payload */
#define TCP_BEAT_BYTES  8u                                          /* BEAT frame payload */
/* Bytes a socket reads at once while it waits for a frame's header: a small frame (its header
 * and up to TCP_STAGE_BYTES - TCP_HDR_BYTES of payload) then takes one read, not two. */
#define TCP_STAGE_BYTES 8192u
/* A connection whose last data frame had at least this many bytes polls its sockets before it
 * reads them (tcp_data.c, sock_readable); one that carries smaller frames reads them directly. */
#define TCP_POLL_MIN 65536u
/* On small frames a progress call reads the socket of the next frame in sequence, and every
 * socket once in this many calls (a power of 2): abort notices, beats and ends of peers come on
 * any of them (tcp_data.c). */
#define TCP_SWEEP 16u

/* Frame types: ASCII tags, so that a stray stream is unlikely to look like a frame. */
enum {
    TCP_FRAME_DATA = 0x61746164u,  /* "data" */
    TCP_FRAME_ABORT = 0x74726261u, /* "abrt" */
    TCP_FRAME_BEAT = 0x74616562u,  /* "beat" */
};

/* A frame header, decoded. */
struct tcp_hdr {
    uint32_t type, len;
    uint64_t seq;
    struct tutti_fp fp;
};

/*
 * What a connecting socket is for (kind of the handshake payload). DATA: the transport's own
 * connections. SIDE: a small control connection another transport rides on (the verbs transport
 * sets up its queue pairs over it, and it carries abort notices and beats and tells when the
 * peer's process ends): one socket, TCP_SIDE_NSLOTS slots of TCP_SIDE_SLOT_SIZE bytes.
 */
enum { TCP_KIND_DATA = 1, TCP_KIND_SIDE = 2 };
#define TCP_SIDE_SLOT_SIZE 1024
#define TCP_SIDE_NSLOTS    4

/** One socket of a connection, with the position of both directions in its frame stream. */
struct tcp_sock {
    int fd;
    int closed; /* EOF or reset was seen; reading stopped */
    int cerr;   /* errno of the reset, 0 for EOF */
    /* sending */
    uint64_t snext; /* sequence number of the next frame to write (== index mod nsocks) */
    size_t soff;    /* bytes of that frame (header + payload) already written */
    uint8_t sbeat[TCP_HDR_BYTES + TCP_BEAT_BYTES]; /* a BEAT frame going out before frame snext */
    size_t sbeat_left;                             /* its bytes not yet written; 0: none */
    /* receiving */
    uint64_t rnext;              /* sequence number of the frame being read */
    uint8_t rhdr[TCP_HDR_BYTES]; /* its header as it arrives */
    size_t rhdr_got;             /* header bytes read */
    int rhdr_ok;                 /* header complete and valid: rtype/rlen/rfp hold it */
    uint32_t rtype, rlen;
    struct tutti_fp rfp; /* its fingerprint (rhdr is overwritten by the next header early) */
    size_t rpay_got;     /* payload bytes read */
    uint8_t *rtarget;    /* where the payload goes: a slot or a placed buffer */
    uint8_t rabort[sizeof(struct tutti_abort_info)]; /* payload of an ABORT frame */
    uint8_t rbeat[TCP_BEAT_BYTES];                   /* payload of a BEAT frame */
    uint8_t *stage;     /* TCP_STAGE_BYTES read ahead of the header (tcp_data.c) */
    uint32_t stage_at;  /* the first of them not yet taken */
    uint32_t stage_end; /* one past the last read */
};

/** Where received frame `seq` should land (recv_place), and where it did. */
struct tcp_place {
    uint64_t seq; /* frame the entry is for; UINT64_MAX: none */
    uint8_t *dst; /* caller memory, or NULL */
    size_t cap;
    struct tutti_fp want; /* dst takes only a frame with this fingerprint */
    uint8_t *landed;      /* where the slot's frame was stored once complete */
};

struct tcp_ctx;

struct tcp_conn {
    struct tutti_tconn base; /* first member: the engine sees this */
    struct tcp_ctx *ctx;
    struct tcp_conn *prev, *next; /* the context's open connections, for abort() */
    tutti_status_t status;        /* sticky: the error that ended the connection */
    int kind;                     /* TCP_KIND_DATA or TCP_KIND_SIDE */
    char peer_name[128];          /* "rank 3 (host node7, pid 4242)" for messages */
    int nsocks;
    int nslots;
    uint8_t *mem; /* one allocation for everything below */
    /* send FIFO: slots [shead - nslots, shead) may still be in flight */
    uint8_t *sbuf;
    uint8_t (*shdr)[TCP_HDR_BYTES]; /* encoded header of each slot */
    uint32_t *slen;
    const uint8_t **sref; /* payload of each slot when it is caller memory (send_post_ref) */
    uint64_t shead;       /* slots posted */
    int sacquired;        /* send_acquire handed out slot shead */
    /* receive FIFO: slot k is complete when k < socks[k % nsocks].rnext */
    uint8_t *rbuf;
    uint32_t *rlen;
    struct tutti_fp *rfp;    /* per receive slot: the fingerprint its frame came with */
    struct tcp_place *place; /* per receive slot */
    uint64_t rtail;          /* next slot to peek */
    int rlarge;              /* the last data frame had TCP_POLL_MIN bytes or more */
    unsigned sweeps;         /* progress calls on small frames, for TCP_SWEEP */
    struct tcp_sock socks[];
};

/* The accepting side's limits on handshakes in progress (net/admit.h): a quarter of the common
 * 1024-descriptor limit, as the bootstrap root's, and a share of that per remote address. */
#define TCP_MAX_INCOMING 256
#define TCP_MAX_PER_ADDR 64
#define TCP_ACCEPT_BATCH 64 /* connections accepted per look at the listener */

/** The handshake payload of a data socket: what the connection is for (little-endian). */
struct tcp_hello {
    uint32_t kind, from, to, channel, index, nsocks;
    uint64_t slot_size;
};

/** An accepted socket whose handshake is running. */
struct tcp_incoming {
    struct tutti_hs hs;
    struct tutti_admit_slot adm; /* when and from where, for the eviction policy */
    char from[80];               /* remote address, for the refusal message */
};

/** An authenticated socket waiting for connect() of its (peer, channel) to claim it. */
struct tcp_ready {
    int fd;
    int kind; /* TCP_KIND_* */
    int peer, channel, index, nsocks;
};

/** Set-up state of one (peer, channel) on this rank, from the first connect() call. */
struct tcp_link {
    int64_t deadline_ns;
    int nsocks; /* connector side: sockets started */
    int fds[TCP_MAX_SOCKS];
    int stage[TCP_MAX_SOCKS]; /* 0 connecting, 1 handshaking, 2 authenticated */
    struct tutti_hs hs[TCP_MAX_SOCKS];
};

struct tcp_ctx {
    const struct tutti_tctx_args *args; /* owned by the communicator; peers set before attach */
    uint8_t secret[TUTTI_SECRET_BYTES];
    int nsocks_set; /* TUTTI_NSOCKS; 0: tutti__tcp_nsocks decides at each connect */
    int nslots;
    size_t slot_size;
    int64_t timeout_ns;
    int64_t hs_timeout_ns; /* an accepted socket's handshake deadline (TUTTI_HANDSHAKE_TIMEOUT) */
    int lfd;
    union tutti_sockaddr laddr;
    struct tcp_incoming *in; /* handshakes of accepted sockets */
    int nin, capin;
    struct tutti_admit_log alog; /* strangers refused and evicted */
    int fd_starved;              /* accept ran out of descriptors (warned about once) */
    struct tcp_ready *ready;
    int nready, capready;
    int npairs;              /* nranks * TUTTI_MAX_CHANNELS; the tables below hold 2 * npairs */
    struct tcp_link **links; /* [tutti__tcp_pair(ctx, kind, peer, channel)] while setting up */
    uint8_t *connected;      /* [tutti__tcp_pair(ctx, kind, peer, channel)] */
    struct tcp_conn *conns;  /* open connections */
};

/** The transport's table (listed in src/exec/registry.c). */
extern const struct tutti_transport_ops tutti__tcp_ops;

/** The slot size connections of `kind` use. */
static inline size_t tutti__tcp_kind_slot_size(const struct tcp_ctx *ctx, uint32_t kind)
{
    return kind == TCP_KIND_SIDE ? TCP_SIDE_SLOT_SIZE : ctx->slot_size;
}

/** Index of (kind, peer, channel) in a context's links and connected tables. */
static inline int tutti__tcp_pair(const struct tcp_ctx *ctx, int kind, int peer, int channel)
{
    return (kind == TCP_KIND_SIDE ? ctx->npairs : 0) + peer * TUTTI_MAX_CHANNELS + channel;
}

/**
 * The side connection to `peer` for `channel` (TCP_KIND_SIDE), made like a data connection
 * (the lower rank connects, both authenticate) but of one socket and small slots, for another
 * transport of the same communicator. `tcp_tctx` is the TCP transport's context. Returns
 * TUTTI_OK with *conn_p NULL while not yet connected; call again. Its data path is the TCP
 * transport's ops (send_acquire, recv_peek, progress...), and it closes with them.
 */
tutti_status_t tutti__tcp_side_connect(void *tcp_tctx, int peer, int channel,
                                       struct tutti_tconn **conn_p);

/** Whether the peer has closed a side (or data) connection's socket: its process ended. */
int tutti__tcp_peer_gone(const struct tutti_tconn *tc);

/** Whether a received slot is there to peek (no error when there is none and the peer left). */
int tutti__tcp_recv_ready(const struct tutti_tconn *tc);

/* tcp_accept.c: the accepting side. */

/**
 * Move the handshakes of accepted sockets forward, then accept what waits at the listener as
 * far as the eviction policy (net/admit.h) leaves room: authenticated sockets wait in the
 * context's ready table, strangers are closed (and logged, summed up under a flood).
 */
tutti_status_t tutti__tcp_accept_all(struct tcp_ctx *ctx);

/** Claim the sockets of (kind, peer, channel) once all have come: *conn_p, or NULL for now. */
tutti_status_t tutti__tcp_claim(struct tcp_ctx *ctx, int kind, int peer, int channel,
                                struct tcp_conn **conn_p);

/** Close the accepting side's sockets (handshakes, unclaimed sockets) and flush its log. */
void tutti__tcp_accept_fini(struct tcp_ctx *ctx);

/* tcp_frame.c: frames on the wire. */

/** The handshake payload of a data socket to and from its 32 bytes on the wire. */
void tutti__tcp_hello_encode(const struct tcp_hello *h, uint8_t p[TUTTI_HS_PAYLOAD]);
void tutti__tcp_hello_decode(const uint8_t p[TUTTI_HS_PAYLOAD], struct tcp_hello *h);

/** Encode a frame header; fp NULL: a zero fingerprint. */
void tutti__tcp_hdr_encode(uint8_t p[TCP_HDR_BYTES], uint32_t type, uint32_t len, uint64_t seq,
                           const struct tutti_fp *fp);

/**
 * Decode and check a received header: a known type, a DATA length of at most slot_size, an
 * ABORT length of exactly TCP_ABORT_BYTES, a BEAT length of TCP_BEAT_BYTES, the sequence
 * number expect_seq; the fingerprint is copied as it is (its checks are the executor's).
 * Returns 0 with *h filled, or -1 with the reason in why (h untouched).
 */
int tutti__tcp_hdr_check(const uint8_t p[TCP_HDR_BYTES], size_t slot_size, uint64_t expect_seq,
                         struct tcp_hdr *h, char *why, size_t len);

/** A whole BEAT frame: header (sequence number seq) and age_ns (negative: 0). */
void tutti__tcp_beat_encode(uint8_t p[TCP_HDR_BYTES + TCP_BEAT_BYTES], uint64_t seq,
                            int64_t age_ns);
/** The age a BEAT payload carries, clamped to INT64_MAX. */
int64_t tutti__tcp_beat_age(const uint8_t p[TCP_BEAT_BYTES]);

/** An abort notice to and from its wire form; decode always NUL-terminates the reason. */
void tutti__tcp_abort_encode(uint8_t p[TCP_ABORT_BYTES], const struct tutti_abort_info *info);
void tutti__tcp_abort_decode(const uint8_t p[TCP_ABORT_BYTES], struct tutti_abort_info *info);

/* tcp_fifo.c: a connection's memory and close. */

/** Sockets a new connection of this rank opens: TUTTI_NSOCKS, else 4 up to 8 ranks that have a
 * CPU each (args->cpu_load <= 1), else 2. The accepting side takes the count from the handshake. */
int tutti__tcp_nsocks(const struct tcp_ctx *ctx);

/** Make a connection of `kind` over nsocks connected, authenticated sockets (fds[i] =
 * socket i). */
tutti_status_t tutti__tcp_conn_new(struct tcp_ctx *ctx, int kind, int peer, int channel,
                                   const int *fds, int nsocks, struct tcp_conn **conn_p);

/* tcp_data.c: the data path. */

/** Best effort, non-blocking: an ABORT frame on every socket that can take it, then shutdown. */
void tutti__tcp_conn_abort(struct tcp_conn *c, const struct tutti_abort_info *info);

tutti_status_t tutti__tcp_send_acquire(struct tutti_tconn *tc, void **buf_p, size_t *cap_p);
tutti_status_t tutti__tcp_send_post(struct tutti_tconn *tc, size_t bytes,
                                    const struct tutti_fp *fp);
tutti_status_t tutti__tcp_send_post_ref(struct tutti_tconn *tc, const void *buf, size_t bytes,
                                        const struct tutti_fp *fp);
tutti_status_t tutti__tcp_recv_peek(struct tutti_tconn *tc, const void **buf_p, size_t *len_p,
                                    const struct tutti_fp **fp_p);
/** peek_fp: the next frame's fingerprint once it arrived whole; nothing else. */
tutti_status_t tutti__tcp_peek_fp(struct tutti_tconn *tc, const struct tutti_fp **fp_p);
tutti_status_t tutti__tcp_recv_place(struct tutti_tconn *tc, uint32_t ahead, void *dst, size_t cap,
                                     const struct tutti_fp *want);
tutti_status_t tutti__tcp_recv_release(struct tutti_tconn *tc);
tutti_status_t tutti__tcp_progress(struct tutti_tconn *tc, int *moved_p);
tutti_status_t tutti__tcp_flushed(struct tutti_tconn *tc, int *done_p);
tutti_status_t tutti__tcp_beat(struct tutti_tconn *tc, int64_t age_ns);
int tutti__tcp_pollfds(struct tutti_tconn *tc, struct pollfd *fds, int max);
tutti_status_t tutti__tcp_close(struct tutti_tconn *tc); /* tcp_fifo.c */

#endif /* TUTTI_TCP_H */
