/*
 * win_lead.c - led calls (win.h): a broadcast or a reduce that the carried path takes, where the
 * ranks whose part is only to give their input do not wait. The broadcast's root posts its note
 * with the data and returns; so does each non-root of a reduce. Only the ranks that take
 * something wait, and only for the notes they take from: a broadcast's receivers for the
 * root's, a reduce's root for every rank's. Open MPI's root does the same over its fast boxes.
 *
 * Whether a call is led follows from the call alone (its fingerprint), in a group or not, so
 * every rank of a matched call leads it: nobody can be left on the ordinary path waiting for
 * data a root never sent. A rank runs at most TUTTI_WIN_NOTES - 1 calls ahead: its next note
 * waits, as every note does, until every peer stamped the one TUTTI_WIN_NOTES - 1 before it,
 * which a peer does when it reaches that call. A receiver compares the notes it reads with its
 * own (the call, and the collective before it): different calls are TUTTI_ERR_MISMATCH there,
 * and the failure notice reaches the ranks that did not wait at their next wait; two ranks that
 * both think they are the root find out at the next call, whose notes carry the hash of this
 * one.
 */
#include "win/win.h"
#include "base/check.h"
#include "base/log.h"
#include "exec/fail.h"
#include "exec/fp.h"
#include "tutti/coll.h"

#include <string.h>

/* How many notes ahead a rank that only gives (a broadcast's root, a reduce's non-root) claims
 * its own note's lines, for calls of at most AHEAD_BYTES (2 ranks here, 8 B-1 KiB: 3 notes ahead
 * and 8 gained alike, 16 less; at 1 KiB neither gained). */
#define CLAIM_AHEAD 3

/* How many notes ahead a reduce's root asks for a giver's lines, and the largest call it asks
 * for (at 2 ranks here, 4 notes ahead gained less than 8 from 256 bytes; at 1 KiB asking took
 * 1.04-1.05 of the time, so it is left to the hardware there). A broadcast's receiver does not
 * ask: its root, which writes the lines, is the slower side, and asking changed nothing. */
#define AHEAD       8
#define AHEAD_BYTES 512

/* Ask for the line at p to be owned by this core, ready for a store: PREFETCHW on x86-64 (which
 * every x86-64 processor of the last decade has; gcc emits it for __builtin_prefetch only with
 * -mprfchw), the compiler's write prefetch elsewhere. */
#if defined(__x86_64__)
#define claim_line(p) __asm__ volatile("prefetchw %0" : : "m"(*(const char *)(p)))
#else
#define claim_line(p) __builtin_prefetch((p), 1, 3)
#endif

int tutti__win_leads(const struct tutti_winset *ws, const struct tutti_op_desc *op, size_t *bytes)
{
    *bytes = 0;
    return ws != NULL && ws->ready &&
           (op->coll == TUTTI_COLL_BROADCAST || op->coll == TUTTI_COLL_REDUCE) &&
           tutti__win_carry_size(ws, op, bytes);
}

/* Whether this rank's part of led call op ends with its note (a broadcast's root, a reduce's
 * non-root). */
static int gives_only(const struct tutti_winset *ws, const struct tutti_op_desc *op)
{
    return (op->coll == TUTTI_COLL_BROADCAST) == (op->root == ws->rank);
}

tutti_status_t tutti__win_lead_post(struct tutti_winset *ws, struct tutti_fabric *fab,
                                    const struct tutti_op_desc *op, size_t bytes, uint64_t xseq,
                                    int *done_p)
{
    struct tutti_win_note *n;
    uint64_t k;
    *done_p = 0;
    ws->xseq = xseq;
    TUTTI_CHECK(tutti__win_note_begin(ws, fab, op, &n, &k));
    if (bytes > 0 && (op->coll == TUTTI_COLL_REDUCE || op->root == ws->rank)) {
        memcpy((uint8_t *)tutti__win_carried(n, bytes), op->sendbuf, bytes);
    }
    tutti__win_note_sign(ws, fab, op, n);
    tutti__win_note_post(ws, n, k, op->seq, TUTTI_WIN_CARRIED);
    ws->lead_k = k;
    ws->lead_bytes = bytes;
    tutti__win_pause_init(&ws->box_pause, fab);
    if (gives_only(ws, op)) {
        if (bytes <= AHEAD_BYTES) {
            /* this rank gives before its peers take: its note CLAIM_AHEAD calls later now holds
             * the call TUTTI_WIN_NOTES - CLAIM_AHEAD before that one, which its peers have read
             * unless they are that far behind. It fetches those lines for writing now, so that
             * the stores of that call need not wait for the peers to give them up (windows.md) */
            const struct tutti_win_note *later =
                &ws->slots[ws->rank]->note[(k + CLAIM_AHEAD) % TUTTI_WIN_NOTES];
            claim_line(later);
            for (size_t at = 0; bytes > TUTTI_WIN_SMALL && at < bytes; at += 64) {
                claim_line(later->u.data + at);
            }
        }
        tutti__fp_remember(fab, &ws->sign.fp);
        if (op->coll == TUTTI_COLL_BROADCAST && op->recvbuf != op->sendbuf) {
            memcpy(op->recvbuf, op->sendbuf, bytes);
        }
        tutti_debug(TUTTI_SUBSYS_TUNE, "%s of %zu %s: carried (chunk %zu, 0 channels: led)",
                    tutti__coll_name(op->coll), op->count, tutti_datatype_name(op->dt), bytes);
        *done_p = 1;
    }
    return TUTTI_OK;
}

