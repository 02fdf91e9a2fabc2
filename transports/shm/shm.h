/*
 * shm.h - shared-memory transport (private): layouts of the segments and the structs shared by
 * shm_ctx.c (per-communicator context, liveness, abort notices), shm_dir.c (the control
 * directory: every local rank's control page in one segment), shm_conn.c (FIFO
 * segments, connection set-up) and shm_data.c (the FIFO operations).
 *
 * Segments (POSIX shm; each name keyed by the host's first rank's random salt, which only the
 * job's ranks know, so no other user can take a name first: shm_name.c):
 *   /tutti-<id>-d<hash>    the control directory: a header page, then rank r's control page
 *                          (doorbell, abort board, closed flag) at page r + 1. Made by the host's
 *                          first rank at attach phase 0, joined by the other local ranks at phase
 *                          1, unlinked at phase 2.
 *   /tutti-<id>-f<hash>    one FIFO src -> dst on channel ch (hashed with the salt). Made by the
 *                          receiver dst when the connection is first needed, opened by the
 *                          sender, unlinked as soon as the sender has attached.
 * Pages are reserved with posix_fallocate, so a full /dev/shm is an error at set-up, never a
 * SIGBUS in the middle of a collective. Every segment starts with its maker's identity (struct
 * shm_owner): names left by a process that ended are replaced, swept, or removed by its peers.
 */
#ifndef TUTTI_SHM_H
#define TUTTI_SHM_H

#include "base/proc.h"
#include "transports/transport.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The version of every segment's layout (directory, control page, FIFO, slot header), published
 * in each rank's blob and checked between the ranks of a host (shm_blob.c). Raise it with any
 * change to those layouts: the FIFO's magic follows it, so there is one number to keep. */
#define TUTTI_SHM_LAYOUT 2u /* 2: the control page's cma_cost */

#define TUTTI_SHM_CTL_MAGIC 0x4c544353u /* "SCTL": a control page is there (shm_watch.c) */
/* "SFI" and the character '2' + layout ("SFI3" at layout 1, "SFI4" at 2): a FIFO of another
 * layout never reads as ready. */
#define TUTTI_SHM_FIFO_MAGIC (0x00494653u | ((uint32_t)('2' + TUTTI_SHM_LAYOUT) << 24))
/* A control page's cma_cost where its owner never takes frames by reference (shm_cma_pick.c). */
#define TUTTI_SHM_CMA_REFUSED UINT32_MAX
#define TUTTI_SHM_SLOT_HDR    64 /* slot header (struct shm_slot_hdr), a cache line */

extern const struct tutti_transport_ops tutti__shm_ops;

#define TUTTI_SHM_OWNER_TAG 0x52454e574f4d4853ull /* "SHMOWNER" */

/*
 * The first bytes of every segment tutti__shm_map makes: who made it (proc.h), written right
 * after the segment is mapped, so that a segment left by a process that has ended (SIGKILL, the
 * OOM killer) is told from one of a live job and replaced (shm_stale.c).
 */
struct shm_owner {
    _Atomic uint64_t tag; /* TUTTI_SHM_OWNER_TAG once id is written */
    struct tutti_proc_id id;
};

/* Control page of one rank, in the control directory (shm_dir.c). */
struct shm_ctl {
    struct shm_owner own;
    _Atomic uint32_t magic; /* written last by the owner: the segment is ready */
    uint32_t pid;
    int32_t rank;
    _Atomic uint32_t closed; /* the owner destroyed its communicator cleanly */
    struct tutti_doorbell doorbell;
    _Alignas(64) _Atomic uint32_t abort_flag; /* 0, then 1 while writing, then 2 */
    struct tutti_abort_info abort_info;
    struct tutti_seq_board seq; /* the owner's operation counters, for hang reports */
    /* One copy (shm_cma.c): a value only this process holds, and its address in this process,
     * which a peer reads with process_vm_readv to learn whether it may read this process. */
    uint64_t cma_nonce;
    uint64_t cma_addr;
    uint32_t cma_cost; /* tutti__shm_cma_cost of the owner */
};

