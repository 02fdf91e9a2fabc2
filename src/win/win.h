/*
 * win.h - a communicator's control pages and windows (tutti/mem.h): every rank's page of notes
 * and the buffers its ranks registered, each peer's mapped here (win_map.c). Through the notes
 * the ranks agree, call by call, on the path a collective takes (win_run.c): carried in the
 * notes when it is small (win_carry.c), an all-reduce read and written in place when its
 * buffers lie in windows (win_share.c), or the ordinary path. A send of up to TUTTI_WIN_BOX
 * bytes travels in boxes the sender's page keeps for each receiver (win_box.c).
 *
 * The run layer owns one struct tutti_winset per communicator (runner->win), made when the
 * communicator is (every rank on one host, at most TUTTI_WIN_CTL_RANKS) or by its first
 * registration; it is changed only under the communicator's turn.
 */
#ifndef TUTTI_WIN_WIN_H
#define TUTTI_WIN_WIN_H

#include "exec/fabric.h"
#include "exec/plan.h"
#include "transports/transport.h"
#include "win/mem.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** Bytes a rank's note may carry (the carried path: no window needed). */
#define TUTTI_WIN_CARRY 1024

/** At most this many ranks get control pages when a communicator is made (more: only once a
 * window is registered), as every rank reads every peer's note each call. */
#define TUTTI_WIN_CTL_RANKS 64

/* Modes of a note. */
enum { TUTTI_WIN_ORDINARY = 0, TUTTI_WIN_WINDOWS = 1, TUTTI_WIN_CARRIED = 2 };

/* A rank's note for one call: TUTTI_WIN_NOTES of them, used in turn, so that a rank may write its
 * next notes while a peer still reads this one. The stamp is written last (release);
 * a call that carries at most TUTTI_WIN_SMALL bytes carries them in the stamp's cache line, with
 * the call's fingerprint and a hash of the fingerprint of the rank's collective before it. */
#define TUTTI_WIN_SMALL 8
struct tutti_win_note {
    _Alignas(64) _Atomic uint64_t stamp; /* the note's number */
    uint32_t mode;                       /* TUTTI_WIN_* */
    uint32_t pad;
    struct tutti_fp fp;
    uint64_t prev;                  /* hash of prev_fp: ranks whose earlier calls differed */
    uint8_t small[TUTTI_WIN_SMALL]; /* carried, that small: this rank's input */
    union {
        struct { /* windows: this rank's buffers, as offsets in its windows */
            uint32_t send_win, recv_win;
            uint64_t send_off, recv_off;
        } w;
        _Alignas(64) uint8_t data[TUTTI_WIN_CARRY]; /* carried: this rank's input */
    } u;
    struct tutti_fp prev_fp; /* the rank's collective before this one, as it remembers it */
};

/** Where a note carrying `bytes` bytes holds them. */
static inline const uint8_t *tutti__win_carried(const struct tutti_win_note *n, size_t bytes)
{
    return bytes <= TUTTI_WIN_SMALL ? n->small : n->u.data;
}

/** Bytes a carried message (a send to a local rank) may hold: it travels in the sender's page. */
#define TUTTI_WIN_BOX 4096

/** Boxes per pair: a sender runs this many carried messages ahead of its receiver (a power of
 * 2), and looks at how far the receiver got once every TUTTI_WIN_BOXES - 1 messages or so. */
#define TUTTI_WIN_BOXES 4

/** A carried message of at most this many bytes shares its stamp's cache line. */
#define TUTTI_WIN_BOX_SMALL 24

/* A message from this page's rank to one peer: numbered by the pair's carried messages (1, 2,
 * ...), in box[number % TUTTI_WIN_BOXES]; the stamp is written last (release). */
struct tutti_win_box {
    _Alignas(64) _Atomic uint64_t stamp;
    struct tutti_fp fp; /* the send's fingerprint: the receive's must be the same */
    uint8_t small[TUTTI_WIN_BOX_SMALL];
    _Alignas(64) uint8_t data[TUTTI_WIN_BOX];
};

