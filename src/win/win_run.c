/*
 * win_run.c - the all-reduce on shared windows (win.h): the ranks' notes, the choice of path
 * they all make alike, the fingerprint check, and the reduction of this rank's share straight
 * from every rank's input into every rank's output.
 *
 * Each collective, once the window set is ready, a rank posts its note (arrive = the call's
 * collective number). A rank whose own buffers are in shared windows then waits for every
 * peer's note; it runs the call here only when every note says the same. Otherwise every such
 * rank takes the ordinary path, as the others already did. A peer's note can be overwritten
 * only by a peer that got past the call, which it cannot do on the window path without this
 * rank: a note newer than the call, or one that changed while read, means the ordinary path.
 */
#include "win/win.h"
#include "base/check.h"
#include "base/util.h"
#include "exec/fail.h"
#include "exec/fp.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define SCRATCH_BYTES (16u << 10) /* the accumulator chunk for more than 2 ranks */

static void post(struct tutti_win_slot *s, uint64_t seq, int mode)
{
    s->mode = (uint32_t)mode;
    atomic_store_explicit(&s->arrive, seq, memory_order_release);
}

void tutti__win_note(struct tutti_winset *ws, const struct tutti_op_desc *op)
{
    if (ws != NULL && ws->ready && op->coll != TUTTI_COLL_SEND && op->coll != TUTTI_COLL_RECV) {
        post(ws->ctl, op->seq, 0);
    }
}

/* The shared window that holds [p, p + len) on this rank, or NULL. */
static struct tutti_window *find(struct tutti_winset *ws, const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p;
    for (struct tutti_window *w = ws->wins; w != NULL; w = w->next) {
        uintptr_t lo = (uintptr_t)w->buf;
        if (w->shared && a >= lo && a - lo <= w->len && len <= w->len - (a - lo)) {
            return w;
        }
    }
    return NULL;
}

static struct tutti_window *by_id(struct tutti_winset *ws, uint32_t id)
{
    for (struct tutti_window *w = ws->wins; w != NULL; w = w->next) {
        if (w->id == id) {
            return w;
        }
    }
    return NULL;
}

/* Why waiting on rank r must stop, or TUTTI_OK: the communicator failed, r exited, or the
 * timeout passed (the error recorded and the communicator failed for the latter two). */
static tutti_status_t check_wait(struct tutti_winset *ws, struct tutti_fabric *fab,
                                 const struct tutti_op_desc *op, int r, int64_t start,
                                 _Atomic uint64_t *c, const char *what)
{
    tutti_status_t st = tutti__fabric_health(fab);
    if (st != TUTTI_OK) {
        return st;
    }
    int64_t waited = tutti__now_ns() - start;
    int gone = kill(ws->pids[r], 0) != 0 && errno == ESRCH;
    if (atomic_load_explicit(c, memory_order_acquire) >= op->seq) {
        return TUTTI_OK; /* it came, and may have left since: a peer that is done may exit */
    }
    char who[128];
    tutti__tpeer_name(fab->net.targs.peers, r, who, sizeof(who));
    if (gone) {
        st = tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                              "allreduce #%llu on windows: %s exited before it could %s",
                              (unsigned long long)op->seq, who, what);
    } else if (fab->cfg.timeout_ns > 0 && waited > fab->cfg.timeout_ns) {
        st = tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_TIMEOUT,
                              "allreduce #%llu on windows: %s did not %s within TUTTI_TIMEOUT "
                              "(%.1f s)",
                              (unsigned long long)op->seq, who, what, (double)waited / 1e9);
    } else {
        return TUTTI_OK;
    }
    tutti__fabric_fail(fab, st, r);
    return st;
}

/* Wait until every peer's counter (arrive, or depart) reaches seq. */
static tutti_status_t wait_all(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op, int depart)
{
    int64_t start = 0;
    for (int r = 0; r < ws->nranks; r++) {
        if (r == ws->rank) {
            continue;
        }
        _Atomic uint64_t *c = depart ? &ws->slots[r]->depart : &ws->slots[r]->arrive;
        for (unsigned spins = 0; atomic_load_explicit(c, memory_order_acquire) < op->seq;) {
            if (++spins < 512) {
                tutti__cpu_relax();
                continue;
            }
            sched_yield(); /* ranks may outnumber cores */
            if ((spins & 63) != 0) {
                continue;
            }
            start = start != 0 ? start : tutti__now_ns();
            TUTTI_CHECK(check_wait(ws, fab, op, r, start, c,
                                   depart ? "finish its share" : "reach the call"));
        }
    }
    return TUTTI_OK;
}

