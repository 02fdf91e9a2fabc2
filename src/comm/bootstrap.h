/*
 * bootstrap.h - the out-of-band channel that builds a communicator: an all-gather of every
 * rank's peer record and "sync" rounds in which the ranks agree on a status (the worst one, and
 * who reported it). Every rank makes the same sequence of calls, even after a local failure,
 * so that all of them learn about it instead of waiting.
 *
 * Two implementations: the root server (boot_root.c; one per unique id, a thread in the
 * process that called tutti_get_unique_id, or rank 0 under a launcher; shrink.c starts one in
 * the new communicator's first rank) and the parent communicator (split.c), whose collectives
 * carry the same calls.
 */
#ifndef TUTTI_BOOTSTRAP_H
#define TUTTI_BOOTSTRAP_H

#include "exec/boot.h"
#include "net/handshake.h"
#include "net/sock.h"
#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

/** Identity of a job's bootstrap: where the root listens, the secret, the job id. */
struct tutti_boot_id {
    union tutti_sockaddr root;
    uint8_t secret[TUTTI_SECRET_BYTES];
    uint64_t job_id;
};

/**
 * The root keeps at most this many handshakes in progress (connections accepted, not yet
 * authenticated). A rank finishes its handshake within a round trip, so a full table is a flood:
 * once the oldest handshake in it has waited TUTTI_ADMIT_MIN_AGE_NS, a new connection closes it
 * and takes its place; until then new connections wait in the kernel's listen queue (the policy
 * is net/admit.h's, shared with the TCP transport). 256 keeps the root to a quarter of the
 * common 1024-descriptor limit of the process it shares with rank 0 (docs/SECURITY.md).
 */
#define TUTTI_BOOT_MAX_HANDSHAKES 256

/** After this long without the whole job (a rank without contact with the root, a root with
 * ranks missing), a warning says so, long before TUTTI_TIMEOUT gives up. */
#define TUTTI_BOOT_QUIET_WARN_NS (10ll * 1000000000ll)

/** The end of a root thread, which its starter may wait for (tutti__boot_root_watch_end). */
struct tutti_boot_root_watch;

/**
 * Start the root server for one communicator of any size in a background thread. It listens on
 * `listen` (port 0: an ephemeral port or TUTTI_PORT_RANGE) and writes the bound address into
 * *bound_p. It exits when every rank has left, or when ranks are missing TUTTI_TIMEOUT after the
 * first one arrived; after a set-up error it stays to tell the ranks that had not joined yet,
 * until each has it or that deadline has passed. With watch_p, *watch_p gets a handle on the
 * thread's end, for tutti__boot_root_watch_end.
 */
tutti_status_t tutti__boot_root_start(const union tutti_sockaddr *listen,
                                      const uint8_t secret[TUTTI_SECRET_BYTES], uint64_t job_id,
                                      union tutti_sockaddr *bound_p,
                                      struct tutti_boot_root_watch **watch_p);

/**
 * Wait until the root thread behind `w` has ended or deadline_ns (tutti__now_ns clock) has
 * passed (0: do not wait), then let go of the handle. NULL is a no-op.
 */
void tutti__boot_root_watch_end(struct tutti_boot_root_watch *w, int64_t deadline_ns);

/**
 * Serve one communicator's set-up, as tutti__boot_root_start, on `lfd`, a socket that already
 * listens (tutti_comm_shrink's, published when the old communicator was made). The thread owns
 * lfd and closes it when done; it gives up when ranks are missing timeout_ns after the first.
 */
tutti_status_t tutti__boot_root_serve(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES],
                                      uint64_t job_id, int64_t timeout_ns);

/* tutti__boot_client_open flags. */
enum {
    /** The root listened before this rank learned its address (a unique id, a shrink): a
     * refused connection means that it has closed, and is an error at once. */
    TUTTI_BOOT_ROOT_UP = 1,
};

/**
 * Join the root as `rank` of `nranks` within timeout_ns. A handshake the root closes is tried
 * again (a root flooded by strangers closes the oldest handshakes); so is a refused connection,
 * unless flags has TUTTI_BOOT_ROOT_UP (under a launcher the root may start later than some
 * ranks).
 * @return TUTTI_OK with *b_p; TUTTI_ERR_AUTH (the root refused the secret), TUTTI_ERR_REMOTE
 *         (the root has closed), TUTTI_ERR_TIMEOUT; each recorded with the root's address.
 */
tutti_status_t tutti__boot_client_open(const struct tutti_boot_id *id, int rank, int nranks,
                                       int64_t timeout_ns, int flags, struct tutti_boot **b_p);

#endif /* TUTTI_BOOTSTRAP_H */