/* What a rank's page holds for one peer (after the slot, one per rank of the set, when the set
 * has at most TUTTI_WIN_CTL_RANKS): its boxes for messages to that peer, and how many of that
 * peer's carried messages it took, which frees the peer's boxes of the messages before them. */
struct tutti_win_pair {
    struct tutti_win_box box[TUTTI_WIN_BOXES];
    _Alignas(64) _Atomic uint64_t taken;
};

/** Notes per rank, used in turn (a power of 2): a rank runs up to TUTTI_WIN_NOTES - 1 calls ahead
 * of the slowest peer. */
#define TUTTI_WIN_NOTES 32
/* A rank's control page, in a memory file of its own that every local rank maps. Each
 * collective, the rank writes its note k (its k-th since the set became ready) into
 * note[k % TUTTI_WIN_NOTES] and stamps it k; before, it makes sure every peer has stamped note
 * k - TUTTI_WIN_NOTES + 1 (so no peer still reads note k - TUTTI_WIN_NOTES, the one it replaces).
 * On the window path, after moving data, `depart` = k. */
struct tutti_win_slot {
    struct tutti_win_note note[TUTTI_WIN_NOTES];
    _Alignas(128) _Atomic uint64_t depart;
};

/** Rank page's record for peer r (the set has pairs: tutti_winset.pair). */
static inline struct tutti_win_pair *tutti__win_pair(struct tutti_win_slot *page, int r)
{
    return (struct tutti_win_pair *)(void *)(page + 1) + r;
}

/* What a rank tells the others at registration (all-gathered). */
struct tutti_win_rec {
    int32_t pid;
    int32_t fd;     /* the window's memory file, -1: not tutti_mem_alloc memory */
    int32_t ctl_fd; /* the control page's */
    int32_t ctl_ok; /* at a communicator's making: 1 when this rank made its control page */
    uint64_t maplen, offset, len, ctl_len;
    uint8_t cookie[TUTTI_MEM_COOKIE_BYTES], ctl_cookie[TUTTI_MEM_COOKIE_BYTES];
};

struct tutti_window {
    struct tutti_window *next;
    struct tutti_winset *set;
    uint32_t id; /* its place among the communicator's registrations: the same on every rank */
    uint8_t *buf;
    size_t len;
    void *block; /* the tutti_mem_alloc block it holds, or NULL */
    int shared;
    _Atomic uint64_t calls; /* all-reduces that wrote into it in place */
    uint8_t **base;         /* [nranks]: each rank's buffer as mapped here (this rank's: buf) */
    size_t *blen;           /* [nranks]: their lengths */
    void **map;             /* [nranks]: the mappings to undo (NULL: none) */
    size_t *maplen;
};

/* How a waiting rank backs off: spin, yield, nap (win_wait.c). */
struct tutti_win_pause {
    unsigned polls, spin_polls;
    int napping;
    int64_t start;
    uint64_t checks; /* how often it looked at the communicator and the peer */
};

/* What a rank signs a note with, kept in its winset as well: it compares its peers' notes with
 * this copy, never with its own page, whose lines may still wait for a peer to give them up. */
