/*
 * algos.c - the catalog of algorithms per collective, with the name TUTTI_ALGO accepts and when
 * each applies, the automatic choice, and tutti__plan_build(), the single entry point that
 * turns a validated operation into this rank's plan.
 *
 * Automatic choice: the cost model (TUTTI_TUNER=model, the default; coll/tuned.c) picks among
 * every entry that applies, with its chunk and channels. The static rule (TUTTI_TUNER=static,
 * and what the model departs from only for a clear gain; calibrated in perf/results, issue 3):
 * the direct (one-hop) algorithms for messages of at most TUTTI_DIRECT_MAX bytes that fit one
 * slot, with at most 16 ranks (their message count grows as n^2); the pipelined ring otherwise.
 * Entries marked `manual` (trees, recursive doubling, Rabenseifner, Bruck, hierarchical) are
 * never the static rule's choice.
 */
#include "coll/coll.h"
#include "exec/op.h"
#include "base/util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define DIRECT_MAX_RANKS 16

/* The message each rank sends in the direct algorithms fits one slot. */
static int fits_slot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    return op->count <= pp->chunk_elems;
}

static int always(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    (void)op;
    (void)pp;
    return 1;
}

/* The largest block of allgatherv and reduce_scatterv (whose counts every rank knows alike). */
static size_t max_block(const struct tutti_op_desc *op, int nranks)
{
    size_t most = 0;
    for (int j = 0; j < nranks; j++) {
        most = op->v->rcounts[j] > most ? op->v->rcounts[j] : most;
    }
    return most;
}

/* Every block fits one slot (the direct variants of allgatherv and reduce_scatterv). */
static int blocks_fit_slot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    return max_block(op, pp->nranks) <= pp->chunk_elems;
}

