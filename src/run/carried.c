/*
 * carried.c - calls of a group that travel in the control pages (carried.h): sends and
 * receives in the boxes (win/win_box.c), a small group of nothing else and the carried part of
 * a group's runs of them; led broadcasts and reduces (win/win_lead.c).
 */
#include "run/carried.h"
#include "base/check.h"
#include "exec/fabric.h"
#include "exec/fail.h"
#include "run/runner.h"
#include "win/win.h"

#include <stdlib.h>
#include <string.h>

int tutti__run_carried(struct tutti_runner *runner, const struct tutti_op_desc *const *ops, int n,
                       tutti_status_t *st_p)
{
    for (int i = 0; i < n; i++) {
        if (!tutti__win_box_fits(runner->win, ops[i])) {
            return 0;
        }
    }
    if (tutti__fabric_health(runner->fab) != TUTTI_OK) {
        return 0; /* the general path says why */
    }
    uint64_t seq = tutti__fabric_seq_post(runner->fab);
    tutti__win_box_begin(runner->win);
    *st_p = tutti__win_box_run(runner->win, runner->fab, ops, n, TUTTI_WIN_BOX_WAIT, seq);
    if (*st_p == TUTTI_OK) {
        tutti__fabric_seq_done(runner->fab, seq);
    }
    return 1;
}

/* Move the carried ones of the member's calls [from, end) to the end of that range, each part
 * in issue order: the number of the others, or -1 (no memory). */
static int split(struct tutti_run_member *m, int from, int end)
{
    const struct tutti_op_desc **ops = m->ops + from, *small[32];
    int n = end - from, k = 0, c = 0;
    for (int i = 0; i < n; i++) {
        c += tutti__win_box_fits(m->runner->win, ops[i]);
    }
    if (c == 0) {
        return n;
    }
    const struct tutti_op_desc **tmp = c <= 32 ? small : malloc((size_t)c * sizeof(*tmp));
    if (tmp == NULL) {
        return -1;
    }
    c = 0;
    for (int i = 0; i < n; i++) {
        if (tutti__win_box_fits(m->runner->win, ops[i])) {
            tmp[c++] = ops[i];
        } else {
            ops[k++] = ops[i];
        }
    }
    memcpy(ops + k, tmp, (size_t)c * sizeof(*tmp));
    if (tmp != small) {
        free(tmp);
    }
    return k;
}

int tutti__run_carried_start(struct tutti_run_member *m, int end)
{
    struct tutti_runner *runner = m->runner;
    int k = split(m, m->next, end), n = end - m->next - k;
    if (k < 0) {
        m->status = tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                     "no memory to run a group");
        return -1;
    }
    if (n > 0) {
        m->box_seq = tutti__fabric_seq_post(runner->fab);
        tutti__win_box_begin(runner->win);
        m->status = tutti__win_box_run(runner->win, runner->fab, m->ops + m->next + k, n,
                                       TUTTI_WIN_BOX_TRY, m->box_seq);
        if (m->status == TUTTI_IN_PROGRESS) {
            m->status = TUTTI_OK;
        } else if (m->status != TUTTI_OK) {
            return -1;
        }
        m->box_from = m->next + k;
        m->box_to = end;
    }
    return k;
}

int tutti__run_carried_finish(struct tutti_run_member *m)
{
    int n = m->box_to - m->box_from;
    if (n == 0) {
        return 0;
    }
    if (m->status != TUTTI_OK) {
        m->box_to = m->box_from = 0;
        return -1;
    }
    struct tutti_runner *runner = m->runner;
    tutti_status_t st =
        tutti__win_box_run(runner->win, runner->fab, m->ops + m->box_from, n,
                           m->solo ? TUTTI_WIN_BOX_WAIT : TUTTI_WIN_BOX_STEP, m->box_seq);
    if (st == TUTTI_IN_PROGRESS) {
        return 1;
    }
    m->box_to = m->box_from = 0;
    m->status = st;
    if (st != TUTTI_OK) {
        return -1;
    }
    tutti__fabric_seq_done(runner->fab, m->box_seq);
    return 0;
}

int tutti__run_lead_start(struct tutti_run_member *m, const struct tutti_op_desc *op)
{
    struct tutti_runner *runner = m->runner;
    size_t bytes = 0;
    int done = 0;
    if (!tutti__win_leads(runner->win, op, &bytes)) {
        return 0;
    }
    m->lead_seq = tutti__fabric_seq_post(runner->fab);
    m->status = tutti__win_lead_post(runner->win, runner->fab, op, bytes, m->lead_seq, &done);
    if (m->status != TUTTI_OK) {
        return -1;
    }
    if (done) {
        tutti__fabric_seq_done(runner->fab, m->lead_seq);
    } else {
        m->lead = op;
    }
    return 1;
}

int tutti__run_lead_finish(struct tutti_run_member *m)
{
    const struct tutti_op_desc *op = m->lead;
    if (op == NULL) {
        return 0;
    }
    m->lead = NULL;
    if (m->status != TUTTI_OK) {
        return -1;
    }
    struct tutti_runner *runner = m->runner;
    tutti_status_t st = tutti__win_lead_finish(runner->win, runner->fab, op,
                                               m->solo ? TUTTI_WIN_BOX_WAIT : TUTTI_WIN_BOX_STEP);
    if (st == TUTTI_IN_PROGRESS) {
        m->lead = op;
        return 1;
    }
    m->status = st;
    if (st != TUTTI_OK) {
        return -1;
    }
    tutti__fabric_seq_done(runner->fab, m->lead_seq);
    return 0;
}
