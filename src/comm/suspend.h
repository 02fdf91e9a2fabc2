/*
 * suspend.h - what a communicator can give back while it is idle and rebuild on demand, for the
 * NCCL shim's ncclCommSuspend(NCCL_SUSPEND_MEM) and ncclCommMemStats: the stream path's pinned
 * staging and its state, the storage of the blocking and group plans and of the executor.
 * Connections, shared memory, registrations and the CUDA IPC scratch stay: their other ends
 * belong to the peers, which would see a closed one as a dead rank.
 */
#ifndef TUTTI_COMM_SUSPEND_H
#define TUTTI_COMM_SUSPEND_H

#include <stddef.h>

struct tutti_comm;

/** What a communicator holds, in bytes. */
struct tutti_comm_mem {
    size_t cache;   /* what tutti__comm_release_caches releases: pinned staging, plans, executor */
    size_t pinned;  /* ... of which pinned host memory (the stream path's staging and its word) */
    size_t persist; /* what it keeps: shared-memory segments it made and RDMA-registered memory */
};

/**
 * Measure comm's memory, if nothing is queued or running on it (the measure holds its turn
 * briefly). Returns 0 and fills *mem; -1 when operations are queued or running: nothing is
 * measured (ask again when they are done). Not thread-safe with tutti_comm_destroy/abort.
 */
int tutti__comm_mem(struct tutti_comm *comm, struct tutti_comm_mem *mem);

/**
 * Wait until nothing is queued or running on comm and every stream batch has passed its last
 * host function, then free what tutti__comm_mem counts as cache. The next call rebuilds what it
 * needs (a stream call makes the stream state and staging blocks again, a plan its storage).
 * Frees pinned memory (cudaFreeHost), which waits for the whole device: not while another
 * communicator of the process has a stream waiting for a peer. Not thread-safe with other calls
 * on comm. Returns the bytes released.
 */
size_t tutti__comm_release_caches(struct tutti_comm *comm);

#endif /* TUTTI_COMM_SUSPEND_H */
