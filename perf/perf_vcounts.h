/*
 * perf_vcounts.h - the count vectors of gather, scatter and the variable-size collectives in the
 * perf tools and the fault matrix: block sizes equal, random or Zipf-distributed (-v), derived
 * from the size alone so that every rank computes every peer's counts without asking (its
 * receive counts are then the counts its peers send) and tutti and MPI run the very same calls.
 *
 * A rank's vector always sums to the "total" elements of the size column (alltoallv: every rank
 * sends and receives exactly that many, the matrix being doubly stochastic), so that bus
 * bandwidths with and without skew compare fairly. Blocks are packed in rank order
 * (displacements are the prefix sums of the counts), as MoE token routing lays tokens out.
 */
#ifndef TUTTI_PERF_VCOUNTS_H
#define TUTTI_PERF_VCOUNTS_H

#include "tutti_perf.h"

#include <stddef.h>

/** -v: how the blocks of a v collective differ. */
enum perf_skew {
    PERF_SKEW_NONE = 0, /* equal blocks (gather and scatter then call the fixed-count form) */
    PERF_SKEW_UNIFORM,  /* random shares */
    PERF_SKEW_ZIPF,     /* shares proportional to 1/k^s over the peers, rotated by rank */
};

/** The counts of one call, as every rank derives them. */
struct perf_vcounts {
    int nranks, rank;
    int matrix;   /* 1: alltoallv's matrix; 0: one vector over the ranks */
    size_t total; /* elements of every row (matrix) or of the vector */
    /* matrix: m[i * nranks + j] = elements rank i sends rank j (rows and columns sum to total);
     * vector: m[j] = rank j's block */
    size_t *m;
    /* This rank's arguments: alltoallv its row and column with their prefix sums; the vector
     * collectives the vector twice (a fault injection may change one copy). */
    size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
    int *isendcounts, *isdispls, *irecvcounts, *irdispls; /* the same in MPI's ints */
    int fits_int;                                         /* the ints hold every value */
    size_t max_block;                                     /* the largest block of any rank */
    size_t moved;                                         /* sum of this rank's counts */
    double *w;                                            /* scratch: the shares */
    size_t *c;                                            /* scratch: the counts of the shares */
};

/** Parse -v: "none", "uniform", "zipf" or "zipf:S" (exponent S, default 1). 0 or -1. */
int perf_skew_parse(const char *s, int *skew_p, double *zipf_s_p);

/** "none", "uniform", "zipf": the name as -v takes it. */
const char *perf_skew_name(int skew);

/** Does this collective run its v form under the skew (alltoallv always, gather with -v)? */
int perf_vform(const struct perf_coll *coll, int skew);

/** Room for the counts of nranks ranks (matrix included). 0, or -1 when out of memory. */
int perf_vcounts_alloc(struct perf_vcounts *vc, int nranks, int rank);

void perf_vcounts_free(struct perf_vcounts *vc);

/**
 * Give the call c (its layout made by coll->layout) the counts of its v form, or none (c->v =
 * NULL) when coll runs its fixed-count form under the skew. total = c->lay.param_count x
 * nranks; the collective's vsetup then sets the layout's counts and in-place pointers.
 */
void perf_vcall(struct perf_vcounts *vc, const struct perf_coll *coll, int skew, double zipf_s,
                struct perf_call *c);

/** This rank's block of a vector collective (or of equal blocks without counts): the offset
 * of its first element in the whole vector and its count. */
void perf_vblock(const struct perf_call *c, int rank, size_t *off_p, size_t *count_p);

/* The layouts and checks the v collectives share (perf_vcounts.c). */
/** gather, allgatherv: send = this rank's block; in place, it sits at its block of recvbuf. */
void perf_vsetup_gathered(struct perf_call *c);
/** scatter, reduce_scatterv: recv = this rank's block; in place, its block of sendbuf. */
void perf_vsetup_scattered(struct perf_call *c);
/** Every rank's block r, in rank order in the receive buffer, is rank r's input. */
size_t perf_check_gathered(const struct perf_call *c);

#endif /* TUTTI_PERF_VCOUNTS_H */
