/*
 * comm.h - the body of tutti_comm_t (private). The struct is made of sub-structs, each owned by
 * one module; other modules read them but change them only through that module's functions.
 */
#ifndef TUTTI_COMM_INTERNAL_H
#define TUTTI_COMM_INTERNAL_H

#include "tutti/comm.h"
#include "base/check.h"
#include "transports/transport.h"
#include "net/handshake.h"
#include "net/sock.h"
#include "exec/peer.h"
#include "exec/plan.h"
#include "exec/exec.h"
#include "exec/fp.h"
#include "exec/fabric.h"
#include "run/runner.h"
#include "gpu/gpu.h"
#include "coll/coll.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct tutti_request;
struct tutti_plan;
struct tutti_topo_rank;
struct tutti_layout;

struct tutti_premul_ops;

struct tutti_comm {
    struct tutti_fabric fab; /* exec/fabric.h: ranks, settings, connections, failure state */
    uint64_t serial;  /* comm_live.c: unique in the process, so a reused address is not this comm */
    uint32_t nsplits; /* children made by tutti_comm_split, to derive their ids */
    uint32_t nshrinks; /* ... and by tutti_comm_shrink */
    int shrink_fd;     /* shrink.c: listens for a shrink's bootstrap (when this rank leads it) */
    struct tutti_reg *regs;  /* register.c: memory registered with tutti_comm_register */
    struct tutti_runner run; /* run/runner.h: the turn, the queue, plan storage, the memo */
    struct tutti_gpu gpu;    /* gpu/gpu.h: calls on CUDA streams and the CUDA IPC all-reduce */
    struct tutti_premul_ops *premul; /* comm/premul.c: its pre-multiplied sums, or NULL */
};

struct tutti_boot;

/**
 * Make a new communicator live (comm_live.c): from now on calls may use it. Gives it its serial.
 * @return TUTTI_OK; TUTTI_ERR_NO_MEMORY (logged).
 */
tutti_status_t tutti__comm_publish(struct tutti_comm *comm);

/** Give a communicator whose ranks all live on this host (at most TUTTI_WIN_CTL_RANKS) its
 * control pages, so that its collectives can take the carried path (window.c). Collective over
 * the bootstrap that made it (no collective number used). */
tutti_status_t tutti__comm_notes_setup(struct tutti_comm *comm, struct tutti_boot *boot);

/**
 * Enter comm for a call (comm_live.c): it must be live, and when serial is not 0 the communicator
 * that had that serial (not a new one at the same address); then this thread counts as inside
 * comm (tutti__comm_busy), so that tutti_comm_abort or destroy from another thread waits for it
 * to leave. Either under the live set's lock (counted in state.inflight), or, for a comm this
 * thread found live before when nothing has left the set since, by the thread's hold
 * (base/hold.h); either way an abort either refuses the call or waits for it.
 * @return 0; -1 when comm is not a live communicator (nothing is touched or recorded).
 */
int tutti__comm_enter(const struct tutti_comm *comm, uint64_t serial);

/** Leave what tutti__comm_enter entered (on the thread that entered it). */
void tutti__comm_leave(const struct tutti_comm *comm);

/** How many threads are inside comm (callers and its progress thread; 0: none). Read by a
 * thread that took comm out of the live set, or stops it, to wait for them. */
int tutti__comm_busy(const struct tutti_comm *comm);

/** The error for a call on a handle that is not a live communicator: TUTTI_ERR_INVALID_USAGE,
 * logged and recorded for the thread, naming the call and the handle. */
tutti_status_t tutti__comm_not_live(const void *comm, const char *what);

/**
 * Stop comm without freeing it (comm.c): every operation in flight or queued fails with
 * TUTTI_ERR_ABORTED (this waits until they have left), the communicator is failed with the
 * message "rank R <why>" unless it had failed already, and the peers are told. Later calls
 * return the stored error; destroy, abort and shrink still work. The first half of
 * tutti_comm_abort(); the NCCL shim's ncclCommRevoke and ncclCommAbort use it. Thread-safe
 * with calls in flight on comm. Returns the stored status.
 */
tutti_status_t tutti__comm_stop(struct tutti_comm *comm, const char *why);

/** Free a communicator whose operations are over (init.c). */
void tutti__comm_free(struct tutti_comm *comm);

/** comm's error buffer for tutti__set_error, or NULL when comm is NULL (check.h). */
static inline struct tutti_errbuf *tutti__comm_err(struct tutti_comm *comm)
{
    return comm != NULL ? &comm->fab.err : NULL;
}

#endif /* TUTTI_COMM_INTERNAL_H */
