/*
 * comm.c - NCCL communicators over tutti's: the ncclComm object and its entry/exit protocol
 * (a reference per call inside, so an abort from another thread never frees what a call still
 * uses; a suspended communicator is refused there), and init (blocking, nonblocking, grouped,
 * all ranks of one process, several ids) with the params its config asks for (config.c). What
 * is done to a communicator once it exists: comm_ops.c; growing it: grow.c.
 */
#include "shim.h"
#include "comm/comm.h"
#include "gpu/devops.h"
#include "exec/fail.h"
#include "base/hold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Every communicator object not yet freed, and the lock that guards the list and the step of
 * taking a reference. Process-wide on purpose: a handle is checked against it before it is
 * touched, so a destroyed or aborted handle (freed memory) is refused instead of read.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm *live;
static _Atomic uint64_t frees; /* objects taken off the list so far (hold.h's removal count) */

struct ncclComm *shim_comm_new(void)
{
    struct ncclComm *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    atomic_init(&c->refs, 1);
    atomic_init(&c->callable, 0);
    atomic_init(&c->magic, SHIM_COMM_MAGIC);
    c->state = SHIM_INITIALIZING;
    c->blocking = 1;
    c->cudev = -1;
    c->rank = -1;
    pthread_mutex_lock(&live_lock);
    c->next_live = live;
    live = c;
    pthread_mutex_unlock(&live_lock);
    return c;
}

/* The last reference is gone: free tutti's communicator (abort frees it only now, so calls
 * that were inside when it was aborted could still read it) and the object. Calls that hold c
 * rather than count in refs either see the free counted (and are refused by the list) or are
 * seen here and waited for: after an abort or a destroy they are on their way out. */
