/*
 * p2p_direct.c - point-to-point send or receive: the message is split over channels (both ends
 * compute the same split) and cut into slot-sized steps. Self-sends are resolved by the group
 * code into local copies, so here peer != rank. In a group's merged plan each call's steps
 * carry its own fingerprint (plan->calls).
 */
#include "coll/coll.h"
#include "base/util.h"

#include <stdint.h>
#include <stdlib.h>

int tutti__p2p_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan)
{
    int is_send = (op->coll == TUTTI_COLL_SEND);
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open = tutti__coll_open_lane(plan, op->count, pp, ch, is_send ? op->peer : -1,
                                         is_send ? -1 : op->peer, &choff, &chlen);
        if (open < 0) {
            return -1;
        }
        if (open == 0) {
            continue;
        }
        for (size_t lo = 0; lo < chlen; lo += pp->chunk_elems) {
            size_t len = tutti__chunk(chlen - lo, pp);
            int rc = is_send
                         ? tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, choff + lo,
                                                TUTTI_BUF_NONE, 0, len, TUTTI_STEP_STABLE)
                         : tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0,
                                                TUTTI_BUF_RECV, choff + lo, len, 0);
            if (rc != 0) {
                return -1;
            }
        }
    }
    return 0;
}

static size_t op_bytes(const struct tutti_op_desc *op)
{
    return op->count * tutti_datatype_size(op->dt);
}

/* Local copies for self-sends, matched with self-receives in call order. */
static int self_copies(const struct tutti_op_desc *const *ops, int n, int rank,
                       struct tutti_plan *plan)
{
    int si = 0, ri = 0, lane = 0;
    for (;;) {
        while (si < n && !(ops[si]->coll == TUTTI_COLL_SEND && ops[si]->peer == rank)) {
            si++;
        }
        while (ri < n && !(ops[ri]->coll == TUTTI_COLL_RECV && ops[ri]->peer == rank)) {
            ri++;
        }
        if (si == n && ri == n) {
            return 0;
        }
        if (si == n || ri == n || op_bytes(ops[si]) != op_bytes(ops[ri])) {
            return -2;
        }
        if (!lane && tutti__plan_add_lane(plan, -1, -1, 0) < 0) {
            return -1;
        }
        lane = 1;
        long s = tutti__plan_add_buf(plan, (void *)ops[si]->sendbuf);
        long r = tutti__plan_add_buf(plan, ops[ri]->recvbuf);
        if (s < 0 || r < 0 ||
            (ops[si]->sendbuf != ops[ri]->recvbuf &&
             tutti__plan_add_step(plan, TUTTI_STEP_COPY, (uint32_t)s, 0, (uint32_t)r, 0,
                                  op_bytes(ops[si]), 0) != 0)) {
            return -1;
        }
        si++;
        ri++;
    }
}

