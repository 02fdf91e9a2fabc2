/*
 * exec.c - runs the steps of a plan over slot FIFOs. A step runs only when every slot it needs
 * is available (the received one and the one to send), then does its data movement in one pass
 * (reduce-and-copy fused), posts and releases. Lanes are independent: one stalled lane never
 * stops another from moving.
 */
#include "exec/exec.h"
#include "base/check.h"
#include "exec/fabric.h"
#include "exec/connect.h"
#include "exec/op.h"
#include "base/util.h"
#include "exec/fill.h"
#include "exec/fp.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Add (peer, channel) to the plan's needs unless it is there already. */
static tutti_status_t need(struct tutti_exec *ex, int peer, int channel)
{
    for (int i = ex->nneeds - 1; i >= 0; i--) {
        if (ex->needs[i].peer == peer && ex->needs[i].channel == channel) {
            return TUTTI_OK;
        }
    }
    if (ex->nneeds == ex->needs_cap) {
        int cap = ex->needs_cap == 0 ? 8 : ex->needs_cap * 2;
        struct tutti_exec_need *n = realloc(ex->needs, (size_t)cap * sizeof(*n));
        struct tutti_tconn **c = realloc(ex->conns, (size_t)cap * sizeof(*c));
        if (n != NULL) {
            ex->needs = n;
        }
        if (c != NULL) {
            ex->conns = c;
        }
        if (n == NULL || c == NULL) {
            return TUTTI_ERR_NO_MEMORY;
        }
        ex->needs_cap = cap;
    }
    ex->needs[ex->nneeds] = (struct tutti_exec_need){peer, channel, -1};
    ex->conns[ex->nneeds++] = NULL;
    return TUTTI_OK;
}

/* The peer lane i alone receives from on its channel, or -1 (several peers, or another lane
 * receives from it too: its frames would not come in the order of this lane's steps). */
static int lane_sole_peer(const struct tutti_plan *p, int i)
{
    int peer = -1;
    for (size_t k = 0; k < p->lanes[i].nsteps; k++) {
        int r = p->lanes[i].steps[k].recv_peer;
        if (r >= 0 && peer >= 0 && r != peer) {
            return -1;
        }
        peer = r >= 0 ? r : peer;
    }
    for (int j = 0; j < p->nlanes && peer >= 0; j++) {
        if (j == i || p->lanes[j].channel != p->lanes[i].channel) {
            continue;
        }
        for (size_t k = 0; k < p->lanes[j].nsteps; k++) {
            if (p->lanes[j].steps[k].recv_peer == peer) {
                return -1;
            }
        }
    }
    return peer;
}

/* Index of the need (peer, channel); the caller knows it is there. */
static int need_index(const struct tutti_exec *ex, int peer, int channel)
{
    int i = ex->nneeds - 1;
    while (i > 0 && !(ex->needs[i].peer == peer && ex->needs[i].channel == channel)) {
        i--;
    }
    return i;
}

/* Record every distinct (peer, channel) the steps use, and the call of the first step that
 * receives from each. Steps of a lane mostly repeat their peers, so only a change of peer
 * costs a search. */
static tutti_status_t find_needs(struct tutti_exec *ex)
{
    const struct tutti_plan *p = ex->plan;
    ex->nneeds = 0;
    for (int i = 0; i < p->nlanes; i++) {
        const struct tutti_lane *l = &p->lanes[i];
        int last[2] = {-1, -1};
        for (size_t k = 0; k < l->nsteps; k++) {
            int peers[2] = {l->steps[k].send_peer, l->steps[k].recv_peer};
            for (int d = 0; d < 2; d++) {
                if (peers[d] >= 0 && peers[d] != last[d]) {
                    TUTTI_CHECK(need(ex, peers[d], l->channel));
                    last[d] = peers[d];
                    int n = need_index(ex, peers[d], l->channel);
                    if (d == 1 && ex->needs[n].call < 0) {
                        ex->needs[n].call = (int)l->steps[k].call;
                    }
                }
            }
        }
        ex->sole_peer[i] = lane_sole_peer(p, i);
    }
    return TUTTI_OK;
}

tutti_status_t tutti__exec_init(struct tutti_exec *ex, struct tutti_fabric *fab,
                                const struct tutti_plan *plan, uint64_t seq)
{
    memset(ex, 0, sizeof(*ex));
    return tutti__exec_reuse(ex, fab, plan, seq);
}

/* The fingerprints of the plan's calls (one for a plan of one call), and the collective
 * history that names this rank's earlier calls in a mismatch message. */
