/*
 * premul.h - the pre-multiplied sums a communicator makes (tutti_op_create_premul_sum): a table
 * of handles, and their resolution when a call names one.
 */
#ifndef TUTTI_PREMUL_H
#define TUTTI_PREMUL_H

#include "exec/plan.h"
#include "tutti/status.h"

struct tutti_comm;

/**
 * If op->op is one of comm's handles, make it TUTTI_OP_PREMUL with the handle's scalar (by value,
 * or where the call reads it). Returns TUTTI_OK (also for a built-in op, left alone), or
 * TUTTI_ERR_INVALID_ARG naming a value that is neither (a destroyed handle, another
 * communicator's) or a datatype other than the handle's.
 */
tutti_status_t tutti__premul_resolve(struct tutti_comm *comm, struct tutti_op_desc *op);

/** Free comm's table (at destroy). */
void tutti__premul_free(struct tutti_comm *comm);

#endif /* TUTTI_PREMUL_H */
