/*
 * run.c - plan, execute, wait, complete (run.h): the steps every operation goes through once
 * it is its communicator's turn, whether it came from a blocking call, the progress thread or
 * a group's end.
 */
#include "run/run.h"
#include "base/check.h"
#include "coll/coll.h"
#include "run/runner.h"
#include "exec/engine.h"
#include "exec/fail.h"
#include "exec/op.h"
#include "topology/layout.h"
#include "run/carried.h"
#include "win/win.h"

#include <stdlib.h>

void tutti__run_plan_params(struct tutti_runner *runner, const struct tutti_op_desc *op,
                            struct tutti_plan_params *pp)
{
    size_t es = tutti_datatype_size(op->dt);
    pp->rank = runner->fab->rank;
    pp->nranks = runner->fab->nranks;
    pp->nchannels = runner->fab->cfg.nchannels;
    pp->chunk_elems = runner->fab->cfg.chunk_bytes / es > 0 ? runner->fab->cfg.chunk_bytes / es : 1;
    /* The cost model picks the channels itself, up to the communicator's (unless an algorithm
     * is forced: that one runs as the static rule would run it). Send and receive keep every
     * channel: both ends of a message must agree, and a grouped receive cannot know the size
     * of the send it pairs with. */
    int model = runner->fab->cfg.tuner && runner->fab->cfg.forced[op->coll] < 0;
    if (op->coll != TUTTI_COLL_SEND && op->coll != TUTTI_COLL_RECV && !model) {
        pp->nchannels = tutti__algo_static_channels(op, pp);
    }
    pp->direct_max = runner->fab->cfg.direct_max;
    pp->mem_budget = runner->fab->cfg.mem_budget;
    pp->conn_bytes = runner->fab->cfg.conn_bytes;
    pp->budget_strict = runner->fab->cfg.budget_strict;
    pp->forced = runner->fab->cfg.forced[op->coll];
    pp->tuner = runner->fab->cfg.tuner;
    pp->layout = runner->fab->layout;
    pp->nhosts = runner->fab->layout != NULL ? runner->fab->layout->nhosts : 1;
    pp->cpu_load = runner->fab->cfg.cpu_load;
    pp->memo = &runner->tune;
    pp->intra_tcp = runner->fab->cfg.force_tcp;
    pp->peer_transport = runner->fab->net.peer_transport;
}

/* The error of a call no algorithm of which fits TUTTI_MEM_BUDGET, naming the cheapest. */
static tutti_status_t over_budget(struct tutti_runner *runner, const struct tutti_op_desc *d,
                                  const struct tutti_plan_params *pp)
{
    int n = 0, best = -1, peers = 0;
    const struct tutti_algo *a = tutti__algos(d->coll, &n);
    for (int i = 0; i < n; i++) {
        int p = tutti__algo_peers(&a[i], pp->nranks);
        if (a[i].applies(d, pp) && (best < 0 || p < peers)) {
            best = i;
            peers = p;
        }
    }
    return tutti__set_error(
        tutti__fabric_err(runner->fab), TUTTI_ERR_INVALID_USAGE,
        "%s of %zu %s on %d ranks: no algorithm fits TUTTI_MEM_BUDGET, %zu bytes per rank: the "
        "cheapest, %s, connects %d peers x %d channel%s at %zu bytes each; raise the budget, or "
        "0 for no limit",
        tutti__coll_name(d->coll), d->count, tutti_datatype_name(d->dt), pp->nranks, pp->mem_budget,
        best >= 0 ? a[best].name : "none", peers, pp->nchannels, pp->nchannels == 1 ? "" : "s",
        pp->conn_bytes);
}

/* The plan of one collective (or send, or receive) into plan, the error recorded on comm (a
 * forced algorithm that does not apply, a budget nothing fits). A barrier's byte is `byte`,
 * which outlives the run. */
static tutti_status_t plan_one(struct tutti_runner *runner, const struct tutti_op_desc *op,
                               uint8_t *byte, struct tutti_plan *plan)
{
    struct tutti_op_desc d = *op;
    tutti__op_bind_barrier(&d, byte);
    struct tutti_plan_params pp;
    tutti__run_plan_params(runner, &d, &pp);
    int rc = tutti__plan_build_cached(&d, &pp, plan);
    if (rc == -2) {
        char valid[128];
        tutti__algo_applicable(&d, &pp, valid, sizeof(valid));
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_INVALID_USAGE,
                                "TUTTI_ALGO forces %s:%s, which does not apply to %zu elements of "
                                "%s on %d ranks (applicable: %s)",
                                tutti__coll_name(d.coll), tutti__algos(d.coll, &rc)[pp.forced].name,
                                d.count, tutti_datatype_name(d.dt), pp.nranks, valid);
    }
    if (rc == -3) {
        return over_budget(runner, &d, &pp);
    }
    if (rc != 0) {
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                "no memory to plan a %s", tutti__coll_name(d.coll));
    }
    tutti_debug(TUTTI_SUBSYS_TUNE, "%s of %zu %s: %s (chunk %zu, %d channel%s)",
                tutti__coll_name(d.coll), d.count, tutti_datatype_name(d.dt), plan->algo,
                plan->chunk_elems, plan->nchannels, plan->nchannels == 1 ? "" : "s");
    return TUTTI_OK;
}

