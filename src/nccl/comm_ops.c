/*
 * comm_ops.c - what NCCL does to a communicator once it exists: finalize, destroy, abort
 * (tutti__comm_stop, then tutti_comm_abort when the last call inside has left), revoke, split
 * and shrink (new communicators from tutti_comm_split / tutti_comm_shrink), suspend and resume,
 * the asynchronous error and the queries (size, rank, CUDA device, memory statistics). A
 * suspended communicator refuses every call but resume, destroy, abort and the queries
 * (shim_enter says why); with NCCL_SUSPEND_MEM it first gives back what tutti rebuilds on
 * demand (src/comm/suspend.h). Connections, shared memory, registrations and the CUDA IPC
 * scratch stay: their other ends are the peers'.
 */
#include "shim.h"
#include "gpu/devops.h"
#include "comm/comm.h"
#include "comm/suspend.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keep tc's failure message (if it failed) as comm's and the thread's before tc goes away. */
static void keep_failure(struct ncclComm *c, tutti_comm_t *tc)
{
    tutti_status_t st = TUTTI_OK;
    if (tutti_comm_get_async_error(tc, &st) == TUTTI_OK && st != TUTTI_OK) {
        char msg[SHIM_ERR_LEN];
        snprintf(msg, sizeof(msg), "%s", tutti_last_error(tc));
        pthread_mutex_lock(&c->lock);
        snprintf(c->err, sizeof(c->err), "%s", msg);
        pthread_mutex_unlock(&c->lock);
    }
}

/*
 * The common start of destroy and abort: enter, wait for a grouped or nonblocking init to
 * settle (refused from inside the group making it), then retire the handle so that no new
 * call gets in. *tc_p is tutti's communicator (NULL after a failed init or a finalize); with
 * `take`, c no longer holds it. On success the caller leaves twice (its call, the handle).
 */
static ncclResult_t retire(ncclComm_t comm, const char *what, int take, struct ncclComm **c_p,
                           tutti_comm_t **tc_p)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter_settled(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    atomic_store(&c->magic, 0); /* later calls on this handle are refused */
    shim_callable_update(c);
    *tc_p = c->tc;
    if (take) {
        c->tc = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    *c_p = c;
    return ncclSuccess;
}

/* Flush and free tutti's communicator; the handle stays for the queries and ncclCommDestroy. */
NCCL_API(ncclResult_t, CommFinalize, ncclComm_t comm)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, "ncclCommFinalize", &c);
    if (r != ncclSuccess) {
        return r;
    }
    tutti_comm_t *tc = c->tc;
    keep_failure(c, tc);
    tutti_status_t st = tutti_comm_destroy(tc); /* finishes queued and stream work first */
    r = shim_result_of(st);
    pthread_mutex_lock(&c->lock);
    c->tc = NULL;
    c->state = SHIM_FINALIZED;
    shim_callable_update(c);
    c->stored = r;
    pthread_mutex_unlock(&c->lock);
    shim_leave(c);
    return r;
}

/* Like NCCL, destroy succeeds once resources are freed, also on a communicator that failed
 * earlier (that failure was reported by the calls and ncclCommGetAsyncError). */
NCCL_API(ncclResult_t, CommDestroy, ncclComm_t comm)
{
    struct ncclComm *c;
    tutti_comm_t *tc;
    ncclResult_t r = retire(comm, "ncclCommDestroy", 1, &c, &tc);
    if (r != ncclSuccess) {
        return r;
    }
    if (tc != NULL) {
        keep_failure(c, tc);
        tutti_status_t st = tutti_comm_destroy(tc);
        if (st != TUTTI_OK) {
            tutti_info(TUTTI_SUBSYS_INIT, "nccl shim: destroyed a communicator that had failed: %s",
                       c->err);
        }
    }
    shim_leave(c); /* the handle's reference */
    shim_leave(c);
    return ncclSuccess;
}

/*
 * Stop every call on the communicator, from any thread, and free it. Calls inside return an
 * error (ncclInvalidUsage: aborted); the peers fail theirs with ncclRemoteError naming this
 * rank. tutti's communicator is freed by the last call to leave, so none reads freed memory.
 */
NCCL_API(ncclResult_t, CommAbort, ncclComm_t comm)
{
    struct ncclComm *c;
    tutti_comm_t *tc;
    ncclResult_t r = retire(comm, "ncclCommAbort", 0, &c, &tc);
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    c->aborted = 1; /* the last reference aborts tc */
    pthread_mutex_unlock(&c->lock);
    if (tc != NULL) {
        tutti__comm_stop(tc, "aborted its communicator (ncclCommAbort)");
    }
    shim_leave(c);
    shim_leave(c);
    return ncclSuccess;
}

/* Stop the operations in flight and fail later ones; destroy, split and shrink stay possible. */
NCCL_API(ncclResult_t, CommRevoke, ncclComm_t comm, int revokeFlags)
{
    struct ncclComm *c;
    if (revokeFlags != NCCL_REVOKE_DEFAULT) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommRevoke: revokeFlags %d must be 0",
                          revokeFlags);
    }
    ncclResult_t r = shim_enter(comm, "ncclCommRevoke", &c);
    if (r != ncclSuccess) {
        return r;
    }
    tutti__comm_stop(c->tc, "revoked its communicator (ncclCommRevoke)");
    pthread_mutex_lock(&c->lock);
    c->revoked = 1;
    pthread_mutex_unlock(&c->lock);
    shim_leave(c);
    return ncclSuccess;
}