/* A note as read. */
struct note {
    uint32_t mode, send_win, recv_win;
    uint64_t send_off, recv_off;
    struct tutti_fp fp;
};

/* Copy slot s's note into *n. */
static void copy_note(const struct tutti_win_slot *s, struct note *n)
{
    n->mode = s->mode;
    n->send_win = s->send_win;
    n->recv_win = s->recv_win;
    n->send_off = s->send_off;
    n->recv_off = s->recv_off;
    n->fp = s->fp;
}

/* Read rank r's note for the call: 1 when it says windows (copied into *n), else 0. */
static int read_note(const struct tutti_win_slot *s, uint64_t seq, struct note *n)
{
    uint64_t a = atomic_load_explicit(&s->arrive, memory_order_acquire);
    if (a != seq) {
        return 0; /* past the call: it took the ordinary path */
    }
    copy_note(s, n);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->arrive, memory_order_relaxed) == seq && n->mode == 1;
}

/* Resolve rank r's buffers from its note: 0, or -1 (a window it names is not one here, or the
 * range lies outside it). */
static int resolve(struct tutti_winset *ws, int r, const struct note *n, size_t bytes,
                   const uint8_t **in, uint8_t **out)
{
    struct tutti_window *sw = by_id(ws, n->send_win), *rw = by_id(ws, n->recv_win);
    if (sw == NULL || rw == NULL || !sw->shared || !rw->shared || n->send_off > sw->blen[r] ||
        bytes > sw->blen[r] - n->send_off || n->recv_off > rw->blen[r] ||
        bytes > rw->blen[r] - n->recv_off) {
        return -1;
    }
    *in = sw->base[r] + n->send_off;
    *out = rw->base[r] + n->recv_off;
    return 0;
}

/* out[k][lo, hi) = op of in[0..n-1][lo, hi), for every rank k, in rank order, stored through
 * the caches (streaming the results past them measured a third slower here, out of place at
 * 64-256 MiB on 2 ranks: issue 38's note). */
static void reduce_share(struct tutti_winset *ws, const struct tutti_op_desc *op,
                         const uint8_t **in, uint8_t **out, size_t lo, size_t hi)
{
    int n = ws->nranks;
    size_t es = tutti_datatype_size(op->dt);
    if (n == 1) { /* the sum of one input, whatever the op */
        if (out[0] != in[0]) {
            memcpy(out[0] + lo * es, in[0] + lo * es, (hi - lo) * es);
        }
        return;
    }
    if (n == 2) {
        tutti__reduce(out[0] + lo * es, out[1] + lo * es, in[0] + lo * es, in[1] + lo * es, hi - lo,
                      op->dt, op->op, n);
        return;
    }
    tutti_op_t part = op->op == TUTTI_AVG ? TUTTI_SUM : op->op;
    size_t step = SCRATCH_BYTES / es;
    uint8_t *acc = ws->scratch;
    for (size_t i = lo; i < hi; i += step) {
        size_t c = hi - i < step ? hi - i : step, at = i * es;
        const uint8_t *first = in[0] + at;
        for (int k = 1; k < n - 1; k++) {
            tutti__reduce(acc, NULL, first, in[k] + at, c, op->dt, part, 1);
            first = acc;
        }
        tutti__reduce(out[0] + at, out[1] + at, first, in[n - 1] + at, c, op->dt, op->op, n);
        for (int k = 2; k < n; k += 2) {
            tutti__copy2(out[k] + at, k + 1 < n ? out[k + 1] + at : NULL, out[0] + at, c * es);
        }
    }
}