static tutti_status_t make_fps(struct tutti_exec *ex, const struct tutti_plan *plan)
{
    tutti__fp_make(&plan->op, ex->fab->rank, &ex->fp1);
    if (plan->op.coll != TUTTI_COLL_SEND && plan->op.coll != TUTTI_COLL_RECV) {
        tutti__fp_remember(ex->fab, &ex->fp1); /* the call as made (a blockwise one's blocks
                                                   have fingerprints of their own, below) */
    }
    if (plan->ncalls == 0) {
        ex->fps = &ex->fp1;
        return TUTTI_OK;
    }
    if (plan->gen != 0 && plan->gen == ex->fps_gen && plan->ncalls <= ex->fps_cap) {
        /* The plan of the last call again: its calls' fingerprints differ only in the sequence
         * number (the first word), which is the same for every call of a collective's plan
         * (a group's plan of sends and receives is built anew when its calls change). */
        for (uint32_t i = 0; i < plan->ncalls; i++) {
            ex->fps_mem[i].w[0] = htole64(plan->calls[i].seq);
        }
        ex->fps = ex->fps_mem;
        return TUTTI_OK;
    }
    ex->fps_gen = 0;
    if (plan->ncalls > ex->fps_cap) {
        struct tutti_fp *n = realloc(ex->fps_mem, (size_t)plan->ncalls * sizeof(*n));
        if (n == NULL) {
            return TUTTI_ERR_NO_MEMORY;
        }
        ex->fps_mem = n;
        ex->fps_cap = plan->ncalls;
    }
    for (uint32_t i = 0; i < plan->ncalls; i++) {
        tutti__fp_make(&plan->calls[i], ex->fab->rank, &ex->fps_mem[i]);
    }
    ex->fps = ex->fps_mem;
    ex->fps_gen = plan->gen;
    return TUTTI_OK;
}

/*
 * The call's size for tutti_tconn.ref_max (ex->ref_bytes): the bytes this rank sends plus
 * receives (a group's op has no count of its own). But SIZE_MAX (no references) for
 * - a reduction: there the receiver of a frame sent by reference would make the sender's copy
 *   besides its own reduction (into a slot, or into scratch that a local step then reduces)
 *   while the sender sits idle;
 * - a point-to-point call that only sends: by reference it would end only once the receiver's
 *   matching call has read the data, which the peer may issue only after its own send to this
 *   rank (what MPI calls an unsafe program, and what the FIFO's buffering lets through).
 *
 * And whether this rank only sends in the call (receives nothing: ex->sends_only) and, if so,
 * how large a call it is for tutti_tconn.lone_max (ex->lone_need). By reference such a rank waits
 * while its receivers make every copy; through the slots it makes one copy of each frame and they
 * make one. That pays from some size on, sooner where its receiver has other data to take (a
 * gather's root), later where the rank has copies of its own to make meanwhile (a scatter's
 * root):
 *   lone_need = sent * load / (sent + LONE_OWN_WEIGHT * own)
 * with load what its receiver takes in the call: sent times the plan's recv_load (its builder
 * knows: a gather's root takes nranks blocks). Measured
 * over shm on the VMs of 2026-12-01 and -02 (perf/results/2026-12-01-lone-sender.md,
 * 2026-12-02-lone-share.md), 2 ranks, time by reference with no frame shared over time through
 * the slots: a broadcast's root 0.85 at 512 KiB sent and 1.16 at 1 MiB; a gather's leaf (load
 * twice sent) 1.25 at 512 KiB sent; a scatter's root (its own block as large as what it sends)
 * 0.86 at 2 MiB sent, and 1.17-1.32 from 8 MiB with every third frame shared.
 */
#define LONE_OWN_WEIGHT 4.0

static void size_call(struct tutti_exec *ex, const struct tutti_plan *p)
{
    tutti_coll_t c = p->op.coll;
    size_t esize = ex->esize;
    ex->ref_bytes = SIZE_MAX;
    ex->sends_only = 0;
    ex->lone_need = 0;
    if (tutti__coll_reduces(c)) {
        return;
    }
    size_t n = 0, recvd = 0, own = 0;
    for (int i = 0; i < p->nlanes; i++) {
        for (size_t k = 0; k < p->lanes[i].nsteps; k++) {
            const struct tutti_step *s = &p->lanes[i].steps[k];
            n += s->count * (size_t)((s->send_peer >= 0) + (s->recv_peer >= 0));
            recvd += s->recv_peer >= 0;
            own += s->kind == TUTTI_STEP_COPY || s->kind == TUTTI_STEP_COPY_SEND ? s->count : 0;
        }
    }
    if (recvd == 0 && (c == TUTTI_COLL_SEND || c == TUTTI_COLL_RECV)) {
        return;
    }
    ex->ref_bytes = n * esize;
    ex->sends_only = recvd == 0;
    if (ex->sends_only && n > 0) {
        /* The receiver's load as the builder gave it: a gather's root takes every rank's block */
        double sent = (double)(n * esize), own_b = (double)(own * esize);
        double load = sent * (double)(p->recv_load > 1 ? p->recv_load : 1);
        ex->lone_need = (size_t)(sent * load / (sent + LONE_OWN_WEIGHT * own_b));
    }
}

