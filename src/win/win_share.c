/*
 * win_share.c - collectives on shared windows (win.h), every rank's buffers read and written
 * where they lie. The all-reduce: each rank reduces its 1/n share of the elements straight from
 * every rank's input into every rank's output, in rank order, so every element is computed once
 * and every rank holds the same bits. A reduce does the same into the root's output only, a
 * reduce-scatter has each rank reduce its own block; broadcast, all-gather and all-to-all copy
 * (win_move.c). Then each rank stamps `depart` and waits for every peer's, so no rank returns
 * while a peer may still read or write its buffers.
 */
#include "win/win.h"
#include "base/check.h"
#include "exec/fail.h"
#include "exec/op.h"
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

int tutti__win_shares(const struct tutti_op_desc *op)
{
    switch (op->coll) {
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_REDUCE:
    case TUTTI_COLL_REDUCE_SCATTER:
    case TUTTI_COLL_BROADCAST:
    case TUTTI_COLL_ALLGATHER:
    case TUTTI_COLL_ALLTOALL:
        return op->count > 0;
    default:
        return 0;
    }
}

int tutti__win_share_fill(struct tutti_winset *ws, const struct tutti_op_desc *op,
                          struct tutti_win_note *n)
{
    int reduces = tutti__coll_reduces(op->coll);
    if (!tutti__win_shares(op) || ws->wins == NULL || (reduces && !tutti__win_builtin_op(op))) {
        return 0;
    }
    /* In place, each rank's blocks would be overwritten by the peers while it still sends
     * them: the ordinary path has the order for that. */
    if (op->coll == TUTTI_COLL_ALLTOALL && op->sendbuf == op->recvbuf) {
        return 0;
    }
    if (reduces && ws->nranks > 2 && ws->scratch == NULL &&
        (ws->scratch = aligned_alloc(64, SCRATCH_BYTES)) == NULL) {
        return 0;
    }
    size_t sl, rl; /* a broadcast's receivers send nothing, a reduce's non-roots receive nothing */
    tutti__op_extents_of(op, ws->rank, ws->nranks, &sl, &rl);
    struct tutti_window *sw = sl > 0 ? find(ws, op->sendbuf, sl) : NULL;
    struct tutti_window *rw = rl > 0 ? find(ws, op->recvbuf, rl) : NULL;
    if ((sl > 0 && sw == NULL) || (rl > 0 && rw == NULL)) {
        return 0;
    }
    n->u.w.send_win = sw != NULL ? sw->id : TUTTI_WIN_NONE;
    n->u.w.recv_win = rw != NULL ? rw->id : TUTTI_WIN_NONE;
    n->u.w.send_off = sw != NULL ? (uint64_t)((const uint8_t *)op->sendbuf - sw->buf) : 0;
    n->u.w.recv_off = rw != NULL ? (uint64_t)((uint8_t *)op->recvbuf - rw->buf) : 0;
    return 1;
}

/* Rank r's range of `bytes` at offset off in window id, as mapped here: NULL when bytes is 0,
 * *bad when the window is not one here or the range lies outside it. */
static uint8_t *range(struct tutti_winset *ws, int r, uint32_t id, uint64_t off, size_t bytes,
                      int *bad)
{
    if (bytes == 0) {
        return NULL;
    }
    struct tutti_window *w = by_id(ws, id);
    if (w == NULL || !w->shared || off > w->blen[r] || bytes > w->blen[r] - off) {
        *bad = 1;
        return NULL;
    }
    return w->base[r] + off;
}

/* Resolve rank r's buffers from its note, each as long as the call makes it on rank r (the
 * notes' fingerprints matched: every rank's call is this one): 0, or -1. */
static int resolve(struct tutti_winset *ws, int r, const struct tutti_win_note *n,
                   const struct tutti_op_desc *op, const uint8_t **in, uint8_t **out)
{
    size_t sl, rl;
    int bad = 0;
    tutti__op_extents_of(op, r, ws->nranks, &sl, &rl);
    *in = range(ws, r, n->u.w.send_win, n->u.w.send_off, sl, &bad);
    *out = range(ws, r, n->u.w.recv_win, n->u.w.recv_off, rl, &bad);
    return bad ? -1 : 0;
}

