/*
 * tutti/mem.h - host symmetric memory: buffers every local rank of a communicator can map, and
 * windows that register them with a communicator (as ncclMemAlloc and ncclCommWindowRegister do
 * for GPU memory).
 *
 * tutti_mem_alloc gives page-aligned host memory backed by an anonymous memory file (memfd):
 * nothing is named in /dev/shm, and the memory goes when the last process that maps it does.
 * tutti_comm_window_register, called by every rank of a communicator in the same order, lets
 * the other ranks on this host map each rank's buffer. They open it through /proc/<pid>/fd, which
 * the kernel allows only to processes that may read this one's memory (the same user, see
 * docs/SECURITY.md); where that fails (different users, pid namespaces, other hosts) the window
 * is still registered, on every rank alike, but not shared, and calls on it take the ordinary
 * path.
 *
 * An all-reduce whose send and receive buffers both lie in shared windows of its communicator, on
 * every rank, reads the peers' inputs and writes the peers' outputs in place: each rank reduces
 * its 1/n of the elements from every rank's input and stores the result into every rank's output,
 * with no intermediate copy. Reduce, reduce-scatter, broadcast, all-gather and all-to-all (not
 * in place) on windows do the same with their own shares: each byte is read where it lies and
 * written once where it goes. The ranks agree on that path per call through a control page each
 * (when one rank's buffers are not in windows, all take the ordinary path), and they compare
 * their calls' fingerprints before any byte moves (TUTTI_ERR_MISMATCH on every rank when they
 * differ). A rank that does not come within TUTTI_TIMEOUT fails the call with TUTTI_ERR_TIMEOUT.
 * A collective of at most 1 KiB from each rank (512 bytes for all-reduce and reduce-scatter)
 * travels in the control pages themselves, windows or not (the carried path,
 * docs/design/windows.md), and does not count as a call on the window.
 */
#ifndef TUTTI_MEM_H
#define TUTTI_MEM_H

#include "tutti/comm.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A window: a buffer registered with a communicator by tutti_comm_window_register. */
typedef struct tutti_window tutti_window_t;

/**
 * Allocate `bytes` of host memory that local peers can map (page-aligned, zero-filled).
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for a NULL ptr_p or 0 bytes; TUTTI_ERR_NO_MEMORY
 * (the reason in tutti_last_error(NULL)).
 */
TUTTI_API tutti_status_t tutti_mem_alloc(void **ptr_p, size_t bytes);

/**
 * Free memory from tutti_mem_alloc (NULL: nothing). Peers that still map it keep their pages
 * until they deregister. @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for a pointer that is not one
 * tutti_mem_alloc returned; TUTTI_ERR_INVALID_USAGE while a window still registers it.
 */
TUTTI_API tutti_status_t tutti_mem_free(void *ptr);

/**
 * Register [buf, buf + bytes) as a window of comm. Collective: every rank calls it, in the same
 * order among its other calls, each with its own buffer (sizes may differ). The buffer must lie
 * in one tutti_mem_alloc block to be shared; other memory is registered too but never shared.
 * @param win_p out: the window, for tutti_comm_window_deregister.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL arguments or 0 bytes; the communicator's
 * error when the exchange with the peers fails.
 */
TUTTI_API tutti_status_t tutti_comm_window_register(tutti_comm_t *comm, void *buf, size_t bytes,
                                                    tutti_window_t **win_p);

/**
 * Undo tutti_comm_window_register on this rank: calls made afterwards with this buffer take the
 * ordinary path. Local (no peer takes part); no call may use the window meanwhile.
 * tutti_comm_destroy undoes the windows left.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for a window that is not comm's.
 */
TUTTI_API tutti_status_t tutti_comm_window_deregister(tutti_comm_t *comm, tutti_window_t *win);

/**
 * What became of win: whether it is shared (every rank of comm maps every other rank's buffer)
 * and how many collectives ran on it in place (those whose output lay in it, or whose input did
 * for a reduce's non-root; carried ones not counted). Either out pointer may be NULL.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for a NULL window.
 */
TUTTI_API tutti_status_t tutti_window_query(const tutti_window_t *win, int *shared_p,
                                            uint64_t *calls_p);

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_MEM_H */