tutti_status_t tutti__exec_reuse(struct tutti_exec *ex, struct tutti_fabric *fab,
                                 const struct tutti_plan *plan, uint64_t seq)
{
    ex->fab = fab;
    ex->plan = plan;
    ex->esize = tutti_datatype_size(plan->op.dt);
    ex->seq = seq;
    ex->phase = TUTTI_EXEC_CONNECT;
    ex->status = TUTTI_IN_PROGRESS;
    ex->lanes_left = ex->main_left = 0;
    ex->needs_progress = ex->uses_doorbell = 0;
    /* A result larger than the caches is not read back soon: writing it with non-temporal
     * stores saves the read that a cached store of a missing line costs. Not where a reduction
     * writes over its own input: there the ring has just read the lines its result lands on
     * (a 2-rank 256 MiB in-place all-reduce took 32 ms streamed against 27-29 cached, in two
     * launches each; its launches are two-speed, 24-26 or 29-31 ms, so that is not settled). */
    size_t send_bytes = 0, result_bytes = 0;
    if (fab->cfg.nt_min > 0) {
        tutti__op_extents(fab, &plan->op, &send_bytes, &result_bytes);
    }
    ex->nt_dst =
        fab->cfg.nt_min > 0 && result_bytes >= fab->cfg.nt_min &&
        !(tutti__coll_reduces(plan->op.coll) &&
          tutti__ranges_overlap(plan->op.sendbuf, send_bytes, plan->op.recvbuf, result_bytes));
    size_call(ex, plan);
    ex->shared = 0;
    ex->landed = 0;
    /* A pre-multiplied sum's scalar, read now: a call with it in memory reads it as it runs. */
    ex->premul = (int)plan->op.op == TUTTI_OP_PREMUL && tutti__coll_reduces(plan->op.coll);
    ex->bool_input = plan->op.dt == TUTTI_BOOL && tutti__coll_reduces(plan->op.coll);
    if (ex->premul) {
        const void *c = plan->op.scalar_ptr != NULL ? plan->op.scalar_ptr : &plan->op.scalar;
        memcpy(ex->scalar, c, ex->esize);
    }
    for (int i = 0; i < plan->nlanes; i++) {
        ex->lanes_left += plan->lanes[i].nsteps > 0;
        ex->main_left += plan->lanes[i].nsteps > 0 && !plan->lanes[i].after_all;
    }
    tutti_status_t st = TUTTI_OK;
    if (plan->nlanes > ex->next_cap) {
        size_t nl = (size_t)plan->nlanes;
        size_t *n = realloc(ex->next, nl * sizeof(*n));
        ex->next = n != NULL ? n : ex->next;
        size_t *pl = realloc(ex->placed, nl * sizeof(*pl));
        ex->placed = pl != NULL ? pl : ex->placed;
        int *sp = realloc(ex->sole_peer, nl * sizeof(*sp));
        ex->sole_peer = sp != NULL ? sp : ex->sole_peer;
        st = n == NULL || pl == NULL || sp == NULL ? TUTTI_ERR_NO_MEMORY : TUTTI_OK;
        if (st == TUTTI_OK) {
            ex->next_cap = plan->nlanes;
            ex->needs_gen = 0; /* sole_peer must be filled for the new lanes */
        }
    }
    if (st == TUTTI_OK && plan->nlanes > 0) { /* arrays are still NULL before any lane */
        memset(ex->next, 0, (size_t)plan->nlanes * sizeof(*ex->next));
        memset(ex->placed, 0, (size_t)plan->nlanes * sizeof(*ex->placed));
    }
    if (st == TUTTI_OK) {
        st = make_fps(ex, plan);
    }
    if (st == TUTTI_OK) {
        /* The same plan again (plan->gen is unique to one build): its needs and connections
         * are those found last time. */
        if (plan->gen == 0 || plan->gen != ex->needs_gen) {
            ex->needs_gen = 0;
            st = find_needs(ex);
            ex->needs_gen = st == TUTTI_OK ? plan->gen : 0;
        }
    }
    if (st != TUTTI_OK) {
        return tutti__set_error(tutti__fabric_err(fab), st, "no memory to run a %s",
                                tutti__coll_name(plan->op.coll));
    }
    return TUTTI_OK;
}