static const struct tutti_algo catalog[] = {
    {TUTTI_COLL_ALLREDUCE, "ring", "reduce-scatter + all-gather around a ring, pipelined", always,
     tutti__allreduce_ring, 0, .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_ALLREDUCE, "oneshot", "everyone sends to everyone, reduces in rank order",
     fits_slot, tutti__allreduce_oneshot, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_ALLREDUCE, "tree",
     "double binary tree: half the data up and down each tree, pipelined", always,
     tutti__allreduce_tree, .manual = 1},
    {TUTTI_COLL_ALLREDUCE, "rd", "recursive doubling, whole message each of log2 n rounds", always,
     tutti__allreduce_rd, .manual = 1, .fan = TUTTI_FAN_LOG},
    {TUTTI_COLL_ALLREDUCE, "rabenseifner",
     "recursive-halving reduce-scatter + recursive-doubling all-gather", always,
     tutti__allreduce_rabenseifner, .manual = 1, .fan = TUTTI_FAN_LOG},
    {TUTTI_COLL_ALLREDUCE, "hier",
     "reduce-scatter in each host, ring all-reduce across hosts per local rank, all-gather",
     tutti__allreduce_hier_applies, tutti__allreduce_hier, .manual = 1},
    {TUTTI_COLL_BROADCAST, "ring", "pipelined chain from the root", always, tutti__broadcast_ring,
     0, .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_BROADCAST, "direct", "the root sends to every rank", fits_slot,
     tutti__broadcast_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_BROADCAST, "tree", "double binary tree from the root, half the data each", always,
     tutti__broadcast_tree, .manual = 1},
    {TUTTI_COLL_REDUCE, "ring", "pipelined chain into the root", always, tutti__reduce_ring, 0,
     .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_REDUCE, "direct", "every rank sends to the root", fits_slot, tutti__reduce_direct,
     0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_REDUCE, "tree", "double binary tree into the root, half the data each", always,
     tutti__reduce_tree, .manual = 1},
    {TUTTI_COLL_REDUCE_SCATTER, "ring", "ring reduce-scatter, pipelined", always,
     tutti__reduce_scatter_ring, 0, .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_REDUCE_SCATTER, "direct", "every block goes to its owner", fits_slot,
     tutti__reduce_scatter_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_ALLGATHER, "ring", "ring all-gather, pipelined", always, tutti__allgather_ring, 0,
     .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_ALLGATHER, "direct", "every rank sends its block to every rank", fits_slot,
     tutti__allgather_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_ALLGATHER, "bruck", "log2 n rounds; scratch of nranks * count", always,
     tutti__allgather_bruck, .manual = 1, .fan = TUTTI_FAN_LOG},
    {TUTTI_COLL_ALLTOALL, "pairwise", "concurrent pairwise exchanges", always,
     tutti__alltoall_pairwise, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_ALLTOALL, "bruck", "log2 n rounds; scratch of 3 * nranks * count", always,
     tutti__alltoall_bruck, .manual = 1, .fan = TUTTI_FAN_LOG},
    {TUTTI_COLL_SEND, "direct", "one message, split over channels", always, tutti__p2p_direct, 0,
     .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_RECV, "direct", "one message, split over channels", always, tutti__p2p_direct, 0,
     .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_BARRIER, "ring", "one-byte ring all-reduce", always, tutti__barrier_ring, 0,
     .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_BARRIER, "oneshot", "one-byte one-shot all-reduce", always, tutti__barrier_oneshot,
     0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_ALLTOALLV, "pairwise", "concurrent pairwise exchanges of blocks of any size",
     always, tutti__alltoallv_pairwise, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_ALLTOALLV, "bruck",
     "counts all-gathered, then log2 n rounds of packed blocks (pairwise if a round's blocks "
     "exceed a slot)",
     always, tutti__alltoallv_bruck, .manual = 1, .fan = TUTTI_FAN_LOG},
    {TUTTI_COLL_ALLGATHERV, "ring", "ring all-gather of blocks of any size, in rounds", always,
     tutti__allgatherv_ring, 0, .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_ALLGATHERV, "direct", "every rank sends its block to every rank", blocks_fit_slot,
     tutti__allgatherv_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_GATHER, "direct", "every rank sends its block to the root", always,
     tutti__gather_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_SCATTER, "direct", "the root sends every rank its block", always,
     tutti__scatter_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_GATHERV, "direct", "every rank sends its block to the root", always,
     tutti__gather_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_SCATTERV, "direct", "the root sends every rank its block", always,
     tutti__scatter_direct, 0, .fan = TUTTI_FAN_ALL},
    {TUTTI_COLL_REDUCE_SCATTERV, "ring", "ring reduce-scatter of blocks of any size, in rounds",
     always, tutti__reduce_scatterv_ring, 0, .fan = TUTTI_FAN_FIXED},
    {TUTTI_COLL_REDUCE_SCATTERV, "direct", "every block goes to its owner", blocks_fit_slot,
     tutti__reduce_scatterv_direct, 0, .fan = TUTTI_FAN_ALL},
};

const struct tutti_algo *tutti__algos(tutti_coll_t coll, int *n_p)
{
    int first = -1, n = 0;
    for (int i = 0; i < (int)TUTTI_ARRAY_LEN(catalog); i++) {
        if (catalog[i].coll == coll) {
            if (first < 0) {
                first = i;
            }
            n++;
        }
    }
    *n_p = n;
    return first < 0 ? NULL : &catalog[first];
}

/* "ring, oneshot" into buf: the names of a collective's algorithms. */
static void list_names(tutti_coll_t coll, char *buf, size_t len)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(coll, &n);
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o + 1 < len; i++) {
        int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", a[i].name);
        o += w > 0 ? (size_t)w : 0;
    }
}