/* The header of every slot: its length and the fingerprint of the operation it belongs to;
 * ref: 0 when the data is in the slot, else its address in the sender (shm_cma.c); off: where
 * in the slot's payload the data starts (a rotating offset, shm_data.c); seq: the post's
 * number + 1, written last (release). The receiver polls this line, which it reads
 * anyway, instead of a separate head counter: one cache line crosses per post, not two. */
struct shm_slot_hdr {
    uint64_t len;
    struct tutti_fp fp;
    uint64_t ref;
    uint64_t off;
    _Atomic uint64_t seq;
};
_Static_assert(sizeof(struct shm_slot_hdr) <= TUTTI_SHM_SLOT_HDR, "slot header fits");

/* Head of one FIFO segment; slots follow at fifo_slot(). */
struct shm_fifo_hdr {
    struct shm_owner own;
    _Atomic uint32_t magic; /* written last by the receiver that made it */
    uint32_t nslots;
    uint32_t cma; /* 1: the receiver can read the sender's memory (set before magic) */
    uint64_t slot_size;
    _Alignas(64) _Atomic uint64_t tail; /* slots released, written by the receiver */
    _Alignas(64) _Atomic uint32_t sender_attached;
    _Atomic uint32_t sender_closed;
};

/* One local peer as seen from this rank. */
struct shm_peer {
    int rank;
    int watched; /* connected to: its page checked, its process watched (shm_watch.c) */
    int pidfd;   /* -1 if not watched, or pidfd_open is unavailable: kill(pid, 0) then */
    uint32_t pid;
    struct shm_ctl *ctl; /* its control page in the mapped directory */
};

#define TUTTI_SHM_SALT_BYTES 16

struct shm_ctx {
    struct tutti_tctx_args args;
    const struct tutti_transport_ops *ops; /* tutti__shm_ops, for the connections it makes */
    char prefix[40];                       /* "/tutti-<comm id in hex>" */
    uint8_t mine[TUTTI_SHM_SALT_BYTES];    /* drawn at init, published in this rank's blob */
    uint8_t salt[TUTTI_SHM_SALT_BYTES];    /* the host's first rank's: keys the names (phase 0) */
    struct shm_ctl *ctl;                   /* mine: my page of the directory */
    void *dir;                             /* the control directory (shm_dir.c), mapped whole */
    size_t dir_len;
    int dir_linked;         /* its name may still exist (no local rank has removed it) */
    struct shm_peer *peers; /* [nranks]; ctl == NULL for ranks on other hosts */
    int nlocal;
    size_t slot_size;
    uint32_t nslots;
    size_t cma_min;          /* frames of at least this many bytes go in one copy; SIZE_MAX: none */
    size_t cma_max;          /* in calls that move at most this much (tutti_tconn.ref_max) */
    uint32_t cma_share;      /* tutti_tconn.share_every (TUTTI_SHM_CMA_SHARE) */
    size_t cma_lone;         /* tutti_tconn.lone_max where it pays (TUTTI_SHM_CMA_LONE) */
    uint32_t fill;           /* how send slots are written: TUTTI_FILL_* (TUTTI_SHM_FILL) */
    size_t rotate_min;       /* frames this long or longer rotate (TUTTI_SHM_ROTATE); 0: none */
    struct shm_conn **conns; /* every open connection, to unlink names and wake on close */
    int nconns, conns_cap;
    int *watch;             /* [nlocal]: the watched peers, in the order connected */
    _Atomic int nwatch;     /* how many: written by the connecting thread after watch[] */
    _Atomic int check_next; /* the next watch[] entry whose liveness shm_check looks at (any
                             * thread that checks: relaxed, a hint only) */
};

