/*
 * connect.h - a communicator's transports and connections (the `net` part of struct
 * tutti_comm): per-communicator transport contexts, the agreed choice of transport per peer,
 * and connections made on first use.
 */
#ifndef TUTTI_CONNECT_H
#define TUTTI_CONNECT_H

#include "exec/boot.h"
#include "transports/transport.h"

struct tutti_fabric;
struct tutti_peer_info;

/**
 * Create the transport contexts and publish this rank's addresses in me->blob. Shared memory is
 * skipped with TUTTI_TRANSPORT=tcp or when it cannot be set up (then every rank is told at
 * attach time and nobody uses it). Called before the all-gather.
 */
tutti_status_t tutti__fabric_init(struct tutti_fabric *fab, const union tutti_sockaddr *root_hint,
                                  struct tutti_peer_info *me);

/** What the transports in use mean for the communicator's settings, the same on every rank
 *  (derived from which transports any pair of ranks uses); the caller stores it in fab->cfg. */
struct tutti_net_shape {
    size_t chunk_bytes; /* the smallest slot of the transports in use */
    int remote;         /* some pair of ranks uses a transport other than shared memory */
    int tcp_only;       /* every pair of ranks uses TCP */
    size_t conn_bytes;  /* the largest memory one connection (one channel) takes, over the
                           transports in use: their FIFO slots */
};

/** Add what comm's connections and transports hold now to *fp (zeroed by the caller). */
void tutti__fabric_footprint(const struct tutti_fabric *fab, struct tutti_footprint *fp);

/**
 * After the all-gather: attach the transports, agree with every rank (through `boot`) on
 * whether shared memory is in use, choose a transport per peer; *shape_p says what that means
 * for the chunk size and channels. Returns what every rank returns alike (a failure of a sync
 * every rank made); *pending_p is this rank's own result of the last steps, not yet agreed:
 * the caller adds its own checks to it and agrees on it in one sync that every rank makes.
 */
tutti_status_t tutti__fabric_attach(struct tutti_fabric *fab, struct tutti_boot *boot,
                                    struct tutti_net_shape *shape_p, tutti_status_t *pending_p);

/** The connection to `peer` on `channel`; *conn_p stays NULL while it is being set up. */
tutti_status_t tutti__fabric_conn(struct tutti_fabric *fab, int peer, int channel,
                                  struct tutti_tconn **conn_p);

/** The operation counters of `rank` if it is a local peer (shared memory), else NULL. */
const struct tutti_seq_board *tutti__fabric_seq_board(struct tutti_fabric *fab, int rank);

/** Check every transport context (abort notices, dead peers). */
tutti_status_t tutti__fabric_check(struct tutti_fabric *fab);

/** Tell every peer this rank can reach that it failed (best effort). */
void tutti__fabric_abort(struct tutti_fabric *fab, const struct tutti_abort_info *info);

/** Close every connection and free the transport contexts. */
void tutti__fabric_fini(struct tutti_fabric *fab);

#endif /* TUTTI_CONNECT_H */
