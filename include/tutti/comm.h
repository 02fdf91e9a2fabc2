/*
 * tutti/comm.h - creating, querying and tearing down communicators.
 *
 * Thread safety, in general: distinct communicators may be used from distinct threads freely.
 * One communicator is driven by one thread at a time for collectives (as in NCCL and MPI); the
 * query functions, tutti_comm_get_async_error() and tutti_comm_abort() may be called from any
 * thread at any time.
 *
 * Handles that are gone: tutti keeps the set of communicators it made and has not yet destroyed
 * or aborted, and every call looks its handle up there before reading it. So a second destroy,
 * an abort after a destroy (or the reverse), and any call on a destroyed or aborted handle
 * return TUTTI_ERR_INVALID_USAGE with a message naming the call and the handle, and touch
 * nothing; tutti_last_error() of such a handle returns a message that says so. Still
 * undefined: a handle whose memory has since been reused for a new communicator (it is that new
 * communicator then; calls recorded in an open group are not run on it, see tutti_group_end),
 * and a pointer into a communicator's memory that is not the handle itself. tutti_comm_destroy
 * while another thread is inside a call on the same communicator waits for that call to return
 * (it completes, fails, or times out at TUTTI_TIMEOUT) and refuses calls that come after; to
 * end such a call at once, use tutti_comm_abort.
 */
#ifndef TUTTI_COMM_H
#define TUTTI_COMM_H

#include "tutti/export.h"
#include "tutti/status.h"
#include "tutti/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Detailed message of the last error.
 * @param comm  a communicator: its last error; NULL: the last error of the calling thread (set by
 *              every failing call, including those that fail before a communicator exists).
 * @return a string owned by tutti, valid until the next failing call on the same comm/thread;
 *         "" when nothing failed. Never NULL. Thread-safe.
 */
TUTTI_API const char *tutti_last_error(const tutti_comm_t *comm);

/**
 * Make a new unique id and start the bootstrap root in the calling process: a background thread
 * that listens on TUTTI_SOCKET_IFNAME (or the first non-loopback interface that is up, else
 * loopback), inside TUTTI_PORT_RANGE, and serves the one communicator built from this id. The
 * thread exits when that communicator is set up, or TUTTI_TIMEOUT after the first rank arrived.
 * @param id_p  out: the id, to be passed to every rank's tutti_comm_init_rank().
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG if id_p is NULL or a TUTTI_* variable is malformed or
 *         out of its range (the message names each, with its value and range); TUTTI_ERR_SYSTEM
 *         if no socket could be bound. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_get_unique_id(tutti_unique_id_t *id_p);

/** Bits of tutti_comm_params_t.field_mask: which optional fields are set. */
enum {
    TUTTI_COMM_PARAM_TIMEOUT = 1u << 0,   /**< timeout_ms overrides TUTTI_TIMEOUT */
    TUTTI_COMM_PARAM_NCHANNELS = 1u << 1, /**< nchannels overrides TUTTI_NCHANNELS */
};

/** Optional per-communicator settings. Fields not named in field_mask are ignored. */
typedef struct {
    uint64_t field_mask; /**< TUTTI_COMM_PARAM_* bits; an unknown bit is TUTTI_ERR_INVALID_ARG */
    int timeout_ms;      /**< longest wait without progress before TUTTI_ERR_TIMEOUT (> 0) */
    int nchannels;       /**< parallel rings (1..TUTTI_MAX_CHANNELS) */
} tutti_comm_params_t;

/** Most channels a communicator may use. */
#define TUTTI_MAX_CHANNELS 16

