/*
 * win_share.c - the all-reduce on shared windows (win.h): each rank reduces its 1/n share of the
 * elements straight from every rank's input into every rank's output, in rank order, so every
 * element is computed once and every rank holds the same bits; then it stamps `depart` and
 * waits for every peer's.
 */
#include "win/win.h"
#include "base/check.h"
#include "exec/fail.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <stdlib.h>
#include <string.h>

#define SCRATCH_BYTES (16u << 10) /* the accumulator chunk for more than 2 ranks */

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

int tutti__win_share_fill(struct tutti_winset *ws, const struct tutti_op_desc *op,
                          struct tutti_win_note *n)
{
    if (op->coll != TUTTI_COLL_ALLREDUCE || op->count == 0 || (unsigned)op->op >= TUTTI_NUM_OPS ||
        !tutti__reduce_supported(op->dt, op->op) || ws->wins == NULL) {
        return 0;
    }
    if (ws->nranks > 2 && ws->scratch == NULL &&
        (ws->scratch = aligned_alloc(64, SCRATCH_BYTES)) == NULL) {
        return 0;
    }
    size_t bytes = op->count * tutti_datatype_size(op->dt);
    struct tutti_window *sw = find(ws, op->sendbuf, bytes), *rw = find(ws, op->recvbuf, bytes);
    if (sw == NULL || rw == NULL) {
        return 0;
    }
    n->u.w.send_win = sw->id;
    n->u.w.recv_win = rw->id;
    n->u.w.send_off = (uint64_t)((const uint8_t *)op->sendbuf - sw->buf);
    n->u.w.recv_off = (uint64_t)((uint8_t *)op->recvbuf - rw->buf);
    return 1;
}

/* Resolve rank r's buffers from its note: 0, or -1 (a window it names is not one here, or the
 * range lies outside it). */
static int resolve(struct tutti_winset *ws, int r, const struct tutti_win_note *n, size_t bytes,
                   const uint8_t **in, uint8_t **out)
{
    struct tutti_window *sw = by_id(ws, n->u.w.send_win), *rw = by_id(ws, n->u.w.recv_win);
    if (sw == NULL || rw == NULL || !sw->shared || !rw->shared || n->u.w.send_off > sw->blen[r] ||
        bytes > sw->blen[r] - n->u.w.send_off || n->u.w.recv_off > rw->blen[r] ||
        bytes > rw->blen[r] - n->u.w.recv_off) {
        return -1;
    }
    *in = sw->base[r] + n->u.w.send_off;
    *out = rw->base[r] + n->u.w.recv_off;
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

tutti_status_t tutti__win_share_run(struct tutti_winset *ws, struct tutti_fabric *fab,
                                    const struct tutti_op_desc *op,
                                    const struct tutti_win_note *const *notes, uint64_t k)
{
    int n = ws->nranks;
    size_t es = tutti_datatype_size(op->dt), bytes = op->count * es;
    const uint8_t *in[n];
    uint8_t *out[n];
    for (int r = 0; r < n; r++) {
        if (resolve(ws, r, notes[r], bytes, &in[r], &out[r]) != 0) {
            tutti_status_t st = tutti__set_error(
                tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                "allreduce #%llu on windows: rank %d names a range outside its windows "
                "(window %u at %llu, window %u at %llu, %zu bytes)",
                (unsigned long long)op->seq, r, notes[r]->u.w.send_win,
                (unsigned long long)notes[r]->u.w.send_off, notes[r]->u.w.recv_win,
                (unsigned long long)notes[r]->u.w.recv_off, bytes);
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
    if (lo < hi) {
        reduce_share(ws, op, in, out, lo, hi);
    }
    atomic_store_explicit(&ws->ctl->depart, k, memory_order_release);
    TUTTI_CHECK(tutti__win_wait(ws, fab, op, 1, k));
    struct tutti_window *rw = by_id(ws, notes[ws->rank]->u.w.recv_win);
    atomic_fetch_add_explicit(&rw->calls, 1, memory_order_relaxed);
    return TUTTI_OK;
}