static void comm_free(struct ncclComm *c)
{
    pthread_mutex_lock(&live_lock);
    for (struct ncclComm **pp = &live; *pp != NULL; pp = &(*pp)->next_live) {
        if (*pp == c) {
            *pp = c->next_live;
            atomic_fetch_add(&frees, 1);
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
    while (tutti__held(TUTTI_HOLD_NCCL, c)) {
        usleep(20);
    }
    if (c->tc != NULL) {
        if (c->aborted) {
            tutti_comm_abort(c->tc);
        } else {
            tutti_comm_destroy(c->tc);
        }
    }
    shim_regs_free(c);
    atomic_store(&c->magic, 0);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void shim_leave(struct ncclComm *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1) {
        comm_free(c);
    }
}

ncclResult_t shim_enter_any(ncclComm_t comm, const char *what, struct ncclComm **c_p)
{
    if (comm == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "%s: comm is NULL", what);
    }
    /* A reference is taken only from a listed object whose count is not already 0 (the last
     * leave, about to unlist and free it, has it at 0), so nothing freed is ever touched. */
    int ok = 0;
    pthread_mutex_lock(&live_lock);
    for (struct ncclComm *c = live; c != NULL && !ok; c = c->next_live) {
        if (c == comm && atomic_load(&c->magic) == SHIM_COMM_MAGIC) {
            int n = atomic_load(&c->refs);
            while (n > 0 && !atomic_compare_exchange_weak(&c->refs, &n, n + 1)) {
            }
            ok = n > 0;
        }
    }
    if (ok) { /* this thread's next shim_enter_call may hold comm while nothing is freed */
        tutti__hold_note(TUTTI_HOLD_NCCL, comm, atomic_load(&frees));
    }
    pthread_mutex_unlock(&live_lock);
    if (!ok) {
        return shim_error(NULL, ncclInvalidArgument,
                          "%s: comm %p is not a live communicator (destroyed or aborted?)", what,
                          (void *)comm);
    }
    *c_p = comm;
    return ncclSuccess;
}

ncclResult_t shim_enter_settled(ncclComm_t comm, const char *what, struct ncclComm **c_p)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter_any(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    if (c->state == SHIM_INITIALIZING && shim_in_group()) {
        pthread_mutex_unlock(&c->lock);
        ncclResult_t r = shim_error(c, ncclInvalidUsage,
                                    "%s: the communicator is being created in the open group; "
                                    "call it after ncclGroupEnd",
                                    what);
        shim_leave(c);
        return r;
    }
    while (c->state == SHIM_INITIALIZING) {
        pthread_cond_wait(&c->cond, &c->lock);
    }
    *c_p = c;
    return ncclSuccess;
}

ncclResult_t shim_enter(ncclComm_t comm, const char *what, struct ncclComm **c_p)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter_settled(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    enum shim_state state = c->state;
    ncclResult_t stored = c->stored;
    int suspended = c->suspended;
    pthread_mutex_unlock(&c->lock);
    if (state == SHIM_READY && !suspended) {
        *c_p = c;
        return ncclSuccess;
    }
    if (state == SHIM_INIT_FAILED) {
        r = stored; /* its message is the communicator's already */
    } else if (state == SHIM_READY) {
        r = shim_error(c, ncclInvalidUsage,
                       "%s: the communicator is suspended (ncclCommSuspend); call "
                       "ncclCommResume first",
                       what);
    } else {
        r = shim_error(c, ncclInvalidUsage, "%s: the communicator was finalized", what);
    }
    shim_leave(c);
    return r;
}

ncclResult_t shim_enter_call(ncclComm_t comm, const char *what, struct ncclComm **c_p)
{
    if (tutti__hold(TUTTI_HOLD_NCCL, comm, &frees)) {
        /* Not freed (the count held still after the hold was stored): its fields are safe. */
        if (atomic_load_explicit(&comm->callable, memory_order_acquire)) {
            *c_p = comm;
            return ncclSuccess;
        }
        tutti__unhold(TUTTI_HOLD_NCCL, comm); /* suspended, finalized, retired: say why */
    }
    return shim_enter(comm, what, c_p);
}

void shim_leave_call(struct ncclComm *c)
{
    if (!tutti__unhold(TUTTI_HOLD_NCCL, c)) {
        shim_leave(c);
    }
}

void shim_callable_update(struct ncclComm *c)
{
    int ok = c->state == SHIM_READY && !c->suspended && atomic_load(&c->magic) == SHIM_COMM_MAGIC;
    atomic_store_explicit(&c->callable, ok, memory_order_release);
}

static void comm_ready(struct ncclComm *c, tutti_comm_t *tc)
{
    const struct tutti_devops *dev = tutti__devops();
    int d = -1;

    c->tc = tc;
    tutti_comm_rank(tc, &c->rank);
    tutti_comm_size(tc, &c->nranks);
    if (dev != NULL && dev->get_device != NULL && dev->get_device(&d) != 0) {
        d = -1;
    }
    c->cudev = d;
}

ncclResult_t shim_init_settle(struct ncclComm *c, tutti_status_t st, tutti_comm_t *tc)
{
    ncclResult_t r = ncclSuccess;
    if (st != TUTTI_OK) {
        r = shim_status(c, st);
        shim_status(NULL, st); /* also ncclGetLastError(NULL): a failed blocking init has no comm */
    }
    pthread_mutex_lock(&c->lock);
    if (st == TUTTI_OK) {
        comm_ready(c, tc);
        c->state = SHIM_READY;
        shim_callable_update(c);
    } else {
        c->state = SHIM_INIT_FAILED;
        c->stored = r;
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return r;
}

struct init_job {
    struct ncclComm *c;
    int nranks, rank;
    int device; /* made current first where there is a GPU runtime; -1: leave as is */
    tutti_unique_id_t id;
};

static ncclResult_t init_run(void *arg)
{
    struct init_job *j = arg;
    struct ncclComm *c = j->c;
    tutti_comm_t *tc = NULL;
    const struct tutti_devops *dev = tutti__devops();
    tutti_status_t st = TUTTI_OK;

    if (j->device >= 0 && dev != NULL && dev->set_device != NULL && dev->set_device(j->device)) {
        st = TUTTI_ERR_CUDA;
        shim_error(NULL, ncclUnhandledCudaError, "cudaSetDevice(%d) failed", j->device);
    }
    if (st == TUTTI_OK) {
        st = tutti_comm_init_rank_params(&tc, j->nranks, &j->id, j->rank,
                                         c->params.field_mask != 0 ? &c->params : NULL);
    }
    ncclResult_t r = shim_init_settle(c, st, tc);
    free(j);
    shim_leave(c); /* the job's reference */
    return r;
}

static void *init_thread(void *arg)
{
    init_run(arg);
    return NULL;
}

/* Start the init of c: now (blocking), at the group's end (grouped), or in a thread of its own
 * (nonblocking: ncclInProgress until ncclCommGetAsyncError says otherwise). */
static ncclResult_t init_start(struct ncclComm *c, int nranks, const ncclUniqueId *id, int rank,
                               int device)
{
    struct init_job *j = malloc(sizeof(*j));
    if (j == NULL) {
        return shim_error(NULL, ncclSystemError, "no memory for a communicator's init");
    }
    j->c = c;
    j->nranks = nranks;
    j->rank = rank;
    j->device = device;
    memcpy(&j->id, id, sizeof(j->id));
    atomic_fetch_add(&c->refs, 1);
    if (shim_in_group()) {
        return shim_defer(init_run, j);
    }
    if (!c->blocking) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int ret = pthread_create(&t, &attr, init_thread, j);
        pthread_attr_destroy(&attr);
        if (ret == 0) {
            return ncclInProgress;
        }
    }
    return init_run(j);
}

ncclResult_t shim_init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
                            const ncclConfig_t *config, int device, const char *what)
{
    if (comm == NULL || id == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "%s: %s is NULL", what,
                          comm == NULL ? "comm" : "commId");
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        return shim_error(NULL, ncclInvalidArgument, "%s: rank %d of %d ranks is out of range",
                          what, rank, nranks);
    }
    shim_banner(rank);
    struct ncclComm *c = shim_comm_new();
    if (c == NULL) {
        return shim_error(NULL, ncclSystemError, "%s: no memory for a communicator", what);
    }
    ncclResult_t r = shim_config_apply(c, config, SHIM_MADE_INIT);
    if (r != ncclSuccess) {
        comm_free(c);
        return r;
    }
    int deferred = shim_in_group() || !c->blocking;
    r = init_start(c, nranks, id, rank, device);
    if (deferred && (r == ncclSuccess || r == ncclInProgress)) {
        *comm = c; /* the caller learns the outcome at ncclGroupEnd / ncclCommGetAsyncError */
        return r;
    }
    if (r != ncclSuccess) {
        shim_leave(c);
        return r;
    }
    *comm = c;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, GetUniqueId, ncclUniqueId *uniqueId)
{
    _Static_assert(sizeof(ncclUniqueId) == sizeof(tutti_unique_id_t), "ids are 128 bytes");
    if (uniqueId == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    }
    return shim_status(NULL, tutti_get_unique_id((tutti_unique_id_t *)uniqueId));
}

