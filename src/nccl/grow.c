/*
 * grow.c - ncclCommGetUniqueId and ncclCommGrow over tutti's public API. The existing root's id
 * is a tutti unique id (tutti_get_unique_id: its bootstrap root serves the one grown
 * communicator); the existing ranks agree on who holds it and on the new size (one all-reduce
 * over the old communicator), the id goes to all of them (tutti_broadcast), and every rank of
 * the grown group joins it with tutti_comm_init_rank: the existing ranks with their ranks, the
 * new ones, which got the id from the program, with theirs. One id at a time per communicator,
 * each used once: the root's communicator remembers the id it made until a grow uses it.
 */
#include "shim.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

NCCL_API(ncclResult_t, CommGetUniqueId, ncclComm_t comm, ncclUniqueId *uniqueId)
{
    struct ncclComm *c;
    if (uniqueId == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommGetUniqueId: uniqueId is NULL");
    }
    ncclResult_t r = shim_enter(comm, "ncclCommGetUniqueId", &c);
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    int pending = c->grow_pending;
    pthread_mutex_unlock(&c->lock);
    tutti_unique_id_t id;
    if (pending) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclCommGetUniqueId: the id made before has not been used by "
                       "ncclCommGrow yet (one id at a time per communicator)");
    } else if ((r = shim_status(c, tutti_get_unique_id(&id))) == ncclSuccess) {
        pthread_mutex_lock(&c->lock);
        c->grow_pending = 1;
        memcpy(&c->grow_id, &id, sizeof(c->grow_id));
        pthread_mutex_unlock(&c->lock);
        memcpy(uniqueId, &id, sizeof(*uniqueId));
    }
    shim_leave(c);
    return r;
}

struct grow_job {
    struct ncclComm *c, *child;
    int nranks;
    int root; /* this rank holds the id */
    ncclUniqueId id;
    ncclComm_t *newcomm;
};

/*
 * The existing ranks agree: exactly one holds the id, and all pass the same size. One all-reduce
 * (max) of {root's rank, -root's rank, nRanks, -nRanks}: one root r gives r and -r, two give
 * different ranks; equal sizes give n and -n. Then the root broadcasts the id.
 */
static ncclResult_t agree(struct grow_job *j)
{
    struct ncclComm *c = j->c;
    int32_t v[4] = {j->root ? c->rank : -1, j->root ? -c->rank : INT32_MIN, j->nranks, -j->nranks};
    ncclResult_t r = shim_status(c, tutti_allreduce(v, v, 4, TUTTI_INT32, TUTTI_MAX, c->tc, NULL));
    if (r != ncclSuccess) {
        return r;
    }
    if (v[0] < 0 || v[1] != -v[0]) {
        return shim_error(c, ncclInvalidUsage,
                          "ncclCommGrow: %s of the existing ranks passed the id from "
                          "ncclCommGetUniqueId (exactly one, the root, passes it; the others NULL)",
                          v[0] < 0 ? "none" : "more than one");
    }
    if (v[2] != -v[3]) {
        return shim_error(c, ncclInvalidArgument,
                          "ncclCommGrow: the existing ranks passed different nRanks (%d to %d)",
                          -v[3], v[2]);
    }
    return shim_status(
        c, tutti_broadcast(&j->id, &j->id, sizeof(j->id), TUTTI_UINT8, v[0], c->tc, NULL));
}

/* An existing rank's grow (deferred to the group's end inside a group, like a split). */
static ncclResult_t grow_run(void *arg)
{
    struct grow_job *j = arg;
    struct ncclComm *c = j->c;
    ncclResult_t r = agree(j);
    tutti_comm_t *tc = NULL;
    tutti_status_t st = TUTTI_OK;
    if (r == ncclSuccess) {
        st = tutti_comm_init_rank_params(&tc, j->nranks, (const tutti_unique_id_t *)&j->id, c->rank,
                                         j->child->params.field_mask != 0 ? &j->child->params
                                                                          : NULL);
        if (j->root) { /* tried: the id's bootstrap root is used up, whatever the outcome */
            pthread_mutex_lock(&c->lock);
            c->grow_pending = 0;
            pthread_mutex_unlock(&c->lock);
        }
        r = shim_init_settle(j->child, st, tc);
        if (r != ncclSuccess) {
            shim_status(c, st);
        }
    }
    if (r == ncclSuccess) {
        *j->newcomm = j->child;
    } else {
        shim_leave(j->child); /* nobody else has it: freed */
    }
    shim_leave(c);
    free(j);
    return r;
}

/* An existing rank: check the id against the one this communicator made, then grow. */
static ncclResult_t grow_existing(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId,
                                  int rank, ncclComm_t *newcomm, ncclConfig_t *config)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, "ncclCommGrow", &c);
    if (r != ncclSuccess) {
        return r;
    }
    pthread_mutex_lock(&c->lock);
    int ours = c->grow_pending && uniqueId != NULL &&
               memcmp(&c->grow_id, uniqueId, sizeof(*uniqueId)) == 0;
    pthread_mutex_unlock(&c->lock);
    struct ncclComm *child = NULL;
    struct grow_job *j = NULL;
    if (rank != -1) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclCommGrow: rank %d: existing ranks pass -1 (they keep their ranks)",
                       rank);
    } else if (nRanks <= c->nranks) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclCommGrow: nRanks %d does not grow a communicator of %d ranks", nRanks,
                       c->nranks);
    } else if (uniqueId != NULL && !ours) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclCommGrow: the id is not the one ncclCommGetUniqueId made on this "
                       "communicator for its next grow (used already? each id serves one grow)");
    } else if ((child = shim_comm_new()) == NULL || (j = calloc(1, sizeof(*j))) == NULL) {
        r = shim_error(c, ncclSystemError, "ncclCommGrow: no memory");
    } else {
        child->blocking = c->blocking;
        memcpy(child->name, c->name, sizeof(child->name));
        child->params = c->params;
        r = shim_config_apply(child, config, SHIM_MADE_INIT);
    }
    if (r != ncclSuccess) {
        if (child != NULL) {
            shim_leave(child);
        }
        free(j);
        shim_leave(c);
        return r;
    }
    *j = (struct grow_job){
        .c = c, .child = child, .nranks = nRanks, .root = ours, .newcomm = newcomm};
    if (ours) {
        memcpy(&j->id, uniqueId, sizeof(j->id));
    }
    return shim_defer(grow_run, j); /* the job leaves c */
}

NCCL_API(ncclResult_t, CommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId,
         int rank, ncclComm_t *newcomm, ncclConfig_t *config)
{
    if (newcomm == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommGrow: newcomm is NULL");
    }
    if (comm == NULL) { /* a new rank: a plain init with the root's id */
        if (uniqueId == NULL) {
            return shim_error(NULL, ncclInvalidArgument,
                              "ncclCommGrow: a new rank (comm NULL) needs the root's uniqueId");
        }
        return shim_init_rank(newcomm, nRanks, uniqueId, rank, config, -1, "ncclCommGrow");
    }
    return grow_existing(comm, nRanks, uniqueId, rank, newcomm, config);
}