/* One direction of a connection: the FIFO mapping and the cached counters. */
struct shm_fifo {
    struct shm_fifo_hdr *hdr;
    size_t map_len;
    uint8_t *slots; /* first slot; geometry copied locally, never re-read from the segment */
    uint32_t nslots;
    size_t stride;   /* TUTTI_SHM_SLOT_HDR + slot size */
    uint64_t mine;   /* sender: slots it posted; receiver: slots it released (tail) */
    uint64_t theirs; /* sender: last value read of the receiver's tail */
    size_t off;      /* sender: where the acquired slot's payload starts (shm_data.c) */
};

/* Where the engine wants received frame `seq` (recv_place), for frames sent by reference. */
struct shm_place {
    uint64_t seq;
    void *dst;
    size_t cap;
    struct tutti_fp want; /* dst takes only a frame with this fingerprint */
    void *at;             /* once frame seq is read: where it went (dst or its slot) */
};

struct shm_conn {
    struct tutti_tconn base;
    struct shm_ctx *ctx;
    struct shm_fifo send; /* in the peer's segment */
    struct shm_fifo recv; /* in mine */
    char recv_name[64];   /* name of my FIFO segment, unlinked once the peer attached */
    int recv_linked;
    struct shm_ctl *peer_ctl;
    /* One copy (shm_cma.c). Sender: may post references (the peer can read us), and the head
     * after the last one (the sender's memory is in use until the peer's tail reaches it). */
    int send_ref;
    uint64_t ref_head;
    /* Receiver: where frames go (nslots entries, NULL when this end cannot read the peer),
     * and the frames read from the sender already: those before number `pulled`. */
    struct shm_place *place;
    uint64_t pulled;
};

/* shm_conn.c */
tutti_status_t tutti__shm_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p);
tutti_status_t tutti__shm_close(struct tutti_tconn *c);
tutti_status_t tutti__shm_open_send(struct shm_conn *c);
void tutti__shm_unlink_attached(struct shm_ctx *ctx);

/* shm_data.c */
tutti_status_t tutti__shm_send_acquire(struct tutti_tconn *c, void **buf_p, size_t *cap_p);
tutti_status_t tutti__shm_send_post(struct tutti_tconn *c, size_t bytes, const struct tutti_fp *fp);
/** Publish the acquired slot: bytes, fingerprint, and ref (0: the data is in the slot). */
tutti_status_t tutti__shm_post(struct shm_conn *c, size_t bytes, const struct tutti_fp *fp,
                               uint64_t ref);
tutti_status_t tutti__shm_recv_peek(struct tutti_tconn *c, const void **buf_p, size_t *len_p,
                                    const struct tutti_fp **fp_p);
tutti_status_t tutti__shm_recv_release(struct tutti_tconn *c);
tutti_status_t tutti__shm_flushed(struct tutti_tconn *c, int *done_p);
void tutti__shm_ring(struct shm_ctl *ctl);

/* shm_cma.c: one copy for large frames (cross-memory attach) */

/** Frames of at least this many bytes go by reference (TUTTI_SHM_CMA, TUTTI_SHM_CMA_MIN;
 * shm_cma_pick.c). */
size_t tutti__shm_cma_min(const struct tutti_env *env);

/** A process's cost of one copy by the kernel (shm_cma_pick.c): 0 where TUTTI_SHM_CMA=1 takes
 * it whatever it costs, TUTTI_SHM_CMA_REFUSED where the process never reads by reference
 * (TUTTI_SHM_CMA=0, or the kernel refuses), else the time of one process_vm_readv in hundredths
 * of a memcpy's, timed once per process. */
uint32_t tutti__shm_cma_cost(const struct tutti_env *env);

#define TUTTI_SHM_CMA_PAIR_PCT 300 /* frames go by reference between two processes at all */
#define TUTTI_SHM_CMA_LONE_PCT 100 /* ...and in any call where one of them only sends */