/* Giver r had stamped note k before this rank looked: it runs ahead, so its note k + AHEAD is
 * probably written too. Ask for that note's lines now (the stamp's, and the data's when the call
 * carries more than the stamp's line holds), so that their misses overlap this call's work
 * instead of starting when that call reads them. A giver that is not ahead is left alone: the
 * lines it is about to write are not pulled away from it. */
#define ask_ahead(ws, r, k)                                                                        \
    do {                                                                                           \
        /* a macro: gcc 12 at -O2 dropped every call of a function holding only these */           \
        const struct tutti_win_note *later_ =                                                      \
            &(ws)->slots[r]->note[((k) + AHEAD) % TUTTI_WIN_NOTES];                                \
        __builtin_prefetch(later_, 0, 3);                                                          \
        for (size_t at_ = 0; (ws)->lead_bytes > TUTTI_WIN_SMALL && at_ < (ws)->lead_bytes;         \
             at_ += 64) {                                                                          \
            __builtin_prefetch(later_->u.data + at_, 0, 3);                                        \
        }                                                                                          \
    } while (0)

tutti_status_t tutti__win_lead_finish(struct tutti_winset *ws, struct tutti_fabric *fab,
                                      const struct tutti_op_desc *op, int how)
{
    uint64_t k = ws->lead_k;
    int bcast = op->coll == TUTTI_COLL_BROADCAST;
    for (int r = 0; r < ws->nranks; r++) {
        if (r == ws->rank || (bcast && r != op->root)) {
            continue;
        }
        _Atomic uint64_t *c = &ws->slots[r]->note[k % TUTTI_WIN_NOTES].stamp;
        if (!bcast && ws->lead_bytes <= AHEAD_BYTES &&
            atomic_load_explicit(c, memory_order_relaxed) >= k) {
            ask_ahead(ws, r, k);
        }
        while (atomic_load_explicit(c, memory_order_acquire) < k) {
            if (how == TUTTI_WIN_BOX_TRY) {
                return TUTTI_IN_PROGRESS;
            }
            TUTTI_CHECK(tutti__win_pause(ws, fab, op, &ws->box_pause, r, c, k, "reach the call"));
            if (how == TUTTI_WIN_BOX_STEP) {
                return TUTTI_IN_PROGRESS;
            }
        }
        tutti__win_saw(ws, r, k);
    }
    const struct tutti_win_note *notes[ws->nranks];
    const struct tutti_win_sign *me = &ws->sign;
    for (int r = 0; r < ws->nranks; r++) {
        notes[r] = &ws->slots[r]->note[k % TUTTI_WIN_NOTES];
        if (r == ws->rank || (bcast && r != op->root)) {
            continue;
        }
        /* the call, then the one before (a rank that took the other calls' data) */
        int same = tutti__fp_eq(&notes[r]->fp, &me->fp);
        if (!same || notes[r]->prev != me->prev) {
            tutti_status_t st = same ? tutti__fp_mismatch(fab, r, &notes[r]->prev_fp, &me->prev_fp)
                                     : tutti__fp_mismatch(fab, r, &notes[r]->fp, &me->fp);
            tutti__fabric_fail(fab, st, ws->rank);
            return st;
        }
    }
    tutti__fp_remember(fab, &me->fp);
    tutti_debug(TUTTI_SUBSYS_TUNE, "%s of %zu %s: carried (chunk %zu, 0 channels: led)",
                tutti__coll_name(op->coll), op->count, tutti_datatype_name(op->dt), ws->lead_bytes);
    tutti__win_carry_run(ws, op, notes, ws->lead_bytes);
    return TUTTI_OK;
}