struct split_job {
    struct ncclComm *parent, *child;
    int color, key;
    ncclComm_t *newcomm;
};

static ncclResult_t split_run(void *arg)
{
    struct split_job *j = arg;
    tutti_comm_t *tc = NULL;
    tutti_status_t st = tutti_comm_split(j->parent->tc, j->color, j->key, &tc);
    ncclResult_t r;

    if (st == TUTTI_OK && tc == NULL) { /* NCCL_SPLIT_NOCOLOR: no new communicator */
        *j->newcomm = NULL;
        shim_leave(j->child);
        r = ncclSuccess;
    } else {
        r = shim_init_settle(j->child, st, tc);
        if (r == ncclSuccess) {
            *j->newcomm = j->child;
        } else {
            shim_status(j->parent, st);
            shim_leave(j->child);
        }
    }
    shim_leave(j->parent);
    free(j);
    return r;
}

/* A new communicator object for a split or shrink of c: config's settings, else c's. */
static struct ncclComm *child_of(struct ncclComm *c, const ncclConfig_t *config, ncclResult_t *r_p)
{
    struct ncclComm *child = shim_comm_new();
    if (child == NULL) {
        *r_p = shim_error(c, ncclSystemError, "no memory for a communicator");
        return NULL;
    }
    child->blocking = c->blocking;
    memcpy(child->name, c->name, sizeof(child->name));
    *r_p = shim_config_apply(child, config, SHIM_MADE_SPLIT);
    if (*r_p != ncclSuccess) {
        shim_leave(child);
        return NULL;
    }
    return child;
}

/* Collective over comm's ranks; inside a group it runs at ncclGroupEnd (*newcomm set then). */
NCCL_API(ncclResult_t, CommSplit, ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
         ncclConfig_t *config)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, "ncclCommSplit", &c);
    if (r != ncclSuccess) {
        return r;
    }
    if (newcomm == NULL || color < NCCL_SPLIT_NOCOLOR) {
        r = shim_error(c, ncclInvalidArgument, "ncclCommSplit: %s",
                       newcomm == NULL ? "newcomm is NULL" : "color must be >= 0 or NOCOLOR");
        shim_leave(c);
        return r;
    }
    struct ncclComm *child = child_of(c, config, &r);
    struct split_job *j = child != NULL ? malloc(sizeof(*j)) : NULL;
    if (j == NULL) {
        if (child != NULL) {
            shim_leave(child);
            r = shim_error(c, ncclSystemError, "no memory for a split");
        }
        shim_leave(c);
        return r;
    }
    *j = (struct split_job){
        .parent = c, .child = child, .color = color, .key = key, .newcomm = newcomm};
    return shim_defer(split_run, j); /* the job leaves c */
}

NCCL_API(ncclResult_t, CommShrink, ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
         ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    struct ncclComm *c;
    if ((shrinkFlags & ~NCCL_SHRINK_ABORT) != 0 || newcomm == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommShrink: %s",
                          newcomm == NULL ? "newcomm is NULL" : "unknown shrinkFlags bits");
    }
    ncclResult_t r = shim_enter(comm, "ncclCommShrink", &c);
    if (r != ncclSuccess) {
        return r;
    }
    struct ncclComm *child = child_of(c, config, &r);
    if (child != NULL) {
        tutti_comm_t *tc = NULL;
        if (shrinkFlags & NCCL_SHRINK_ABORT) {
            tutti__comm_stop(c->tc, "stopped its operations to shrink (NCCL_SHRINK_ABORT)");
        }
        tutti_status_t st = tutti_comm_shrink(c->tc, excludeRanksList, excludeRanksCount, &tc);
        r = shim_init_settle(child, st, tc);
        if (r == ncclSuccess) {
            *newcomm = child;
        } else {
            shim_status(c, st);
            shim_leave(child);
        }
    }
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, CommGetAsyncError, ncclComm_t comm, ncclResult_t *asyncError)
{
    struct ncclComm *c;
    if (asyncError == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    }
    ncclResult_t r = shim_enter_any(comm, "ncclCommGetAsyncError", &c);
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    ncclResult_t res = c->stored;
    if (c->state == SHIM_INITIALIZING) {
        res = ncclInProgress;
    } else if (c->state == SHIM_READY) {
        tutti_status_t st = TUTTI_OK;
        tutti_comm_get_async_error(c->tc, &st);
        res = c->revoked ? ncclSuccess : shim_result_of(st);
    }
    pthread_mutex_unlock(&c->lock);
    *asyncError = res;
    shim_leave(c);
    return ncclSuccess;
}

/* The queries answer for a live or finalized communicator; while it is being created they
 * return ncclInProgress, after a failed init its error. */
