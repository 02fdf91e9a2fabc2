/*
 * request.h - asynchronous operations: requests, the per-communicator queue and its progress
 * thread, and the one place where operations of a communicator are serialised (blocking calls
 * take the same turn as queued ones, so everything runs in issue order).
 */
#ifndef TUTTI_REQUEST_H
#define TUTTI_REQUEST_H

#include "plan.h"
#include "tutti/coll.h"

#include <pthread.h>
#include <stdatomic.h>

struct tutti_comm;

struct tutti_request {
    struct tutti_comm *comm;
    struct tutti_op_desc op;
    /* Stream-ordered requests (stream.c): `gated` until a host function on the user's stream
     * opens it (tutti__request_open), so the operation keeps its place in issue order but moves
     * data only once the stream has staged it; a batch of a group carries its calls in `ops`;
     * `on_done` runs on the progress thread when it completes, whatever the status. */
    int gated; /* under comm->queue.lock */
    const struct tutti_op_desc *ops;
    int nops;
    void (*on_done)(void *arg, tutti_status_t st);
    void *on_done_arg;
    struct tutti_plan plan;
    uint8_t barrier_byte; /* buffer of a barrier */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int detached; /* freed by the worker when done */
    tutti_status_t status;
    struct tutti_request *next;
};

/** The plan parameters of op on comm (rank, channels, chunk, tuner settings, its memo). */
void tutti__comm_plan_params(struct tutti_comm *comm, const struct tutti_op_desc *op,
                             struct tutti_plan_params *pp);

/** tutti__plan_build with the error recorded on comm (a forced algorithm that does not apply). */
tutti_status_t tutti__plan_build_checked(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                         const struct tutti_plan_params *pp,
                                         struct tutti_plan *plan);

/** Run one operation now on the calling thread (the caller holds the communicator's turn). */
tutti_status_t tutti__exec_op(struct tutti_comm *comm, const struct tutti_op_desc *op,
                              struct tutti_plan *plan);

/** Blocking call: run in issue order after queued operations; returns the result. */
tutti_status_t tutti__run_blocking(struct tutti_comm *comm, const struct tutti_op_desc *op);

/** Queue an operation; *req_p gets the request. */
tutti_status_t tutti__submit(struct tutti_comm *comm, const struct tutti_op_desc *op,
                             tutti_request_t **req_p);

/**
 * Queue a stream-ordered request: nops calls (ops is copied when nops > 1), gated; on_done(arg,
 * status) runs on the progress thread when it completes (or fails, or is aborted), as the
 * worker's last touch of it. The caller owns *req_p: it opens it (tutti__request_open) and
 * frees it (tutti__request_release) once on_done has run.
 */
tutti_status_t tutti__submit_gated(struct tutti_comm *comm, const struct tutti_op_desc *ops,
                                   int nops, void (*on_done)(void *, tutti_status_t), void *arg,
                                   tutti_request_t **req_p);

/** Free a request (its plan, its batch of calls). */
void tutti__request_release(tutti_request_t *req);

/** Let a gated request run (safe from any thread that does not hold the queue lock). */
void tutti__request_open(tutti_request_t *req);

/** Take / give back the communicator's turn to execute (group.c runs several at once). */
void tutti__turn_take(struct tutti_comm *comm);
void tutti__turn_give(struct tutti_comm *comm);

/** Wait until the queue is empty and stop the progress thread (destroy, abort). */
void tutti__queue_drain(struct tutti_comm *comm);

#endif /* TUTTI_REQUEST_H */
