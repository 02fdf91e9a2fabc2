/*
 * status.c - the shim's results and messages: the one table from tutti's statuses to
 * ncclResult_t, ncclGetErrorString, ncclGetLastError (per communicator; per thread for calls
 * that have none, never a process global), ncclGetVersion and ncclResetDebugInit.
 */
#include "shim.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * tutti status -> NCCL result. Every status of TUTTI_STATUS_MAP appears once (checked below).
 * A timeout is ncclTimeout (NCCL 2.32's word for it). What NCCL has no word for maps to its
 * nearest: a refused secret comes from another rank (remote); what tutti does not support, and
 * an aborted communicator being used,
 * are invalid usage, and so are calls that differ between ranks (the program's mistake, which
 * NCCL does not detect); out of memory is a system error, as NCCL reports a failed malloc.
 */
static const struct {
    tutti_status_t st;
    ncclResult_t res;
} result_table[] = {
    {TUTTI_OK, ncclSuccess},
    {TUTTI_IN_PROGRESS, ncclInProgress},
    {TUTTI_ERR_INVALID_ARG, ncclInvalidArgument},
    {TUTTI_ERR_INVALID_USAGE, ncclInvalidUsage},
    {TUTTI_ERR_NO_MEMORY, ncclSystemError},
    {TUTTI_ERR_SYSTEM, ncclSystemError},
    {TUTTI_ERR_CUDA, ncclUnhandledCudaError},
    {TUTTI_ERR_REMOTE, ncclRemoteError},
    {TUTTI_ERR_TIMEOUT, ncclTimeout},
    {TUTTI_ERR_AUTH, ncclRemoteError},
    {TUTTI_ERR_UNSUPPORTED, ncclInvalidUsage},
    {TUTTI_ERR_ABORTED, ncclInvalidUsage},
    {TUTTI_ERR_INTERNAL, ncclInternalError},
    {TUTTI_ERR_MISMATCH, ncclInvalidUsage},
};

#define SHIM_COUNT_(name, value, msg) +1
enum { SHIM_NSTATUS = 0 TUTTI_STATUS_MAP(SHIM_COUNT_) };
#undef SHIM_COUNT_
_Static_assert(sizeof(result_table) / sizeof(result_table[0]) == SHIM_NSTATUS,
               "every tutti status has exactly one NCCL result");

/*
 * The message of the last shim error of a call with no communicator (ncclGetUniqueId, a failed
 * ncclCommInitRank...). Thread-local on purpose: NCCL keeps one per process, which threads
 * overwrite under each other; ncclGetLastError(NULL) returns the calling thread's.
 */
static _Thread_local char thread_err[SHIM_ERR_LEN];

/* ncclGetLastError(comm) hands out a copy in the calling thread, which stays valid when the
 * communicator is freed or another thread records a newer error on it. */
static _Thread_local char comm_copy[SHIM_ERR_LEN];

ncclResult_t shim_result_of(tutti_status_t st)
{
    for (size_t i = 0; i < sizeof(result_table) / sizeof(result_table[0]); i++) {
        if (result_table[i].st == st) {
            return result_table[i].res;
        }
    }
    return ncclInternalError;
}

/* Keep msg as comm's last error (a communicator named by config.commName says its name), or
 * as the thread's; `copy` gets what was kept. */
static void store(struct ncclComm *comm, const char *msg, char *copy, size_t len)
{
    if (comm == NULL) {
        snprintf(thread_err, sizeof(thread_err), "%s", msg);
        snprintf(copy, len, "%s", msg);
        return;
    }
    pthread_mutex_lock(&comm->lock);
    if (comm->name[0] != '\0') {
        snprintf(comm->err, sizeof(comm->err), "%s (communicator '%s')", msg, comm->name);
    } else {
        snprintf(comm->err, sizeof(comm->err), "%s", msg);
    }
    snprintf(copy, len, "%s", comm->err);
    pthread_mutex_unlock(&comm->lock);
}

ncclResult_t shim_error(struct ncclComm *comm, ncclResult_t res, const char *fmt, ...)
{
    char msg[SHIM_ERR_LEN], kept[SHIM_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    store(comm, msg, kept, sizeof(kept));
    tutti_warn("nccl shim: %s", kept);
    return res;
}

ncclResult_t shim_status(struct ncclComm *comm, tutti_status_t st)
{
    if (st == TUTTI_OK) {
        return ncclSuccess;
    }
    const char *msg = NULL;
    if (comm != NULL && comm->tc != NULL && !comm->aborted) {
        msg = tutti_last_error(comm->tc);
    }
    if (msg == NULL || msg[0] == '\0') {
        msg = tutti_last_error(NULL);
    }
    if (msg[0] == '\0') {
        msg = tutti_status_string(st);
    }
    char copy[SHIM_ERR_LEN], kept[SHIM_ERR_LEN];
    snprintf(copy, sizeof(copy), "%s", msg); /* tutti's buffer may change under us */
    store(comm, copy, kept, sizeof(kept));
    return shim_result_of(st);
}

NCCL_API(const char *, GetErrorString, ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with TUTTI_LOG_LEVEL=info for details)";
    case ncclSystemError:
        return "unhandled system error (run with TUTTI_LOG_LEVEL=info for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the tutti developers";
    case ncclInvalidArgument:
        return "invalid argument (run with TUTTI_LOG_LEVEL=warn for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with TUTTI_LOG_LEVEL=warn for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    case ncclTimeout:
        return "operation timed out (TUTTI_TIMEOUT; ncclGetLastError says what it waited for)";
    default:
        return "unknown result code";
    }
}

NCCL_API(const char *, GetLastError, ncclComm_t comm)
{
    struct ncclComm *c;
    if (comm == NULL || shim_enter_any(comm, "ncclGetLastError", &c) != ncclSuccess) {
        /* no communicator, or not a live one (the thread's message now says which) */
        return thread_err[0] != '\0' ? thread_err : tutti_last_error(NULL);
    }
    /* A failed communicator reports what failed it (a peer died, possibly under an
     * asynchronous operation or a stream's call): that cause matters more than anything
     * refused on it since. */
    pthread_mutex_lock(&c->lock);
    if (c->tc != NULL) {
        tutti_status_t st = TUTTI_OK;
        if (tutti_comm_get_async_error(c->tc, &st) == TUTTI_OK && st != TUTTI_OK) {
            snprintf(c->err, sizeof(c->err), "%s", tutti_last_error(c->tc));
        }
    }
    snprintf(comm_copy, sizeof(comm_copy), "%s", c->err);
    pthread_mutex_unlock(&c->lock);
    shim_leave(c);
    return comm_copy;
}

NCCL_API(ncclResult_t, GetVersion, int *version)
{
    if (version == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclGetVersion: version is NULL");
    }
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

/* NCCL re-reads its logging variables here. tutti reads TUTTI_LOG_* once per process
 * (src/base/env.c), so a reload would change nothing; the call is accepted and says so at info. */
NCCL_API(void, ResetDebugInit, void)
{
    tutti_info(TUTTI_SUBSYS_INIT, "nccl shim: ncclResetDebugInit: tutti reads TUTTI_LOG_* once "
                                  "per process; logging is unchanged");
}

__attribute__((visibility("default"))) void ncclResetDebugInitInternal(void)
{
    pncclResetDebugInit();
}
