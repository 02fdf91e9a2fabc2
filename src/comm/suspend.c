/*
 * suspend.c - a communicator's memory that can be released while it is idle and rebuilt on
 * demand (suspend.h): measured and released under the communicator's turn, so no operation
 * uses it meanwhile. The stream path's state goes through tutti__stream_fini (the same as at
 * destroy: it waits for the streams' last host functions), the plans through
 * tutti__plan_free and the executor's arrays through tutti__exec_fini; each is made again by
 * the next call that needs it.
 */
#include "comm/suspend.h"
#include "comm/comm.h"
#include "comm/footprint.h"
#include "exec/exec.h"
#include "exec/plan.h"
#include "gpu/stream.h"
#include "run/turn.h"

#include <string.h>

/* Bytes of a plan's storage (its capacities, not what the last call used). */
static size_t plan_bytes(const struct tutti_plan *p)
{
    return p->pool_cap * sizeof(struct tutti_step) +
           (size_t)p->lanes_cap * sizeof(struct tutti_lane) + p->bufs_cap * sizeof(char *) +
           p->scratch_cap + p->calls_cap * sizeof(struct tutti_op_desc);
}

/* Bytes of the executor's arrays. */
static size_t exec_bytes(const struct tutti_exec *ex)
{
    size_t per_lane = 2 * sizeof(size_t) + sizeof(int);
    size_t per_need = sizeof(struct tutti_exec_need) + sizeof(struct tutti_tconn *);
    return (size_t)ex->next_cap * per_lane + (size_t)ex->needs_cap * per_need +
           (ex->fps_mem != NULL ? ex->fps_cap * sizeof(struct tutti_fp) : 0);
}

/* The measure, under the turn. */
static void measure(const struct tutti_comm *comm, struct tutti_comm_mem *mem)
{
    struct tutti_footprint fp;
    tutti__comm_footprint(comm, &fp);
    memset(mem, 0, sizeof(*mem));
    mem->pinned = tutti__stream_pinned(&comm->gpu);
    mem->cache = mem->pinned + plan_bytes(&comm->run.plan) + plan_bytes(&comm->run.group_plan) +
                 exec_bytes(&comm->fab.exec);
    mem->persist = fp.shared + fp.registered;
}

int tutti__comm_mem(struct tutti_comm *comm, struct tutti_comm_mem *mem)
{
    if (!tutti__turn_try(&comm->run)) {
        return -1;
    }
    measure(comm, mem);
    tutti__turn_give(&comm->run);
    return 0;
}

size_t tutti__comm_release_caches(struct tutti_comm *comm)
{
    struct tutti_comm_mem mem;
    tutti__turn_take(&comm->run);
    measure(comm, &mem);
    /* Nothing is queued or running: every ticket of the stream path is written, so its fini
     * (which releases what still waits and then waits for the streams' last host functions)
     * takes nothing from a call. The next stream call makes the state again. */
    tutti__stream_fini(&comm->gpu, 0);
    tutti__plan_free(&comm->run.plan);
    tutti__plan_free(&comm->run.group_plan);
    tutti__exec_fini(&comm->fab.exec);
    comm->fab.exec.needs_gen = 0;
    tutti__turn_give(&comm->run);
    return mem.cache;
}