/* The next phase of a plan in two (plan->then): built into the same plan, ready to run in ex. A
 * first phase that shows the ranks' calls differ fails the communicator with the reason. */
static tutti_status_t next_phase(struct tutti_runner *runner, const struct tutti_op_desc *op,
                                 struct tutti_plan *plan, struct tutti_exec *ex, uint64_t seq)
{
    struct tutti_plan_params pp;
    char why[256] = "";
    tutti__run_plan_params(runner, op, &pp);
    int rc = tutti__plan_continue(op, &pp, plan, why, sizeof(why));
    if (rc == -4) {
        tutti_status_t st =
            tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_MISMATCH, "%s", why);
        tutti__fabric_fail(runner->fab, st, runner->fab->rank);
        return st;
    }
    if (rc != 0) {
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                "no memory to plan a %s", tutti__coll_name(op->coll));
    }
    return tutti__exec_reuse(ex, runner->fab, plan, seq);
}

tutti_status_t tutti__run_op(struct tutti_runner *runner, const struct tutti_op_desc *op,
                             struct tutti_plan *plan)
{
    tutti_status_t st = tutti__fabric_health(runner->fab);
    if (st != TUTTI_OK) {
        char why[512];
        tutti__errbuf_read(&runner->fab->err, why, sizeof(why));
        return tutti__set_error_quiet(NULL, st, "%s on a communicator that failed earlier: %s",
                                      tutti__coll_name(op->coll), why);
    }
    uint64_t seq = tutti__fabric_seq_post(runner->fab);
    if (tutti__win_try(runner->win, runner->fab, op, seq, &st)) { /* on shared windows, in place */
        if (st == TUTTI_OK) {
            tutti__fabric_seq_done(runner->fab, seq);
        }
        return st;
    }
    uint8_t byte = 0;
    TUTTI_CHECK(plan_one(runner, op, &byte, plan));
    struct tutti_exec *ex = &runner->fab->exec; /* ours while we hold the turn */
    TUTTI_CHECK(tutti__exec_reuse(ex, runner->fab, plan, seq));
    st = tutti__engine_run(&ex, 1);
    while (st == TUTTI_OK && plan->then != NULL) {
        st = next_phase(runner, op, plan, ex, seq);
        st = st == TUTTI_OK ? tutti__engine_run(&ex, 1) : st;
    }
    plan->then = NULL; /* a phase that failed has no next one */
    if (st == TUTTI_OK) {
        tutti__fabric_seq_done(runner->fab, seq);
    }
    return st;
}

static int is_p2p(const struct tutti_op_desc *op)
{
    return op->coll == TUTTI_COLL_SEND || op->coll == TUTTI_COLL_RECV;
}

/* Build the member's next segment into its plan. 0: built; 1: nothing left; 2: it was all
 * carried, and is done; 3: its carried calls wait (poll again); <0: error. */
