/*
 * device.c - the host entry points of NCCL's device API (the nccl_device headers). The team
 * functions are arithmetic on a communicator's ranks and work: the world team is every rank, stride
 * 1; the LSA team (ranks whose memory this GPU's threads can load and store) is this rank alone,
 * since tutti gives kernels no access to peers' memory; the rail team is the world divided by
 * the LSA team; the collective fabric's (CFT) teams are this rank alone too, as tutti has no
 * fabric. ncclCommQueryProperties answers with what tutti offers kernels: nothing of the device
 * API. Device communicators and the barriers and all-to-all that live in them need device-side
 * code tutti does not have: those calls return ncclInvalidUsage and say so (GIN's outboxes and
 * inboxes: unsupported.c).
 */
#include "shim.h"
#include "comm/comm.h"
#include "nccl_device_host.h"

#include <string.h>

#define NO_DEVICE_API                                                                              \
    "tutti has no device-side API (device communicators, LSA/GIN barriers, LL all-to-all): use "   \
    "NCCL's host collectives"

/* This rank and size, or 0 and 0 (with the error recorded) for a bad handle. */
static void world(ncclComm_t comm, const char *what, int *rank_p, int *nranks_p)
{
    struct ncclComm *c;
    *rank_p = 0;
    *nranks_p = 0;
    if (shim_enter(comm, what, &c) == ncclSuccess) {
        *rank_p = c->rank;
        *nranks_p = c->nranks;
        shim_leave(c);
    }
}

NCCL_API(ncclTeam_t, TeamWorld, ncclComm_t comm)
{
    ncclTeam_t t = {.stride = 1};
    world(comm, "ncclTeamWorld", &t.rank, &t.nRanks);
    return t;
}

NCCL_API(ncclTeam_t, TeamLsa, ncclComm_t comm)
{
    int rank, nranks;
    world(comm, "ncclTeamLsa", &rank, &nranks);
    return (ncclTeam_t){.nRanks = nranks > 0 ? 1 : 0, .rank = 0, .stride = 1};
}

NCCL_API(ncclTeam_t, TeamRail, ncclComm_t comm)
{
    ncclTeam_t t = {.stride = 1}; /* the outer factor of an LSA team of one */
    world(comm, "ncclTeamRail", &t.rank, &t.nRanks);
    return t;
}

/* The fabric's teams: this rank alone, as tutti has no collective fabric. */
NCCL_API(ncclTeam_t, TeamCft, ncclComm_t comm, ncclCftTeamMode_t mode)
{
    int rank, nranks;
    (void)mode;
    world(comm, "ncclTeamCft", &rank, &nranks);
    return (ncclTeam_t){.nRanks = nranks > 0 ? 1 : 0, .rank = 0, .stride = 1};
}

NCCL_API(ncclTeam_t, TeamCftMultimem, ncclComm_t comm)
{
    int rank, nranks;
    world(comm, "ncclTeamCftMultimem", &rank, &nranks);
    return (ncclTeam_t){.nRanks = nranks > 0 ? 1 : 0, .rank = 0, .stride = 1};
}

/*
 * What the communicator offers kernels, in the fields that fit the caller's struct: its rank,
 * size and CUDA device, tutti's id of it as the hash, and no device API, multicast, GIN,
 * host RMA or fabric. Each rank is an LSA team of its own.
 */