/** Whether frames go by reference between two processes of these costs (either direction), where
 * the kernel's copy must cost at most limit_pct hundredths of a memcpy on average:
 * TUTTI_SHM_CMA_PAIR_PCT at all, TUTTI_SHM_CMA_LONE_PCT for a rank that only sends in a call of
 * any size (tutti_tconn.lone_max). */
int tutti__shm_cma_pays(uint32_t mine, uint32_t peers, uint32_t limit_pct);

/** Write this rank's probe (cma_nonce, cma_addr) and its cost into its control page. */
void tutti__shm_cma_publish(struct shm_ctl *me, uint32_t cost);

/** 1 when this process can read `peer`'s memory (its probe reads back right), else 0. */
int tutti__shm_cma_probe(const struct shm_ctx *ctx, int peer);

/** Post the acquired slot as a reference to buf (bytes at least ctx->cma_min). */
tutti_status_t tutti__shm_send_post_ref(struct tutti_tconn *c, const void *buf, size_t bytes,
                                        const struct tutti_fp *fp);

/** peek_fp: the next frame's fingerprint once its header is posted; nothing else. */
tutti_status_t tutti__shm_peek_fp(struct tutti_tconn *c, const struct tutti_fp **fp_p);
/** recv_place: remember where frame `ahead` goes, should it come by reference. */
tutti_status_t tutti__shm_recv_place(struct tutti_tconn *c, uint32_t ahead, void *dst, size_t cap,
                                     const struct tutti_fp *want);

/**
 * The peeked frame h (slot payload `slot`) came by reference: read it from the sender into its
 * placement or the slot, once, and return where it is in *buf_p. Placed frames posted after it
 * by reference come in the same read.
 */
tutti_status_t tutti__shm_pull(struct shm_conn *c, const struct shm_slot_hdr *h, void *slot,
                               size_t len, const void **buf_p);

/* shm_ctx.c: shared by the other two */

/**
 * Map segment `name` of len bytes. create: make it (O_EXCL, pages reserved, the owner record
 * written first); a segment of that name whose maker has ended is replaced, one of a live
 * process is an error naming it and its owner. Else open one that exists and has len bytes.
 * @return the mapping, or NULL with *st_p: TUTTI_IN_PROGRESS (not there, or not sized yet) or
 *         an error (recorded).
 */
/* TUTTI_OK when fd (a segment this process opened, did not make) is this user's and open to
 * nobody else; else an error naming the name, its owner and its mode. */
tutti_status_t tutti__shm_fd_ours(int fd, const char *name, struct tutti_errbuf *eb);
void *tutti__shm_map(const char *name, size_t len, int create, tutti_status_t *st_p,
                     struct tutti_errbuf *eb);
tutti_status_t tutti__shm_peer_gone(struct shm_ctx *ctx, int rank);
/** A peer's abort notice on this rank's board, as the error it becomes; TUTTI_OK if none. */
tutti_status_t tutti__shm_board_notice(struct shm_ctx *ctx);

/* shm_watch.c: the local peers a rank knows, and the ones it watches */

/** Attach phase 1, once the directory is mapped: every local peer's page, unread (each is
 * written by its rank before the set-up's next sync). */
tutti_status_t tutti__shm_attach_peers(struct shm_ctx *ctx);

/** Watch a local peer this rank connects to: check its page, open a pidfd on its process. */
tutti_status_t tutti__shm_watch(struct shm_ctx *ctx, int rank);

/** The first watched peer (a batch a call, in turn) whose process has ended, or -1. */
int tutti__shm_first_ended(struct shm_ctx *ctx);

/** Close the pidfds of the watched peers; forget them. */
void tutti__shm_unwatch_all(struct shm_ctx *ctx);

/* shm_stale.c: segments left by processes that have ended */

