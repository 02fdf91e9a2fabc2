/*
 * fabric.h - what exec/ owns of a communicator (struct tutti_fabric, issue 37): its ranks and
 * identity, the peer table, the settings the executor runs by, the transports and connections,
 * the failure state, the fingerprints' counters, the executor and the error buffer. The
 * communicator (comm/comm.h) holds one; every exec/ function takes the fabric, never the
 * communicator.
 */
#ifndef TUTTI_EXEC_FABRIC_H
#define TUTTI_EXEC_FABRIC_H

#include "base/check.h"
#include "base/coll_id.h"
#include "exec/exec.h"
#include "exec/fp.h"
#include "net/handshake.h"
#include "net/sock.h"
#include "transports/transport.h"
#include "tutti/comm.h"
#include "tutti/types.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tutti_peer_info;
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
    _Atomic int status;   /* tutti_status_t: TUTTI_OK or the error that failed the comm */
    _Atomic int aborting; /* tutti_comm_abort() was called */
    _Atomic int inflight; /* threads inside an operation on this comm */
    int wakefd;           /* eventfd: written to interrupt a poll() in the engine */
    /* Written only by the turn's holder (run/turn.c orders them), read anywhere for messages:
     * plain loads and release stores, no locked instruction on a call's path. */
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

struct tutti_fabric {
    int rank;
    int nranks;
    uint64_t comm_id;
    uint8_t secret[TUTTI_SECRET_BYTES];
    union tutti_sockaddr root_hint; /* toward the other ranks: children listen there too */
    struct tutti_peer_info *peers;  /* nranks records (exec/peer.h) */
    int nlocal;                     /* ranks on this host, this one included */
    struct tutti_topo_rank *topo;   /* topology/view.c: every rank's view, nranks records */
    struct tutti_layout *layout;    /* topology/layout.h: hosts and the ring the schedules use */
    struct tutti_comm_cfg cfg;
    struct tutti_errbuf err; /* the last error message (check.h) */
    struct tutti_comm_state state;
    struct tutti_comm_net net;
    struct tutti_comm_fp fp; /* fp.c: fingerprint sequence numbers and recent collectives */
    struct tutti_exec exec;  /* the executor of the operation holding the turn */
    /* A look the engine takes while ex waits: whether a peer took its call (or one of its
     * receives' messages) elsewhere (win/: its note, its box), TUTTI_OK or the error it
     * recorded. NULL: none. Set under the turn by the layer that owns arg. */
    tutti_status_t (*watch)(void *arg, const struct tutti_exec *ex);
    void *watch_arg;
};

/** fab's error buffer for tutti__set_error, or NULL when fab is NULL (check.h). */
static inline struct tutti_errbuf *tutti__fabric_err(struct tutti_fabric *fab)
{
    return fab != NULL ? &fab->err : NULL;
}

/** Number the next operation (posted) and publish it to local peers. */
static inline uint64_t tutti__fabric_seq_post(struct tutti_fabric *fab)
{
    uint64_t seq = atomic_load_explicit(&fab->state.posted, memory_order_relaxed) + 1;
    atomic_store_explicit(&fab->state.posted, seq, memory_order_release);
    if (fab->net.board != NULL) {
        atomic_store_explicit(&fab->net.board->posted, seq, memory_order_relaxed);
    }
    return seq;
}

/** Operation seq completed. */
static inline void tutti__fabric_seq_done(struct tutti_fabric *fab, uint64_t seq)
{
    atomic_store_explicit(&fab->state.completed, seq, memory_order_release);
    if (fab->net.board != NULL) {
        atomic_store_explicit(&fab->net.board->completed, seq, memory_order_relaxed);
    }
}

#endif /* TUTTI_EXEC_FABRIC_H */
