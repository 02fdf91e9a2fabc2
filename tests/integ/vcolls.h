/*
 * vcolls.h - one call of gather, scatter or a variable-size collective, checked completely on
 * real processes: every rank derives the whole count matrix of the call from its seed (so it
 * knows what every peer sends it without asking), lays its own blocks out at displacements in a
 * shuffled order with gaps, calls the collective in one of its forms, and compares every block
 * with an independent reference (colls.h's generator and reductions), checks that the gaps and
 * the bytes around every buffer are untouched and that an out-of-place input is unchanged.
 * Counts are random, a quarter of them 0.
 */
#ifndef TUTTI_INTEG_VCOLLS_H
#define TUTTI_INTEG_VCOLLS_H

#include "tutti.h"

#include <stddef.h>
#include <stdint.h>

enum vcoll_kind {
    VCOLL_ALLTOALLV,
    VCOLL_ALLGATHERV,
    VCOLL_GATHER,
    VCOLL_SCATTER,
    VCOLL_GATHERV,
    VCOLL_SCATTERV,
    VCOLL_REDUCE_SCATTERV,
    VCOLL_NKINDS
};

/** How the call is made. */
enum vcoll_form {
    VFORM_BLOCKING,
    VFORM_ASYNC, /* the i form, its count arrays overwritten before the wait */
    VFORM_GROUP, /* inside a group, its count arrays overwritten before the group's end */
    VFORM_NFORMS
};

struct vcoll_case {
    enum vcoll_kind kind;
    tutti_datatype_t dt;
    tutti_op_t op; /* reduce_scatterv: a tutti_op_t or COLL_PREMUL (colls.h) */
    int inplace;   /* the collective's in-place form (tutti/coll.h), where it has one */
    size_t maxcount;
    int root;
    uint64_t seed; /* the same on every rank for one call */
    enum vcoll_form form;
};

const char *vcoll_name(enum vcoll_kind k);

/** Does the kind have an in-place form that this checker exercises? */
int vcoll_has_inplace(enum vcoll_kind k);

/**
 * Run the case on comm and check it (problems reported with integ_fail, naming the case).
 * @return 0 when everything matched; 1 after a data mismatch; -1 when the call failed.
 */
int vcoll_check(tutti_comm_t *comm, const struct vcoll_case *c);

/** The count of the block rank i sends rank j in the case (pure: any rank computes it). */
size_t vcoll_count(const struct vcoll_case *c, int nranks, int i, int j);

#endif /* TUTTI_INTEG_VCOLLS_H */