/**
 * A segment named `name` is in the way of its creation: remove it if its maker has ended (or
 * it has no maker recorded and is 10 s old). 0 when removed; -1 with the error recorded (naming
 * the segment, its owner and the rm that removes it) when it belongs to a live process.
 */
int tutti__shm_reclaim(const char *name, struct tutti_errbuf *eb);

/** Remove this user's transport segments whose makers have ended (once per process). */
void tutti__shm_sweep(void);

/** Bytes of one control page; the directory holds one per rank after its header page. */
#define TUTTI_SHM_CTL_BYTES 4096

/**
 * Reserve len bytes at off of the segment fd (name: for the message), so that a full /dev/shm
 * is an error now (naming the size, the space left and the remedies), never a SIGBUS later.
 */
tutti_status_t tutti__shm_reserve(int fd, size_t off, size_t len, const char *name,
                                  struct tutti_errbuf *eb);

/* shm_dir.c: the control directory, one segment of every local rank's control page. */

/**
 * Map the communicator's directory and set up this rank's page. make: create it (the host's
 * first rank, attach phase 0); else open the one it made (phase 1): TUTTI_ERR_UNSUPPORTED when
 * it is not in this /dev/shm (a rank in another container).
 */
tutti_status_t tutti__shm_dir_open(struct shm_ctx *ctx, int make);

/** Rank r's control page in the mapped directory. */
struct shm_ctl *tutti__shm_dir_page(const struct shm_ctx *ctx, int rank);

/** Remove the directory's name, once (every local rank has mapped it). */
void tutti__shm_dir_unlink(struct shm_ctx *ctx);

/** Remove the name if still there and unmap the directory. */
void tutti__shm_dir_close(struct shm_ctx *ctx);

/**
 * Remove every transport segment of the communicator comm_id, made by whomever: for a launcher
 * whose ranks have all ended (killed during their set-up, some made segments that record no
 * maker yet). Returns how many were removed.
 */
int tutti__shm_remove_job(uint64_t comm_id);

/** A local peer has died: remove the names it made (its receive FIFOs). */
void tutti__shm_forget(const struct shm_ctx *ctx, int rank);

/* shm_blob.c: what a rank publishes, and the check of its local peers' layouts */

/** This rank's salt and TUTTI_SHM_LAYOUT into its blob (TUTTI_TRANSPORT_BLOB bytes). */
void tutti__shm_publish(const struct shm_ctx *ctx, uint8_t *blob);

/** INVALID_USAGE naming the first rank of this host whose published layout is not this build's. */
tutti_status_t tutti__shm_check_layouts(const struct shm_ctx *ctx);

/* shm_name.c: names no other user can know in advance */

/** TUTTI_SHM_SALT_BYTES random bytes into salt. */
tutti_status_t tutti__shm_draw_salt(uint8_t *salt, struct tutti_errbuf *eb);

/** The name of segment kind 'd' (the directory) or 'f' (the FIFO src -> dst on channel ch). */
void tutti__shm_name(const struct shm_ctx *ctx, char kind, int src, int dst, int ch, char *buf,
                     size_t len);

/** Offset of the first slot in a FIFO segment. */
#define TUTTI_SHM_FIFO_HDR_BYTES ((sizeof(struct shm_fifo_hdr) + 63) & ~(size_t)63)

/** Header (struct shm_slot_hdr) of slot number i (a counter value, taken modulo nslots). */
static inline uint8_t *tutti__shm_slot(const struct shm_fifo *f, uint64_t i)
{
    return f->slots + (size_t)(i % f->nslots) * f->stride;
}

/** Bytes of a FIFO segment with nslots slots of slot_size bytes. */
static inline size_t tutti__shm_fifo_bytes(uint32_t nslots, size_t slot_size)
{
    return TUTTI_SHM_FIFO_HDR_BYTES + (size_t)nslots * (TUTTI_SHM_SLOT_HDR + slot_size);
}

#endif /* TUTTI_SHM_H */
