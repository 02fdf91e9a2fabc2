/*
 * win_run.c - the ranks' notes (win.h) and the path each collective takes through them.
 *
 * Once the set is ready, every call that might leave the ordinary path posts a note: one that the
 * carried path could take (win_carry.c), or an all-reduce once a window was shared. Which calls
 * those are follows from the call as its fingerprint describes it, so ranks that agree on their
 * calls post the same sequence of notes, and a note's number k names the same call on every
 * rank. A rank fills its note, waits for every peer's note k and takes the path its note names
 * only if every note names it; otherwise every such rank takes the ordinary path, as the ranks
 * whose notes said so (a group's calls, buffers outside windows) already did. Ranks that agree
 * on the path and not on the call get TUTTI_ERR_MISMATCH, every one of them, before a byte is
 * written. A rank whose call posts no note while a peer's does runs a different call: the
 * engine's watch (tutti__win_watch) finds the peer's note for that collective number and says
 * so, while the peer waits for a note that does not come.
 *
 * Waiting spins, then yields, and stops for an abort, a peer's failure notice, a peer's process
 * that is gone (TUTTI_ERR_REMOTE) or TUTTI_TIMEOUT (TUTTI_ERR_TIMEOUT).
 */
#include "win/win.h"
#include "base/check.h"
#include "base/env.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/util.h"
#include "exec/connect.h"
#include "exec/fail.h"
#include "exec/fp.h"
#include "tutti/coll.h"

#include <endian.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIVE_PERIOD_NS 1000000 /* how often a waiting rank looks whether its peer still runs */
#define NAP_NS         50000   /* a rank that waited past TUTTI_SPIN + TUTTI_YIELD naps this long */

/* The counter to wait on in rank r's page for note k: its stamp, or its depart. */
static _Atomic uint64_t *counter(struct tutti_winset *ws, int r, int depart, uint64_t k)
{
    return depart ? &ws->slots[r]->depart : &ws->slots[r]->note[k & 1].stamp;
}

/* The record tutti-info --hang reads, as the engine writes it for a call that failed waiting. */
static void hang_record(const struct tutti_winset *ws, const struct tutti_fabric *fab,
                        const struct tutti_op_desc *op, tutti_status_t st, int r)
{
    tutti_warn("tutti: hang rank=%d nranks=%d comm=%016llx pid=%d status=%s coll=%s seq=%llu "
               "seq_posted=%llu seq_done=%llu waiting_on=%d step=0/1 channel=-1",
               fab->rank, fab->nranks, (unsigned long long)fab->comm_id, (int)getpid(),
               tutti_status_name(st), tutti__coll_name(op->coll), (unsigned long long)ws->xseq,
               (unsigned long long)atomic_load(&fab->state.posted),
               (unsigned long long)atomic_load(&fab->state.completed), r);
}

/* The communicator's failure, or a peer's notice of one (or a dead peer) that the transports
 * hold, which then fails it with a hang record, as the engine does: TUTTI_OK when there is none.
 * r: the peer waited for. */
static tutti_status_t notices(struct tutti_winset *ws, struct tutti_fabric *fab,
                              const struct tutti_op_desc *op, int r)
{
    tutti_status_t st = tutti__fabric_health(fab);
    if (st == TUTTI_OK) {
        st = tutti__fabric_check(fab);
        if (tutti__status_is_fatal(st)) {
            hang_record(ws, fab, op, st, r);
            tutti__fabric_fail(fab, st, -1);
        }
    }
    return st;
}

/* Why waiting on rank r (counter c short of k) must stop, or TUTTI_OK: the communicator failed
 * or is aborted, r exited, or the timeout passed (the error recorded, in the engine's words, and
 * the communicator failed for all but the second). */