void tutti__exec_fini(struct tutti_exec *ex)
{
    free(ex->next);
    free(ex->placed);
    free(ex->sole_peer);
    free(ex->needs);
    free(ex->conns);
    free(ex->fps_mem);
    ex->fps_mem = NULL;
    ex->fps = NULL;
    ex->fps_cap = 0;
    ex->fps_gen = 0;
    ex->next = NULL;
    ex->placed = NULL;
    ex->sole_peer = NULL;
    ex->needs = NULL;
    ex->conns = NULL;
    ex->next_cap = ex->needs_cap = ex->nneeds = 0;
}

/*
 * While some connections are still missing, look at what already arrived on the others that
 * this operation receives from: data of another call means the calls differ, and the
 * connection this rank waits for may never come (the peer's call does not need it), so say so
 * now instead of timing out; so does a peer's abort notice or its end (this operation needs
 * its data). Only the next slot is looked at, and only its fingerprint.
 */
static tutti_status_t check_arrived(struct tutti_exec *ex)
{
    for (int i = 0; i < ex->nneeds; i++) {
        struct tutti_tconn *c = ex->conns[i];
        if (c == NULL || ex->needs[i].call < 0) {
            continue;
        }
        const struct tutti_fp *want = &ex->fps[ex->needs[i].call], *got;
        const void *buf;
        size_t len;
        tutti_status_t st = c->ops->recv_peek(c, &buf, &len, &got);
        TUTTI_CHECK(st);
        if (st == TUTTI_OK && !tutti__fp_eq(got, want)) {
            return tutti__fp_mismatch(ex->fab, c->peer, got, want);
        }
    }
    return TUTTI_OK;
}

tutti_status_t tutti__exec_check_foreign(struct tutti_exec *ex)
{
    const struct tutti_plan *plan = ex->plan;
    struct tutti_fabric *c = ex->fab;
    struct tutti_fp_desc mine, d;
    char why[160];
    if (plan == NULL || plan->ncalls != 0 || plan->op.coll == TUTTI_COLL_SEND ||
        plan->op.coll == TUTTI_COLL_RECV ||
        tutti__fp_decode(&ex->fp1, c->nranks, &mine, why, sizeof(why)) != 0) {
        return TUTTI_OK; /* calls of their own (a group, blocks) or a message: not judged here */
    }
    for (int peer = 0; peer < c->nranks; peer++) {
        for (int ch = 0; ch < TUTTI_MAX_CHANNELS; ch++) {
            struct tutti_tconn *t = c->net.conns[(size_t)peer * TUTTI_MAX_CHANNELS + (size_t)ch];
            if (t == NULL || peer == c->rank || t->ops->peek_fp == NULL) {
                continue;
            }
            /* a look only (a peer that finished and left is no news: the steps that need it
             * say so), never a read */
            const struct tutti_fp *got = NULL;
            if (t->ops->peek_fp(t, &got) != TUTTI_OK || tutti__fp_eq(got, &ex->fp1)) {
                continue; /* nothing there, or this call's own data, for a later step */
            }
            if (tutti__fp_decode(got, c->nranks, &d, why, sizeof(why)) == 0 &&
                d.coll != TUTTI_COLL_SEND && d.seq == mine.seq) {
                return tutti__fp_mismatch(c, peer, got, &ex->fp1);
            }
        }
    }
    return TUTTI_OK;
}

/* Connect every (peer, channel) the steps need. OK once all are there. */
static tutti_status_t connect_needs(struct tutti_exec *ex)
{
    int missing = 0;
    for (int i = 0; i < ex->nneeds; i++) {
        if (ex->conns[i] == NULL) {
            TUTTI_CHECK(tutti__fabric_conn(ex->fab, ex->needs[i].peer, ex->needs[i].channel,
                                           &ex->conns[i]));
            missing += (ex->conns[i] == NULL);
        }
    }
    if (missing > 0) {
        TUTTI_CHECK(check_arrived(ex));
        return TUTTI_IN_PROGRESS;
    }
    for (int i = 0; i < ex->nneeds; i++) {
        if (ex->conns[i]->ops->flags & TUTTI_TRANSPORT_NEEDS_PROGRESS) {
            ex->needs_progress = 1;
        } else {
            ex->uses_doorbell = 1;
        }
    }
    return TUTTI_OK;
}

/* The connection of a step's peer on the lane's channel (connected before steps run). */
static inline struct tutti_tconn *conn_of(const struct tutti_exec *ex, int peer, int channel)
{
    return ex->fab->net.conns[(size_t)peer * TUTTI_MAX_CHANNELS + (size_t)channel];
}

