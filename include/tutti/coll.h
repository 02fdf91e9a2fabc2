/*
 * tutti/coll.h - collectives, point-to-point, group calls and the asynchronous host form.
 *
 * Argument order follows NCCL. With host buffers and a NULL stream the call blocks until this
 * rank's part is done (its buffers may be reused on return). With a CUDA stream (a
 * cudaStream_t), or with device buffers, the call is queued and returns at once, as in NCCL:
 * the stream runs it in stream order (device data staged through pinned host memory), and its
 * results are there for the stream's later work; calls inside a group must then all be on one
 * stream, and a group is one batch. Graph capture is refused (TUTTI_ERR_UNSUPPORTED). A
 * failure on the stream is the communicator's asynchronous error
 * (tutti_comm_get_async_error); the stream still goes on.
 *
 * In-place use is as in NCCL: all-reduce, broadcast and reduce with sendbuf == recvbuf;
 * reduce-scatter with recvbuf == sendbuf + rank * recvcount (in elements); all-gather with
 * sendbuf == recvbuf + rank * sendcount. Other overlaps of sendbuf and recvbuf are refused.
 *
 * Every rank must call the same collectives in the same order with matching counts, datatypes,
 * ops and roots. Mismatched sizes are detected where the bytes on the wire disagree with what the
 * schedule expects (TUTTI_ERR_REMOTE naming the peer), never by corrupting memory.
 *
 * Common return values: TUTTI_OK; TUTTI_ERR_INVALID_ARG naming the bad argument (NULL comm, NULL
 * buffer with count > 0, unknown datatype or op, root or peer out of range, bad overlap, size
 * overflow); TUTTI_ERR_UNSUPPORTED for a stream where no GPU runtime is usable (no GPU module,
 * no device, or no CUDA driver loaded in the process) or a stream being captured; the stored
 * error of a failed communicator; TUTTI_ERR_REMOTE when a peer died or reported a failure;
 * TUTTI_ERR_TIMEOUT when no progress was made for TUTTI_TIMEOUT; TUTTI_ERR_ABORTED for a call
 * in flight when tutti_comm_abort() came; TUTTI_ERR_INVALID_USAGE for a communicator that was
 * destroyed or aborted before the call (or a request already freed: tutti_test, tutti_wait and
 * tutti_request_free). Thread safety: one thread at a time per communicator.
 */
#ifndef TUTTI_COLL_H
#define TUTTI_COLL_H

#include "tutti/export.h"
#include "tutti/status.h"
#include "tutti/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** recvbuf[i] = op over ranks of sendbuf[i], on every rank; `count` elements. */
TUTTI_API tutti_status_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                         void *stream);

/** Copy root's sendbuf into every rank's recvbuf; sendbuf is read on the root only. */
TUTTI_API tutti_status_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                         void *stream);

/** recvbuf[i] on `root` = op over ranks of sendbuf[i]; recvbuf is written on the root only. */
TUTTI_API tutti_status_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                      tutti_datatype_t dt, tutti_op_t op, int root,
                                      tutti_comm_t *comm, void *stream);

/**
 * sendbuf holds nranks blocks of recvcount elements; rank r receives block r reduced over ranks.
 */
TUTTI_API tutti_status_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                              tutti_datatype_t dt, tutti_op_t op,
                                              tutti_comm_t *comm, void *stream);

/** recvbuf gets nranks blocks of sendcount elements, block r from rank r. */
TUTTI_API tutti_status_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                         tutti_datatype_t dt, tutti_comm_t *comm, void *stream);

/**
 * Block j (count elements) of sendbuf goes to rank j, landing in block r of its recvbuf.
 * In place when sendbuf == recvbuf (the result is as if sendbuf were a separate copy; tutti
 * keeps one internally); any other overlap is refused.
 */
TUTTI_API tutti_status_t tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                                        tutti_datatype_t dt, tutti_comm_t *comm, void *stream);

