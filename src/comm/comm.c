/*
 * comm.c - the public life-cycle and query calls of a communicator: rank, size, async error,
 * destroy and abort (the live set every call checks its handle against first is comm_live.c).
 * Abort may come from any thread while others are blocked in operations: it takes the handle
 * out of the live set, flags the communicator, wakes every waiter, waits until they have all
 * left, then frees.
 */
#include "comm/comm.h"
#include "comm/footprint.h"
#include "base/check.h"
#include "exec/fail.h"
#include "base/global.h"
#include "run/request.h"
#include "gpu/ipc.h"
#include "gpu/stream.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

/* The query calls enter like an operation: an abort from another thread waits for them. */
tutti_status_t tutti_comm_rank(const tutti_comm_t *comm, int *rank_p)
{
    if (comm == NULL || rank_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s is NULL",
                                comm == NULL ? "comm" : "rank_p");
    }
    if (tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_rank");
    }
    *rank_p = comm->fab.rank;
    tutti__comm_leave(comm);
    return TUTTI_OK;
}

tutti_status_t tutti_comm_size(const tutti_comm_t *comm, int *size_p)
{
    if (comm == NULL || size_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s is NULL",
                                comm == NULL ? "comm" : "size_p");
    }
    if (tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_size");
    }
    *size_p = comm->fab.nranks;
    tutti__comm_leave(comm);
    return TUTTI_OK;
}

tutti_status_t tutti_comm_get_async_error(tutti_comm_t *comm, tutti_status_t *st_p)
{
    if (comm == NULL || st_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s is NULL",
                                comm == NULL ? "comm" : "st_p");
    }
    if (tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_get_async_error");
    }
    tutti__ipc_check(&comm->gpu);
    *st_p = tutti__fabric_health(&comm->fab);
    tutti__comm_leave(comm);
    return TUTTI_OK;
}

tutti_status_t tutti_comm_destroy(tutti_comm_t *comm)
{
    if (comm == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "comm is NULL");
    }
    /* Out of the live set first: a second destroy, or an abort, finds it gone. */
    if (!tutti__handle_take(&tutti__g.live_comms, comm)) {
        return tutti__comm_not_live(comm, "tutti_comm_destroy");
    }
    tutti__tls.rank = comm->fab.rank;
    /* Calls that came later are refused now; calls already inside on other threads finish first
     * (issue 36: destroying under one crashed), as the asynchronous operations do below. */
    int inside = tutti__comm_busy(comm);
    if (inside > 0) {
        tutti_info(TUTTI_SUBSYS_INIT,
                   "tutti_comm_destroy waits for %d call(s) in progress on other threads", inside);
        while (tutti__comm_busy(comm) > 0) {
            usleep(100);
        }
    }
    tutti__queue_drain(&comm->run);    /* asynchronous operations finish first, */
    tutti__comm_footprint_log(comm);   /* what it held at its peak (info) */
    tutti__stream_fini(&comm->gpu, 0); /* and the streams pass their last host functions */
    tutti__ipc_fini(&comm->gpu, 0);
    tutti_status_t st = tutti__fabric_health(&comm->fab);
    tutti_debug(TUTTI_SUBSYS_INIT, "destroying communicator (%s)", tutti_status_name(st));
    tutti__comm_free(comm);
    return st;
}

tutti_status_t tutti__comm_stop(struct tutti_comm *comm, const char *why)
{
    atomic_store(&comm->fab.state.aborting, 1);
    /* Every thread inside an operation (callers and the progress thread) sees the flag at its
     * next check, fails its operation, tells the peers and leaves. Connections are driven by
     * one thread at a time, so this thread touches them only once the others are out. */
    do {
        tutti__fabric_wake(&comm->fab);
        usleep(200);
    } while (tutti__comm_busy(comm) > 0);
    tutti__queue_drain(&comm->run);
    if (tutti__fabric_health(&comm->fab) == TUTTI_OK) {
        tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_ABORTED, "rank %d %s", comm->fab.rank,
                         why);
        tutti__fabric_fail(&comm->fab, TUTTI_ERR_ABORTED, comm->fab.rank);
    }
    return tutti__fabric_health(&comm->fab);
}

tutti_status_t tutti_comm_abort(tutti_comm_t *comm)
{
    if (comm == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "comm is NULL");
    }
    /* Out of the live set first: calls that enter from now on are refused, and those already
     * inside count in tutti__comm_busy, which tutti__comm_stop waits for. */
    if (!tutti__handle_take(&tutti__g.live_comms, comm)) {
        return tutti__comm_not_live(comm, "tutti_comm_abort");
    }
    tutti__comm_stop(comm, "aborted its communicator");
    tutti__stream_fini(&comm->gpu, 1);
    tutti__ipc_fini(&comm->gpu, 1);
    tutti__comm_free(comm);
    return TUTTI_OK;
}