int tutti__algo_parse(const char *spec, int forced[TUTTI_COLL_COUNT], char *err, size_t errlen)
{
    char copy[512];
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        forced[c] = -1;
    }
    if (strlen(spec) >= sizeof(copy)) {
        /* Cut short, its last entries would be judged in part or not at all (fuzz_algo
         * found a misspelled entry past byte 511 accepted). */
        snprintf(err, errlen, "TUTTI_ALGO is %zu characters long; at most %zu are accepted",
                 strlen(spec), sizeof(copy) - 1);
        return -1;
    }
    snprintf(copy, sizeof(copy), "%s", spec);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        int coll = -1;
        for (int c = 0; colon != NULL && c < TUTTI_COLL_COUNT; c++) {
            if ((size_t)(colon - tok) == strlen(tutti__coll_name((tutti_coll_t)c)) &&
                strncmp(tok, tutti__coll_name((tutti_coll_t)c), (size_t)(colon - tok)) == 0) {
                coll = c;
            }
        }
        if (coll < 0) {
            snprintf(err, errlen,
                     "TUTTI_ALGO entry '%s' is not collective:algorithm with a collective among "
                     "allreduce, broadcast, reduce, reduce_scatter, allgather, alltoall, barrier, "
                     "alltoallv, allgatherv, gather, scatter, gatherv, scatterv, reduce_scatterv",
                     tok);
            return -1;
        }
        int n = 0, idx = -1;
        const struct tutti_algo *a = tutti__algos((tutti_coll_t)coll, &n);
        for (int i = 0; i < n; i++) {
            if (strcmp(colon + 1, a[i].name) == 0) {
                idx = i;
            }
        }
        /* Judge this entry alone: an earlier valid one for the same collective must not
         * make a misspelled later one pass (fuzz_algo found "barrier:oneshot,barrier:one"). */
        forced[coll] = idx;
        if (idx < 0) {
            char names[128];
            list_names((tutti_coll_t)coll, names, sizeof(names));
            snprintf(err, errlen, "TUTTI_ALGO: %s has no algorithm '%s' (valid: %s)",
                     tutti__coll_name((tutti_coll_t)coll), colon + 1, names);
            return -1;
        }
    }
    return 0;
}

int tutti__algo_peers(const struct tutti_algo *a, int nranks)
{
    int log2n = 0;
    while ((1 << log2n) < nranks && log2n < 30) {
        log2n++;
    }
    int peers = a->fan == TUTTI_FAN_ALL ? nranks - 1 : a->fan == TUTTI_FAN_LOG ? 2 * log2n : 0;
    return TUTTI_MIN(peers, nranks - 1);
}

int tutti__algo_fits(const struct tutti_algo *a, const struct tutti_plan_params *pp, int nchannels)
{
    if (a->fan == TUTTI_FAN_FIXED || pp->mem_budget == 0) {
        return 1;
    }
    double need =
        (double)tutti__algo_peers(a, pp->nranks) * TUTTI_MAX(nchannels, 1) * (double)pp->conn_bytes;
    return need <= (double)pp->mem_budget;
}

/*
 * The static rule, an index into the collective's entries: each collective lists its general
 * algorithm first and its direct (one-hop) variant, if any, second; the manual ones after them.
 * Whatever does not fit TUTTI_MEM_BUDGET is passed over; where the general one does not
 * (all-to-all's pairwise exchange), the first entry that applies and fits (Bruck). Where none
 * fits: -3 when the budget was set, else the entry with the fewest peers (a default budget
 * never makes a call fail: all-to-all over verbs, 8 MiB a connection, on a few ranks).
 */
