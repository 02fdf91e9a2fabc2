/*
 * group.c - ncclGroupStart/End/SimulateEnd. Collectives inside a group are tutti's group calls
 * (tutti_group_start/end, recorded per thread). What tutti's groups do not hold, NCCL's do:
 * communicator inits and splits of several ranks driven by one thread, which must run at the
 * same time to meet. Those are deferred here and run at the outermost end, one thread each.
 */
#include "shim.h"
#include "comm/group.h"

#include <stdlib.h>

struct job {
    struct job *next;
    ncclResult_t (*fn)(void *);
    void *arg;
    ncclResult_t result;
    pthread_t thread;
    int started;
};

/*
 * The calling thread's open group: nesting depth and deferred jobs (in call order).
 * Thread-local because NCCL's groups are per thread.
 */
static _Thread_local struct {
    int depth;
    struct job *jobs, **tail;
} grp;

int shim_in_group(void)
{
    return grp.depth > 0;
}

ncclResult_t shim_defer(ncclResult_t (*fn)(void *), void *arg)
{
    if (grp.depth == 0) {
        return fn(arg);
    }
    struct job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        /* cannot defer: run it now, which can only be wrong if a peer rank's part is also
         * waiting in this thread's group */
        return fn(arg);
    }
    j->fn = fn;
    j->arg = arg;
    if (grp.tail == NULL) {
        grp.tail = &grp.jobs;
    }
    *grp.tail = j;
    grp.tail = &j->next;
    return ncclSuccess;
}

static void *job_thread(void *arg)
{
    struct job *j = arg;
    j->result = j->fn(j->arg);
    return NULL;
}

/* Run the deferred jobs together (one alone runs in this thread); the first failure wins. */
static ncclResult_t run_jobs(void)
{
    struct job *jobs = grp.jobs;
    ncclResult_t r = ncclSuccess;
    grp.jobs = NULL;
    grp.tail = NULL;
    if (jobs != NULL && jobs->next == NULL) {
        r = jobs->fn(jobs->arg);
        free(jobs);
        return r;
    }
    for (struct job *j = jobs; j != NULL; j = j->next) {
        j->started = pthread_create(&j->thread, NULL, job_thread, j) == 0;
        if (!j->started) {
            j->result = j->fn(j->arg); /* no thread: run here, the others are already going */
        }
    }
    while (jobs != NULL) {
        struct job *j = jobs;
        jobs = j->next;
        if (j->started) {
            pthread_join(j->thread, NULL);
        }
        if (r == ncclSuccess && j->result != ncclSuccess) {
            r = j->result;
        }
        free(j);
    }
    return r;
}

NCCL_API(ncclResult_t, GroupStart, void)
{
    grp.depth++;
    return shim_status(NULL, tutti_group_start());
}

NCCL_API(ncclResult_t, GroupEnd, void)
{
    if (grp.depth == 0) {
        return shim_error(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    }
    if (--grp.depth > 0) {
        return shim_status(NULL, tutti_group_end());
    }
    /* tutti's group closes first: a job run in this thread (a split) makes collectives of its
     * own, which must not be recorded into the group. */
    ncclResult_t r_coll = shim_status(NULL, tutti_group_end());
    ncclResult_t r = run_jobs();
    return r != ncclSuccess ? r : r_coll;
}

/* The deferred inits and splits do run (the communicators must exist afterwards); the group's
 * collectives are dropped and priced by tutti's cost model. */
NCCL_API(ncclResult_t, GroupSimulateEnd, ncclSimInfo_t *simInfo)
{
    double us = 0;
    if (simInfo != NULL &&
        (simInfo->magic != NCCL_SIM_INFO_MAGIC || simInfo->size < sizeof(ncclSimInfo_t))) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclGroupSimulateEnd: simInfo was not set up by "
                          "NCCL_SIM_INFO_INITIALIZER (magic 0x%x)",
                          simInfo->magic);
    }
    if (grp.depth == 0) {
        return shim_error(NULL, ncclInvalidUsage, "ncclGroupSimulateEnd without ncclGroupStart");
    }
    ncclResult_t r = ncclSuccess;
    ncclResult_t r_sim = shim_status(NULL, tutti__group_simulate(&us));
    if (--grp.depth == 0) {
        r = run_jobs();
    }
    if (r == ncclSuccess && r_sim == ncclSuccess && simInfo != NULL) {
        simInfo->estimatedTime = (float)us;
    }
    return r != ncclSuccess ? r : r_sim;
}
