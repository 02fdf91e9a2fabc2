/*
 * win.h - a communicator's windows (tutti/mem.h): the buffers its ranks registered, each peer's
 * mapped here (win_map.c), and the control pages through which the ranks agree, call by call,
 * whether an all-reduce reads and writes the windows in place (win_run.c).
 *
 * The run layer owns one struct tutti_winset per communicator (runner->win), made by the first
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

/* A rank's control page, in a memory file of its own that every local rank maps. The rank
 * writes its note (mode, buffers, fingerprint), then `arrive` = the call's collective number;
 * after moving data, `depart` = that number. */
struct tutti_win_slot {
    _Alignas(128) _Atomic uint64_t arrive;
    uint32_t mode; /* 1: this rank's buffers lie in shared windows (the fields below hold) */
    uint32_t send_win, recv_win;
    uint32_t pad;
    uint64_t send_off, recv_off; /* offsets in those windows */
    struct tutti_fp fp;
    _Alignas(128) _Atomic uint64_t depart;
};

/* What a rank tells the others at registration (all-gathered). */
struct tutti_win_rec {
    int32_t pid;
    int32_t fd;     /* the window's memory file, -1: not tutti_mem_alloc memory */
    int32_t ctl_fd; /* the control page's */
    int32_t pad;
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

struct tutti_winset {
    int rank, nranks;
    uint32_t next_id;
    int ready; /* every rank maps every rank's control page: notes are posted */
    int ctl_fd;
    struct tutti_win_slot *ctl; /* this rank's control page (in a file of ctl_len bytes) */
    size_t ctl_len;
    uint8_t ctl_cookie[TUTTI_MEM_COOKIE_BYTES];
    struct tutti_win_slot **slots; /* [nranks]: every rank's control page, mapped here */
    pid_t *pids;                   /* [nranks] */
    struct tutti_window *wins;
    uint8_t *scratch; /* an accumulator chunk for more than 2 ranks */
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
 * Run op (numbered) through the windows when it can: an all-reduce whose buffers lie in shared
 * windows on every rank. Posts this rank's note for every collective once ws is ready. Returns
 * 1 when it ran op here (its status in *st_p), 0 when op takes the ordinary path.
 */
int tutti__win_try(struct tutti_winset *ws, struct tutti_fabric *fab,
                   const struct tutti_op_desc *op, tutti_status_t *st_p);

/** Post this rank's note for a collective that takes the ordinary path (groups). */
void tutti__win_note(struct tutti_winset *ws, const struct tutti_op_desc *op);

#endif /* TUTTI_WIN_WIN_H */
