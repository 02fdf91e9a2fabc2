/*
 * colls.h - one collective call, checked completely: every rank builds its inputs from a seed,
 * calls the collective, and compares its whole output with a reference it computes on its own
 * (O(nranks) per element, from the same seeded generator), checks that the bytes around every
 * buffer are untouched (guard zones), that out-of-place inputs are unchanged and that buffers the
 * collective must not write (a non-root's recvbuf of reduce) are unchanged.
 *
 * Inputs are chosen so that the exact result does not depend on the order of the reduction:
 * integers are random bits (wrap-around is exact in any order); floating-point values are small
 * integers whose every partial sum or product is exactly representable in the element type,
 * fp8 e5m2 included (see coll_value() in colls.c), and MIN/MAX inputs carry a few NaNs, which
 * must come out as NaN.
 *
 * Shared by test_collectives.c (every configuration), test_forced_algos.c, test_multihost.c and
 * test_multihost_algos.c (across namespaces).
 */
#ifndef TUTTI_INTEG_COLLS_H
#define TUTTI_INTEG_COLLS_H

#include "tutti.h"

#include <stddef.h>
#include <stdint.h>

enum coll_kind {
    COLL_ALLREDUCE,
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_REDUCE_SCATTER,
    COLL_ALLGATHER,
    COLL_ALLTOALL,
    COLL_SENDRECV, /* a blocking pair exchange, then a ring shift inside a group */
    COLL_BARRIER,
    COLL_NKINDS
};

/* The op of a case that is a pre-multiplied sum (tutti_op_create_premul_sum): each rank's
 * scalar is coll_premul_scalar(rank). Not a tutti_op_t value. */
#define COLL_PREMUL ((tutti_op_t)TUTTI_NUM_OPS)

struct coll_case {
    enum coll_kind coll;
    tutti_datatype_t dt;
    tutti_op_t op; /* reductions only: a tutti_op_t, or COLL_PREMUL */
    int inplace;   /* NCCL's in-place form, where the collective has one */
    size_t count;  /* the count argument of the call */
    int root;      /* broadcast and reduce */
    uint64_t seed; /* the same on every rank for one call */
};

/** "allreduce", ... */
const char *coll_name(enum coll_kind k);

/** Does the collective take an op? */
int coll_is_reduction(enum coll_kind k);

/** Does NCCL define an in-place form for it? */
int coll_has_inplace(enum coll_kind k);

/** Does op (a tutti_op_t or COLL_PREMUL) apply to dt, as tutti/types.h documents? */
int coll_op_applies(tutti_datatype_t dt, tutti_op_t op);

/** The k-th of the ops that apply to dt, cycling (COLL_PREMUL counts as one): for tests that
 *  turn the op with every call. */
tutti_op_t coll_op_rotate(tutti_datatype_t dt, unsigned k);

/** Ops a reduction sweep tries: every tutti_op_t, then COLL_PREMUL. */
#define COLL_NUM_OPS (TUTTI_NUM_OPS + 1)

/** "sum", ..., "premul_sum" */
const char *coll_op_name(tutti_op_t op);

/** Rank's scalar of a pre-multiplied sum (2, -1 or 1, by rank), one element of dt, in buf. */
void coll_premul_scalar(tutti_datatype_t dt, int rank, void *buf);

/**
 * The op to call tutti with for c->op: itself, or a pre-multiplied sum made on comm with this
 * rank's scalar (*made_p = 1: give it back with tutti_op_destroy). -1 when making it failed.
 */
int coll_op_get(tutti_comm_t *comm, const struct coll_case *c, int rank, tutti_op_t *op_p,
                int *made_p);

/* ---- the pieces of the reference, for the checks of the blockwise collectives (vcolls.c) ---- */

/** Rank's input elements g0 .. g0 + n - 1 of the call c (c->coll tells a reduction's values). */
void coll_input(const struct coll_case *c, int nranks, int rank, void *buf, size_t n, size_t g0);

/** The reduction over all ranks of elements g0 .. g0 + n - 1 of c (a reducing c->coll). */
void coll_reduced(const struct coll_case *c, int nranks, void *buf, size_t n, size_t g0);

/** Compare n elements; report the first bad one (integ_fail) naming `what`. 0 when equal. */
int coll_compare(const struct coll_case *c, const char *what, const void *got, const void *exp,
                 size_t n);

/**
 * Run the case on comm and check it. A rank reports every problem on stderr (rank, collective,
 * datatype, op, count, first bad index, got/expected) through integ_fail.
 * @return 0 when everything matched; 1 after a data mismatch (the comm is still usable and in
 *         step with the other ranks); -1 when the call itself failed (stop using the comm).
 */
int coll_check(tutti_comm_t *comm, const struct coll_case *c);

/**
 * coll_check of c (its root and seed left out) as call number *ncalls of a test: the root
 * turns with the calls, the seed is derived from the number and the test's salt; counts it.
 */
int coll_check_nth(tutti_comm_t *comm, int nranks, struct coll_case c, size_t *ncalls,
                   uint64_t salt);

/** Free the buffers coll_check keeps between calls. */
void coll_free_buffers(void);

/** FNV-1a 64 of a buffer, for comparing outputs across ranks. */
uint64_t coll_hash(const void *buf, size_t len);

/** Random float32/bfloat16 data whose sums are not exact (for the bitwise-identity check). */
void coll_fill_random_float(tutti_datatype_t dt, void *buf, size_t count, uint64_t seed, int rank);

#endif /* TUTTI_INTEG_COLLS_H */
