/*
 * coll.h - schedule builders, one algorithm per file (src/coll/<coll>_<algo>.c), and the
 * catalog that says which applies (algos.c). Each builder appends lanes and steps for one rank
 * to an empty plan and returns 0, or -1 when out of memory.
 */
#ifndef TUTTI_COLL_H_INTERNAL
#define TUTTI_COLL_H_INTERNAL

#include "plan.h"
#include "tutti/coll.h"

typedef int (*tutti_build_fn)(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                              struct tutti_plan *plan);

struct tutti_algo {
    tutti_coll_t coll;
    const char *name; /* what TUTTI_ALGO accepts */
    const char *desc;
    int (*applies)(const struct tutti_op_desc *op, const struct tutti_plan_params *pp);
    tutti_build_fn build;
};

/** Catalog entries for a collective; *n_p gets the count. */
const struct tutti_algo *tutti__algos(tutti_coll_t coll, int *n_p);

/**
 * Parse TUTTI_ALGO ("allreduce:ring,broadcast:direct") into forced[coll] (a catalog index, or
 * -1 where nothing is forced). Returns 0, or -1 with a message naming the bad entry and the
 * valid names in err.
 */
int tutti__algo_parse(const char *spec, int forced[TUTTI_COLL_COUNT], char *err, size_t errlen);

/** Names of the algorithms that apply to op ("ring, oneshot"), for error messages. */
void tutti__algo_applicable(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            char *buf, size_t len);

int tutti__allreduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__broadcast_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__reduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan);
int tutti__reduce_scatter_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                               struct tutti_plan *plan);
int tutti__allgather_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__alltoall_pairwise(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan);
int tutti__p2p_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan);
int tutti__barrier_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                        struct tutti_plan *plan);
int tutti__barrier_oneshot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan);
int tutti__allreduce_oneshot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan);
int tutti__broadcast_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            struct tutti_plan *plan);
int tutti__reduce_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan);
int tutti__reduce_scatter_direct(const struct tutti_op_desc *op,
                                 const struct tutti_plan_params *pp, struct tutti_plan *plan);
int tutti__allgather_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            struct tutti_plan *plan);

/* ---- helpers shared by builders (algos.c) ---- */

/** Is element `off` of buffer a the same address as element `boff` of buffer b? */
int tutti__coll_same_place(const struct tutti_plan *plan, uint32_t a, size_t off, uint32_t b,
                           size_t boff);

/**
 * Open the lane of channel ch over its share of `total` elements (split evenly over channels).
 * Returns 1 with the share in *off_p / *len_p, 0 when the share is empty (no lane), -1 when
 * out of memory.
 */
int tutti__coll_open_lane(struct tutti_plan *plan, size_t total, const struct tutti_plan_params *pp,
                          int ch, int send_peer, int recv_peer, size_t *off_p, size_t *len_p);

/** Elements of the next chunk when `left` remain. */
static inline size_t tutti__chunk(size_t left, const struct tutti_plan_params *pp)
{
    return left < pp->chunk_elems ? left : pp->chunk_elems;
}

/**
 * Append COPY steps moving count elements from (src_buf, src_off) to (dst_buf, dst_off) to the
 * last lane, unless source and destination are the same place (in-place use).
 */
int tutti__coll_copy(struct tutti_plan *plan, uint32_t src_buf, size_t src_off, uint32_t dst_buf,
                     size_t dst_off, size_t count);

/**
 * Send `count` elements of src (stable: the caller's input) and also copy them to dst in the
 * same pass, unless dst is the same place (in place): one read of the input instead of two.
 */
int tutti__coll_send_copy(struct tutti_plan *plan, uint32_t src_buf, size_t src_off,
                          uint32_t dst_buf, size_t dst_off, size_t count);

/* ---- direct (flat) algorithms for small messages (direct.c) ---- */

/**
 * Keep this rank's own contribution where the schedule will not overwrite it: when
 * `overwritten` (in place, and receives land on it before it is reduced), copy it into the
 * plan's scratch memory. Returns the buffer index to read it from, or UINT32_MAX on failure.
 */
uint32_t tutti__direct_keep_own(struct tutti_plan *plan, uint32_t own_buf, size_t own_off,
                                size_t count, int overwritten);

/** SEND `count` elements of buffer `buf` to every other rank (at off(peer) if off != NULL). */
int tutti__direct_send_all(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                           uint32_t buf, size_t (*off)(int peer, const void *ctx), const void *ctx,
                           size_t count);

/**
 * Reduce every rank's contribution into (dst_buf, dst_off) in rank order: this rank's from
 * (own_buf, own_off), the others received one by one. The last step divides for AVG.
 */
int tutti__direct_reduce_chain(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                               uint32_t own_buf, size_t own_off, uint32_t dst_buf, size_t dst_off,
                               size_t count);

/**
 * Build one plan for a run of point-to-point operations of one group (all on one
 * communicator): every send to a peer, in call order, goes through one lane per channel, and
 * likewise every receive; sends to self are matched with receives from self in order and become
 * local copies. Sizes are in bytes (the plan's datatype is uint8).
 * @return 0; -1 when out of memory; -2 when self-sends and self-receives do not pair up.
 */
int tutti__p2p_group_build(const struct tutti_op_desc *const *ops, int n,
                           const struct tutti_plan_params *pp, struct tutti_plan *plan);
#endif /* TUTTI_COLL_H_INTERNAL */
