/*
 * request.h - asynchronous operations: requests, the per-communicator queue and its progress
 * thread. Blocking calls take the same turn (turn.h) as queued ones, so everything runs in
 * issue order; both run through run.h.
 */
#ifndef TUTTI_REQUEST_H
#define TUTTI_REQUEST_H

#include "exec/plan.h"
#include "tutti/coll.h"

#include <pthread.h>
#include <stdatomic.h>

struct tutti_runner;

struct tutti_request {
    struct tutti_runner *runner;
    struct tutti_op_desc op;
    /* Stream-ordered requests (stream.c): `gated` until a host function on the user's stream
     * opens it (tutti__request_open), so the operation keeps its place in issue order but moves
     * data only once the stream has staged it; a batch of a group carries its calls in `ops`;
     * `on_done` runs on the progress thread when it completes, whatever the status. */
    int gated; /* under the runner's queue.lock */
    const struct tutti_op_desc *ops;
    int nops;
    void (*on_done)(void *arg, tutti_status_t st);
    void *on_done_arg;
    struct tutti_plan plan;
    struct tutti_vcounts *owned_v; /* op.v's copy, for a call queued by tutti__submit */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int detached; /* freed by the worker when done */
    tutti_status_t status;
    struct tutti_request *next;
};

/** Blocking call: run in issue order after queued operations; returns the result. */
tutti_status_t tutti__run_blocking(struct tutti_runner *runner, const struct tutti_op_desc *op);

/** A call the library makes for itself (service.c): number its fingerprint, run it blocking. */
tutti_status_t tutti__run_service(struct tutti_runner *runner, struct tutti_op_desc *op);

/** Queue an operation; *req_p gets the request. */
tutti_status_t tutti__submit(struct tutti_runner *runner, const struct tutti_op_desc *op,
                             tutti_request_t **req_p);

/**
 * Queue a stream-ordered request: nops calls (ops is copied when nops > 1), gated; on_done(arg,
 * status) runs on the progress thread when it completes (or fails, or is aborted), as the
 * worker's last touch of it. The caller owns *req_p: it opens it (tutti__request_open) and
 * frees it (tutti__request_release) once on_done has run.
 */
tutti_status_t tutti__submit_gated(struct tutti_runner *runner, const struct tutti_op_desc *ops,
                                   int nops, void (*on_done)(void *, tutti_status_t), void *arg,
                                   tutti_request_t **req_p);

/** Free a request (its plan, its batch of calls). */
void tutti__request_release(tutti_request_t *req);

/** Let a gated request run (safe from any thread that does not hold the queue lock). */
void tutti__request_open(tutti_request_t *req);

/** Wait until the queue is empty and stop the progress thread (destroy, abort). */
void tutti__queue_drain(struct tutti_runner *runner);

#endif /* TUTTI_REQUEST_H */