static tutti_status_t check_wait(struct tutti_winset *ws, struct tutti_fabric *fab,
                                 const struct tutti_op_desc *op, int r, int64_t start,
                                 _Atomic uint64_t *c, uint64_t k, const char *what)
{
    const char *coll = tutti__coll_name(op->coll);
    unsigned long long xseq = (unsigned long long)ws->xseq;
    tutti_status_t st = notices(ws, fab, op, r);
    if (st != TUTTI_OK) {
        return st;
    }
    if (atomic_load_explicit(&fab->state.aborting, memory_order_relaxed)) {
        st = tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_ABORTED,
                              "%s #%llu aborted by tutti_comm_abort", coll, xseq);
        tutti__fabric_fail(fab, st, -1);
        return st;
    }
    int64_t now = tutti__now_ns(), waited = now - start;
    int gone = 0;
    if (now - ws->live_checked > LIVE_PERIOD_NS) { /* a zombie counts as gone: /proc, not kill */
        if (ws->pidns == 0) { /* the peers share it: their pages were opened through /proc */
            struct tutti_proc_id self;
            tutti__proc_self(&self);
            ws->pidns = self.pidns;
        }
        struct tutti_proc_id id = {.pid = (uint32_t)ws->pids[r], .pidns = ws->pidns};
        gone = tutti__proc_alive(&id) == 0;
        ws->live_checked = now;
    }
    if (atomic_load_explicit(c, memory_order_acquire) >= k) {
        return TUTTI_OK; /* it came, and may have left since: a peer that is done may exit */
    }
    st = gone ? notices(ws, fab, op, r) : TUTTI_OK;
    if (st != TUTTI_OK) {
        return st; /* it failed the communicator (and said why) before it exited */
    }
    char who[128];
    tutti__tpeer_name(fab->net.targs.peers, r, who, sizeof(who));
    if (gone) {
        st = tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                              "%s #%llu: %s exited before it could %s (through shared memory); "
                              "operations posted %llu, completed %llu",
                              coll, xseq, who, what,
                              (unsigned long long)atomic_load(&fab->state.posted),
                              (unsigned long long)atomic_load(&fab->state.completed));
    } else if (fab->cfg.timeout_ns > 0 && waited > fab->cfg.timeout_ns) {
        st = tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_TIMEOUT,
                              "%s #%llu: rank %d was waiting for %s to %s (through shared memory), "
                              "without progress for %.1f s (TUTTI_TIMEOUT); operations posted "
                              "%llu, completed %llu",
                              coll, xseq, fab->rank, who, what, (double)waited / 1e9,
                              (unsigned long long)atomic_load(&fab->state.posted),
                              (unsigned long long)atomic_load(&fab->state.completed));
    } else {
        return TUTTI_OK;
    }
    hang_record(ws, fab, op, st, r);
    tutti__fabric_fail(fab, st, r);
    return st;
}

void tutti__win_pause_init(struct tutti_win_pause *p, const struct tutti_fabric *fab)
{
    /* As the engine waits: spin (not when ranks outnumber their CPUs: a peer may need this
     * one), then yield, then nap; and every so often look at the communicator and the peer. */
    *p = (struct tutti_win_pause){.spin_polls = fab->cfg.oversubscribed ? 0 : 512};
}

tutti_status_t tutti__win_pause(struct tutti_winset *ws, struct tutti_fabric *fab,
                                const struct tutti_op_desc *op, struct tutti_win_pause *p, int r,
                                _Atomic uint64_t *c, uint64_t k, const char *what)
{
    if (++p->polls < p->spin_polls) {
        tutti__cpu_relax();
        return TUTTI_OK;
    }
    if (p->napping) {
        struct timespec nap = {0, NAP_NS};
        nanosleep(&nap, NULL);
    } else {
        sched_yield(); /* ranks may outnumber cores */
        if ((p->polls & 63) != 0) {
            return TUTTI_OK;
        }
    }
    const struct tutti_env *env = tutti__env();
    int64_t now = tutti__now_ns();
    p->start = p->start != 0 ? p->start : now;
    p->napping = now - p->start > env->SPIN + env->YIELD;
    p->checks++;
    return check_wait(ws, fab, op, r, p->start, c, k, what);
}

tutti_status_t tutti__win_wait(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op, int depart, uint64_t k)
{
    struct tutti_win_pause p;
    tutti__win_pause_init(&p, fab);
    const char *what = depart ? "finish its share" : "reach the call";
    for (int r = 0; r < ws->nranks; r++) {
        if (r == ws->rank) {
            continue;
        }
        _Atomic uint64_t *c = counter(ws, r, depart, k);
        for (p.polls = 0; atomic_load_explicit(c, memory_order_acquire) < k;) {
            TUTTI_CHECK(tutti__win_pause(ws, fab, op, &p, r, c, k, what));
        }
    }
    return TUTTI_OK;
}

tutti_status_t tutti__win_note_begin(struct tutti_winset *ws, struct tutti_fabric *fab,
                                     const struct tutti_op_desc *op, struct tutti_win_note **n_p,
                                     uint64_t *k)
{
    *k = ws->notes + 1;
    if (*k > 1 && ws->seen < *k - 1) {
        TUTTI_CHECK(tutti__win_wait(ws, fab, op, 0, *k - 1));
        ws->seen = *k - 1;
    }
    *n_p = &ws->ctl->note[*k & 1];
    return TUTTI_OK;
}

