/*
 * comm.h - the body of tutti_comm_t (private). The struct is made of sub-structs, each owned by
 * one module; other modules read them but change them only through that module's functions.
 */
#ifndef TUTTI_COMM_INTERNAL_H
#define TUTTI_COMM_INTERNAL_H

#include "tutti/comm.h"
#include "check.h"
#include "transports/transport.h"
#include "net/handshake.h"
#include "net/sock.h"
#include "comm/peer.h"
#include "exec/plan.h"
#include "exec/exec.h"
#include "exec/fp.h"
#include "coll/coll.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct tutti_request;
struct tutti_plan;
struct tutti_topo_rank;
struct tutti_layout;

/* Settings fixed at creation, written only by comm/ (init.c: from the environment, the params,
 * what tutti__fabric_attach says of the transports in use and the ranks' CPU load; split.c: the
 * parent's timeout); every other layer reads them. */
struct tutti_comm_cfg {
    int64_t timeout_ns;
    int nchannels;      /* channels a ring collective is split over */
    int force_tcp;      /* TUTTI_TRANSPORT=tcp */
    int force_ib;       /* TUTTI_TRANSPORT=ib */
    size_t chunk_bytes; /* largest step: the smallest slot of the transports in use */
    int oversubscribed; /* more ranks on this machine than CPUs: sleep sooner when waiting */
    double cpu_load;    /* ranks per CPU on the most crowded machine (the same on every rank) */
    size_t direct_max;  /* TUTTI_DIRECT_MAX: largest message for the direct algorithms */
    size_t mem_budget;  /* TUTTI_MEM_BUDGET: connection memory per rank (0: no limit) */
    size_t conn_bytes;  /* memory one connection of one channel takes (the largest in use) */
    int budget_strict;  /* TUTTI_MEM_BUDGET was set, not derived */
    size_t nt_min; /* TUTTI_STREAM_MIN: results of at least this many bytes: non-temporal stores */
    int forced[TUTTI_COLL_COUNT]; /* TUTTI_ALGO: catalog index per collective, or -1 */
    int tuner;                    /* TUTTI_TUNER=model */
};

/* fail.c: health of the communicator. status is sticky once an error is stored. */
struct tutti_comm_state {
    _Atomic int status;         /* tutti_status_t: TUTTI_OK or the error that failed the comm */
    _Atomic int aborting;       /* tutti_comm_abort() was called */
    _Atomic int inflight;       /* threads inside an operation on this comm */
    int wakefd;                 /* eventfd: written to interrupt a poll() in the engine */
    _Atomic uint64_t posted;    /* sequence number of the last operation started */
    _Atomic uint64_t completed; /* ... and of the last one finished */
    _Atomic int64_t checked;    /* when the engine last ran the periodic checks (transports
                                   answer strangers there): kept across operations, so that
                                   many short ones still check every millisecond */
};

/* connect.c: transports and connections. */
struct tutti_comm_net {
    void *tctx[TUTTI_TRANSPORT_COUNT]; /* NULL when not in use */
    const struct tutti_transport_ops *ops[TUTTI_TRANSPORT_COUNT];
    uint8_t *peer_transport;    /* per rank: the transport id that reaches it */
    struct tutti_tconn **conns; /* [peer * TUTTI_MAX_CHANNELS + channel], NULL until connected */
    struct tutti_doorbell *doorbell; /* this rank's, when shared memory is in use */
    struct tutti_seq_board *board;   /* this rank's counters for local peers (shm), or NULL */
    struct tutti_tctx_args targs;    /* what the transport contexts were given; lives as long */
};

/* request.c: the asynchronous queue and its progress thread. */
struct tutti_stream_state;
struct tutti_ipc_state;
struct tutti_premul_ops;

struct tutti_comm_queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct tutti_request *head, *tail;
    pthread_t worker;
    int worker_started;
    int busy; /* the worker is executing a request */
    int stop;
};

struct tutti_comm {
    int rank;
    int nranks;
    uint64_t serial; /* comm_live.c: unique in the process, so a reused address is not this comm */
    uint64_t comm_id;
    uint8_t secret[TUTTI_SECRET_BYTES];
    uint32_t nsplits;  /* children made by tutti_comm_split, to derive their ids */
    uint32_t nshrinks; /* ... and by tutti_comm_shrink */
    int shrink_fd;     /* shrink.c: listens for a shrink's bootstrap (when this rank leads it) */
    struct tutti_peer_info *peers;  /* nranks records */
    int nlocal;                     /* ranks on this host, this one included */
    struct tutti_topo_rank *topo;   /* topology/view.c: every rank's view, nranks records */
    struct tutti_layout *layout;    /* topology/layout.h: hosts and the ring the schedules use */
    struct tutti_reg *regs;         /* register.c: memory registered with tutti_comm_register */
    union tutti_sockaddr root_hint; /* toward the other ranks: children listen there too */

    struct tutti_comm_cfg cfg;
    struct tutti_errbuf err; /* its last error message (check.h) */
    struct tutti_comm_state state;
    struct tutti_comm_net net;
    struct tutti_comm_fp fp; /* fp.c: fingerprint sequence numbers and recent collectives */
    struct tutti_comm_queue queue;
    struct tutti_stream_state *stream; /* stream.c: calls on CUDA streams; NULL until the first */
    struct tutti_ipc_state *ipc;       /* ipc.c: the CUDA IPC all-reduce; NULL until the first */
    struct tutti_premul_ops *premul;   /* comm/premul.c: its pre-multiplied sums, or NULL */
    struct tutti_plan plan;            /* storage for blocking calls, under the turn */
    struct tutti_plan group_plan;      /* storage for a group's segments, under the turn */
    struct tutti_tune_memo tune;       /* coll/tuned.c: the cost model's answers, under the turn */
    struct tutti_exec exec;            /* the executor of the operation holding the turn */
};

/** Number the next operation of comm (posted) and publish it to local peers. */
static inline uint64_t tutti__comm_seq_post(struct tutti_comm *comm)
{
    uint64_t seq = atomic_fetch_add(&comm->state.posted, 1) + 1;
    if (comm->net.board != NULL) {
        atomic_store_explicit(&comm->net.board->posted, seq, memory_order_relaxed);
    }
    return seq;
}

/** Operation seq of comm completed. */
static inline void tutti__comm_seq_done(struct tutti_comm *comm, uint64_t seq)
{
    atomic_store(&comm->state.completed, seq);
    if (comm->net.board != NULL) {
        atomic_store_explicit(&comm->net.board->completed, seq, memory_order_relaxed);
    }
}

/**
 * Make a new communicator live (comm_live.c): from now on calls may use it. Gives it its serial.
 * @return TUTTI_OK; TUTTI_ERR_NO_MEMORY (logged).
 */
tutti_status_t tutti__comm_publish(struct tutti_comm *comm);

/**
 * Enter comm for a call (comm_live.c): it must be live, and when serial is not 0 the communicator
 * that had that serial (not a new one at the same address); then this thread counts in
 * state.inflight, so that tutti_comm_abort from another thread waits for it to leave. Both under
 * the live set's lock, so an abort either refuses the call or waits for it.
 * @return 0; -1 when comm is not a live communicator (nothing is touched or recorded).
 */
int tutti__comm_enter(const struct tutti_comm *comm, uint64_t serial);

/** Leave what tutti__comm_enter entered. */
void tutti__comm_leave(const struct tutti_comm *comm);

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
    return comm != NULL ? &comm->err : NULL;
}

#endif /* TUTTI_COMM_INTERNAL_H */
