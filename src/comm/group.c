/*
 * group.c - tutti_group_start/end. Calls inside a group are validated and recorded in the
 * calling thread's list; the outermost end splits each communicator's calls into segments (a
 * collective, or a run of sends and receives merged into one plan so pairs cannot deadlock)
 * and runs segment k of every communicator together, which lets one thread drive several
 * communicators of the same job.
 */
#include "comm/group.h"
#include "base/check.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "exec/fail.h"
#include "exec/op.h"
#include "base/global.h"
#include "run/run.h"
#include "run/turn.h"
#include "gpu/stream.h"

#include <stdlib.h>
#include <string.h>

tutti_status_t tutti_group_start(void)
{
    tutti__tls.group_depth++;
    return TUTTI_OK;
}

/* A small group's calls (a send and a receive, an exchange with a few peers) are recorded here:
 * a loop of groups allocates nothing for them. Larger groups move to the heap. */
#define GROUP_SMALL 8
static __thread struct tutti_group_op small_ops[GROUP_SMALL];

tutti_status_t tutti__group_record(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                   int on_stream, void *stream)
{
    struct tutti_tls *t = &tutti__tls;
    if (t->group_cap == 0) {
        t->group_ops = small_ops;
        t->group_cap = GROUP_SMALL;
    }
    if (t->group_nops == t->group_cap) {
        int cap = t->group_cap * 2;
        int small = t->group_ops == small_ops;
        struct tutti_group_op *n = realloc(small ? NULL : t->group_ops, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                    "no memory to record a group call");
        }
        if (small) {
            memcpy(n, small_ops, sizeof(small_ops));
        }
        t->group_ops = n;
        t->group_cap = cap;
    }
    struct tutti_group_op *g = &t->group_ops[t->group_nops];
    g->op = *op;
    int failed = 0;
    g->owned_v = tutti__op_own_counts(&g->op, comm->fab.nranks, &failed); /* the caller's go */
    if (failed) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "no memory to record a group call");
    }
    t->group_ops[t->group_nops].comm = comm;
    t->group_ops[t->group_nops].serial = comm->serial; /* the caller has entered comm */
    t->group_ops[t->group_nops].on_stream = on_stream;
    t->group_ops[t->group_nops].stream = stream;
    t->group_nops++;
    return TUTTI_OK;
}

/* One communicator's part of the group. */
struct member {
    struct tutti_comm *comm;
    struct tutti_run_member run; /* its runner, its calls in order, status, plan */
    uint64_t serial;             /* comm's serial when its calls were recorded */
    int entered;                 /* tutti__comm_enter succeeded: comm is live, the same, and held */
};

/* The members of a small group, in the caller's frame: nothing allocated. */
struct members_small {
    struct member ms[GROUP_SMALL];
    const struct tutti_op_desc *lists[GROUP_SMALL];
};

/* Group the recorded calls by communicator, keeping their order (in `small` when they fit;
 * members_free gives back what was allocated). */
static struct member *collect(struct tutti_group_op *gops, int n, int *nm_p,
                              struct members_small *small)
{
    int fits = n <= GROUP_SMALL;
    if (fits) {
        memset(small, 0, sizeof(*small));
    }
    struct member *ms = fits ? small->ms : calloc((size_t)n, sizeof(*ms));
    const struct tutti_op_desc **lists = fits ? small->lists : calloc((size_t)n, sizeof(*lists));
    if (ms == NULL || lists == NULL) {
        if (!fits) {
            free(ms);
            free(lists);
        }
        return NULL;
    }
    int nm = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < nm && (ms[k].comm != gops[i].comm || ms[k].serial != gops[i].serial)) {
            k++;
        }
        if (k == nm) {
            ms[nm].comm = gops[i].comm;
            ms[nm].run.runner = &gops[i].comm->run;
            ms[nm++].serial = gops[i].serial;
        }
        ms[k].run.nops++;
    }
    int used = 0;
    for (int k = 0; k < nm; k++) {
        ms[k].run.ops = lists + used;
        used += ms[k].run.nops;
        ms[k].run.nops = 0;
    }
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (ms[k].comm != gops[i].comm || ms[k].serial != gops[i].serial) {
            k++;
        }
        ms[k].run.ops[ms[k].run.nops++] = &gops[i].op;
    }
    *nm_p = nm;
    return ms;
}