/*
 * Gather, scatter and the variable-size collectives, with MPI's semantics: counts and
 * displacements are in elements, arrays have one entry per rank (nranks), and a root's arrays
 * (recvcounts/displs of gatherv, sendcounts/displs of scatterv) are read at the root only.
 * Every count may be 0. The arrays are read during the call; the asynchronous forms and calls
 * inside a group or on a stream copy them, so they may change once the call returns.
 *
 * Ranks must agree: a count one rank sends must be the count its peer expects, and vectors every
 * rank passes (allgatherv's and reduce_scatterv's recvcounts) must be equal on every rank.
 * Every piece of data carries the sender's view of its block's count (and a digest of a shared
 * vector), so ranks that disagree fail with TUTTI_ERR_MISMATCH naming both views, before the
 * data lands, never with a wrong result or a hang.
 *
 * In-place forms (MPI_IN_PLACE as NCCL spells it, by address): allgatherv with sendbuf ==
 * recvbuf + displs[rank]; gather and gatherv at the root with sendbuf == recvbuf + (its block's
 * displacement); scatter and scatterv at the root with recvbuf == sendbuf + (its block's
 * displacement); reduce_scatterv with recvbuf == sendbuf + (sum of recvcounts before rank);
 * alltoallv with sendbuf == recvbuf (as MPI_IN_PLACE: sendcounts and sdispls are not read and
 * may be NULL; block j, recvcounts[j] elements at rdispls[j], goes to rank j and is replaced by
 * rank j's block; tutti keeps a copy). Receive blocks must not overlap each other
 * (TUTTI_ERR_INVALID_ARG names the two).
 */

/**
 * Rank r sends sendcounts[j] elements from sendbuf + sdispls[j] to rank j, which receives
 * them as recvcounts[r] elements at recvbuf + rdispls[r]: sendcounts[j] on rank r must equal
 * recvcounts[r] on rank j.
 */
TUTTI_API tutti_status_t tutti_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                         const size_t *sdispls, void *recvbuf,
                                         const size_t *recvcounts, const size_t *rdispls,
                                         tutti_datatype_t dt, tutti_comm_t *comm, void *stream);

/**
 * Every rank receives rank j's sendcount elements at recvbuf + displs[j]; recvcounts[j] must be
 * rank j's sendcount, and recvcounts must be the same on every rank.
 */
TUTTI_API tutti_status_t tutti_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                          const size_t *recvcounts, const size_t *displs,
                                          tutti_datatype_t dt, tutti_comm_t *comm, void *stream);

/**
 * The root receives `count` elements from every rank, rank j's at recvbuf + j * count (as
 * ncclGather: count is per rank). recvbuf is written on the root only.
 */
TUTTI_API tutti_status_t tutti_gather(const void *sendbuf, void *recvbuf, size_t count,
                                      tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                      void *stream);

/**
 * The root sends `count` elements to every rank, rank j's from sendbuf + j * count (as
 * ncclScatter: count is per rank). sendbuf is read on the root only.
 */
TUTTI_API tutti_status_t tutti_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                       tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                       void *stream);

/**
 * The root receives rank j's sendcount elements as recvcounts[j] elements at recvbuf +
 * displs[j]; recvbuf, recvcounts and displs are read on the root only.
 */
TUTTI_API tutti_status_t tutti_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                       void *stream);

/**
 * The root sends sendcounts[j] elements from sendbuf + displs[j] to rank j, which receives them
 * as its recvcount elements; sendbuf, sendcounts and displs are read on the root only.
 */
TUTTI_API tutti_status_t tutti_scatterv(const void *sendbuf, const size_t *sendcounts,
                                        const size_t *displs, void *recvbuf, size_t recvcount,
                                        tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                        void *stream);

/**
 * sendbuf holds the sum of recvcounts elements, rank r's block (recvcounts[r] elements) first at
 * the sum of the counts before r; rank r receives its block reduced over the ranks. recvcounts
 * must be the same on every rank.
 */
TUTTI_API tutti_status_t tutti_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                               const size_t *recvcounts, tutti_datatype_t dt,
                                               tutti_op_t op, tutti_comm_t *comm, void *stream);

/**
 * Send `count` elements to `peer`, matched in order with that peer's tutti_recv() from this rank.
 * Outside a group the call blocks until the data is handed to the transport; inside a group the
 * sends and receives are posted together at tutti_group_end(), so pairs cannot deadlock.
 */
