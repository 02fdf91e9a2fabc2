/*
 * exec.h - execution of one plan on one communicator's connections, without blocking.
 *
 * tutti__exec_advance() connects what the plan needs, then walks every lane as far as the FIFOs
 * allow, then waits for sends to leave the process. The engine (engine.c) calls it in a loop
 * and decides when to spin, yield or sleep. Unit tests drive it directly.
 */
#ifndef TUTTI_EXEC_H
#define TUTTI_EXEC_H

#include "exec/plan.h"
#include "transports/transport.h"
#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_fabric;
struct tutti_tconn;

/** A (peer, channel) the plan talks to. */
struct tutti_exec_need {
    int peer;
    int channel;
    int call; /* the call of the plan's first step that receives from it, or -1 */
};

enum tutti_exec_phase { TUTTI_EXEC_CONNECT, TUTTI_EXEC_RUN, TUTTI_EXEC_FLUSH, TUTTI_EXEC_DONE };

struct tutti_exec {
    struct tutti_fabric *fab;
    const struct tutti_plan *plan;
    size_t esize;
    uint64_t seq;
    int phase;
    int lanes_left;
    int main_left;                 /* lanes with steps that are not after_all lanes */
    int needs_progress;            /* a connection needs ops->progress() (TCP) */
    int uses_doorbell;             /* a connection is woken through the doorbell (shm) */
    int nt_dst;                    /* write results to user buffers with non-temporal stores */
    size_t ref_bytes;              /* the call's size for tutti_tconn.ref_max (exec.c) */
    int sends_only;                /* this rank receives nothing in the call */
    size_t lone_need;              /* ...and how large a call that is (tutti_tconn.lone_max) */
    uint32_t shared;               /* frames it could have sent by reference (share_every) */
    tutti_status_t status;         /* IN_PROGRESS until done */
    size_t *next;                  /* per lane: index of the next step to run */
    size_t *placed;                /* per lane: steps before this one had their receives placed */
    int landed;                    /* the step just run found its frame placed */
    int *sole_peer;                /* per lane: the only peer it receives from, if no other lane
                                      receives from that peer on its channel; else -1 */
    struct tutti_exec_need *needs; /* distinct (peer, channel) pairs of the steps */
    struct tutti_tconn **conns;    /* their connections, once connected */
    int nneeds;
    int next_cap, needs_cap; /* sizes of the arrays above, kept between reuses */
    uint64_t needs_gen;      /* plan->gen that needs and conns were found for, or 0 */
    /* the fingerprint of each call of the plan (a step's `call` indexes it): what its sends
     * carry and its receives must find (fp.h); fps points at fp1 for a plan of one call */
    struct tutti_fp fp1;
    struct tutti_fp *fps;
    int premul;              /* the op is a pre-multiplied sum: steps reading the input scale */
    unsigned char scalar[8]; /* ... by this, one element of the op's datatype */
    int bool_input;          /* a bool reduction: a copy of the input is made 0 or 1 */
    uint32_t fps_cap;        /* allocated entries when fps is not &fp1 */
    uint64_t fps_gen;        /* plan->gen the calls' fingerprints in fps_mem were made for, or 0 */
    struct tutti_fp *fps_mem;
};

/** Prepare to run `plan` (whose op carries the buffers) as operation number `seq` of comm. */
tutti_status_t tutti__exec_init(struct tutti_exec *ex, struct tutti_fabric *fab,
                                const struct tutti_plan *plan, uint64_t seq);

/**
 * As tutti__exec_init, but keeps the arrays of an exec used before (a communicator reuses one
 * exec for all its operations, so small calls allocate nothing). ex must come from
 * tutti__exec_init or a previous reuse.
 */
tutti_status_t tutti__exec_reuse(struct tutti_exec *ex, struct tutti_fabric *fab,
                                 const struct tutti_plan *plan, uint64_t seq);

/** Free what tutti__exec_init and tutti__exec_reuse allocated. */
void tutti__exec_fini(struct tutti_exec *ex);

/**
 * Do whatever can be done now. *progress_p is set non-zero when anything moved.
 * @return TUTTI_OK when the plan is complete; TUTTI_IN_PROGRESS; an error (recorded on fab).
 */
tutti_status_t tutti__exec_advance(struct tutti_exec *ex, int *progress_p);

/**
 * For a rank that waits (the engine calls it with its periodic checks): look at the next frame
 * on every connection; one of this collective's sequence number but another fingerprint means
 * the ranks' calls differ (different roots, datatypes, counts), which the steps may never read
 * (each rank only sends: issue 36 item 4), so fail now with TUTTI_ERR_MISMATCH naming both
 * calls instead of at the timeout. Plans of calls of their own (groups, blockwise v forms) and
 * messages are not judged.
 */
tutti_status_t tutti__exec_check_foreign(struct tutti_exec *ex);

/** Describe what the plan waits for ("recv from rank 3 (host a, pid 7) ..."), for timeouts. */
void tutti__exec_describe_wait(const struct tutti_exec *ex, char *buf, size_t len);

/** Where a stalled plan stands: the first lane that still has a step with a peer. */
struct tutti_wait_point {
    int peer;      /* the rank it waits on (receives from, or sends to when the FIFO is full); -1 */
    size_t step;   /* 1-based step of that lane; 0 while connecting */
    size_t nsteps; /* steps of that lane */
    int channel;   /* -1 when unknown */
};

/** Fill *wp for ex (peer -1 when nothing is waited for, e.g. flushing). */
void tutti__exec_wait_point(const struct tutti_exec *ex, struct tutti_wait_point *wp);

/** The rank a stalled plan waits on, or -1. */
int tutti__exec_waited_rank(const struct tutti_exec *ex);

/**
 * 1 when a step not yet run still sends to `peer` on `channel`: that peer cannot be done with
 * this operation, so it will read everything sent to it before (beats go only there, so that
 * no rank closes a socket with a beat unread, which would reset the connection).
 */
int tutti__exec_owes_send(const struct tutti_exec *ex, int peer, int channel);

#endif /* TUTTI_EXEC_H */