static tutti_status_t size_mismatch(struct tutti_exec *ex, int peer, size_t got, size_t want)
{
    char who[128];
    tutti__tpeer_name(ex->fab->net.targs.peers, peer, who, sizeof(who));
    /* The fingerprints matched: the same call, planned differently (settings that choose
     * the algorithm, such as TUTTI_ALGO, differ between ranks). */
    return tutti__set_error(tutti__fabric_err(ex->fab), TUTTI_ERR_INVALID_USAGE,
                            "%s #%llu: received %zu bytes from %s where %zu were expected: the "
                            "calls match, their plans do not (do TUTTI_* settings differ between "
                            "ranks?)",
                            tutti__coll_name(ex->plan->op.coll), (unsigned long long)ex->seq, got,
                            who, want);
}

/* Where (buf, off) is: NULL for no buffer (a token's may be NULL: its call moves no data). */
static inline char *at(const struct tutti_exec *ex, uint32_t buf, size_t off)
{
    char *base = buf != TUTTI_BUF_NONE ? ex->plan->bufs[buf] : NULL;
    return base != NULL ? base + off * ex->esize : NULL;
}

/*
 * The data movement of a step whose reduction is a pre-multiplied sum and whose source is the
 * input: the input is scaled as it is read, once per element (every other read of a rank's
 * contribution is of a copy or partial sum made from such a read), and otherwise it is a sum.
 */
static void premul_step(const struct tutti_exec *ex, const struct tutti_step *s, char *dst,
                        const char *src, const void *rslot, void *sslot)
{
    tutti_datatype_t dt = ex->plan->op.dt;
    const void *c = ex->scalar;
    switch ((tutti_step_kind_t)s->kind) {
    case TUTTI_STEP_COPY:
        tutti__scale(dst, NULL, src, s->count, dt, c);
        break;
    case TUTTI_STEP_REDUCE:
        tutti__reduce_premul(dst, NULL, dst, src, s->count, dt, c);
        break;
    case TUTTI_STEP_SEND:
        tutti__scale(sslot, NULL, src, s->count, dt, c);
        break;
    case TUTTI_STEP_COPY_SEND:
        tutti__scale(dst, sslot, src, s->count, dt, c);
        break;
    case TUTTI_STEP_RECV_REDUCE_SEND:
        tutti__reduce_premul(sslot, NULL, rslot, src, s->count, dt, c);
        break;
    case TUTTI_STEP_RECV_REDUCE_COPY:
        tutti__reduce_premul(dst, NULL, rslot, src, s->count, dt, c);
        break;
    case TUTTI_STEP_RECV_REDUCE_COPY_SEND:
        if (ex->nt_dst) {
            tutti__reduce_premul(sslot, NULL, rslot, src, s->count, dt, c);
            tutti__copy_nt(dst, sslot, s->count * ex->esize);
        } else {
            tutti__reduce_premul(dst, sslot, rslot, src, s->count, dt, c);
        }
        break;
    default: /* the kinds that do not read the input: run_step's own */
        break;
    }
}

/* Does step s read this rank's input under a pre-multiplied sum (premul_step moves it)? */
static inline int scales(const struct tutti_exec *ex, const struct tutti_step *s)
{
    return ex->premul && s->src_buf == TUTTI_BUF_SEND && s->count > 0 &&
           s->kind != TUTTI_STEP_RECV && s->kind != TUTTI_STEP_RECV_COPY_SEND;
}

/* Whether the connection's fill clock times a frame of `bytes` bytes (exec/fill.c). */
static int fill_timed(const struct tutti_tconn *sc, size_t bytes)
{
    return sc->fill.mode == TUTTI_FILL_TIMED && bytes >= TUTTI_FILL_TIMED_MIN;
}

/* Whether a frame is written into the send slot on its own (fill_slot): where the connection
 * streams its slots, or times the frame. */
static int fill_apart(const struct tutti_tconn *sc, size_t bytes)
{
    return sc->fill.stream || fill_timed(sc, bytes);
}

/* Write a frame into send slot sslot, streamed or not as the connection's fill clock says, and
 * tell the clock how long a timed one took. */
static void fill_slot(struct tutti_tconn *sc, void *sslot, const void *src, size_t bytes)
{
    int timed = fill_timed(sc, bytes);
    int streamed = timed ? tutti__fill_pick(&sc->fill) : (int)sc->fill.stream;
    int64_t t0 = timed ? tutti__now_ns() : 0;
    if (streamed) {
        tutti__copy_nt(sslot, src, bytes);
    } else {
        tutti__copy2(sslot, NULL, src, bytes);
    }
    if (timed) {
        tutti__fill_note(&sc->fill, streamed, bytes, tutti__now_ns() - t0);
    }
}