static ncclResult_t query(const ncclComm_t comm, const void *out, const char *what,
                          struct ncclComm **c_p)
{
    struct ncclComm *c;
    if (out == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "%s: the output pointer is NULL", what);
    }
    ncclResult_t r = shim_enter_any(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    r = c->state == SHIM_INITIALIZING  ? ncclInProgress
        : c->state == SHIM_INIT_FAILED ? c->stored
                                       : ncclSuccess;
    pthread_mutex_unlock(&c->lock);
    if (r != ncclSuccess) {
        shim_leave(c);
        return r;
    }
    *c_p = c;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, CommCount, const ncclComm_t comm, int *count)
{
    struct ncclComm *c = NULL;
    ncclResult_t r = query(comm, count, "ncclCommCount", &c);
    if (r == ncclSuccess) {
        *count = c->nranks;
        shim_leave(c);
    }
    return r;
}

NCCL_API(ncclResult_t, CommUserRank, const ncclComm_t comm, int *rank)
{
    struct ncclComm *c = NULL;
    ncclResult_t r = query(comm, rank, "ncclCommUserRank", &c);
    if (r == ncclSuccess) {
        *rank = c->rank;
        shim_leave(c);
    }
    return r;
}

NCCL_API(ncclResult_t, CommCuDevice, const ncclComm_t comm, int *device)
{
    struct ncclComm *c = NULL;
    ncclResult_t r = query(comm, device, "ncclCommCuDevice", &c);
    if (r != ncclSuccess) {
        return r;
    }
    if (c->cudev < 0) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclCommCuDevice: this communicator has no CUDA device (no GPU runtime "
                       "when it was made: %s)",
                       tutti__devops_why());
    } else {
        *device = c->cudev;
    }
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, CommSuspend, ncclComm_t comm, int flags)
{
    struct ncclComm *c;
    if ((flags & ~NCCL_SUSPEND_MEM) != 0) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclCommSuspend: flags 0x%x: only NCCL_SUSPEND_MEM is defined", flags);
    }
    ncclResult_t r = shim_enter(comm, "ncclCommSuspend", &c); /* refused if suspended already */
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    c->suspended = 1;
    shim_callable_update(c);
    pthread_mutex_unlock(&c->lock);
    if (flags & NCCL_SUSPEND_MEM) {
        /* waits for the communicator's queued and stream work to finish first */
        size_t released = tutti__comm_release_caches(c->tc);
        pthread_mutex_lock(&c->lock);
        c->mem_suspended = 1;
        c->cache_seen = 0;
        pthread_mutex_unlock(&c->lock);
        tutti_info(TUTTI_SUBSYS_ALLOC, "nccl shim: ncclCommSuspend: rank %d released %zu bytes",
                   c->rank, released);
    }
    shim_leave(c);
    return ncclSuccess;
}

NCCL_API(ncclResult_t, CommResume, ncclComm_t comm)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter_settled(comm, "ncclCommResume", &c); /* returns with c->lock */
    if (r != ncclSuccess) {
        return r;
    }
    int was = c->state == SHIM_READY && c->suspended;
    if (was) {
        c->suspended = 0;
        shim_callable_update(c);
        c->mem_suspended = 0; /* what was released is rebuilt by the calls that need it */
    }
    pthread_mutex_unlock(&c->lock);
    if (!was) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclCommResume: the communicator is not suspended (ncclCommSuspend)");
    }
    shim_leave(c);
    return r;
}

/*
 * NCCL's statistics from tutti's measure: the bytes suspending would release (ncclStatGpuMem
 * Suspend), whether they are released (Suspended), what suspending keeps (Persist), and the sum
 * (Total). Measured when nothing runs on the communicator; while operations are queued or
 * running, the last measure answers.
 */
NCCL_API(ncclResult_t, CommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    struct ncclComm *c;
    if (value == NULL || (int)stat < ncclStatGpuMemSuspend || (int)stat > ncclStatGpuMemTotal) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommMemStats: %s",
                          value == NULL ? "value is NULL" : "stat is not an ncclCommMemStat_t");
    }
    ncclResult_t r = shim_enter_settled(comm, "ncclCommMemStats", &c); /* returns with c->lock */
    if (r != ncclSuccess) {
        return r;
    }
    enum shim_state state = c->state;
    pthread_mutex_unlock(&c->lock);
    struct tutti_comm_mem mem;
    if (state == SHIM_READY && tutti__comm_mem(c->tc, &mem) == 0) {
        pthread_mutex_lock(&c->lock);
        c->cache_seen = mem.cache;
        c->persist_seen = mem.persist;
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_lock(&c->lock);
    uint64_t cache = c->cache_seen, persist = c->persist_seen;
    uint64_t v = stat == ncclStatGpuMemSuspend     ? cache
                 : stat == ncclStatGpuMemSuspended ? (uint64_t)c->mem_suspended
                 : stat == ncclStatGpuMemPersist   ? persist
                                                   : cache + persist;
    ncclResult_t res = state == SHIM_INIT_FAILED ? c->stored : ncclSuccess;
    pthread_mutex_unlock(&c->lock);
    if (res == ncclSuccess) {
        *value = v;
    }
    shim_leave(c);
    return res;
}