/* The call on windows, every note saying so: check, move, depart. */
static tutti_status_t run_here(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op, struct note *notes)
{
    int n = ws->nranks;
    size_t es = tutti_datatype_size(op->dt), bytes = op->count * es;
    const uint8_t *in[n];
    uint8_t *out[n];
    for (int r = 0; r < n; r++) {
        if (!tutti__fp_eq(&notes[r].fp, &ws->ctl->fp)) {
            tutti_status_t st = tutti__fp_mismatch(fab, r, &notes[r].fp, &ws->ctl->fp);
            tutti__fabric_fail(fab, st, ws->rank);
            return st;
        }
        if (resolve(ws, r, &notes[r], bytes, &in[r], &out[r]) != 0) {
            tutti_status_t st = tutti__set_error(
                tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                "allreduce #%llu on windows: rank %d names a range outside its windows "
                "(window %u at %llu, window %u at %llu, %zu bytes)",
                (unsigned long long)op->seq, r, notes[r].send_win,
                (unsigned long long)notes[r].send_off, notes[r].recv_win,
                (unsigned long long)notes[r].recv_off, bytes);
            tutti__fabric_fail(fab, st, r);
            return st;
        }
    }
    /* This rank's share, cut at cache lines. */
    size_t line = es < 64 ? 64 / es : 1;
    size_t per = (op->count + (size_t)n - 1) / (size_t)n;
    per = (per + line - 1) / line * line;
    size_t lo = per * (size_t)ws->rank, hi = lo + per;
    lo = lo < op->count ? lo : op->count;
    hi = hi < op->count ? hi : op->count;
    if (hi > lo) {
        reduce_share(ws, op, in, out, lo, hi);
    }
    atomic_store_explicit(&ws->ctl->depart, op->seq, memory_order_release);
    return wait_all(ws, fab, op, 1);
}

/* Whether this rank can run op on windows: its buffers in shared windows, a built-in op. */
static int eligible(struct tutti_winset *ws, const struct tutti_op_desc *op,
                    struct tutti_window **sw, struct tutti_window **rw)
{
    if (op->coll != TUTTI_COLL_ALLREDUCE || op->count == 0 || (unsigned)op->op >= TUTTI_NUM_OPS ||
        !tutti__reduce_supported(op->dt, op->op)) {
        return 0;
    }
    if (ws->nranks > 2 && ws->scratch == NULL &&
        (ws->scratch = aligned_alloc(64, SCRATCH_BYTES)) == NULL) {
        return 0;
    }
    size_t bytes = op->count * tutti_datatype_size(op->dt);
    *sw = find(ws, op->sendbuf, bytes);
    *rw = find(ws, op->recvbuf, bytes);
    return *sw != NULL && *rw != NULL;
}

int tutti__win_try(struct tutti_winset *ws, struct tutti_fabric *fab,
                   const struct tutti_op_desc *op, tutti_status_t *st_p)
{
    if (ws == NULL || !ws->ready || op->coll == TUTTI_COLL_SEND || op->coll == TUTTI_COLL_RECV) {
        return 0;
    }
    struct tutti_window *sw = NULL, *rw = NULL;
    if (!eligible(ws, op, &sw, &rw)) {
        post(ws->ctl, op->seq, 0);
        return 0;
    }
    struct tutti_win_slot *me = ws->ctl;
    me->send_win = sw->id;
    me->recv_win = rw->id;
    me->send_off = (uint64_t)((const uint8_t *)op->sendbuf - sw->buf);
    me->recv_off = (uint64_t)((uint8_t *)op->recvbuf - rw->buf);
    tutti__fp_make(op, ws->rank, &me->fp);
    post(me, op->seq, 1);
    *st_p = wait_all(ws, fab, op, 0);
    if (*st_p != TUTTI_OK) {
        return 1;
    }
    struct note notes[ws->nranks];
    for (int r = 0; r < ws->nranks; r++) {
        if (r == ws->rank) {
            copy_note(me, &notes[r]);
        } else if (!read_note(ws->slots[r], op->seq, &notes[r])) {
            return 0;
        }
    }
    *st_p = run_here(ws, fab, op, notes);
    if (*st_p == TUTTI_OK) {
        atomic_fetch_add_explicit(&rw->calls, 1, memory_order_relaxed);
    }
    return 1;
}