TUTTI_API tutti_status_t tutti_send(const void *buf, size_t count, tutti_datatype_t dt, int peer,
                                    tutti_comm_t *comm, void *stream);

/** Receive `count` elements from `peer`; the sizes must match the peer's tutti_send(). */
TUTTI_API tutti_status_t tutti_recv(void *buf, size_t count, tutti_datatype_t dt, int peer,
                                    tutti_comm_t *comm, void *stream);

/** Return once every rank of comm has entered the barrier. */
TUTTI_API tutti_status_t tutti_barrier(tutti_comm_t *comm, void *stream);

/**
 * Start a group: collective and point-to-point calls made by this thread until the matching
 * tutti_group_end() only record their arguments (they return TUTTI_OK at once, after validation)
 * and run together at tutti_group_end(). Groups nest; only the outermost end runs them. This is
 * how one thread drives several communicators, or pairs sends with receives. Per thread.
 */
TUTTI_API tutti_status_t tutti_group_start(void);

/**
 * End a group: run everything recorded since the outermost tutti_group_start() and return when
 * all of it is done, or the first error (later operations of a failed communicator are not run).
 * Calls recorded on a communicator that has been destroyed or aborted since do not run (nor on
 * a new communicator that took its address); the other communicators' calls still run.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_USAGE without a matching start, or when calls of a
 *         communicator destroyed or aborted inside the group were dropped; errors of the
 *         operations.
 */
TUTTI_API tutti_status_t tutti_group_end(void);

/*
 * Asynchronous host form. Each call validates its arguments, queues the operation on the
 * communicator's progress thread and returns a request at once; the buffers must stay untouched
 * until the request completes. Operations of one communicator run one after the other in the
 * order they were issued, blocking and asynchronous calls mixed. So point-to-point exchanges
 * that need a send and a receive in flight at once (a ring shift: irecv from the left, isend to
 * the right on every rank) must not be split into separate requests: issue them inside a group,
 * which runs them together. Requests are not allowed inside a group.
 */

/** Asynchronous tutti_allreduce(). @param req_p out: the request (set only on success). */
TUTTI_API tutti_status_t tutti_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                          tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                          tutti_request_t **req_p);
/** Asynchronous tutti_broadcast(). */
TUTTI_API tutti_status_t tutti_ibroadcast(const void *sendbuf, void *recvbuf, size_t count,
                                          tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                          tutti_request_t **req_p);
/** Asynchronous tutti_reduce(). */
TUTTI_API tutti_status_t tutti_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                       tutti_datatype_t dt, tutti_op_t op, int root,
                                       tutti_comm_t *comm, tutti_request_t **req_p);
/** Asynchronous tutti_reduce_scatter(). */
TUTTI_API tutti_status_t tutti_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                               tutti_datatype_t dt, tutti_op_t op,
                                               tutti_comm_t *comm, tutti_request_t **req_p);
/** Asynchronous tutti_allgather(). */
TUTTI_API tutti_status_t tutti_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                          tutti_datatype_t dt, tutti_comm_t *comm,
                                          tutti_request_t **req_p);
/** Asynchronous tutti_alltoall(). */
TUTTI_API tutti_status_t tutti_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                                         tutti_datatype_t dt, tutti_comm_t *comm,
                                         tutti_request_t **req_p);
