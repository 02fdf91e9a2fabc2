/*
 * win_box.c - carried messages (win.h): a send of 1 to TUTTI_WIN_BOX bytes to another local
 * rank travels in the sender's control page, as NCCL's LL protocol carries a small message with
 * its flag. The sender writes message number m of the pair into box m % TUTTI_WIN_BOXES of its
 * record for the receiver, with the send's fingerprint, and stamps it m; the receiver copies it
 * out, compares the fingerprints and counts it taken, which frees that box for message
 * m + TUTTI_WIN_BOXES. A send so returns at once unless that many of its messages to that
 * receiver are still there; it reads the receiver's count only when its last reading says so.
 *
 * Both ends decide from their own call whether a message is carried (its size), so a pair's
 * carried messages and its ordinary ones are each in issue order on both sides. A send and a
 * receive of different sizes across TUTTI_WIN_BOX still meet: a carried receive looks at the
 * sender's FIFOs for a frame of its own message number, and the engine's watch looks in the
 * sender's box for the message an ordinary receive waits for; either is TUTTI_ERR_MISMATCH.
 *
 * In a run of sends and receives (a group), the carried ones move as far as they can before the
 * ordinary ones run and finish after them (run/carried.c), each polled in turn: no message of the
 * run waits behind one that cannot move.
 */
#include "win/win.h"
#include "base/check.h"
#include "exec/fail.h"
#include "exec/fp.h"
#include "tutti/coll.h"

#include <endian.h>
#include <string.h>

static size_t op_bytes(const struct tutti_op_desc *op)
{
    return op->count * tutti_datatype_size(op->dt);
}

int tutti__win_box_fits(const struct tutti_winset *ws, const struct tutti_op_desc *op)
{
    size_t bytes = op_bytes(op);
    return ws != NULL && ws->ready && ws->pair_out != NULL &&
           (op->coll == TUTTI_COLL_SEND || op->coll == TUTTI_COLL_RECV) && op->peer >= 0 &&
           op->peer < ws->nranks && op->peer != ws->rank && bytes > 0 && bytes <= TUTTI_WIN_BOX;
}

void tutti__win_box_begin(struct tutti_winset *ws)
{
    tutti__win_pause_init(&ws->box_pause, ws->fab);
    ws->box_waited = -1;
    ws->box_checks = 0;
    memcpy(ws->run_out, ws->pair_out, (size_t)ws->nranks * sizeof(*ws->run_out));
    memcpy(ws->run_in, ws->pair_in, (size_t)ws->nranks * sizeof(*ws->run_in));
}

/* The receive op (fingerprint mine) met the other message: the error, the communicator failed. */
static tutti_status_t mismatch(struct tutti_winset *ws, struct tutti_fabric *fab,
                               const struct tutti_op_desc *op, const struct tutti_fp *got,
                               const struct tutti_fp *mine)
{
    tutti_status_t st = tutti__fp_mismatch(fab, op->peer, got, mine);
    tutti__fabric_fail(fab, st, ws->rank);
    return st;
}

/* Move op, the pair's carried message number m, if it can: 1 done, 0 not yet, or an error. */
static int step(struct tutti_winset *ws, struct tutti_fabric *fab, const struct tutti_op_desc *op,
                uint64_t m)
{
    int me = ws->rank, peer = op->peer;
    size_t bytes = op_bytes(op);
    if (op->coll == TUTTI_COLL_SEND) {
        if (m > TUTTI_WIN_BOXES + ws->pair_room[peer]) { /* the box may hold an earlier message */
            struct tutti_win_pair *theirs = tutti__win_pair(ws->slots[peer], me);
            ws->pair_room[peer] = atomic_load_explicit(&theirs->taken, memory_order_acquire);
            if (m > TUTTI_WIN_BOXES + ws->pair_room[peer]) {
                return 0;
            }
        }
        struct tutti_win_box *b = &tutti__win_pair(ws->ctl, peer)->box[m % TUTTI_WIN_BOXES];
        memcpy(bytes <= TUTTI_WIN_BOX_SMALL ? b->small : b->data, op->sendbuf, bytes);
        tutti__fp_make(op, me, &b->fp);
        atomic_store_explicit(&b->stamp, m, memory_order_release);
        return 1;
    }
    struct tutti_win_box *b = &tutti__win_pair(ws->slots[peer], me)->box[m % TUTTI_WIN_BOXES];
    if (atomic_load_explicit(&b->stamp, memory_order_acquire) < m) {
        return 0;
    }
    struct tutti_fp mine;
    tutti__fp_make(op, me, &mine);
    if (!tutti__fp_eq(&b->fp, &mine)) {
        return mismatch(ws, fab, op, &b->fp, &mine);
    }
    memcpy(op->recvbuf, bytes <= TUTTI_WIN_BOX_SMALL ? b->small : b->data, bytes);
    atomic_store_explicit(&tutti__win_pair(ws->ctl, peer)->taken, m, memory_order_release);
    return 1;
}

/* Whether fingerprint a is of the message b names (whatever its size): a send, with the same
 * number, from and to the same ranks. */
static int same_message(const struct tutti_fp *a, const struct tutti_fp *b)
{
    return (le64toh(a->w[3]) >> 8 & 0xffu) == TUTTI_COLL_SEND && a->w[0] == b->w[0] &&
           a->w[2] == b->w[2];
}

/* A carried receive op waits while its sender's FIFO to this rank holds a frame of the same
 * message (sent on the ordinary path: the sizes differ): its error, or TUTTI_OK. */