void tutti__win_note_post(struct tutti_winset *ws, struct tutti_win_note *n, uint64_t k,
                          uint64_t op_seq, int mode)
{
    n->mode = (uint32_t)mode;
    ws->notes = k;
    ws->noted = op_seq;
    atomic_store_explicit(&n->stamp, k, memory_order_release);
}

/* The path past the ordinary one that op could take, so that it posts a note (ws ready):
 * TUTTI_WIN_CARRIED (the bytes each note carries in *bytes), TUTTI_WIN_WINDOWS (an all-reduce
 * once a window was shared), or TUTTI_WIN_ORDINARY: no note. */
static int note_kind(const struct tutti_winset *ws, const struct tutti_op_desc *op, size_t *bytes)
{
    if (ws == NULL || !ws->ready) {
        return TUTTI_WIN_ORDINARY;
    }
    if (tutti__win_carry_size(ws, op, bytes)) {
        return TUTTI_WIN_CARRIED;
    }
    return ws->windowed && op->coll == TUTTI_COLL_ALLREDUCE && op->count > 0 ? TUTTI_WIN_WINDOWS
                                                                             : TUTTI_WIN_ORDINARY;
}

tutti_status_t tutti__win_note(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op)
{
    struct tutti_win_note *n;
    uint64_t k;
    size_t bytes;
    if (note_kind(ws, op, &bytes) == TUTTI_WIN_ORDINARY || tutti__win_leads(ws, op, &bytes)) {
        return TUTTI_OK; /* no note, or a led call's (the caller posts it) */
    }
    ws->xseq = atomic_load(&fab->state.posted) + 1; /* the number the group's segment gets */
    TUTTI_CHECK(tutti__win_note_begin(ws, fab, op, &n, &k));
    tutti__win_note_post(ws, n, k, op->seq, TUTTI_WIN_ORDINARY);
    return TUTTI_OK;
}

uint64_t tutti__win_prev_hash(const struct tutti_fp *fp)
{
    unsigned coll = (unsigned)(le64toh(fp->w[3]) >> 8) & 0xffu;
    uint64_t count = coll < TUTTI_COLL_SEND || coll == TUTTI_COLL_BARRIER ? fp->w[1] : 0;
    return fp->w[0] ^ count * 0x9e3779b97f4a7c15ull ^ fp->w[2] * 0xbf58476d1ce4e5b9ull ^
           fp->w[3] * 0x94d049bb133111ebull;
}

/* Fill this rank's note n for op, of the kind note_kind found: the mode it takes. */
static int fill(struct tutti_winset *ws, const struct tutti_op_desc *op, struct tutti_win_note *n,
                int kind, size_t bytes)
{
    if (kind == TUTTI_WIN_CARRIED) {
        if (bytes > 0 && (op->coll != TUTTI_COLL_BROADCAST || op->root == ws->rank)) {
            memcpy((uint8_t *)tutti__win_carried(n, bytes), op->sendbuf, bytes);
        }
        return TUTTI_WIN_CARRIED;
    }
    return tutti__win_share_fill(ws, op, n) ? TUTTI_WIN_WINDOWS : TUTTI_WIN_ORDINARY;
}