int tutti__algo_static(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(op->coll, &n);
    if (a == NULL) {
        return -1;
    }
    size_t bytes = op->count * tutti_datatype_size(op->dt);
    if (op->coll == TUTTI_COLL_ALLGATHERV || op->coll == TUTTI_COLL_REDUCE_SCATTERV) {
        bytes = max_block(op, pp->nranks) * tutti_datatype_size(op->dt); /* as all-gather's */
    }
    int small = (bytes <= pp->direct_max || op->coll == TUTTI_COLL_BARRIER) &&
                pp->nranks <= DIRECT_MAX_RANKS;
    if (small && n > 1 && !a[1].manual && a[1].applies(op, pp) &&
        tutti__algo_fits(&a[1], pp, pp->nchannels)) {
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if ((i == 0 || a[i].manual) && a[i].applies(op, pp) &&
            tutti__algo_fits(&a[i], pp, pp->nchannels)) {
            return i;
        }
    }
    int best = -1;
    for (int i = 0; i < n && !pp->budget_strict; i++) {
        if ((i == 0 || a[i].manual) && a[i].applies(op, pp) &&
            (best < 0 ||
             tutti__algo_peers(&a[i], pp->nranks) < tutti__algo_peers(&a[best], pp->nranks))) {
            best = i;
        }
    }
    return best >= 0 ? best : -3;
}

int tutti__algo_static_channels(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    /* A collective takes another channel only for at least half a chunk per rank on it:
     * splitting less data doubles the frames and steps for nothing (measured over TCP: 32 KiB
     * all-reduce on 4 ranks twice as slow on 2 channels; 1 MiB on 2 ranks faster on 2).
     * Computed from what every rank knows alike. */
    size_t es = tutti_datatype_size(op->dt);
    size_t total = op->count * es;
    if (op->coll == TUTTI_COLL_ALLGATHER || op->coll == TUTTI_COLL_REDUCE_SCATTER ||
        op->coll == TUTTI_COLL_ALLTOALL) {
        total *= (size_t)pp->nranks;
    }
    if (op->coll == TUTTI_COLL_ALLGATHERV || op->coll == TUTTI_COLL_REDUCE_SCATTERV) {
        total = 0; /* the counts are the same everywhere: so is their sum */
        for (int j = 0; j < pp->nranks; j++) {
            total += op->v->rcounts[j] * es;
        }
    } else if (tutti__coll_is_blockwise(op->coll)) {
        /* Ranks see different totals (their own blocks): every channel is offered, and each
         * block takes one more only per chunk of its own (tutti__coll_channel_share). */
        return pp->nchannels;
    }
    size_t per_channel = (size_t)pp->nranks * (pp->chunk_elems * es / 2);
    size_t fit = total / (per_channel > 0 ? per_channel : 1);
    return (int)TUTTI_MAX((size_t)1, TUTTI_MIN((size_t)pp->nchannels, fit));
}

/* The automatic choice: the model's (with its chunk and channels in *run), else the rule's. */
static int choose(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                  struct tutti_plan_params *run)
{
    *run = *pp;
    int i = pp->tuner ? tutti__algo_tuned(op, pp, run, NULL) : -1;
    return i >= 0 ? i : tutti__algo_static(op, pp);
}

int tutti__algo_choose(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan_params *run_p)
{
    struct tutti_plan_params run;
    int i = choose(op, pp, &run);
    if (run_p != NULL) {
        *run_p = run;
    }
    return i;
}

int tutti__plan_build(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(op->coll, &n);
    if (a == NULL || tutti__plan_reset(plan, op) != 0) {
        return -1;
    }
    struct tutti_plan_params run = *pp;
    int i = pp->forced >= 0 && pp->forced < n ? pp->forced : choose(op, pp, &run);
    if (i < 0) {
        return -3;
    }
    if (!a[i].applies(op, &run)) {
        return -2;
    }
    plan->algo = a[i].name;
    plan->chunk_elems = run.chunk_elems;
    plan->nchannels = run.nchannels;
    if (a[i].build(op, &run, plan) != 0) {
        return -1;
    }
    tutti__plan_finish(plan);
    return 0;
}

uint64_t tutti__plan_next_gen(void)
{
    static _Atomic uint64_t builds;
    return atomic_fetch_add(&builds, 1) + 1;
}

int tutti__plan_same_op(const struct tutti_op_desc *a, const struct tutti_op_desc *b)
{
    return a->coll == b->coll && a->sendbuf == b->sendbuf && a->recvbuf == b->recvbuf &&
           a->count == b->count && a->dt == b->dt && a->op == b->op && a->root == b->root &&
           a->peer == b->peer;
}

