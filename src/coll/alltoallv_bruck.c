/*
 * alltoallv_bruck.c - Bruck's all-to-all for blocks of any size, for many ranks with small
 * blocks: ceil(log2 n) packed messages per rank instead of n - 1.
 *
 * In Bruck's rounds a rank forwards blocks that are neither its own nor for it, so it must know
 * their sizes, which only their senders know. Hence two phases. The first all-gathers every
 * rank's sendcounts (Bruck's all-gather of n counts; its frames carry a fingerprint of their
 * own, so a rank that runs another algorithm fails on the first one). From the whole matrix
 * every rank checks its receive counts against what its peers send it (a mismatch names both
 * counts before any data moves), and builds the data's plan: position j of rank r starts as the
 * block for rank r+j; in round k (distance b = 2^k) the positions with bit k set travel packed
 * into one frame to rank r+b, and those of rank r-b arrive into the same positions; at the end
 * position j holds rank r-j's block for r. Where some round's frame of some rank would not fit
 * one slot, every rank (deciding from the same matrix) runs the pairwise exchange instead.
 */
#include "coll/coll.h"
#include "exec/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The count matrix the first phase left: rank i sends m[i * n + j] elements to rank j. */
static const uint64_t *matrix(const struct tutti_plan *plan)
{
    return (const uint64_t *)(const void *)plan->aux;
}

/* Elements of position j of rank r before round k (k = rounds: at the end). */
static size_t pos_size(const uint64_t *m, int n, int r, int j, int k)
{
    int low = k >= 31 ? j : j & ((1 << k) - 1);
    int src = tutti__mod(r - low, n), dst = (src + j) % n;
    return (size_t)m[(size_t)src * (size_t)n + (size_t)dst];
}

static int nrounds(int n)
{
    int k = 0;
    while ((1 << k) < n) {
        k++;
    }
    return k;
}

/* The elements rank r packs into its frame of round k. */
static size_t round_total(const uint64_t *m, int n, int r, int k)
{
    size_t t = 0;
    for (int j = 1; j < n; j++) {
        t += (j >> k) & 1 ? pos_size(m, n, r, j, k) : 0;
    }
    return t;
}

/* Does every rank's frame of every round fit one chunk? The same answer on every rank. */
static int fits(const uint64_t *m, int n, size_t chunk)
{
    for (int r = 0; r < n; r++) {
        for (int k = 0; k < nrounds(n); k++) {
            if (round_total(m, n, r, k) > chunk) {
                return 0;
            }
        }
    }
    return 1;
}

static int check(const struct tutti_plan *plan, const struct tutti_op_desc *op,
                 const struct tutti_plan_params *pp, char *why, size_t len)
{
    const uint64_t *m = matrix(plan);
    int n = pp->nranks, r = pp->rank;
    for (int j = 0; j < n; j++) {
        if (m[(size_t)j * (size_t)n + (size_t)r] != op->v->rcounts[j]) {
            snprintf(why, len,
                     "mismatched calls: in alltoallv #%llu (bruck) rank %d sends rank %d %llu x "
                     "%s, where rank %d expects %zu",
                     (unsigned long long)op->seq, j, r,
                     (unsigned long long)m[(size_t)j * (size_t)n + (size_t)r],
                     tutti_datatype_name(op->dt), r, op->v->rcounts[j]);
            return -1;
        }
    }
    return 0;
}

/* Round k's packed frames: one call each way, sender and receiver in the fingerprint. */
static int add_round_call(struct tutti_plan *plan, const struct tutti_op_desc *op, size_t count,
                          int from, int to)
{
    struct tutti_op_desc c = *op;
    c.block = 1;
    c.count = count;
    c.fp_a = from;
    c.fp_b = to;
    return tutti__plan_add_call(plan, &c);
}

/* Pack, send, receive and unpack round k; positions at pos[j] in buffer tmp. */
static int round_steps(struct tutti_plan *plan, const struct tutti_op_desc *op,
                       const struct tutti_plan_params *pp, const size_t *pos, uint32_t tmp,
                       size_t stage_s, size_t stage_r, int k)
{
    const uint64_t *m = matrix(plan);
    int n = pp->nranks, r = pp->rank, b = 1 << k, to = (r + b) % n, from = tutti__mod(r - b, n);
    size_t at = 0, ts = round_total(m, n, r, k), tr = round_total(m, n, from, k);
    tutti__plan_set_peers(plan, -1, -1);
    for (int j = 1; j < n; j++) {
        size_t c = (j >> k) & 1 ? pos_size(m, n, r, j, k) : 0;
        if (c > 0 && tutti__plan_add_step(plan, TUTTI_STEP_COPY, tmp, pos[j], tmp, stage_s + at, c,
                                          0) != 0) {
            return -1;
        }
        at += c;
    }
    if (add_round_call(plan, op, ts, r, to) != 0) {
        return -1;
    }
    tutti__plan_set_peers(plan, to, -1);
    if (tutti__plan_add_step(plan, TUTTI_STEP_SEND, tmp, stage_s, TUTTI_BUF_NONE, 0, ts,
                             TUTTI_STEP_TOKEN) != 0 ||
        add_round_call(plan, op, tr, from, r) != 0) {
        return -1;
    }
    tutti__plan_set_peers(plan, -1, from);
    if (tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, tmp, stage_r, tr,
                             TUTTI_STEP_TOKEN) != 0) {
        return -1;
    }
    tutti__plan_set_peers(plan, -1, -1);
    at = 0;
    for (int j = 1; j < n; j++) {
        size_t c = (j >> k) & 1 ? pos_size(m, n, from, j, k) : 0;
        if (c > 0 && tutti__plan_add_step(plan, TUTTI_STEP_COPY, tmp, stage_r + at, tmp, pos[j], c,
                                          0) != 0) {
            return -1;
        }
        at += c;
    }
    return 0;
}