int tutti__win_try(struct tutti_winset *ws, struct tutti_fabric *fab,
                   const struct tutti_op_desc *op, uint64_t xseq, tutti_status_t *st_p)
{
    struct tutti_win_note *me;
    uint64_t k;
    size_t bytes = 0;
    if (tutti__win_box_fits(ws, op)) { /* a small message to a local rank */
        tutti__win_box_begin(ws);
        *st_p = tutti__win_box_run(ws, fab, &op, 1, TUTTI_WIN_BOX_WAIT, xseq);
        return 1;
    }
    if (tutti__win_leads(ws, op, &bytes)) { /* a small broadcast or reduce */
        int done = 0;
        *st_p = tutti__win_lead_post(ws, fab, op, bytes, xseq, &done);
        if (*st_p == TUTTI_OK && !done) {
            *st_p = tutti__win_lead_finish(ws, fab, op, TUTTI_WIN_BOX_WAIT);
        }
        return 1;
    }
    int kind = note_kind(ws, op, &bytes);
    if (kind == TUTTI_WIN_ORDINARY) {
        return 0;
    }
    ws->xseq = xseq;
    *st_p = tutti__win_note_begin(ws, fab, op, &me, &k);
    if (*st_p != TUTTI_OK) {
        return 1;
    }
    int mode = fill(ws, op, me, kind, bytes);
    if (mode != TUTTI_WIN_ORDINARY) {
        tutti__fp_make(op, ws->rank, &me->fp);
        me->prev_fp = fab->fp.hist[(op->seq - 1) % TUTTI_FP_HISTORY];
        me->prev = tutti__win_prev_hash(&me->prev_fp);
    }
    tutti__win_note_post(ws, me, k, op->seq, mode);
    if (mode == TUTTI_WIN_ORDINARY) {
        return 0;
    }
    *st_p = tutti__win_wait(ws, fab, op, 0, k);
    if (*st_p != TUTTI_OK) {
        return 1;
    }
    ws->seen = k;
    const struct tutti_win_note *notes[ws->nranks];
    for (int r = 0; r < ws->nranks; r++) {
        notes[r] = &ws->slots[r]->note[k & 1];
        if (notes[r]->mode != (uint32_t)mode) {
            return 0; /* a rank takes the ordinary path: all do */
        }
    }
    for (int r = 0; r < ws->nranks; r++) {
        /* The call, then the one before: a rooted call whose ranks differed (roots that only
         * sent) left data nobody read, which the ordinary path would have found next. */
        int same = tutti__fp_eq(&notes[r]->fp, &me->fp);
        if (!same || notes[r]->prev != me->prev) {
            *st_p = same ? tutti__fp_mismatch(fab, r, &notes[r]->prev_fp, &me->prev_fp)
                         : tutti__fp_mismatch(fab, r, &notes[r]->fp, &me->fp);
            tutti__fabric_fail(fab, *st_p, ws->rank);
            return 1;
        }
    }
    tutti__fp_remember(fab, &me->fp);
    if (mode == TUTTI_WIN_CARRIED) {
        tutti_debug(TUTTI_SUBSYS_TUNE,
                    "%s of %zu %s: carried (chunk %zu, 0 channels: in the notes)",
                    tutti__coll_name(op->coll), op->count, tutti_datatype_name(op->dt), bytes);
        tutti__win_carry_run(ws, op, notes, bytes);
        *st_p = TUTTI_OK;
    } else {
        *st_p = tutti__win_share_run(ws, fab, op, notes, k);
    }
    return 1;
}

/* A peer's note for the collective mine names, taken past the ordinary path: its error. */
static tutti_status_t watch_notes(struct tutti_winset *ws, const struct tutti_fp *mine)
{
    uint64_t seq = le64toh(mine->w[0]); /* the fingerprint's first word: the collective number */
    if (ws->noted == seq) {
        return TUTTI_OK;
    }
    for (int r = 0; r < ws->nranks; r++) {
        for (int p = 0; r != ws->rank && p < 2; p++) {
            const struct tutti_win_note *n = &ws->slots[r]->note[p];
            uint64_t a = atomic_load_explicit(&n->stamp, memory_order_acquire);
            uint32_t mode = n->mode;
            struct tutti_fp fp = n->fp;
            atomic_thread_fence(memory_order_acquire);
            if (a != 0 && atomic_load_explicit(&n->stamp, memory_order_relaxed) == a &&
                mode != TUTTI_WIN_ORDINARY && fp.w[0] == mine->w[0]) {
                return tutti__fp_mismatch(ws->fab, r, &fp, mine);
            }
        }
    }
    return TUTTI_OK;
}

tutti_status_t tutti__win_watch(void *arg, const struct tutti_exec *ex)
{
    struct tutti_winset *ws = arg;
    const struct tutti_plan *plan = ex->plan;
    if (ws == NULL || !ws->ready) {
        return TUTTI_OK;
    }
    if (plan->ncalls == 0 && plan->op.coll != TUTTI_COLL_SEND && plan->op.coll != TUTTI_COLL_RECV) {
        return watch_notes(ws, &ex->fp1);
    }
    if (plan->ncalls == 0) {
        return tutti__win_box_watch(ws, &plan->op, &ex->fp1);
    }
    for (uint32_t i = 0; i < plan->ncalls; i++) {
        TUTTI_CHECK(tutti__win_box_watch(ws, &plan->calls[i], &ex->fps[i]));
    }
    return TUTTI_OK;
}