/**
 * Create the communicator of rank `rank` out of `nranks`. Collective: every rank calls it with the
 * same id and nranks; it returns when all have joined, or fails on every rank. Connections are
 * authenticated with the id's secret; strangers are refused and logged.
 * @param comm_p  out: the new communicator (set only on success).
 * @param nranks  number of ranks, >= 1.
 * @param id      the unique id from tutti_get_unique_id().
 * @param rank    this rank, 0 <= rank < nranks, unique.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for bad arguments, an id that is not a tutti id or a
 *         TUTTI_* variable that is malformed or out of its range (the message names which);
 * TUTTI_ERR_REMOTE when another rank failed or disagreed on nranks; TUTTI_ERR_TIMEOUT when ranks
 * were missing after TUTTI_TIMEOUT (the message names them); TUTTI_ERR_AUTH when the root refused
 * our secret; TUTTI_ERR_SYSTEM on socket or memory mapping failures. Thread-safe (distinct calls
 * build distinct communicators).
 */
TUTTI_API tutti_status_t tutti_comm_init_rank(tutti_comm_t **comm_p, int nranks,
                                              const tutti_unique_id_t *id, int rank);

/**
 * tutti_comm_init_rank() with optional settings.
 * @param params  NULL, or settings whose field_mask names the fields to use.
 * @return as tutti_comm_init_rank(); TUTTI_ERR_INVALID_ARG for an unknown field bit or value.
 */
TUTTI_API tutti_status_t tutti_comm_init_rank_params(tutti_comm_t **comm_p, int nranks,
                                                     const tutti_unique_id_t *id, int rank,
                                                     const tutti_comm_params_t *params);

/**
 * Create the world communicator from the launcher's environment. Understood, first match wins:
 * tutti's own (TUTTI_RANK, TUTTI_NRANKS, TUTTI_ROOT=host:port), torchrun's (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT: tutti's root listens on MASTER_PORT + 1 because torchrun's own store
 * holds MASTER_PORT), Slurm's (SLURM_PROCID, SLURM_NTASKS) and Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE). Rank 0 hosts the bootstrap root. The secret comes
 * from TUTTI_SECRET (32 hex digits) or the file named by TUTTI_SECRET_FILE (a regular file,
 * opened without blocking, holding the 32 hex digits and white space); without either, a key
 * derived from public job identifiers is used and a warning says so. See README "Launching".
 * @param comm_p  out: the new communicator.
 * @return as tutti_comm_init_rank(); TUTTI_ERR_INVALID_ARG when the environment names no rank,
 *         size or root (the message lists what is missing), when a variable is malformed or out
 *         of its range (README "Environment variables"; the message names it), or when
 *         TUTTI_SECRET_FILE cannot be opened, is not a regular file (a directory, a FIFO,
 *         /dev/zero), is empty or holds anything but the secret: an unusable secret file never
 *         means "no secret". Every rank that reads the same environment fails the same way, at
 *         once. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_init_env(tutti_comm_t **comm_p);

/**
 * Finish outstanding operations, then free the communicator. Not collective in the sense of
 * waiting for other ranks, but peers still using it will see the connection close.
 * @return TUTTI_OK; the stored error of a failed communicator (resources are freed anyway);
 *         TUTTI_ERR_INVALID_ARG for NULL; TUTTI_ERR_INVALID_USAGE when comm was destroyed or
 *         aborted already. Thread-safe: calls in progress on other threads finish first, later
 *         ones are refused (TUTTI_ERR_INVALID_USAGE). Destroying a
 *         communicator whose calls are recorded in an open group is allowed: tutti_group_end
 *         then runs the group's other calls and returns TUTTI_ERR_INVALID_USAGE for these.
 */
TUTTI_API tutti_status_t tutti_comm_destroy(tutti_comm_t *comm);