/* Run one step if its slots are available: OK (done), IN_PROGRESS (not yet) or an error. */
static tutti_status_t run_step(struct tutti_exec *ex, int channel, const struct tutti_step *s)
{
    const struct tutti_plan *p = ex->plan;
    size_t bytes = s->count * ex->esize;
    const char *src = at(ex, s->src_buf, s->src_off);
    char *dst = at(ex, s->dst_buf, s->dst_off);
    int divisor = s->final ? p->divisor : 1;
    tutti_op_t rop = ex->premul ? TUTTI_SUM : p->op.op; /* what partial sums reduce with */
    struct tutti_tconn *rc = s->recv_peer >= 0 ? conn_of(ex, s->recv_peer, channel) : NULL;
    struct tutti_tconn *sc = s->send_peer >= 0 ? conn_of(ex, s->send_peer, channel) : NULL;
    const void *rslot = NULL;
    void *sslot = NULL;
    size_t rlen = 0, scap = 0;
    tutti_status_t st;

    if ((s->kind == TUTTI_STEP_COPY || s->kind == TUTTI_STEP_REDUCE) && scales(ex, s)) {
        premul_step(ex, s, dst, src, NULL, NULL);
        return TUTTI_OK;
    }
    if (s->kind == TUTTI_STEP_COPY && ex->bool_input && s->src_buf == TUTTI_BUF_SEND) {
        /* a rank's bool input copied as its contribution: made 0 or 1 (x or x), as every
         * reduction's result is; on one rank this is the whole result */
        tutti__reduce(dst, NULL, src, src, s->count, TUTTI_BOOL, TUTTI_BOR, 1);
        return TUTTI_OK;
    }
    switch ((tutti_step_kind_t)s->kind) {
    case TUTTI_STEP_COPY:
        if (ex->nt_dst && s->dst_buf == TUTTI_BUF_RECV) {
            tutti__copy_nt(dst, src, bytes);
        } else {
            tutti__copy2(dst, NULL, src, bytes);
        }
        return TUTTI_OK;
    case TUTTI_STEP_REDUCE:
        tutti__reduce(dst, NULL, s->swap ? src : dst, s->swap ? dst : src, s->count, p->op.dt, rop,
                      divisor);
        return TUTTI_OK;
    default:
        break;
    }
    const struct tutti_fp *fp = &ex->fps[s->call];
    if (rc != NULL) {
        const struct tutti_fp *rfp;
        st = rc->ops->recv_peek(rc, &rslot, &rlen, &rfp);
        if (st != TUTTI_OK) {
            return st;
        }
        /* Before anything reads the data: is it from the same call on the peer? */
        if (!tutti__fp_eq(rfp, fp)) {
            return tutti__fp_mismatch(ex->fab, s->recv_peer, rfp, fp);
        }
        if (rlen != bytes) {
            return size_mismatch(ex, s->recv_peer, rlen, bytes);
        }
    }
    if (sc != NULL) {
        sc->next_bytes = bytes;
        st = sc->ops->send_acquire(sc, &sslot, &scap);
        if (st != TUTTI_OK) {
            return st;
        }
    }
    /* Zero copy: a stable result in user memory travels from there (TCP; shm lets the receiver
     * read it there) instead of a slot. */
    const void *ref = NULL;
    if (sslot != NULL && s->stable && bytes > 0 && !scales(ex, s) &&
        (sc->ops->flags & TUTTI_TRANSPORT_SEND_REF) != 0 &&
        (sc->ref_max == 0 || ex->ref_bytes <= sc->ref_max) && bytes >= sc->ref_min) {
        int from_src = s->kind == TUTTI_STEP_SEND || s->kind == TUTTI_STEP_COPY_SEND;
        ref = from_src ? (const void *)src : (const void *)dst;
        if (s->kind == TUTTI_STEP_RECV_REDUCE_SEND) {
            ref = NULL; /* its result exists only in the slot */
        }
        /* A rank that only sends would wait for its receivers' reads. Where the connection
         * has a size limit for that (shm: the kernel's copy costs more than a memcpy), every
         * frame of a larger call goes through the slots, and none of a smaller one; elsewhere
         * it copies every share_every-th frame into the slot itself, which its receiver copies
         * out faster than it reads the sender's memory (shm: TUTTI_SHM_CMA_SHARE). */
        if (ex->sends_only &&
            (sc->lone_max != 0 ? ex->lone_need > sc->lone_max
                               : sc->share_every != 0 && ++ex->shared % sc->share_every == 0)) {
            ref = NULL;
        }
    }
    const void *a = s->swap ? (const void *)src : rslot, *b = s->swap ? rslot : (const void *)src;
    if (bytes == 0) {
        goto post; /* a token: only its fingerprint travels */
    }
    if (scales(ex, s)) {
        premul_step(ex, s, dst, src, rslot, sslot);
        goto post;
    }
    /* The slot written on its own, from where the data is cached, as the connection's clock
     * says (exec/fill.c), rather than in the same pass as the user's buffer. */
    int apart = sslot != NULL && ref == NULL && fill_apart(sc, bytes);
    switch ((tutti_step_kind_t)s->kind) {
    case TUTTI_STEP_SEND:
        if (ref == NULL) {
            fill_slot(sc, sslot, src, bytes);
        }
        break;
    case TUTTI_STEP_COPY_SEND:
        if (ex->nt_dst && (ref != NULL || apart)) {
            tutti__copy_nt(dst, src, bytes);
        } else {
            tutti__copy2(dst, ref != NULL || apart ? NULL : sslot, src, bytes);
        }
        if (apart) {
            fill_slot(sc, sslot, src, bytes);
        }
        break;
    case TUTTI_STEP_RECV:
        if (rslot == dst) {
            ex->landed = 1;
            break; /* placed: the transport received it there */
        }
        if (ex->nt_dst) {
            tutti__copy_nt(dst, rslot, bytes);
        } else {
            tutti__copy2(dst, NULL, rslot, bytes);
        }
        break;
    case TUTTI_STEP_RECV_REDUCE_SEND:
        tutti__reduce(sslot, NULL, a, b, s->count, p->op.dt, rop, divisor);
        break;
    case TUTTI_STEP_RECV_REDUCE_COPY:
        tutti__reduce(dst, NULL, a, b, s->count, p->op.dt, rop, divisor);
        break;
    case TUTTI_STEP_RECV_REDUCE_COPY_SEND:
        if (ref != NULL || apart) {
            tutti__reduce(dst, NULL, a, b, s->count, p->op.dt, rop, divisor);
            if (apart) {
                fill_slot(sc, sslot, dst, bytes);
            }
        } else if (ex->nt_dst) {
            /* result into the slot (read again by the peer), then streamed to the user */
            tutti__reduce(sslot, NULL, a, b, s->count, p->op.dt, rop, divisor);
            tutti__copy_nt(dst, sslot, bytes);
        } else {
            tutti__reduce(dst, sslot, a, b, s->count, p->op.dt, rop, divisor);
        }
        break;
    case TUTTI_STEP_RECV_COPY_SEND:
        if (rslot == dst) { /* placed: it is in dst already */
            ex->landed = 1;
            if (ref == NULL) {
                fill_slot(sc, sslot, dst, bytes);
            }
        } else if ((ref != NULL || apart) && ex->nt_dst) {
            if (apart) { /* from the peer's slot: a streamed result is not read back */
                fill_slot(sc, sslot, rslot, bytes);
            }
            tutti__copy_nt(dst, rslot, bytes);
        } else if (ref != NULL || apart) {
            tutti__copy2(dst, NULL, rslot, bytes);
            if (apart) {
                fill_slot(sc, sslot, dst, bytes);
            }
        } else if (ex->nt_dst) {
            tutti__copy2(sslot, NULL, rslot, bytes);
            tutti__copy_nt(dst, sslot, bytes);
        } else {
            tutti__copy2(dst, sslot, rslot, bytes);
        }
        break;
    default:
        return tutti__set_error(tutti__fabric_err(ex->fab), TUTTI_ERR_INTERNAL, "bad step kind %d",
                                s->kind);
    }
post:
    if (ref != NULL) {
        TUTTI_CHECK(sc->ops->send_post_ref(sc, ref, bytes, fp));
    } else if (sslot != NULL) {
        TUTTI_CHECK(sc->ops->send_post(sc, bytes, fp));
    }
    if (rslot != NULL) {
        TUTTI_CHECK(rc->ops->recv_release(rc));
    }
    return TUTTI_OK;
}

