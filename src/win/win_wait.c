/*
 * win_wait.c - waiting on the peers' control pages (win.h): back off as the engine does (spin,
 * yield, nap), and stop for an abort, a peer's failure notice, a peer's process that is gone
 * (TUTTI_ERR_REMOTE) or TUTTI_TIMEOUT (TUTTI_ERR_TIMEOUT), in the engine's words, with the hang
 * record tutti-info --hang reads. Also this rank's notes' slots, whose reuse waits on the
 * peers, and the hash of a rank's previous collective that every note carries.
 */
#include "win/win.h"
#include "base/check.h"
#include "base/env.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/util.h"
#include "exec/connect.h"
#include "exec/fail.h"
#include "tutti/coll.h"

#include <endian.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define LIVE_PERIOD_NS 1000000 /* how often a waiting rank looks whether its peer still runs */
#define NAP_NS         50000   /* a rank that waited past TUTTI_SPIN + TUTTI_YIELD naps this long */

/* The counter to wait on in rank r's page for note k: its stamp, or its depart. */
static _Atomic uint64_t *counter(struct tutti_winset *ws, int r, int depart, uint64_t k)
{
    return depart ? &ws->slots[r]->depart : &ws->slots[r]->note[k % TUTTI_WIN_NOTES].stamp;
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
        if (!depart) {
            tutti__win_saw(ws, r, k);
        }
    }
    return TUTTI_OK;
}

tutti_status_t tutti__win_note_begin(struct tutti_winset *ws, struct tutti_fabric *fab,
                                     const struct tutti_op_desc *op, struct tutti_win_note **n_p,
                                     uint64_t *k)
{
    *k = ws->notes + 1;
    /* A peer that stamped note k - TUTTI_WIN_NOTES + 1 is done reading note k - TUTTI_WIN_NOTES,
     * which note k replaces. What each peer stamped is remembered, and read from its newest
     * slot first: a rank that runs ahead then reads its peers' pages once in a few calls. */
    uint64_t need = *k - (TUTTI_WIN_NOTES - 1);
    if (*k < TUTTI_WIN_NOTES || ws->seen >= need) {
        *n_p = &ws->ctl->note[*k % TUTTI_WIN_NOTES];
        return TUTTI_OK;
    }
    uint64_t least = UINT64_MAX;
    for (int r = 0; r < ws->nranks; r++) {
        if (r != ws->rank && ws->peer_seen[r] < need) {
            const struct tutti_win_note *newest = &ws->slots[r]->note[(*k - 1) % TUTTI_WIN_NOTES];
            tutti__win_saw(ws, r, atomic_load_explicit(&newest->stamp, memory_order_acquire));
        }
        least = r != ws->rank && ws->peer_seen[r] < least ? ws->peer_seen[r] : least;
    }
    if (least < need) { /* wait for room for several notes: checked again only after them */
        uint64_t room = *k - TUTTI_WIN_NOTES / 2;
        TUTTI_CHECK(tutti__win_wait(ws, fab, op, 0, room));
        least = room;
    }
    ws->seen = least;
    *n_p = &ws->ctl->note[*k % TUTTI_WIN_NOTES];
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

void tutti__win_note_sign(struct tutti_winset *ws, const struct tutti_fabric *fab,
                          const struct tutti_op_desc *op, struct tutti_win_note *n)
{
    struct tutti_win_sign *s = &ws->sign;
    tutti__fp_make(op, ws->rank, &s->fp);
    tutti__fp_copy(&s->prev_fp, &fab->fp.hist[(op->seq - 1) % TUTTI_FP_HISTORY]);
    s->prev = tutti__win_prev_hash(&s->prev_fp);
    tutti__fp_copy(&n->fp, &s->fp); /* words just stored: fp.h says why word by word */
    tutti__fp_copy(&n->prev_fp, &s->prev_fp);
    n->prev = s->prev;
}

uint64_t tutti__win_prev_hash(const struct tutti_fp *fp)
{
    unsigned coll = (unsigned)(le64toh(fp->w[3]) >> 8) & 0xffu;
    uint64_t count = coll < TUTTI_COLL_SEND || coll == TUTTI_COLL_BARRIER ? fp->w[1] : 0;
    return fp->w[0] ^ count * 0x9e3779b97f4a7c15ull ^ fp->w[2] * 0xbf58476d1ce4e5b9ull ^
           fp->w[3] * 0x94d049bb133111ebull;
}