static void members_free(struct member *ms, const struct members_small *small)
{
    if (ms != NULL && ms != small->ms) {
        free((void *)ms[0].run.ops);
        free(ms);
    }
}

/*
 * Enter a member's communicator for the group's end. One destroyed or aborted since its calls
 * were recorded (tutti_comm_destroy inside the group) is not touched: its calls do not run, and
 * the end says so with TUTTI_ERR_INVALID_USAGE; the other members still run theirs.
 */
static tutti_status_t member_enter(struct member *m)
{
    if (tutti__comm_enter(m->comm, m->serial) != 0) {
        return m->run.status = tutti__set_error(
                   tutti__comm_err(NULL), TUTTI_ERR_INVALID_USAGE,
                   "tutti_group_end: comm %p was destroyed or aborted after %d call(s) on it were "
                   "recorded in this group; they did not run",
                   (void *)m->comm, m->run.nops);
    }
    m->entered = 1;
    return TUTTI_OK;
}

/*
 * A group holding calls on a stream (or on device buffers): every call must be, on one stream.
 * Each communicator's calls become one stream batch (stream.c), run as a group when the stream
 * reaches it.
 */
static tutti_status_t run_on_stream(struct tutti_group_op *g, int n)
{
    for (int i = 0; i < n; i++) {
        if (!g[i].on_stream || g[i].stream != g[0].stream) {
            return tutti__set_error(NULL, TUTTI_ERR_UNSUPPORTED,
                                    "group: %s calls on a CUDA stream (or device buffers) with "
                                    "%s; a group's calls must all be on one stream",
                                    tutti__coll_name(g[0].op.coll),
                                    g[i].on_stream ? "calls on another stream" : "host calls");
        }
    }
    int nm = 0;
    struct members_small small;
    struct member *ms = collect(g, n, &nm, &small);
    struct tutti_op_desc *ops = calloc((size_t)n, sizeof(*ops));
    tutti_status_t st = TUTTI_OK;
    if (ms == NULL || ops == NULL) {
        st = tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory to run a group");
    }
    for (int k = 0; k < nm && st == TUTTI_OK; k++) {
        for (int i = 0; i < ms[k].run.nops; i++) {
            ops[i] = *ms[k].run.ops[i];
        }
        st = member_enter(&ms[k]);
        if (st == TUTTI_OK) {
            st = tutti__fabric_health(&ms[k].comm->fab);
            if (st == TUTTI_OK) {
                st = tutti__stream_enqueue(&ms[k].comm->gpu, ops, ms[k].run.nops, g[0].stream);
            }
            tutti__comm_leave(ms[k].comm);
        }
    }
    members_free(ms, &small);
    free(ops);
    return st;
}

static void group_clear(struct tutti_tls *t)
{
    for (int i = 0; i < t->group_nops; i++) {
        free(t->group_ops[i].owned_v);
        t->group_ops[i].owned_v = NULL;
    }
    if (t->group_ops != small_ops) {
        free(t->group_ops);
    }
    t->group_ops = NULL;
    t->group_nops = t->group_cap = 0;
}

/* A small group of sends and receives on one communicator, each of which travels in the boxes
 * (win/win_box.c), runs here: no segments, no plan. 1: it ran (its status in *st_p); 0: the
 * group takes the general path, its calls issued already where *issued_p says so. */
static int carried_group(struct tutti_group_op *g, int n, tutti_status_t *st_p, int *issued_p)
{
    const struct tutti_op_desc *ops[GROUP_SMALL];
    if (n == 0 || n > GROUP_SMALL) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (g[i].comm != g[0].comm || g[i].serial != g[0].serial ||
            (g[i].op.coll != TUTTI_COLL_SEND && g[i].op.coll != TUTTI_COLL_RECV)) {
            return 0;
        }
        ops[i] = &g[i].op;
    }
    if (tutti__comm_enter(g[0].comm, g[0].serial) != 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) { /* issued now: the communicator is live (entered) */
        tutti__fp_issue(&g[0].comm->fab, &g[i].op);
    }
    *issued_p = 1;
    tutti__turn_take(&g[0].comm->run);
    int ran = tutti__run_carried(&g[0].comm->run, ops, n, st_p);
    tutti__turn_give(&g[0].comm->run);
    tutti__comm_leave(g[0].comm);
    return ran;
}