NCCL_API(ncclResult_t, CommQueryProperties, ncclComm_t comm, ncclCommProperties_t *props)
{
    struct ncclComm *c;
    if (props == NULL || props->magic != NCCL_API_MAGIC ||
        props->size < offsetof(ncclCommProperties_t, rank)) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommQueryProperties: props %s",
                          props == NULL ? "is NULL"
                                        : "was not set up by NCCL_COMM_PROPERTIES_INITIALIZER");
    }
    ncclResult_t r = shim_enter(comm, "ncclCommQueryProperties", &c);
    if (r != ncclSuccess) {
        return r;
    }
    ncclCommProperties_t p;
    memset(&p, 0, sizeof(p));
    p.rank = c->rank;
    p.nRanks = c->nranks;
    p.cudaDev = c->cudev;
    p.nvmlDev = -1; /* tutti does not use NVML */
    p.ginType = NCCL_GIN_TYPE_NONE;
    p.railedGinType = NCCL_GIN_TYPE_NONE;
    p.ginConnectionType = NCCL_GIN_CONNECTION_NONE;
    p.nLsaTeams = c->nranks;
    p.commHash = c->tc->fab.comm_id;
    size_t from = offsetof(ncclCommProperties_t, rank);
    size_t to = props->size < sizeof(p) ? props->size : sizeof(p);
    memcpy((char *)props + from, (const char *)&p + from, to - from);
    shim_leave(c);
    return ncclSuccess;
}

/* World rank of member `rank` of `team`, a team this rank belongs to. */
NCCL_API(int, TeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank)
{
    int me, nranks;
    world(comm, "ncclTeamRankToWorld", &me, &nranks);
    return me + (rank - team.rank) * team.stride;
}

/* LSA index of member `rank` of `team` (the LSA team is this rank alone: 0 is itself). */
NCCL_API(int, TeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank)
{
    int me, nranks;
    world(comm, "ncclTeamRankToLsa", &me, &nranks);
    (void)me;
    (void)nranks;
    return (rank - team.rank) * team.stride;
}

/* Slots an LL all-to-all needs for maxElts elements of up to maxEltSize bytes: 8 bytes each. */
NCCL_API(int, LLA2ACalcSlots, int maxElts, int maxEltSize)
{
    return maxElts * ((maxEltSize + 7) / 8);
}

NCCL_API(ncclResult_t, DevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t *reqs,
         ncclDevComm_t *outDevComm)
{
    struct ncclComm *c;
    (void)reqs;
    (void)outDevComm;
    ncclResult_t r = shim_enter(comm, "ncclDevCommCreate", &c);
    if (r == ncclSuccess) {
        r = shim_error(c, ncclInvalidUsage, "ncclDevCommCreate: " NO_DEVICE_API);
        shim_leave(c);
    }
    return r;
}

NCCL_API(ncclResult_t, DevCommDestroy, ncclComm_t comm, const ncclDevComm_t *devComm)
{
    struct ncclComm *c;
    (void)devComm;
    ncclResult_t r = shim_enter(comm, "ncclDevCommDestroy", &c);
    if (r == ncclSuccess) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclDevCommDestroy: no device communicator was made here; " NO_DEVICE_API);
        shim_leave(c);
    }
    return r;
}

NCCL_API(ncclResult_t, LsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq)
{
    (void)team;
    (void)nBarriers;
    (void)outHandle;
    (void)outReq;
    return shim_error(NULL, ncclInvalidUsage, "ncclLsaBarrierCreateRequirement: " NO_DEVICE_API);
}

NCCL_API(ncclResult_t, GinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
         ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq)
{
    struct ncclComm *c;
    (void)team;
    (void)nBarriers;
    (void)outHandle;
    (void)outReq;
    ncclResult_t r = shim_enter(comm, "ncclGinBarrierCreateRequirement", &c);
    if (r == ncclSuccess) {
        r = shim_error(c, ncclInvalidUsage, "ncclGinBarrierCreateRequirement: " NO_DEVICE_API);
        shim_leave(c);
    }
    return r;
}

NCCL_API(ncclResult_t, LLA2ACreateRequirement, int nBlocks, int nSlots,
         ncclLLA2AHandle_t *outHandle, ncclDevResourceRequirements_t *outReq)
{
    (void)nBlocks;
    (void)nSlots;
    (void)outHandle;
    (void)outReq;
    return shim_error(NULL, ncclInvalidUsage, "ncclLLA2ACreateRequirement: " NO_DEVICE_API);
}