/* Has everything posted left the process? Sends may still read user memory until then. */
static tutti_status_t all_flushed(struct tutti_exec *ex, int *done_p)
{
    *done_p = 1;
    for (int i = 0; i < ex->nneeds && *done_p; i++) {
        TUTTI_CHECK(ex->conns[i]->ops->flushed(ex->conns[i], done_p));
    }
    return TUTTI_OK;
}

/* Frames placed ahead of a lane at most (a transport's receive window is usually smaller). */
#define PLACE_AHEAD_MAX 16

/* Can step s take its received data where the transport put it (it stores it unchanged)? */
static int placeable(const struct tutti_step *s)
{
    return (s->kind == TUTTI_STEP_RECV || s->kind == TUTTI_STEP_RECV_COPY_SEND) &&
           s->dst_buf != TUTTI_BUF_NONE && s->count > 0;
}

/*
 * Tell the transport where lane i's coming receives go, so that TCP reads them straight into
 * the user buffer instead of a slot (one copy less). Only for a lane that alone receives from
 * its peer on its channel: its k-th receiving step then takes the k-th frame.
 */
static void place_ahead(struct tutti_exec *ex, int i)
{
    const struct tutti_lane *l = &ex->plan->lanes[i];
    int peer = ex->sole_peer[i];
    if (peer < 0) {
        return;
    }
    struct tutti_tconn *c = conn_of(ex, peer, l->channel);
    if ((c->ops->flags & TUTTI_TRANSPORT_RECV_PLACE) == 0) {
        return;
    }
    uint32_t ahead = 0;
    size_t j = ex->next[i];
    for (; j < l->nsteps && ahead < PLACE_AHEAD_MAX; j++) {
        const struct tutti_step *s = &l->steps[j];
        if (s->recv_peer < 0) {
            continue;
        }
        if (j >= ex->placed[i] && placeable(s)) {
            char *dst = ex->plan->bufs[s->dst_buf] + s->dst_off * ex->esize;
            if (c->ops->recv_place(c, ahead, dst, s->count * ex->esize, &ex->fps[s->call]) !=
                TUTTI_OK) {
                break; /* beyond the receive window: later */
            }
        }
        ahead++;
    }
    ex->placed[i] = j;
}

