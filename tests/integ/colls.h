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

struct coll_case {
    enum coll_kind coll;
    tutti_datatype_t dt;
    tutti_op_t op; /* reductions only */
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
