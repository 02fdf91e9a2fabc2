/*
 * comm_live.c - the live set of communicators that every call checks its handle against first
 * (a destroyed or aborted handle is refused with TUTTI_ERR_INVALID_USAGE, never read), and
 * tutti_last_error, which reads a communicator's message only while it is live.
 */
#include "base/check.h"
#include "base/hold.h"
#include "comm/comm.h"
#include "base/global.h"

#include <stdio.h>

tutti_status_t tutti__comm_publish(struct tutti_comm *comm)
{
    struct tutti_handle_set *live = &tutti__g.live_comms;
    tutti__handle_lock(live);
    comm->serial = ++tutti__g.comm_serial;
    tutti__handle_unlock(live);
    return tutti__handle_add(live, comm);
}

int tutti__comm_enter(const struct tutti_comm *comm, uint64_t serial)
{
    if (serial == 0 && tutti__hold(TUTTI_HOLD_COMM, comm, &tutti__g.live_comms.takes)) {
        return 0; /* found live before, and nothing left the live set since */
    }
    struct tutti_handle_set *live = &tutti__g.live_comms;
    tutti__handle_lock(live);
    int ok = tutti__handle_find_locked(live, comm) && (serial == 0 || comm->serial == serial);
    if (ok) {
        atomic_fetch_add(&((struct tutti_comm *)comm)->fab.state.inflight, 1);
        tutti__hold_note(TUTTI_HOLD_COMM, comm, tutti__handle_takes(live));
    }
    tutti__handle_unlock(live);
    return ok ? 0 : -1;
}

/* A thread that entered comm twice (the second time counted in inflight, since it held comm
 * already) may drop the hold first: each leave ends one of the two, and comm stays entered
 * until both have left. */
void tutti__comm_leave(const struct tutti_comm *comm)
{
    if (!tutti__unhold(TUTTI_HOLD_COMM, comm)) {
        atomic_fetch_sub(&((struct tutti_comm *)comm)->fab.state.inflight, 1);
    }
}

int tutti__comm_busy(const struct tutti_comm *comm)
{
    return atomic_load(&((struct tutti_comm *)comm)->fab.state.inflight) +
           tutti__held(TUTTI_HOLD_COMM, comm);
}

tutti_status_t tutti__comm_not_live(const void *comm, const char *what)
{
    return tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                            "%s: comm %p is not a live communicator (destroyed or aborted "
                            "already, or not made by tutti)",
                            what, comm);
}

const char *tutti_last_error(const tutti_comm_t *comm)
{
    if (comm == NULL) {
        return tutti__tls.last_error;
    }
    /* A handle that is not live is not read: its message says so. */
    if (tutti__comm_enter(comm, 0) != 0) {
        snprintf(tutti__tls.comm_error, sizeof(tutti__tls.comm_error),
                 "comm %p is not a live communicator (destroyed or aborted already, or not made "
                 "by tutti)",
                 (const void *)comm);
        return tutti__tls.comm_error;
    }
    /* The message is copied under the lock into the caller's thread, so it stays stable. */
    struct tutti_comm *c = (struct tutti_comm *)comm;
    pthread_mutex_lock(&c->fab.err.lock);
    snprintf(tutti__tls.comm_error, sizeof(tutti__tls.comm_error), "%s", c->fab.err.msg);
    pthread_mutex_unlock(&c->fab.err.lock);
    tutti__comm_leave(comm);
    return tutti__tls.comm_error;
}