static tutti_status_t run_lanes(struct tutti_exec *ex, int *progress_p)
{
    int flushed = -1; /* asked once, when an after-all lane could start */
    for (int i = 0; i < ex->plan->nlanes; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        size_t *next = &ex->next[i];
        if (*next == l->nsteps || (l->after_all && ex->main_left > 0)) {
            continue;
        }
        if (l->after_all && flushed < 0) {
            TUTTI_CHECK(all_flushed(ex, &flushed));
        }
        if (l->after_all && !flushed) {
            continue; /* it overwrites what a send in flight may still be reading */
        }
        while (*next < l->nsteps) {
            if (ex->placed[i] <= *next) {
                /* Before the step peeks: shm reads a frame sent by reference at the peek,
                 * into the place given by then (TCP places frames not yet begun). */
                place_ahead(ex, i);
            }
            tutti_status_t st = run_step(ex, l->channel, &l->steps[*next]);
            if (st == TUTTI_IN_PROGRESS) {
                if (ex->placed[i] < l->nsteps) {
                    place_ahead(ex, i);
                }
                break;
            }
            if (st != TUTTI_OK) {
                return st;
            }
            (*next)++;
            *progress_p = 1;
            if (l->steps[*next - 1].recv_peer >= 0 && ex->placed[i] < l->nsteps) {
                /* The step freed a receive slot: place the frame that takes it next, now,
                 * before TCP reads its header into the slot (16 MiB send/recv over TCP: 40% of
                 * the frames landed in slots and were copied again when this waited for the
                 * lane to reach its last placed step; 2-6% now). */
                place_ahead(ex, i);
            }
            if (ex->landed) {
                /* The transport did the copy (shm: a read from the sender, the longest step
                 * there is): let the other lanes post what the peers wait for first. */
                ex->landed = 0;
                break;
            }
        }
        if (*next == l->nsteps) {
            ex->lanes_left--;
            ex->main_left -= !l->after_all;
        }
    }
    return TUTTI_OK;
}

static tutti_status_t progress_conns(struct tutti_exec *ex, int *progress_p)
{
    for (int i = 0; ex->needs_progress && i < ex->nneeds; i++) {
        struct tutti_tconn *c = ex->conns[i];
        int moved = 0;
        TUTTI_CHECK(c->ops->progress(c, &moved));
        *progress_p |= moved;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__exec_advance(struct tutti_exec *ex, int *progress_p)
{
    *progress_p = 0;
    if (ex->phase == TUTTI_EXEC_CONNECT) {
        tutti_status_t st = connect_needs(ex);
        if (st != TUTTI_OK) {
            return st;
        }
        ex->phase = TUTTI_EXEC_RUN;
        *progress_p = 1;
    }
    if (ex->phase == TUTTI_EXEC_RUN) {
        /* The lanes first: a post sends at once and a receive reads its socket while its slot
         * is not there, so an operation that completes here (a broadcast's root over TCP)
         * makes no read that finds nothing. The transports' own progress (reading ahead,
         * sends that queued) runs for one that waits. */
        TUTTI_CHECK(run_lanes(ex, progress_p));
        if (ex->lanes_left > 0) {
            TUTTI_CHECK(progress_conns(ex, progress_p));
            return TUTTI_IN_PROGRESS;
        }
        ex->phase = TUTTI_EXEC_FLUSH;
    }
    if (ex->phase == TUTTI_EXEC_FLUSH) {
        for (int i = 0; i < ex->nneeds; i++) {
            int done = 0;
            TUTTI_CHECK(ex->conns[i]->ops->flushed(ex->conns[i], &done));
            if (!done) {
                TUTTI_CHECK(progress_conns(ex, progress_p));
                return TUTTI_IN_PROGRESS;
            }
        }
        ex->phase = TUTTI_EXEC_DONE;
    }
    return TUTTI_OK;
}