tutti_status_t tutti_group_end(void)
{
    struct tutti_tls *t = &tutti__tls;
    if (t->group_depth == 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                                "tutti_group_end without a matching tutti_group_start");
    }
    if (--t->group_depth > 0) {
        return TUTTI_OK;
    }
    for (int i = 0; i < t->group_nops; i++) {
        if (t->group_ops[i].on_stream) {
            tutti_status_t st = run_on_stream(t->group_ops, t->group_nops);
            group_clear(t);
            return st;
        }
    }
    tutti_status_t carried = TUTTI_OK;
    int issued = 0;
    if (carried_group(t->group_ops, t->group_nops, &carried, &issued)) {
        group_clear(t);
        return carried;
    }
    /* The group's calls are issued now, in the order they were recorded; a communicator
     * destroyed since is not touched (member_enter refuses its calls). */
    int live = 0;
    for (int i = 0; i < t->group_nops && !issued; i++) {
        const struct tutti_group_op *g = &t->group_ops[i];
        if (i == 0 || g->comm != g[-1].comm) { /* one look per run of calls on one comm */
            live = tutti__handle_live(&tutti__g.live_comms, g->comm);
        }
        if (live) {
            tutti__fp_issue(&t->group_ops[i].comm->fab, &t->group_ops[i].op);
        }
    }
    int nm = 0;
    struct members_small small;
    struct member *ms =
        t->group_nops > 0 ? collect(t->group_ops, t->group_nops, &nm, &small) : NULL;
    struct tutti_run_member *runs_small[GROUP_SMALL];
    struct tutti_run_member **runs = ms == NULL          ? NULL
                                     : nm <= GROUP_SMALL ? runs_small
                                                         : calloc((size_t)nm, sizeof(*runs));
    tutti_status_t st = TUTTI_OK;
    if (t->group_nops > 0 && runs == NULL) {
        st = tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory to run a group");
        nm = 0; /* nothing runs */
    }
    for (int i = 0; i < nm; i++) {
        runs[i] = &ms[i].run;
        if (member_enter(&ms[i]) == TUTTI_OK) {
            tutti__turn_take(&ms[i].comm->run);
            ms[i].run.plan = &ms[i].comm->run.group_plan; /* the comm's, under its turn */
            ms[i].run.ex = &ms[i].comm->fab.exec;
            ms[i].run.status = tutti__fabric_health(&ms[i].comm->fab);
        }
    }
    if (nm > 0) {
        tutti__run_members(runs,
                           nm); /* a member that was not entered has a status: it runs nothing */
    }
    for (int i = 0; i < nm; i++) {
        if (st == TUTTI_OK && ms[i].run.status != TUTTI_OK) {
            st = ms[i].run.status;
        }
        if (ms[i].entered) {
            tutti__turn_give(&ms[i].comm->run);
            tutti__comm_leave(ms[i].comm);
        }
    }
    members_free(ms, &small);
    if (runs != runs_small) {
        free(runs);
    }
    group_clear(t);
    return st;
}

tutti_status_t tutti__group_simulate(double *time_us_p)
{
    struct tutti_tls *t = &tutti__tls;
    double total = 0;
    if (t->group_depth == 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                                "simulating a group's end without an open group");
    }
    *time_us_p = 0;
    if (--t->group_depth > 0) {
        return TUTTI_OK;
    }
    tutti_status_t st = TUTTI_OK;
    for (int i = 0; i < t->group_nops && st == TUTTI_OK; i++) {
        struct tutti_plan_params pp;
        double us = 0;
        struct tutti_group_op *g = &t->group_ops[i];
        if (tutti__comm_enter(g->comm, g->serial) != 0) {
            st = tutti__comm_not_live(g->comm, "simulating a group's end");
            break;
        }
        tutti__run_plan_params(&g->comm->run, &g->op, &pp);
        pp.memo = NULL; /* the communicator's answers are written under its turn, not here */
        if (tutti__algo_tuned(&g->op, &pp, NULL, &us) >= 0) {
            total += us;
        }
        tutti__comm_leave(g->comm);
    }
    group_clear(t);
    TUTTI_CHECK(st);
    *time_us_p = total;
    return TUTTI_OK;
}