NCCL_API(ncclResult_t, CommInitRank, ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return shim_init_rank(comm, nranks, &commId, rank, NULL, -1, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, CommInitRankConfig, ncclComm_t *comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t *config)
{
    return shim_init_rank(comm, nranks, &commId, rank, config, -1, "ncclCommInitRankConfig");
}

/* Several ids only spread NCCL's bootstrap over several roots; tutti's one root serves every
 * rank, so all ranks meet on the first id (the roots of the others stay unused). */
NCCL_API(ncclResult_t, CommInitRankScalable, ncclComm_t *newcomm, int nranks, int myrank, int nId,
         ncclUniqueId *commIds, ncclConfig_t *config)
{
    if (nId < 1 || commIds == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommInitRankScalable: %s (nId %d)",
                          commIds == NULL ? "commIds is NULL" : "nId must be >= 1", nId);
    }
    return shim_init_rank(newcomm, nranks, &commIds[0], myrank, config, -1,
                          "ncclCommInitRankScalable");
}

/* ndev ranks in this process, one thread each (the group runs the inits together). */
NCCL_API(ncclResult_t, CommInitAll, ncclComm_t *comm, int ndev, const int *devlist)
{
    ncclUniqueId id;
    if (comm == NULL || ndev < 1) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommInitAll: %s",
                          comm == NULL ? "comm is NULL" : "ndev must be >= 1");
    }
    for (int i = 0; i < ndev; i++) {
        comm[i] = NULL;
    }
    ncclResult_t r = pncclGetUniqueId(&id);
    if (r != ncclSuccess) {
        return r;
    }
    /* Devices matter only where there is a GPU runtime; on a host they are left alone. */
    int gpu = tutti__devops() != NULL;
    pncclGroupStart();
    for (int i = 0; i < ndev && r == ncclSuccess; i++) {
        r = shim_init_rank(&comm[i], ndev, &id, i, NULL,
                           gpu ? (devlist != NULL ? devlist[i] : i) : -1, "ncclCommInitAll");
    }
    ncclResult_t r_end = pncclGroupEnd();
    if (r == ncclSuccess) {
        r = r_end;
    }
    if (r != ncclSuccess) {
        for (int i = 0; i < ndev; i++) {
            if (comm[i] != NULL && atomic_load(&comm[i]->magic) == SHIM_COMM_MAGIC) {
                pncclCommAbort(comm[i]);
            }
            comm[i] = NULL;
        }
    }
    return r;
}
