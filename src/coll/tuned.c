/*
 * tuned.c - the automatic choice by the cost model (TUTTI_TUNER=model, the default): every
 * catalog entry that applies to the call is a candidate, src/coll/tune.c predicts each one's
 * time on this communicator's links (shared memory or TCP within a host, TCP between hosts)
 * and CPU load with the best chunk (up to the transports' slot) and channel count (up to what
 * the communicator was given) for it, and the fastest is built with them. Every rank computes
 * the same answer: the inputs (collective, bytes, ranks, hosts, load, transport setting, slot,
 * channels) are the same everywhere. Each communicator keeps its answers (struct
 * tutti_tune_memo, 16 of them) so that a call pays the search only the first time.
 */
#include "coll.h"
#include "exec/op.h"
#include "coll/tune.h"

#define MAX_CANDIDATES 16

/*
 * The model departs from the static rule's configuration (its algorithm, a whole slot per
 * chunk, its channels) only where it predicts that configuration to take at least 1 / 0.6 =
 * 1.67x as long as its own best: its host figures reproduce the measured times within about
 * 30% where it was calibrated (tune_links.c) and within a factor of 2 elsewhere (4 and 8
 * crowded ranks), and where two configurations are closer the measurements cannot rank them
 * either (launch-to-launch noise on the 2-core VM is of that order). Replayed over the
 * calibration runs (2-8 ranks, shared memory and TCP, namespace hosts), 0.7 let two mis-picks
 * through (1.4-2.4x slower than the static rule: a crowded tree broadcast, a crowded one-hop
 * all-gather) and 0.5 gave up most of the gains (all-reduce 0.89 of static's time on the
 * geometric mean at 0.6, 0.95 at 0.5).
 */
#define TUNE_MARGIN 0.6

/* NCCL's size convention, which the model uses: the gathered or scattered whole. */
static size_t model_bytes(const struct tutti_op_desc *op, int nranks)
{
    size_t bytes = op->count * tutti_datatype_size(op->dt);
    if (op->coll == TUTTI_COLL_ALLGATHER || op->coll == TUTTI_COLL_REDUCE_SCATTER ||
        op->coll == TUTTI_COLL_ALLTOALL) {
        bytes *= (size_t)nranks;
    }
    return bytes;
}

static void model_sys(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_tune_sys *sys)
{
    struct tutti_tune_links *links = &sys->links;
    tutti__tune_links_make(pp->intra_tcp ? TUTTI_LINK_LOOPBACK : TUTTI_LINK_SHM, TUTTI_LINK_TCP, 1,
                           links);
    links->max_channels = pp->nchannels;
    links->max_chunk = pp->chunk_elems * tutti_datatype_size(op->dt);
    links->cpu_load = pp->cpu_load;
    sys->nranks = pp->nranks;
    sys->nhosts = pp->nhosts >= 1 && pp->nhosts <= pp->nranks ? pp->nhosts : 1;
}

static int decide(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                  struct tutti_plan_params *run_p, double *time_us_p)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(op->coll, &n);
    const char *names[MAX_CANDIDATES];
    int index[MAX_CANDIDATES], k = 0;
    for (int i = 0; a != NULL && i < n && k < MAX_CANDIDATES; i++) {
        if (a[i].applies(op, pp) && tutti__algo_fits(&a[i], pp, pp->nchannels)) {
            names[k] = a[i].name;
            index[k++] = i;
        }
    }
    struct tutti_tune_sys sys;
    model_sys(op, pp, &sys);
    size_t bytes = model_bytes(op, pp->nranks);
    struct tutti_tune_choice best;
    if (k == 0 || tutti__tune_pick(op->coll, bytes, sys.nranks, sys.nhosts, names, k, &sys.links,
                                   NULL, &best) < 0) {
        return -1; /* nothing the model knows (send, recv): the static rule decides */
    }
    struct tutti_plan_params run = *pp;
    size_t es = tutti_datatype_size(op->dt);
    int choice = index[best.index];
    /* The static configuration stays unless the model predicts a clear gain. */
    int s = tutti__algo_static(op, pp);
    struct tutti_tune_cfg st = {pp->chunk_elems * es, tutti__algo_static_channels(op, pp),
                                TUTTI_PROTO_SIMPLE};
    double st_us = s >= 0 ? tutti__tune_time(op->coll, a[s].name, bytes, &sys, &st) : -1;
    if (st_us >= 0 && best.time_us > TUNE_MARGIN * st_us) {
        choice = s;
        best.time_us = st_us;
        best.cfg = st;
    }
    run.chunk_elems = best.cfg.chunk_bytes / es > 0 ? best.cfg.chunk_bytes / es : 1;
    run.chunk_elems = run.chunk_elems < pp->chunk_elems ? run.chunk_elems : pp->chunk_elems;
    run.nchannels = best.cfg.nchannels < pp->nchannels ? best.cfg.nchannels : pp->nchannels;
    if (!a[choice].applies(op, &run)) {
        run.chunk_elems = pp->chunk_elems; /* a one-slot algorithm keeps the whole slot */
    }
    if (run_p != NULL) {
        *run_p = run;
    }
    if (time_us_p != NULL) {
        *time_us_p = best.time_us;
    }
    return choice;
}

int tutti__algo_tuned(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan_params *run_p, double *time_us_p)
{
    if (tutti__coll_is_blockwise(op->coll)) {
        return -1; /* not modelled: ranks of alltoallv or gatherv do not even agree on a size */
    }
    struct tutti_tune_memo *m = pp->memo;
    size_t es = tutti_datatype_size(op->dt);
    for (int i = 0; m != NULL && i < TUTTI_TUNE_MEMO; i++) {
        if (m->e[i].coll == (int)op->coll + 1 && m->e[i].count == op->count && m->e[i].es == es) {
            if (run_p != NULL) {
                *run_p = *pp;
                run_p->chunk_elems = m->e[i].chunk_elems;
                run_p->nchannels = m->e[i].nchannels;
            }
            if (time_us_p != NULL) {
                *time_us_p = m->e[i].time_us;
            }
            return m->e[i].algo;
        }
    }
    struct tutti_plan_params run;
    double us = -1;
    int algo = decide(op, pp, &run, &us);
    if (algo >= 0 && m != NULL) {
        unsigned i = m->next++ % TUTTI_TUNE_MEMO;
        m->e[i].coll = (int)op->coll + 1;
        m->e[i].count = op->count;
        m->e[i].es = es;
        m->e[i].algo = algo;
        m->e[i].chunk_elems = run.chunk_elems;
        m->e[i].nchannels = run.nchannels;
        m->e[i].time_us = us;
    }
    if (algo >= 0 && run_p != NULL) {
        *run_p = run;
    }
    if (algo >= 0 && time_us_p != NULL) {
        *time_us_p = us;
    }
    return algo;
}
