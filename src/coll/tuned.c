/*
 * tuned.c - the automatic choice by the cost model (TUTTI_TUNER=model): every catalog entry
 * that applies to the call is a candidate, topology/tune.c predicts each one's time on this
 * communicator's links (shared memory or TCP within a host, TCP between hosts), with the
 * call's chunk size and channel count, and the fastest is built. Every rank computes the same answer: the inputs (collective, bytes, ranks, hosts,
 * transport setting) are the same everywhere.
 */
#include "coll.h"
#include "topology/tune.h"

#define MAX_CANDIDATES 16

int tutti__algo_tuned(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      double *time_us_p)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(op->coll, &n);
    const char *names[MAX_CANDIDATES];
    int index[MAX_CANDIDATES], k = 0;
    for (int i = 0; a != NULL && i < n && k < MAX_CANDIDATES; i++) {
        if (a[i].applies(op, pp)) {
            names[k] = a[i].name;
            index[k++] = i;
        }
    }
    if (k == 0) {
        return -1;
    }
    /* NCCL's size convention, which the model uses: the gathered or scattered whole. */
    size_t bytes = op->count * tutti_datatype_size(op->dt);
    if (op->coll == TUTTI_COLL_ALLGATHER || op->coll == TUTTI_COLL_REDUCE_SCATTER ||
        op->coll == TUTTI_COLL_ALLTOALL) {
        bytes *= (size_t)pp->nranks;
    }
    struct tutti_tune_links links;
    tutti__tune_links_make(pp->intra_tcp ? TUTTI_LINK_TCP : TUTTI_LINK_SHM, TUTTI_LINK_TCP, 1,
                           &links);
    /* The model judges each algorithm as it will run: with this call's chunk size and channels
     * (tutti__tune_pick would also choose those, which the catalog does not take). */
    struct tutti_tune_sys sys = {.nranks = pp->nranks,
                                 .nhosts = pp->nhosts >= 1 && pp->nhosts <= pp->nranks
                                               ? pp->nhosts
                                               : 1,
                                 .links = links};
    struct tutti_tune_cfg cfg = {.chunk_bytes = pp->chunk_elems * tutti_datatype_size(op->dt),
                                 .nchannels = pp->nchannels,
                                 .proto = TUTTI_PROTO_SIMPLE};
    int best = -1;
    double best_us = 0;
    for (int j = 0; j < k; j++) {
        double us = tutti__tune_time(op->coll, names[j], bytes, &sys, &cfg);
        if (us >= 0 && (best < 0 || us < best_us)) {
            best = j;
            best_us = us;
        }
    }
    if (best < 0) {
        return -1; /* nothing the model knows (send, recv): the static rule decides */
    }
    if (time_us_p != NULL) {
        *time_us_p = best_us;
    }
    return index[best];
}