int tutti__plan_same_params(const struct tutti_plan_params *a, const struct tutti_plan_params *b)
{
    return a->rank == b->rank && a->nranks == b->nranks && a->nchannels == b->nchannels &&
           a->chunk_elems == b->chunk_elems && a->direct_max == b->direct_max &&
           a->mem_budget == b->mem_budget && a->conn_bytes == b->conn_bytes &&
           a->budget_strict == b->budget_strict && a->forced == b->forced && a->tuner == b->tuner &&
           a->nhosts == b->nhosts && a->intra_tcp == b->intra_tcp && a->layout == b->layout &&
           a->peer_transport == b->peer_transport && a->cpu_load == b->cpu_load;
}

int tutti__plan_continue(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan, char *why, size_t len)
{
    int (*then)(const struct tutti_op_desc *, const struct tutti_plan_params *,
                struct tutti_plan *) = plan->then;
    if (plan->then_check != NULL && plan->then_check(plan, op, pp, why, len) != 0) {
        plan->then = NULL;
        return -4;
    }
    plan->reusable = plan->reusable_p2p = 0; /* the plan's storage holds another plan now */
    plan->gen = tutti__plan_next_gen();
    const char *algo = plan->algo;
    size_t chunk = plan->chunk_elems;
    int nch = plan->nchannels;
    if (tutti__plan_reset(plan, op) != 0 || then(op, pp, plan) != 0) {
        return -1;
    }
    plan->algo = algo;
    plan->chunk_elems = chunk;
    plan->nchannels = nch;
    tutti__plan_finish(plan);
    return 0;
}

/* A blockwise plan reused for a call with equal counts: its block calls become this call's
 * (their number and their counts' struct, which holds the digest). */
static void reuse_blocks(struct tutti_plan *plan, const struct tutti_op_desc *op)
{
    plan->op.v = op->v;
    for (uint32_t i = 0; i < plan->ncalls; i++) {
        plan->calls[i].seq = op->seq;
        plan->calls[i].v = op->v;
    }
}

int tutti__plan_build_cached(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan)
{
    int blockwise = tutti__coll_is_blockwise(op->coll);
    if (plan->reusable && tutti__plan_same_op(op, &plan->built_op) &&
        tutti__plan_same_params(pp, &plan->built_pp) &&
        (!blockwise || tutti__vcounts_same(op->v, plan->built_v, pp->nranks))) {
        plan->op.seq = op->seq;       /* the call it now runs (its fingerprint's number) */
        plan->op.scalar = op->scalar; /* a pre-multiplied sum's scalar is this call's */
        plan->op.scalar_ptr = op->scalar_ptr;
        if (blockwise) {
            reuse_blocks(plan, op);
        }
        return 0;
    }
    plan->reusable = plan->reusable_p2p = 0;
    plan->gen = tutti__plan_next_gen(); /* unique over every plan of the process */
    int rc = tutti__plan_build(op, pp, plan);
    /* A blockwise plan depends on the contents of its count arrays, which the next call may
     * have changed in place: it is kept with a copy of them, and reused only for equal ones. */
    free(plan->built_v);
    plan->built_v =
        rc == 0 && blockwise && op->v != NULL ? tutti__vcounts_dup(op->v, pp->nranks) : NULL;
    if (rc == 0 && (op->v == NULL || plan->built_v != NULL)) {
        plan->built_op = *op;
        plan->built_pp = *pp;
        plan->reusable = 1;
    }
    return rc;
}

void tutti__algo_applicable(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            char *buf, size_t len)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(op->coll, &n);
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o + 1 < len; i++) {
        if (a[i].applies(op, pp)) {
            int w = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", a[i].name);
            o += w > 0 ? (size_t)w : 0;
        }
    }
}