static int segment_once(struct tutti_run_member *m)
{
    int rc = tutti__run_carried_finish(m);
    rc = rc == 0 ? tutti__run_lead_finish(m) : rc;
    if (rc != 0) {
        return rc < 0 ? -1 : 3;
    }
    if (m->status == TUTTI_OK && m->plan->then != NULL) { /* the second phase of the last */
        uint64_t seq = tutti__fabric_seq_post(m->runner->fab);
        m->status = next_phase(m->runner, m->ops[m->next - 1], m->plan, m->ex, seq);
        return m->status == TUTTI_OK ? 0 : -1;
    }
    if (m->next >= m->nops || m->status != TUTTI_OK) {
        return 1;
    }
    struct tutti_runner *runner = m->runner;
    const struct tutti_op_desc *first = m->ops[m->next];
    int end = m->next + 1;
    while (is_p2p(first) && end < m->nops && is_p2p(m->ops[end])) {
        end++;
    }
    if (is_p2p(first)) {
        int k = tutti__run_carried_start(m, end);
        if (k <= 0) { /* all of them carried, or an error */
            m->next = end;
            rc = k < 0 ? -1 : tutti__run_carried_finish(m);
            return rc < 0 ? -1 : rc == 0 ? 2 : 3;
        }
        first = m->ops[m->next];
        struct tutti_plan_params pp;
        tutti__run_plan_params(runner, first, &pp);
        pp.chunk_elems = runner->fab->cfg.chunk_bytes; /* a group's merged p2p plan counts bytes */
        rc = tutti__p2p_group_build(m->ops + m->next, k, &pp, m->plan);
        if (rc == -2) {
            m->status = tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_INVALID_USAGE,
                                         "group: sends to self and receives from self do not "
                                         "pair up (same number, same sizes, in order)");
        } else if (rc != 0) {
            m->status = tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                         "no memory to plan a group");
        }
    } else if ((rc = tutti__run_lead_start(m, first)) != 0) { /* a led broadcast or reduce */
        m->next = end;
        rc = rc < 0 ? -1 : tutti__run_lead_finish(m);
        return rc < 0 ? -1 : rc == 0 ? 2 : 3;
    } else {
        m->status = tutti__win_note(runner->win, runner->fab, first); /* ordinary in groups */
        m->status =
            m->status == TUTTI_OK ? plan_one(runner, first, &m->barrier_byte, m->plan) : m->status;
    }
    m->next = end;
    if (m->status != TUTTI_OK) {
        return -1;
    }
    uint64_t seq = tutti__fabric_seq_post(runner->fab);
    m->status = tutti__exec_reuse(m->ex, runner->fab, m->plan, seq);
    return m->status == TUTTI_OK ? 0 : -1;
}

/* Build the member's next segment that has ordinary calls into its plan. 0: built; 1: nothing
 * left; 3: its carried calls wait; <0: error. */
static int next_segment(struct tutti_run_member *m)
{
    int rc;
    while ((rc = segment_once(m)) == 2) {
    }
    return rc;
}

#define MEMBERS_SMALL 8 /* members run without allocating (a group on a few communicators) */

void tutti__run_members(struct tutti_run_member **ms, int nm)
{
    struct tutti_exec *exs_small[MEMBERS_SMALL];
    struct tutti_run_member *ran_small[MEMBERS_SMALL];
    int small = nm <= MEMBERS_SMALL;
    struct tutti_exec **exs = small ? exs_small : calloc((size_t)nm, sizeof(*exs));
    struct tutti_run_member **ran = small ? ran_small : calloc((size_t)nm, sizeof(*ran));
    if (exs == NULL || ran == NULL) {
        for (int i = 0; i < nm; i++) {
            if (ms[i]->status == TUTTI_OK) { /* else its comm may be gone: leave it alone */
                ms[i]->status = tutti__set_error(tutti__fabric_err(ms[i]->runner->fab),
                                                 TUTTI_ERR_NO_MEMORY, "no memory");
            }
        }
        if (!small) {
            free(exs);
            free(ran);
        }
        return;
    }
    for (int i = 0; i < nm; i++) {
        ms[i]->solo = nm == 1; /* it may wait for its carried calls: no other member needs it */
    }
    for (;;) {
        int n = 0, waiting = 0;
        for (int i = 0; i < nm; i++) {
            int rc = next_segment(ms[i]);
            if (rc == 0) {
                ran[n] = ms[i];
                exs[n++] = ms[i]->ex;
            }
            waiting += rc == 3;
        }
        if (n == 0) {
            if (waiting > 0) {
                continue; /* each waiting member polled its carried calls once */
            }
            break;
        }
        (void)tutti__engine_run(exs, n);
        for (int i = 0; i < n; i++) {
            if (exs[i]->status != TUTTI_OK) {
                ran[i]->status = exs[i]->status;
                ran[i]->plan->then = NULL; /* a phase that failed has no next one */
            } else {
                tutti__fabric_seq_done(ran[i]->runner->fab, exs[i]->seq);
            }
        }
    }
    if (!small) {
        free(exs);
        free(ran);
    }
}

tutti_status_t tutti__run_batch(struct tutti_runner *runner, const struct tutti_op_desc *ops, int n)
{
    const struct tutti_op_desc **list = calloc((size_t)n, sizeof(*list));
    if (list == NULL) {
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                "no memory to run a group");
    }
    for (int i = 0; i < n; i++) {
        list[i] = &ops[i];
    }
    struct tutti_run_member m = {.runner = runner,
                                 .ops = list,
                                 .nops = n,
                                 .status = tutti__fabric_health(runner->fab),
                                 .plan = &runner->group_plan,
                                 .ex = &runner->fab->exec};
    struct tutti_run_member *mp = &m;
    tutti__run_members(&mp, 1);
    free(list);
    return m.status;
}