struct tutti_win_sign {
    struct tutti_fp fp, prev_fp;
    uint64_t prev;
};
struct tutti_winset {
    int rank, nranks;
    uint32_t next_id;
    int ready;           /* every rank maps every rank's control page: notes are posted */
    uint64_t notes;      /* notes this rank posted since then (the last one's number) */
    uint64_t seen;       /* every peer has stamped its note of this number (as far as seen here) */
    uint64_t *peer_seen; /* [nranks]: the latest note of each peer's seen here (its stamp) */
    uint64_t noted;      /* the collective number (op->seq) of the last call that posted a note */
    int windowed; /* a registration made a shared window (every rank alike): the collectives of
                   * tutti__win_shares post notes */
    struct tutti_fabric *fab; /* the communicator's, for the watch */
    uint64_t xseq;            /* the operation number (fabric.h) of the call in hand, for errors */
    int64_t live_checked;     /* when a waiting rank last looked whether a peer still runs */
    uint64_t pidns;           /* this process's pid namespace, once a wait looked (0: not yet) */
    int ctl_fd;
    struct tutti_win_slot *ctl; /* this rank's control page (in a file of ctl_len bytes) */
    size_t ctl_len;
    uint8_t ctl_cookie[TUTTI_MEM_COOKIE_BYTES];
    struct tutti_win_slot **slots; /* [nranks]: every rank's control page, mapped here */
    pid_t *pids;                   /* [nranks] */
    struct tutti_window *wins;
    uint8_t *scratch; /* an accumulator chunk for more than 2 ranks */
    /* Carried messages, [nranks] each when the pages have pairs (else NULL): posted to each
     * peer, taken from each peer, and where a run of sends and receives began (win_box.c). */
    uint64_t *pair_out, *pair_in, *run_out, *run_in;
    uint64_t *pair_room;              /* [nranks]: each peer's taken count, as last read here */
    struct tutti_win_pause box_pause; /* a run's (or a led call's) back-off, between polls */
    int box_waited;                   /* the call it last waited for (-1: none yet) */
    uint64_t box_checks;              /* box_pause.checks when it last looked in the FIFOs */
    uint64_t lead_k;                  /* the note of the led call in hand (win_lead.c) */
    size_t lead_bytes;                /* and the bytes each note carries for it */
    struct tutti_win_sign sign;       /* what this rank signed its last note with */
};

/** A window set for `nranks` ranks with this rank's control page: NULL when out of memory. */
struct tutti_winset *tutti__winset_new(int rank, int nranks);

/** Undo every window and mapping of ws and free it (NULL: nothing). */
void tutti__winset_free(struct tutti_winset *ws);

/** This rank's record for a registration of [buf, buf + len) (the block in *block_p or NULL). */
void tutti__win_rec(const struct tutti_winset *ws, const void *buf, size_t len,
                    struct tutti_win_rec *rec, void **block_p);

/**
 * Map what recs (every rank's record) name: each peer's control page, unless mapped already,
 * into ws, and each peer's buffer into w (made by the caller, w->base etc. allocated). Returns a
 * bitmask: 1 the control pages, 2 the buffers, each where every peer's mapped and proved itself
 * by its cookie.
 */
int tutti__win_map(struct tutti_winset *ws, struct tutti_window *w,
                   const struct tutti_win_rec *recs);

/** Undo w's mappings of its peers' buffers (w stays, not shared). */
void tutti__win_unmap(struct tutti_window *w);

/** Undo the control pages' mappings of the peers (ws stays, not ready). */
void tutti__winset_unmap_ctl(struct tutti_winset *ws);

/** A window's storage for nranks ranks: NULL when out of memory. */
struct tutti_window *tutti__window_new(int nranks);

/** Free w (its mappings undone, its block let go). */
void tutti__window_free(struct tutti_window *w);

/**
 * Post this rank's note for op (a collective) once ws is ready, and run op here when every
 * rank's note names the same path past the ordinary one: carried, or on windows; a send or
 * receive that fits the boxes (tutti__win_box_fits) runs in them. Returns 1 when it ran op here
 * (its status in *st_p), 0 when op takes the ordinary path. xseq: the operation's number as
 * the engine counts them (tutti__fabric_seq_post), for errors.
 */
int tutti__win_try(struct tutti_winset *ws, struct tutti_fabric *fab,
                   const struct tutti_op_desc *op, uint64_t xseq, tutti_status_t *st_p);

/** Post this rank's note for a collective that takes the ordinary path (groups). */
tutti_status_t tutti__win_note(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op);

/** The engine's watch (fabric.h) for a communicator with control pages: a peer whose note names
 * the call this rank runs on the ordinary path without a note of its own took it carried or on
 * windows, and a peer whose box holds the message a receive of ex waits for on the ordinary
 * path, sent carried: the calls differ (TUTTI_ERR_MISMATCH, recorded). arg: the window set. */