static tutti_status_t look_in_fifos(struct tutti_winset *ws, struct tutti_fabric *fab,
                                    const struct tutti_op_desc *op)
{
    struct tutti_fp mine;
    tutti__fp_make(op, ws->rank, &mine);
    for (int ch = 0; ch < TUTTI_MAX_CHANNELS; ch++) {
        struct tutti_tconn *t = fab->net.conns[(size_t)op->peer * TUTTI_MAX_CHANNELS + (size_t)ch];
        const struct tutti_fp *got = NULL;
        if (t != NULL && t->ops->peek_fp != NULL && t->ops->peek_fp(t, &got) == TUTTI_OK &&
            same_message(got, &mine)) {
            return mismatch(ws, fab, op, got, &mine);
        }
    }
    return TUTTI_OK;
}

/* A run of at most this many messages finds each one's place among its pair's by looking at the
 * ones before it (no per-rank counts to clear). */
#define FEW 8

/* ops[i]'s place among the run's messages of its pair and direction (1: the first). */
static uint64_t place(const struct tutti_op_desc *const *ops, int i)
{
    uint64_t k = 1;
    for (int j = 0; j < i; j++) {
        k += ops[j]->coll == ops[i]->coll && ops[j]->peer == ops[i]->peer;
    }
    return k;
}

/* One pass over the run's carried ops, moving each that can move: TUTTI_OK when all are done,
 * TUTTI_IN_PROGRESS (the first that waits in *wait_p, its number in *m_p), or an error. */
static tutti_status_t pass(struct tutti_winset *ws, struct tutti_fabric *fab,
                           const struct tutti_op_desc *const *ops, int n, int *wait_p,
                           uint64_t *m_p)
{
    int few = n <= FEW, len = few ? 1 : ws->nranks;
    uint32_t outs[len], ins[len]; /* many: each pair's messages so far in this pass */
    if (!few) {
        memset(outs, 0, sizeof(outs));
        memset(ins, 0, sizeof(ins));
    }
    *wait_p = -1;
    for (int i = 0; i < n; i++) {
        const struct tutti_op_desc *op = ops[i];
        int send = op->coll == TUTTI_COLL_SEND;
        uint64_t *done = send ? &ws->pair_out[op->peer] : &ws->pair_in[op->peer];
        uint64_t nth = few ? place(ops, i) : send ? ++outs[op->peer] : ++ins[op->peer];
        uint64_t m = (send ? ws->run_out[op->peer] : ws->run_in[op->peer]) + nth;
        if (m <= *done) {
            continue;
        }
        int rc = m == *done + 1 ? step(ws, fab, op, m) : 0;
        if (rc < 0) {
            return (tutti_status_t)rc;
        }
        if (rc == 1) {
            *done = m;
        } else if (*wait_p < 0) {
            *wait_p = i;
            *m_p = m;
        }
    }
    return *wait_p < 0 ? TUTTI_OK : TUTTI_IN_PROGRESS;
}

tutti_status_t tutti__win_box_run(struct tutti_winset *ws, struct tutti_fabric *fab,
                                  const struct tutti_op_desc *const *ops, int n, int how,
                                  uint64_t xseq)
{
    struct tutti_win_pause *p = &ws->box_pause;
    ws->xseq = xseq;
    for (;;) {
        int wait = -1;
        uint64_t m = 0;
        tutti_status_t st = pass(ws, fab, ops, n, &wait, &m);
        if (st != TUTTI_IN_PROGRESS || how == TUTTI_WIN_BOX_TRY) {
            return st;
        }
        if (wait != ws->box_waited) { /* progress: spin again */
            p->polls = 0;
            ws->box_waited = wait;
        }
        const struct tutti_op_desc *op = ops[wait];
        int send = op->coll == TUTTI_COLL_SEND;
        struct tutti_win_pair *theirs = tutti__win_pair(ws->slots[op->peer], ws->rank);
        _Atomic uint64_t *c = send ? &theirs->taken : &theirs->box[m % TUTTI_WIN_BOXES].stamp;
        TUTTI_CHECK(tutti__win_pause(ws, fab, op, p, op->peer, c, send ? m - TUTTI_WIN_BOXES : m,
                                     send ? "take an earlier message" : "send the message"));
        if (!send && p->checks != ws->box_checks) {
            ws->box_checks = p->checks;
            TUTTI_CHECK(look_in_fifos(ws, fab, op));
        }
        if (how == TUTTI_WIN_BOX_STEP) {
            return TUTTI_IN_PROGRESS;
        }
    }
}

tutti_status_t tutti__win_box_watch(struct tutti_winset *ws, const struct tutti_op_desc *op,
                                    const struct tutti_fp *fp)
{
    if (op->coll != TUTTI_COLL_RECV || ws->pair_in == NULL || op->peer < 0 ||
        op->peer >= ws->nranks || op->peer == ws->rank) {
        return TUTTI_OK;
    }
    struct tutti_win_pair *theirs = tutti__win_pair(ws->slots[op->peer], ws->rank);
    for (int p = 0; p < TUTTI_WIN_BOXES; p++) {
        struct tutti_win_box *b = &theirs->box[p];
        uint64_t a = atomic_load_explicit(&b->stamp, memory_order_acquire);
        struct tutti_fp got = b->fp;
        atomic_thread_fence(memory_order_acquire);
        if (a > ws->pair_in[op->peer] &&
            atomic_load_explicit(&b->stamp, memory_order_relaxed) == a && same_message(&got, fp)) {
            return tutti__fp_mismatch(ws->fab, op->peer, &got, fp);
        }
    }
    return TUTTI_OK;
}
