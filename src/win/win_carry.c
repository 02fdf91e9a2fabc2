/*
 * win_carry.c - the carried path (win.h): a barrier or a small collective whose every rank's
 * input travels in its note. Once every note is there, each rank computes its own result from
 * the notes alone, reducing in rank order, so that every rank that computes an element computes
 * the same bits. No plan, no FIFO: one round of notes.
 */
#include "win/win.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <string.h>

/* All-reduce and reduce-scatter carry at most this much: from 1 KiB the ordinary path was as
 * fast or faster (2 ranks here, 2000 calls a launch), where every rank reduces every element;
 * a reduce (the root alone reduces), gathers and all-to-all still gained at 1 KiB. */
#define CARRY_REDUCING 512

int tutti__win_builtin_op(const struct tutti_op_desc *op)
{
    return (unsigned)op->op < TUTTI_NUM_OPS && tutti__reduce_supported(op->dt, op->op);
}

int tutti__win_carry_size(const struct tutti_winset *ws, const struct tutti_op_desc *op,
                          size_t *bytes)
{
    size_t piece = op->count * tutti_datatype_size(op->dt);
    *bytes = 0;
    if (ws->fab != NULL && ws->fab->cfg.forced[op->coll] >= 0) {
        return 0; /* TUTTI_ALGO names the algorithm this collective runs */
    }
    switch (op->coll) {
    case TUTTI_COLL_BARRIER:
        return 1;
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_REDUCE:
        *bytes = tutti__win_builtin_op(op) ? piece : 0;
        break;
    case TUTTI_COLL_BROADCAST:
    case TUTTI_COLL_ALLGATHER:
        *bytes = piece;
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        *bytes =
            tutti__win_builtin_op(op) && piece <= TUTTI_WIN_CARRY ? piece * (size_t)ws->nranks : 0;
        break;
    case TUTTI_COLL_ALLTOALL:
        *bytes = piece <= TUTTI_WIN_CARRY ? piece * (size_t)ws->nranks : 0;
        break;
    default:
        break;
    }
    int reducing = op->coll == TUTTI_COLL_ALLREDUCE || op->coll == TUTTI_COLL_REDUCE_SCATTER;
    return op->count > 0 && *bytes > 0 && *bytes <= (reducing ? CARRY_REDUCING : TUTTI_WIN_CARRY);
}

/* dst = op over every rank's note (carrying `bytes`) at byte offset `at`, count elements, in
 * rank order. */
static void reduce_notes(const struct tutti_winset *ws, const struct tutti_op_desc *op,
                         const struct tutti_win_note *const *notes, size_t bytes, size_t at,
                         void *dst)
{
    int n = ws->nranks;
    size_t count = op->count;
    if (n == 1) {
        memcpy(dst, tutti__win_carried(notes[0], bytes) + at, count * tutti_datatype_size(op->dt));
        return;
    }
    tutti_op_t part = op->op == TUTTI_AVG ? TUTTI_SUM : op->op;
    const void *first = tutti__win_carried(notes[0], bytes) + at;
    for (int r = 1; r < n - 1; r++) {
        tutti__reduce(dst, NULL, first, tutti__win_carried(notes[r], bytes) + at, count, op->dt,
                      part, 1);
        first = dst;
    }
    tutti__reduce(dst, NULL, first, tutti__win_carried(notes[n - 1], bytes) + at, count, op->dt,
                  op->op, n);
}

void tutti__win_carry_run(const struct tutti_winset *ws, const struct tutti_op_desc *op,
                          const struct tutti_win_note *const *notes, size_t bytes)
{
    int n = ws->nranks, me = ws->rank;
    size_t piece = op->count * tutti_datatype_size(op->dt);
    uint8_t *out = op->recvbuf;
    switch (op->coll) {
    case TUTTI_COLL_ALLREDUCE:
        reduce_notes(ws, op, notes, bytes, 0, out);
        break;
    case TUTTI_COLL_REDUCE:
        if (me == op->root) {
            reduce_notes(ws, op, notes, bytes, 0, out);
        }
        break;
    case TUTTI_COLL_BROADCAST:
        if (out != op->sendbuf || me != op->root) {
            memcpy(out, tutti__win_carried(notes[op->root], bytes), piece);
        }
        break;
    case TUTTI_COLL_ALLGATHER:
        for (int r = 0; r < n; r++) {
            memcpy(out + (size_t)r * piece, tutti__win_carried(notes[r], bytes), piece);
        }
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        reduce_notes(ws, op, notes, bytes, (size_t)me * piece, out);
        break;
    case TUTTI_COLL_ALLTOALL:
        for (int r = 0; r < n; r++) {
            memcpy(out + (size_t)r * piece,
                   tutti__win_carried(notes[r], bytes) + (size_t)me * piece, piece);
        }
        break;
    default:
        break;
    }
}
