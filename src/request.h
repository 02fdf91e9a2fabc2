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
    struct tutti_plan plan;
    uint8_t barrier_byte; /* buffer of a barrier */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int detached; /* freed by the worker when done */
    tutti_status_t status;
    struct tutti_request *next;
};

/** The plan parameters of op on comm (rank, channels, chunk, tuner settings). */
void tutti__comm_plan_params(const struct tutti_comm *comm, const struct tutti_op_desc *op,
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

/** Take / give back the communicator's turn to execute (group.c runs several at once). */
void tutti__turn_take(struct tutti_comm *comm);
void tutti__turn_give(struct tutti_comm *comm);

/** Wait until the queue is empty and stop the progress thread (destroy, abort). */
void tutti__queue_drain(struct tutti_comm *comm);

#endif /* TUTTI_REQUEST_H */
