/*
 * window.c - tutti_comm_window_register and its kin (tutti/mem.h): the collective exchange of
 * the ranks' records (two service collectives: the records, then whether every rank mapped
 * every peer), and the windows' place in the runner's window set, changed under the turn.
 */
#include "base/check.h"
#include "base/env.h"
#include "comm/comm.h"
#include "exec/boot.h"
#include "exec/fail.h"
#include "run/service.h"
#include "run/turn.h"
#include "tutti/mem.h"
#include "win/win.h"

#include <stdlib.h>
#include <string.h>

/* The window set is ready from now on: the engine's watch looks at its notes. */
static void notes_ready(tutti_comm_t *comm, struct tutti_winset *ws)
{
    ws->ready = 1;
    ws->fab = &comm->fab;
    comm->fab.watch = tutti__win_watch;
    comm->fab.watch_arg = ws;
}

/* Exchange records and map: the control pages, and the window w (unless NULL), made and mapped
 * as far as every rank agrees. */
static tutti_status_t exchange(tutti_comm_t *comm, struct tutti_winset *ws, struct tutti_window *w)
{
    int n = comm->fab.nranks;
    struct tutti_win_rec mine, *recs = calloc((size_t)n, sizeof(*recs));
    if (recs == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "%s: no memory for %d records",
                                w != NULL ? "tutti_comm_window_register" : "control pages", n);
    }
    void *block = NULL;
    tutti__win_rec(ws, w != NULL ? w->buf : NULL, w != NULL ? w->len : 0, &mine, &block);
    tutti_status_t st = tutti__svc_allgather(&comm->run, &mine, recs, sizeof(mine), TUTTI_UINT8);
    int32_t ok[2] = {0, 0};
    if (st == TUTTI_OK) {
        int got = tutti__win_map(ws, w, recs), on = tutti__env()->WINDOWS;
        ok[0] = on && (ws->ready || (got & 1) != 0);
        ok[1] = ok[0] && (got & 2) != 0;
        st = tutti__svc_allreduce(&comm->run, ok, ok, 2, TUTTI_INT32, TUTTI_MIN);
    }
    free(recs);
    if (w != NULL && (st != TUTTI_OK || !ok[1])) {
        tutti__win_unmap(w);
    }
    if (st == TUTTI_OK && !ok[0] && !ws->ready) {
        tutti__winset_unmap_ctl(ws);
    }
    if (st == TUTTI_OK && ok[0] && !ws->ready) {
        tutti__turn_take(&comm->run);
        notes_ready(comm, ws);
        tutti__turn_give(&comm->run);
    }
    if (st == TUTTI_OK) {
        ws->windowed |= ok[1];
    }
    if (st == TUTTI_OK && w != NULL) {
        w->block = block;
        w->shared = ok[1];
        tutti_debug(TUTTI_SUBSYS_ALLOC, "window %u: %zu bytes, %s", w->id, w->len,
                    w->shared          ? "shared with every rank"
                    : w->block == NULL ? "not tutti_mem_alloc memory here: not shared"
                                       : "some rank could not map a peer's buffer: not shared");
    }
    return st;
}

/* Whether this rank can take part in control pages at init: windows on, every peer reached
 * through shared memory (not with TUTTI_TRANSPORT=tcp, say). */
static int notes_wanted(const tutti_comm_t *comm)
{
    int ok = tutti__env()->WINDOWS != 0;
    for (int r = 0; r < comm->fab.nranks && ok; r++) {
        ok = comm->fab.net.peer_transport[r] == TUTTI_TRANSPORT_SHM;
    }
    return ok;
}

tutti_status_t tutti__comm_notes_setup(tutti_comm_t *comm, struct tutti_boot *boot)
{
    int n = comm->fab.nranks;
    int fits = n >= 2 && n <= TUTTI_WIN_CTL_RANKS && comm->fab.nlocal == n;
    if (!fits && !boot->lockstep) {
        return TUTTI_OK; /* the same on every rank: the ordinary path (windows may still come) */
    }
    /* Through the bootstrap, which numbers no collective: the first call is still #1. */
    struct tutti_win_rec mine = {.pid = -1, .fd = -1, .ctl_fd = -1};
    struct tutti_win_rec *recs = calloc((size_t)n, sizeof(*recs));
    int32_t *oks = calloc((size_t)n, sizeof(*oks));
    if (recs == NULL || oks == NULL) {
        free(recs);
        free(oks);
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "no memory for %d control page records", n);
    }
    struct tutti_winset *ws =
        fits && notes_wanted(comm) ? tutti__winset_new(comm->fab.rank, n) : NULL;
    if (ws != NULL) {
        void *none;
        tutti__win_rec(ws, NULL, 0, &mine, &none);
        mine.ctl_ok = 1;
    }
    tutti_status_t st = boot->ops->allgather(boot, &mine, recs, sizeof(mine));
    int32_t ok = st == TUTTI_OK;
    for (int r = 0; r < n && ok; r++) {
        ok = recs[r].ctl_ok == 1;
    }
    ok = ok && (tutti__win_map(ws, NULL, recs) & 1) != 0;
    if (st == TUTTI_OK) {
        st = boot->ops->allgather(boot, &ok, oks, sizeof(ok));
    }
    for (int r = 0; r < n && ok; r++) {
        ok = oks[r];
    }
    free(recs);
    free(oks);
    if (st == TUTTI_OK && ok) {
        comm->run.win = ws;
        notes_ready(comm, ws);
    } else {
        tutti__winset_free(ws);
    }
    tutti_debug(TUTTI_SUBSYS_INIT, "control pages: %s",
                st != TUTTI_OK ? "exchange failed"
                : ok           ? "every rank maps every rank's: small calls are carried"
                               : "not shared by every rank: the ordinary path");
    return st;
}

