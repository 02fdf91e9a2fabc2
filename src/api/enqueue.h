/*
 * enqueue.h - the common path of every collective and point-to-point call: validate, then
 * record (inside a group), queue (asynchronous form) or run (blocking form).
 */
#ifndef TUTTI_ENQUEUE_H
#define TUTTI_ENQUEUE_H

#include "exec/plan.h"
#include "tutti/coll.h"

struct tutti_comm;

/**
 * @param req_p  NULL for the blocking form, else where the asynchronous request goes.
 */
tutti_status_t tutti__enqueue(struct tutti_comm *comm, const struct tutti_op_desc *op, void *stream,
                              tutti_request_t **req_p);

/** Argument checks shared by every entry point; the message names the bad argument. */
tutti_status_t tutti__op_validate(struct tutti_comm *comm, const struct tutti_op_desc *op);

#endif /* TUTTI_ENQUEUE_H */