/**
 * Abort: every call in flight on this communicator, in any thread, returns TUTTI_ERR_ABORTED;
 * peers are told and fail their own operations with TUTTI_ERR_REMOTE naming this rank; then the
 * communicator is freed. Call it from any thread, including while another thread is blocked in a
 * collective on the same comm; do not use the comm afterwards (a call on it returns
 * TUTTI_ERR_INVALID_USAGE).
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL; TUTTI_ERR_INVALID_USAGE when comm was
 *         destroyed or aborted already. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_abort(tutti_comm_t *comm);

/**
 * This process's rank in comm.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL arguments. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_rank(const tutti_comm_t *comm, int *rank_p);

/**
 * Number of ranks in comm.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL arguments. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_size(const tutti_comm_t *comm, int *size_p);

/**
 * Split comm into disjoint communicators, one per color, ranks ordered by (key, old rank), as
 * MPI_Comm_split / ncclCommSplit. Collective over every rank of comm.
 * @param color     >= 0, or TUTTI_SPLIT_NOCOLOR to join none (then *newcomm_p is set to NULL).
 * @param key       ordering key within the color.
 * @param newcomm_p out: the new communicator (inherits comm's settings).
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for a color < -1 or NULL arguments; the errors of a
 *         collective on comm. Same thread rules as collectives.
 */
TUTTI_API tutti_status_t tutti_comm_split(tutti_comm_t *comm, int color, int key,
                                          tutti_comm_t **newcomm_p);

/**
 * Build a smaller communicator out of comm's surviving ranks, as MPI_Comm_shrink /
 * ncclCommShrink: after comm failed (a rank died or hung), or to drop ranks from a healthy one.
 * Collective over the ranks that stay; it does not use comm's connections, so comm may have
 * failed. The ranks that stay keep their relative order. comm stays valid and must still be
 * destroyed (or aborted).
 * @param exclude   ranks of comm to leave out (never the caller); every staying rank must pass
 *                  the same set. NULL: leave out every rank whose process has ended (its shrink
 *                  socket, opened with comm, refuses connections); a rank that is alive but
 *                  stuck is not detected this way: name it in exclude.
 * @param nexclude  entries in exclude (0 when exclude is NULL).
 * @param newcomm_p out: the new communicator (comm's timeout; other settings from the
 *                  environment).
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL arguments or an exclude entry that is out of
 *         range or the caller; TUTTI_ERR_TIMEOUT when a rank that should stay did not join within
 *         comm's timeout (the message names it); TUTTI_ERR_AUTH or TUTTI_ERR_REMOTE when the
 *         staying ranks disagree on who stays. Thread-safe with operations on other
 *         communicators; not with a collective on comm in another thread (abort that first).
 */
TUTTI_API tutti_status_t tutti_comm_shrink(tutti_comm_t *comm, const int *exclude, int nexclude,
                                           tutti_comm_t **newcomm_p);

/**
 * Error state of comm, without blocking: TUTTI_OK while healthy, else the error that failed it
 * (TUTTI_ERR_REMOTE, TUTTI_ERR_TIMEOUT, ...), also when the failure happened in an asynchronous
 * operation nobody has waited for yet. Details in tutti_last_error(comm).
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL arguments. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_get_async_error(tutti_comm_t *comm, tutti_status_t *st_p);

/**
 * Register [buf, buf + bytes) of host memory with comm's network transports, as
 * ncclCommRegister: over RDMA verbs, collectives then send from it without copying it into
 * tutti's own buffers (the pages are pinned and registered with the NIC). Optional: every call
 * works on memory that is not registered. The memory must stay allocated, at the same address,
 * until tutti_comm_deregister or tutti_comm_destroy (which undoes what is left).
 * @param handle_p out: the registration, for tutti_comm_deregister.
 * @return TUTTI_OK (also when no transport of comm needs it: nothing is pinned then);
 *         TUTTI_ERR_INVALID_ARG for NULL arguments or 0 bytes; TUTTI_ERR_SYSTEM when the NIC
 *         refuses (the message says why, e.g. the locked-memory limit); comm's stored error.
 *         Waits for comm's operations in flight; thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_register(tutti_comm_t *comm, void *buf, size_t bytes,
                                             void **handle_p);

/**
 * Undo tutti_comm_register. No operation may still use the memory.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL or a handle that is not comm's. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_comm_deregister(tutti_comm_t *comm, void *handle);

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_COMM_H */