tutti_status_t tutti__win_watch(void *arg, const struct tutti_exec *ex);

/** Whether op is a send or receive that travels in the boxes (ws ready, with pairs; another
 * local rank; 1 to TUTTI_WIN_BOX bytes). */
int tutti__win_box_fits(const struct tutti_winset *ws, const struct tutti_op_desc *op);

/** Start a run of sends and receives, some of which travel in the boxes. */
void tutti__win_box_begin(struct tutti_winset *ws);

/* How far tutti__win_box_run goes. */
enum {
    TUTTI_WIN_BOX_TRY,  /* one pass: what can move now */
    TUTTI_WIN_BOX_WAIT, /* until every message moved */
    TUTTI_WIN_BOX_STEP, /* one pass, then, if some wait, back off once (a run polled in turn) */
};

/**
 * Move the run's carried messages (ops: those of the run that tutti__win_box_fits, in the
 * order they were issued) as far as `how` says: TUTTI_IN_PROGRESS while some wait, TUTTI_OK
 * once all moved. A receive whose message is another send fails the communicator with
 * TUTTI_ERR_MISMATCH; a wait stops as tutti__win_wait's do. xseq: the operation's number as
 * the engine counts them, for errors.
 */
tutti_status_t tutti__win_box_run(struct tutti_winset *ws, struct tutti_fabric *fab,
                                  const struct tutti_op_desc *const *ops, int n, int how,
                                  uint64_t xseq);

/** Whether op is led (win_lead.c): a broadcast or a reduce the carried path takes, in a group
 * or not; then the bytes a note carries for it in *bytes. */
int tutti__win_leads(const struct tutti_winset *ws, const struct tutti_op_desc *op, size_t *bytes);

/**
 * Post this rank's note for led call op (`bytes` from tutti__win_leads): *done_p 1 when that
 * ends this rank's part (a broadcast's root, a reduce's non-root), else tutti__win_lead_finish
 * completes it. xseq: the operation's number as the engine counts them, for errors.
 */
tutti_status_t tutti__win_lead_post(struct tutti_winset *ws, struct tutti_fabric *fab,
                                    const struct tutti_op_desc *op, size_t bytes, uint64_t xseq,
                                    int *done_p);

/** Complete led call op once the notes it takes from are there, as far as `how`
 * (TUTTI_WIN_BOX_*) says: TUTTI_IN_PROGRESS while they are not; different calls are
 * TUTTI_ERR_MISMATCH (the communicator failed). */
tutti_status_t tutti__win_lead_finish(struct tutti_winset *ws, struct tutti_fabric *fab,
                                      const struct tutti_op_desc *op, int how);

/* Inside the layer: win_wait.c for the others. */

/** For the watch: a receive (op, fingerprint fp, on the ordinary path) whose message waits in
 * the sender's box, not yet taken, was sent carried: TUTTI_ERR_MISMATCH (recorded), else OK
 * (win_box.c). op may be any call: only receives are looked at. */
tutti_status_t tutti__win_box_watch(struct tutti_winset *ws, const struct tutti_op_desc *op,
                                    const struct tutti_fp *fp);

/** A pause's start, for a wait on fab. */
void tutti__win_pause_init(struct tutti_win_pause *p, const struct tutti_fabric *fab);

/** Back off once while counter c on rank r is short of k: every so often, look whether the
 * wait must stop (an abort, a failure, r gone, the timeout: its error; `what` says what r was
 * to do). TUTTI_OK: poll again. */
tutti_status_t tutti__win_pause(struct tutti_winset *ws, struct tutti_fabric *fab,
                                const struct tutti_op_desc *op, struct tutti_win_pause *p, int r,
                                _Atomic uint64_t *c, uint64_t k, const char *what);

/** This rank's next note, to fill (its number in *k): once every peer has stamped the one
 * before, and so has read the note this one replaces. */