static tutti_status_t register_entered(tutti_comm_t *comm, void *buf, size_t bytes,
                                       tutti_window_t **win_p)
{
    if (comm == NULL || buf == NULL || win_p == NULL || bytes == 0) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_window_register: %s",
                                comm == NULL    ? "comm is NULL"
                                : buf == NULL   ? "buf is NULL"
                                : win_p == NULL ? "win_p is NULL"
                                                : "bytes is 0");
    }
    TUTTI_CHECK(tutti__fabric_health(&comm->fab));
    int n = comm->fab.nranks;
    struct tutti_window *w = tutti__window_new(n);
    tutti__turn_take(&comm->run);
    if (comm->run.win == NULL && w != NULL) {
        comm->run.win = tutti__winset_new(comm->fab.rank, n);
    }
    struct tutti_winset *ws = comm->run.win;
    if (ws != NULL && w != NULL) {
        w->set = ws;
        w->id = ws->next_id++;
    }
    tutti__turn_give(&comm->run);
    if (ws == NULL || w == NULL) {
        tutti__window_free(w);
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "tutti_comm_window_register: no memory for a window");
    }
    w->buf = buf;
    w->len = bytes;
    w->base[comm->fab.rank] = buf;
    w->blen[comm->fab.rank] = bytes;
    tutti_status_t st = exchange(comm, ws, w);
    if (st != TUTTI_OK) {
        tutti__window_free(w);
        return st;
    }
    if (w->block != NULL) {
        tutti__mem_hold(w->block, 1);
    }
    tutti__turn_take(&comm->run);
    w->next = ws->wins;
    ws->wins = w;
    tutti__turn_give(&comm->run);
    *win_p = w;
    return TUTTI_OK;
}

static tutti_status_t deregister_entered(tutti_comm_t *comm, tutti_window_t *win)
{
    if (comm == NULL || win == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_window_deregister: %s is NULL",
                                comm == NULL ? "comm" : "win");
    }
    struct tutti_window *found = NULL;
    tutti__turn_take(&comm->run);
    struct tutti_winset *ws = comm->run.win;
    for (struct tutti_window **pp = ws != NULL ? &ws->wins : NULL; pp != NULL && *pp != NULL;
         pp = &(*pp)->next) {
        if (*pp == win) {
            found = win;
            *pp = win->next;
            break;
        }
    }
    tutti__turn_give(&comm->run);
    if (found == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_window_deregister: %p is not a window of this "
                                "communicator",
                                (void *)win);
    }
    tutti__window_free(found);
    return TUTTI_OK;
}

tutti_status_t tutti_comm_window_register(tutti_comm_t *comm, void *buf, size_t bytes,
                                          tutti_window_t **win_p)
{
    if (comm != NULL && tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_window_register");
    }
    tutti_status_t st = register_entered(comm, buf, bytes, win_p);
    if (comm != NULL) {
        tutti__comm_leave(comm);
    }
    return st;
}

tutti_status_t tutti_comm_window_deregister(tutti_comm_t *comm, tutti_window_t *win)
{
    if (comm != NULL && tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_window_deregister");
    }
    tutti_status_t st = deregister_entered(comm, win);
    if (comm != NULL) {
        tutti__comm_leave(comm);
    }
    return st;
}

tutti_status_t tutti_window_query(const tutti_window_t *win, int *shared_p, uint64_t *calls_p)
{
    if (win == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_window_query: win is NULL");
    }
    if (shared_p != NULL) {
        *shared_p = win->shared;
    }
    if (calls_p != NULL) {
        *calls_p = atomic_load_explicit(&win->calls, memory_order_relaxed);
    }
    return TUTTI_OK;
}
