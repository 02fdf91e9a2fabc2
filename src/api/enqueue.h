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

/** The asynchronous form: as tutti__enqueue, but a NULL req_p is an error naming it. */
tutti_status_t tutti__enqueue_async(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                    tutti_request_t **req_p);

/* Build the description of a call; fields a call does not use stay neutral (-1 root/peer,
 * SUM, no counts). */
#define OP_DESC(c, s, r, n, d, o, rt, pr)                                                          \
    ((struct tutti_op_desc){.coll = (c),                                                           \
                            .sendbuf = (s),                                                        \
                            .recvbuf = (r),                                                        \
                            .count = (n),                                                          \
                            .dt = (d),                                                             \
                            .op = (o),                                                             \
                            .root = (rt),                                                          \
                            .peer = (pr)})

/**
 * Argument checks shared by every entry point; the message names the bad argument. Completes op
 * as it goes: a pre-multiplied sum's handle becomes TUTTI_OP_PREMUL with its scalar, and v (the
 * caller's copy of *op->v, or NULL) gets what tutti__vcheck adds.
 */
tutti_status_t tutti__op_validate(struct tutti_comm *comm, struct tutti_op_desc *op,
                                  struct tutti_vcounts *v);

#endif /* TUTTI_ENQUEUE_H */