tutti_status_t tutti__win_note_begin(struct tutti_winset *ws, struct tutti_fabric *fab,
                                     const struct tutti_op_desc *op, struct tutti_win_note **n_p,
                                     uint64_t *k);

/** Sign note n for op (its fingerprint, the rank's previous collective and that one's hash), from
 * ws->sign, which this fills first. */
void tutti__win_note_sign(struct tutti_winset *ws, const struct tutti_fabric *fab,
                          const struct tutti_op_desc *op, struct tutti_win_note *n);
/** Peer r has stamped its note v (read from any of its slots): remember the latest. */
static inline void tutti__win_saw(struct tutti_winset *ws, int r, uint64_t v)
{
    ws->peer_seen[r] = v > ws->peer_seen[r] ? v : ws->peer_seen[r];
}
/** Publish note n (number k, for the collective numbered op_seq) filled since note_begin. */
void tutti__win_note_post(struct tutti_winset *ws, struct tutti_win_note *n, uint64_t k,
                          uint64_t op_seq, int mode);

/** A hash of the fingerprint of a rank's earlier collective, to compare in one word: all of it
 * but the count of the variable-size collectives and gather and scatter, which may differ
 * between ranks whose calls agree (each rank's own count: exec/fp.c). */
uint64_t tutti__win_prev_hash(const struct tutti_fp *fp);

/** Wait until every peer's note k is stamped (depart 0), or its depart reaches k (1). */
tutti_status_t tutti__win_wait(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op, int depart, uint64_t k);

/** Whether op can take the carried path (a barrier, or one of the six collectives with at most
 * TUTTI_WIN_CARRY bytes from each rank, 512 for all-reduce and reduce-scatter, a built-in op for
 * those that reduce; not one whose
 * algorithm TUTTI_ALGO forces), and then the bytes each rank's note carries in *bytes
 * (win_carry.c). */
int tutti__win_carry_size(const struct tutti_winset *ws, const struct tutti_op_desc *op,
                          size_t *bytes);

/** Whether op reduces with an op the kernels take here: built in, not a pre-multiplied sum
 * (win_carry.c; the carried and the windows paths take only those). */
int tutti__win_builtin_op(const struct tutti_op_desc *op);

/** Run op from every rank's note (each carrying its input, `bytes` bytes): the result here
 * (win_carry.c). */
void tutti__win_carry_run(const struct tutti_winset *ws, const struct tutti_op_desc *op,
                          const struct tutti_win_note *const *notes, size_t bytes);

/** A note's window id for a buffer the call does not have (a broadcast's receiver's input, a
 * reduce's non-root's output). */
#define TUTTI_WIN_NONE UINT32_MAX

/** Whether op is a collective that may run on windows (all-reduce, reduce, reduce-scatter,
 * broadcast, all-gather, all-to-all, of at least one element): once a window was shared, each
 * such call posts a note (win_share.c). */
int tutti__win_shares(const struct tutti_op_desc *op);

/** Whether op's buffers here lie in shared windows (filled into note n), and the scratch it
 * needs is there (win_share.c). */
int tutti__win_share_fill(struct tutti_winset *ws, const struct tutti_op_desc *op,
                          struct tutti_win_note *n);

/** Run op (note k) on windows, every note naming its windows (win_share.c). */
tutti_status_t tutti__win_share_run(struct tutti_winset *ws, struct tutti_fabric *fab,
                                    const struct tutti_op_desc *op,
                                    const struct tutti_win_note *const *notes, uint64_t k);

/** Rank r's share [*lo, *hi) of count elements of es bytes split n ways at cache lines
 * (win_move.c). */
void tutti__win_share_of(size_t count, size_t es, int n, int r, size_t *lo, size_t *hi);

/** This rank's (me of n) copies of a broadcast, all-gather or all-to-all on windows, from every
 * rank's input in[] into every rank's output out[] as mapped here (win_move.c). */
void tutti__win_move(const struct tutti_op_desc *op, int me, int n, const uint8_t *const *in,
                     uint8_t *const *out);

#endif /* TUTTI_WIN_WIN_H */
