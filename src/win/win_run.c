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
 * Waits (win_wait.c) stop for an abort, a peer's failure notice, a peer's process that is gone
 * (TUTTI_ERR_REMOTE) or TUTTI_TIMEOUT (TUTTI_ERR_TIMEOUT). Sends and receives that fit go to the
 * boxes (win_box.c), small broadcasts and reduces are led (win_lead.c).
 */
#include "win/win.h"
#include "base/check.h"
#include "base/log.h"
#include "exec/fail.h"
#include "exec/fp.h"
#include "tutti/coll.h"

#include <endian.h>
#include <string.h>

/* The path past the ordinary one that op could take, so that it posts a note (ws ready):
 * TUTTI_WIN_CARRIED (the bytes each note carries in *bytes), TUTTI_WIN_WINDOWS (a collective
 * of tutti__win_shares once a window was shared), or TUTTI_WIN_ORDINARY: no note. */
static int note_kind(const struct tutti_winset *ws, const struct tutti_op_desc *op, size_t *bytes)
{
    if (ws == NULL || !ws->ready) {
        return TUTTI_WIN_ORDINARY;
    }
    if (tutti__win_carry_size(ws, op, bytes)) {
        return TUTTI_WIN_CARRIED;
    }
    return ws->windowed && tutti__win_shares(op) ? TUTTI_WIN_WINDOWS : TUTTI_WIN_ORDINARY;
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
        tutti__win_note_sign(ws, fab, op, me);
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
        notes[r] = &ws->slots[r]->note[k % TUTTI_WIN_NOTES];
        if (r != ws->rank && notes[r]->mode != (uint32_t)mode) {
            return 0; /* a rank takes the ordinary path: all do */
        }
    }
    const struct tutti_win_sign *mine = &ws->sign;
    for (int r = 0; r < ws->nranks; r++) {
        /* The call, then the one before: a rooted call whose ranks differed (roots that only
         * sent) left data nobody read, which the ordinary path would have found next. */
        int same = r == ws->rank || tutti__fp_eq(&notes[r]->fp, &mine->fp);
        if (!same || (r != ws->rank && notes[r]->prev != mine->prev)) {
            *st_p = same ? tutti__fp_mismatch(fab, r, &notes[r]->prev_fp, &mine->prev_fp)
                         : tutti__fp_mismatch(fab, r, &notes[r]->fp, &mine->fp);
            tutti__fabric_fail(fab, *st_p, ws->rank);
            return 1;
        }
    }
    tutti__fp_remember(fab, &mine->fp);
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
        for (int p = 0; r != ws->rank && p < TUTTI_WIN_NOTES; p++) {
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
