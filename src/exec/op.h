/*
 * op.h - facts about one operation that every layer asks: how many bytes it reads and writes
 * on this rank, where a barrier's one byte goes, and the blocks of gather, scatter and the
 * variable-size collectives.
 */
#ifndef TUTTI_OP_H
#define TUTTI_OP_H

#include "exec/plan.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_fabric;

/** Bytes read from sendbuf and written to recvbuf by op on this rank (after validation). */
void tutti__op_extents(const struct tutti_fabric *fab, const struct tutti_op_desc *op,
                       size_t *send_bytes_p, size_t *recv_bytes_p);

/** As tutti__op_extents, for `rank` of `nranks` (pure: plans and tests). */
void tutti__op_extents_of(const struct tutti_op_desc *op, int rank, int nranks,
                          size_t *send_bytes_p, size_t *recv_bytes_p);

/**
 * A barrier runs as a one-byte exchange: point op's buffers at byte, which must outlive the
 * operation's execution. Other operations are left as they are.
 */
void tutti__op_bind_barrier(struct tutti_op_desc *op, uint8_t *byte);

/** Is coll one of gather, scatter and the variable-size collectives? */
int tutti__coll_is_blockwise(tutti_coll_t coll);

/** Does coll reduce (all-reduce, reduce, reduce-scatter, reduce_scatterv)? */
int tutti__coll_reduces(tutti_coll_t coll);

/** Does coll have a root (broadcast, reduce, gather, scatter and their v forms)? */
int tutti__coll_rooted(tutti_coll_t coll);

/*
 * The blocks of a blockwise collective, in elements, as this rank sees them (the arrays that
 * only a root has are read only where this rank is the root):
 * - send block j: what goes to rank j (alltoallv, scatter(v) at the root); for allgatherv,
 *   gather(v) and this rank's own block of scatter(v) elsewhere, j is ignored: the one block
 *   sent, op->count elements at offset 0;
 * - receive block j: what comes from rank j (alltoallv, allgatherv, gather(v) at the root); for
 *   scatter(v) the one block received, op->count elements at 0.
 * reduce_scatterv's blocks are rcounts[j] at the sum of the counts before j, in both buffers
 * (the receive buffer holds this rank's block only, at 0: see tutti__op_rs_offset).
 */
size_t tutti__op_scount(const struct tutti_op_desc *op, int j);
size_t tutti__op_sdispl(const struct tutti_op_desc *op, int j);
size_t tutti__op_rcount(const struct tutti_op_desc *op, int j);
size_t tutti__op_rdispl(const struct tutti_op_desc *op, int j);

/**
 * Do the receive blocks of op on `rank` leave gaps in its receive extent (bytes a copy of the
 * whole extent would overwrite that the call itself does not write)? 0 for every collective
 * but the blockwise ones.
 */
int tutti__op_recv_gaps(const struct tutti_op_desc *op, int rank, int nranks);

/** reduce_scatterv: the offset of block j in the send buffer (the counts before j, summed). */
size_t tutti__op_rs_offset(const struct tutti_op_desc *op, int j);

/**
 * A copy of v and its arrays in one allocation (free() releases it), or NULL when out of memory:
 * what a call that outlives its entry point (queued, recorded in a group, on a stream) keeps.
 */
struct tutti_vcounts *tutti__vcounts_dup(const struct tutti_vcounts *v, int nranks);

/** Do a and b hold equal counts (the same arrays present, nranks entries each equal)? */
int tutti__vcounts_same(const struct tutti_vcounts *a, const struct tutti_vcounts *b, int nranks);

/**
 * Make op's counts its own: op->v becomes a copy (tutti__vcounts_dup), returned for the owner to
 * free; NULL with op unchanged when op has none. *failed_p is set when out of memory.
 */
struct tutti_vcounts *tutti__op_own_counts(struct tutti_op_desc *op, int nranks, int *failed_p);

#endif /* TUTTI_OP_H */