/** Asynchronous tutti_send(). */
TUTTI_API tutti_status_t tutti_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                          const size_t *sdispls, void *recvbuf,
                                          const size_t *recvcounts, const size_t *rdispls,
                                          tutti_datatype_t dt, tutti_comm_t *comm,
                                          tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                           const size_t *recvcounts, const size_t *displs,
                                           tutti_datatype_t dt, tutti_comm_t *comm,
                                           tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_igather(const void *sendbuf, void *recvbuf, size_t count,
                                       tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                       tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                                        tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                        tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                        tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_iscatterv(const void *sendbuf, const size_t *sendcounts,
                                         const size_t *displs, void *recvbuf, size_t recvcount,
                                         tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                         tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_ireduce_scatterv(const void *sendbuf, void *recvbuf,
                                                const size_t *recvcounts, tutti_datatype_t dt,
                                                tutti_op_t op, tutti_comm_t *comm,
                                                tutti_request_t **req_p);
TUTTI_API tutti_status_t tutti_isend(const void *buf, size_t count, tutti_datatype_t dt, int peer,
                                     tutti_comm_t *comm, tutti_request_t **req_p);
/** Asynchronous tutti_recv(). */
TUTTI_API tutti_status_t tutti_irecv(void *buf, size_t count, tutti_datatype_t dt, int peer,
                                     tutti_comm_t *comm, tutti_request_t **req_p);
/** Asynchronous tutti_barrier(). */
TUTTI_API tutti_status_t tutti_ibarrier(tutti_comm_t *comm, tutti_request_t **req_p);

/**
 * Has the request completed? Never blocks.
 * @param done_p out: 1 when complete (then the return value is the operation's result), else 0.
 * @return TUTTI_OK or the operation's error once done; TUTTI_ERR_INVALID_ARG for NULL arguments;
 *         TUTTI_ERR_INVALID_USAGE for a request already freed. Thread-safe.
 */
TUTTI_API tutti_status_t tutti_test(tutti_request_t *req, int *done_p);

/**
 * Block until the request completes.
 * @return the operation's result; TUTTI_ERR_INVALID_USAGE for a request already freed.
 *         Thread-safe; several threads may wait on one request, but freeing it while another
 *         thread waits on it is undefined.
 */
TUTTI_API tutti_status_t tutti_wait(tutti_request_t *req);

/**
 * Release a request. If it has not completed, the operation still runs to completion and the
 * request is freed then; its result is visible only through tutti_comm_get_async_error().
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL; TUTTI_ERR_INVALID_USAGE for a request freed
 *         already (a second free, like a tutti_test or tutti_wait after the free, touches
 *         nothing). Do not use req afterwards.
 */
TUTTI_API tutti_status_t tutti_request_free(tutti_request_t *req);

/**
 * Make a pre-multiplied sum on comm (NCCL's ncclRedOpCreatePreMulSum): a reduction that sums
 * scalar * x over the ranks, each rank's input multiplied by its own scalar (ranks may pass
 * different ones) and rounded to dt before the sum; otherwise as TUTTI_SUM. Calls that use it
 * must have datatype dt (a floating-point or integer type, not TUTTI_BOOL).
 * @param scalar    TUTTI_SCALAR_HOST_IMMEDIATE: the value, read now; TUTTI_SCALAR_DEVICE: where
 *                  each call reads it when it runs (device memory for calls on device buffers or
 *                  a stream, host memory otherwise), which must stay valid while the op lives.
 * @param op_p      out: the op, valid on comm until tutti_op_destroy.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for NULL arguments, an unknown or boolean datatype or
 *         residence; TUTTI_ERR_NO_MEMORY. Thread safety: as collectives on comm.
 */
TUTTI_API tutti_status_t tutti_op_create_premul_sum(const void *scalar, tutti_datatype_t dt,
                                                    tutti_scalar_residence_t residence,
                                                    tutti_comm_t *comm, tutti_op_t *op_p);

/**
 * Release an op made by tutti_op_create_premul_sum. Calls already issued with it (queued, on a
 * stream, in an open group) keep the scalar they were given.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG for an op that is not one of comm's.
 */
TUTTI_API tutti_status_t tutti_op_destroy(tutti_op_t op, tutti_comm_t *comm);

/** Size in bytes of one element of dt, or 0 for an unknown datatype. Thread-safe. */
TUTTI_API size_t tutti_datatype_size(tutti_datatype_t dt);

/** Name of a datatype ("float32"), or "unknown". Thread-safe. */
TUTTI_API const char *tutti_datatype_name(tutti_datatype_t dt);

/** Name of an op ("sum"; "premul_sum" for one made on a communicator), or "unknown".
 *  Thread-safe. */
TUTTI_API const char *tutti_op_name(tutti_op_t op);

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_COLL_H */