/* One lane per channel for all operations of one direction with one peer. */
static int peer_lanes(const struct tutti_op_desc *const *ops, int n, tutti_coll_t dir, int peer,
                      const struct tutti_plan_params *pp, struct tutti_plan *plan)
{
    int is_send = (dir == TUTTI_COLL_SEND);
    for (int ch = 0; ch < pp->nchannels; ch++) {
        int lane = 0;
        for (int i = 0; i < n; i++) {
            const struct tutti_op_desc *op = ops[i];
            size_t choff, chlen;
            if (op->coll != dir || op->peer != peer) {
                continue;
            }
            /* in the call's elements, as its plain form splits (tutti__p2p_direct), then bytes */
            size_t es = tutti_datatype_size(op->dt);
            size_t frame = TUTTI_MAX((size_t)1, pp->chunk_elems / es) * es;
            tutti__coll_channel_share(op->count, frame / es, pp->nchannels, ch, &choff, &chlen);
            choff *= es;
            chlen *= es;
            if (chlen == 0) {
                continue;
            }
            if (!lane &&
                tutti__plan_add_lane(plan, is_send ? peer : -1, is_send ? -1 : peer, ch) < 0) {
                return -1;
            }
            lane = 1;
            long b = tutti__plan_add_buf(plan, is_send ? (void *)op->sendbuf : op->recvbuf);
            if (b < 0) {
                return -1;
            }
            plan->cur_call = (uint32_t)i; /* its data carries call i's fingerprint */
            for (size_t lo = 0; lo < chlen; lo += frame) {
                size_t len = TUTTI_MIN(frame, chlen - lo);
                int rc = is_send
                             ? tutti__plan_add_step(plan, TUTTI_STEP_SEND, (uint32_t)b, choff + lo,
                                                    TUTTI_BUF_NONE, 0, len, TUTTI_STEP_STABLE)
                             : tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0,
                                                    (uint32_t)b, choff + lo, len, 0);
                if (rc != 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* Does the receive `r` write bytes that a send of the group reads? */
static int overlaps_a_send(const struct tutti_op_desc *const *ops, int n,
                           const struct tutti_op_desc *r)
{
    for (int j = 0; j < n; j++) {
        if (ops[j]->coll == TUTTI_COLL_SEND &&
            tutti__ranges_overlap(ops[j]->sendbuf, op_bytes(ops[j]), r->recvbuf, op_bytes(r))) {
            return 1;
        }
    }
    return 0;
}

/*
 * Receives whose destination overlaps a buffer some send of the group reads (the in-place
 * exchange sendbuf == recvbuf, a ring shift in place) land in the plan's scratch memory
 * instead; an after-all lane copies them into place once every send has read its data. So a
 * group behaves as if all sends read before any receive writes. view[i] is the op to build.
 */
static int stage_overlapping(const struct tutti_op_desc *const *ops, int n,
                             struct tutti_op_desc *copies, const struct tutti_op_desc **view,
                             struct tutti_plan *plan, int *nstaged_p)
{
    size_t total = 0;
    int nstaged = 0;
    for (int i = 0; i < n; i++) {
        view[i] = ops[i];
        if (ops[i]->coll == TUTTI_COLL_RECV && op_bytes(ops[i]) > 0 &&
            overlaps_a_send(ops, n, ops[i])) {
            copies[i] = *ops[i];
            copies[i].sendbuf = (const void *)(uintptr_t)total; /* offset, fixed below */
            total += (op_bytes(ops[i]) + 63) & ~(size_t)63;
            nstaged++;
        }
    }
    if (nstaged == 0) {
        *nstaged_p = 0;
        return 0;
    }
    if (tutti__plan_scratch(plan, total) != 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (ops[i]->coll == TUTTI_COLL_RECV && op_bytes(ops[i]) > 0 &&
            overlaps_a_send(ops, n, ops[i])) {
            copies[i].recvbuf = plan->scratch + (uintptr_t)copies[i].sendbuf;
            copies[i].sendbuf = NULL;
            view[i] = &copies[i];
        }
    }
    *nstaged_p = nstaged;
    return 0;
}

/* The after-all lane: staged receives into their destinations. */
static int unstage(const struct tutti_op_desc *const *ops, const struct tutti_op_desc **view, int n,
                   struct tutti_plan *plan)
{
    int lane = tutti__plan_add_lane(plan, -1, -1, 0);
    if (lane < 0) {
        return -1;
    }
    plan->lanes[lane].after_all = 1;
    for (int i = 0; i < n; i++) {
        if (view[i] == ops[i]) {
            continue;
        }
        long s = tutti__plan_add_buf(plan, view[i]->recvbuf);
        long d = tutti__plan_add_buf(plan, ops[i]->recvbuf);
        if (s < 0 || d < 0 ||
            tutti__plan_add_step(plan, TUTTI_STEP_COPY, (uint32_t)s, 0, (uint32_t)d, 0,
                                 op_bytes(ops[i]), 0) != 0) {
            return -1;
        }
    }
    return 0;
}

static int build_lanes(const struct tutti_op_desc *const *ops, int n,
                       const struct tutti_plan_params *pp, struct tutti_plan *plan)
{
    int rc = self_copies(ops, n, pp->rank, plan);
    if (rc != 0) {
        return rc;
    }
    for (int peer = 0; peer < pp->nranks; peer++) {
        if (peer == pp->rank) {
            continue;
        }
        if (peer_lanes(ops, n, TUTTI_COLL_SEND, peer, pp, plan) != 0 ||
            peer_lanes(ops, n, TUTTI_COLL_RECV, peer, pp, plan) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The plan as it is, when it was built complete from the same calls and params (a loop of the
 * same exchange plans once): each call takes the new one's number (its fingerprint). */
static int reuse(const struct tutti_op_desc *const *ops, int n, const struct tutti_plan_params *pp,
                 struct tutti_plan *plan)
{
    if (!plan->reusable_p2p || plan->ncalls != (uint32_t)n ||
        !tutti__plan_same_params(pp, &plan->built_pp)) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (!tutti__plan_same_op(ops[i], &plan->calls[i])) {
            return 0;
        }
    }
    for (int i = 0; i < n; i++) {
        plan->calls[i] = *ops[i];
    }
    return 1;
}

int tutti__p2p_group_build(const struct tutti_op_desc *const *ops, int n,
                           const struct tutti_plan_params *pp, struct tutti_plan *plan)
{
    if (reuse(ops, n, pp, plan)) {
        return 0;
    }
    plan->reusable = plan->reusable_p2p = 0; /* its storage may hold another plan: gone now */
    plan->gen = tutti__plan_next_gen();
    struct tutti_op_desc whole = {
        .coll = TUTTI_COLL_SEND, .dt = TUTTI_UINT8, .root = -1, .peer = -1};
    if (tutti__plan_reset(plan, &whole) != 0) {
        return -1;
    }
    plan->algo = "direct";
    for (int i = 0; i < n; i++) { /* plan->calls[i] is ops[i]: each keeps its fingerprint */
        if (tutti__plan_add_call(plan, ops[i]) != 0) {
            return -1;
        }
    }
    struct tutti_op_desc *copies = malloc((size_t)n * sizeof(*copies));
    const struct tutti_op_desc **view = malloc((size_t)n * sizeof(*view));
    int nstaged = 0;
    int rc = (copies == NULL || view == NULL) ? -1 : 0;
    if (rc == 0) {
        rc = stage_overlapping(ops, n, copies, view, plan, &nstaged);
    }
    if (rc == 0) {
        rc = build_lanes((const struct tutti_op_desc *const *)view, n, pp, plan);
    }
    if (rc == 0 && nstaged > 0) {
        rc = unstage(ops, view, n, plan);
    }
    free(copies);
    free(view);
    if (rc == 0) {
        tutti__plan_finish(plan);
        plan->built_pp = *pp;
        plan->reusable_p2p = 1;
    }
    return rc;
}
