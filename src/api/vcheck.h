/*
 * vcheck.h - argument checks of gather, scatter and the variable-size collectives.
 */
#ifndef TUTTI_VCHECK_H
#define TUTTI_VCHECK_H

#include "exec/plan.h"
#include "tutti/status.h"

struct tutti_comm;

/**
 * Check a blockwise call (op.h: tutti__coll_is_blockwise) whose counts are in v, the caller's
 * copy of *op->v (NULL for gather and scatter): arrays that must be there, sizes, receive blocks
 * that overlap, the in-place forms, counts given twice. Completes v: the digest of a vector
 * every rank passes alike, alltoallv's send side in place, NULL for a root's arrays elsewhere.
 * Returns TUTTI_OK or TUTTI_ERR_INVALID_ARG naming the argument (recorded on comm).
 */
tutti_status_t tutti__vcheck(struct tutti_comm *comm, struct tutti_op_desc *op,
                             struct tutti_vcounts *v);

#endif /* TUTTI_VCHECK_H */