static int steps(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                 struct tutti_plan *plan, const size_t *pos, uint32_t tmp, size_t total,
                 size_t stage);

/* The data's plan from the count matrix (the second phase). */
static int data_plan(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                     struct tutti_plan *plan)
{
    const uint64_t *m = matrix(plan);
    int n = pp->nranks, r = pp->rank, rounds = nrounds(n);
    if (!fits(m, n, pp->chunk_elems)) {
        return tutti__alltoallv_pairwise(op, pp, plan);
    }
    /* Position j's room: its largest size over the rounds; then the two staging frames. */
    size_t *pos = malloc((size_t)n * sizeof(*pos)), total = 0, stage = 0;
    if (pos == NULL) {
        return -1;
    }
    for (int j = 0; j < n; j++) {
        size_t most = 0;
        for (int k = 0; k <= rounds; k++) {
            size_t c = pos_size(m, n, r, j, k);
            most = c > most ? c : most;
        }
        pos[j] = total;
        total += most;
    }
    for (int k = 0; k < rounds; k++) {
        size_t ts = round_total(m, n, r, k), tr = round_total(m, n, tutti__mod(r - (1 << k), n), k);
        stage = ts > stage ? ts : stage;
        stage = tr > stage ? tr : stage;
    }
    long tmp;
    int rc = 0;
    if (tutti__plan_scratch(plan, (total + 2 * stage) * tutti_datatype_size(op->dt)) != 0 ||
        (tmp = tutti__plan_add_buf(plan, plan->scratch)) < 0 ||
        tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
        free(pos);
        return -1;
    }
    rc = steps(op, pp, plan, pos, (uint32_t)tmp, total, stage);
    free(pos);
    return rc;
}

/* The data plan's steps: blocks into positions, the rounds, positions into the output. */
static int steps(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                 struct tutti_plan *plan, const size_t *pos, uint32_t tmp, size_t total,
                 size_t stage)
{
    const uint64_t *m = matrix(plan);
    int n = pp->nranks, r = pp->rank, rounds = nrounds(n);
    /* Every block out of the input first: in place, the output is the input. */
    for (int j = 1; j < n; j++) {
        if (tutti__plan_add_step(plan, TUTTI_STEP_COPY, TUTTI_BUF_SEND,
                                 tutti__op_sdispl(op, (r + j) % n), tmp, pos[j],
                                 pos_size(m, n, r, j, 0), 0) != 0) {
            return -1;
        }
    }
    if (tutti__coll_copy(plan, TUTTI_BUF_SEND, tutti__op_sdispl(op, r), TUTTI_BUF_RECV,
                         tutti__op_rdispl(op, r), tutti__op_rcount(op, r)) != 0) {
        return -1;
    }
    for (int k = 0; k < rounds; k++) {
        if (round_steps(plan, op, pp, pos, tmp, total, total + stage, k) != 0) {
            return -1;
        }
    }
    tutti__plan_set_peers(plan, -1, -1);
    for (int j = 1; j < n; j++) {
        int src = tutti__mod(r - j, n);
        if (tutti__plan_add_step(plan, TUTTI_STEP_COPY, tmp, pos[j], TUTTI_BUF_RECV,
                                 tutti__op_rdispl(op, src), tutti__op_rcount(op, src), 0) != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__alltoallv_bruck(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan)
{
    int n = pp->nranks;
    if (n == 1) {
        return tutti__alltoallv_pairwise(op, pp, plan); /* nothing to route */
    }
    /* The counts' exchange: n 64-bit counts a rank, as elements of the call's datatype. */
    size_t es = tutti_datatype_size(op->dt), per = (size_t)n * sizeof(uint64_t) / es;
    struct tutti_op_desc c = *op;
    c.block = 1;
    c.count = (size_t)n;
    c.fp_a = c.fp_b = -1;
    if (tutti__plan_aux(plan, (size_t)n * (size_t)n * sizeof(uint64_t)) != 0 ||
        tutti__plan_add_call(plan, &c) != 0) {
        return -1;
    }
    struct tutti_op_desc g = *op;
    g.coll = TUTTI_COLL_ALLGATHER;
    g.count = per;
    g.sendbuf = op->v->scounts;
    g.recvbuf = plan->aux;
    plan->bufs[TUTTI_BUF_SEND] = (char *)(uintptr_t)op->v->scounts;
    plan->bufs[TUTTI_BUF_RECV] = plan->aux;
    _Static_assert(sizeof(size_t) == sizeof(uint64_t), "counts travel as 64-bit words");
    if (tutti__allgather_bruck(&g, pp, plan) != 0) {
        return -1;
    }
    plan->then = data_plan;
    plan->then_check = check;
    return 0;
}