/* out[k][lo, hi) = op of in[0..n-1][lo, hi), for each of the nout outputs, in rank order,
 * stored through the caches (streaming the results past them measured a third slower here, out
 * of place at 64-256 MiB on 2 ranks: issue 38's note). */
static void reduce_share(struct tutti_winset *ws, const struct tutti_op_desc *op,
                         const uint8_t **in, uint8_t **out, int nout, size_t lo, size_t hi)
{
    int n = ws->nranks;
    size_t es = tutti_datatype_size(op->dt);
    uint8_t *out1 = nout > 1 ? out[1] + lo * es : NULL;
    if (n == 1) { /* the sum of one input, whatever the op */
        if (out[0] != in[0]) {
            memcpy(out[0] + lo * es, in[0] + lo * es, (hi - lo) * es);
        }
        return;
    }
    if (n == 2) {
        tutti__reduce(out[0] + lo * es, out1, in[0] + lo * es, in[1] + lo * es, hi - lo, op->dt,
                      op->op, n);
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
        tutti__reduce(out[0] + at, nout > 1 ? out[1] + at : NULL, first, in[n - 1] + at, c, op->dt,
                      op->op, n);
        for (int k = 2; k < nout; k += 2) {
            tutti__copy2(out[k] + at, k + 1 < nout ? out[k + 1] + at : NULL, out[0] + at, c * es);
        }
    }
}

tutti_status_t tutti__win_share_run(struct tutti_winset *ws, struct tutti_fabric *fab,
                                    const struct tutti_op_desc *op,
                                    const struct tutti_win_note *const *notes, uint64_t k)
{
    int n = ws->nranks, me = ws->rank;
    size_t es = tutti_datatype_size(op->dt), block = op->count * es;
    const uint8_t *in[n];
    uint8_t *out[n];
    for (int r = 0; r < n; r++) {
        if (resolve(ws, r, notes[r], op, &in[r], &out[r]) != 0) {
            tutti_status_t st = tutti__set_error(
                tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                "%s #%llu on windows: rank %d names a range outside its windows "
                "(window %u at %llu, window %u at %llu, %zu bytes a block)",
                tutti__coll_name(op->coll), (unsigned long long)op->seq, r, notes[r]->u.w.send_win,
                (unsigned long long)notes[r]->u.w.send_off, notes[r]->u.w.recv_win,
                (unsigned long long)notes[r]->u.w.recv_off, block);
            tutti__fabric_fail(fab, st, r);
            return st;
        }
    }
    size_t lo, hi;
    tutti__win_share_of(op->count, es, n, me, &lo, &hi);
    const uint8_t *mine[n];
    switch (op->coll) {
    case TUTTI_COLL_ALLREDUCE: /* this rank's share of the elements, into every output */
    case TUTTI_COLL_REDUCE:    /* the same into the root's */
        if (lo < hi) {
            int all = op->coll == TUTTI_COLL_ALLREDUCE;
            reduce_share(ws, op, in, all ? out : &out[op->root], all ? n : 1, lo, hi);
        }
        break;
    case TUTTI_COLL_REDUCE_SCATTER: /* this rank's block of every input, into its output */
        for (int r = 0; r < n; r++) {
            mine[r] = in[r] + (size_t)me * block;
        }
        reduce_share(ws, op, mine, &out[me], 1, 0, op->count);
        break;
    default: /* broadcast, all-gather, all-to-all (tutti__win_shares) */
        tutti__win_move(op, me, n, in, out);
        break;
    }
    atomic_store_explicit(&ws->ctl->depart, k, memory_order_release);
    TUTTI_CHECK(tutti__win_wait(ws, fab, op, 1, k));
    const struct tutti_win_note *mn = notes[me];
    struct tutti_window *w = by_id(ws, out[me] != NULL ? mn->u.w.recv_win : mn->u.w.send_win);
    atomic_fetch_add_explicit(&w->calls, 1, memory_order_relaxed);
    return TUTTI_OK;
}
