/*
 * nccl_device_host.h - the host entry points of NCCL's device API that the shim exports (teams,
 * device communicators, their resource requirements), and the types they take, in C. NVIDIA
 * declares these in the headers under nccl_device/, which include nccl.h and define the same
 * types: so they are kept out of tutti's nccl.h, where they would clash with those headers in
 * programs built with NVIDIA's device API (nccl-tests, since its support of NCCL 2.28). Only
 * src/nccl/ includes this file.
 */
#ifndef TUTTI_NCCL_DEVICE_HOST_H
#define TUTTI_NCCL_DEVICE_HOST_H

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device API's team: nRanks ranks, this rank's index, the world-rank stride between them. */
typedef struct ncclTeam {
    int nRanks, rank, stride;
} ncclTeam_t;
/* Device-API objects the shim never creates (tutti has no device-side API). */
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

/* Host entry points of the device API. */
NCCL_DECL(ncclResult_t, DevCommCreate,
          (ncclComm_t comm, const ncclDevCommRequirements_t *reqs, ncclDevComm_t *outDevComm));
NCCL_DECL(ncclResult_t, DevCommDestroy, (ncclComm_t comm, const ncclDevComm_t *devComm));
NCCL_DECL(ncclTeam_t, TeamWorld, (ncclComm_t comm));
NCCL_DECL(ncclTeam_t, TeamLsa, (ncclComm_t comm));
NCCL_DECL(ncclTeam_t, TeamRail, (ncclComm_t comm));
NCCL_DECL(int, TeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank));
NCCL_DECL(int, TeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank));
NCCL_DECL(ncclResult_t, LsaBarrierCreateRequirement,
          (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle,
           ncclDevResourceRequirements_t *outReq));
NCCL_DECL(ncclResult_t, GinBarrierCreateRequirement,
          (ncclComm_t comm, ncclTeam_t team, int nBarriers, ncclGinBarrierHandle_t *outHandle,
           ncclDevResourceRequirements_t *outReq));
NCCL_DECL(int, LLA2ACalcSlots, (int maxElts, int maxEltSize));
NCCL_DECL(ncclResult_t, LLA2ACreateRequirement,
          (int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
           ncclDevResourceRequirements_t *outReq));

NCCL_ABI_ASSERT(sizeof(ncclTeam_t) == 12, "ncclTeam_t is three ints");

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_NCCL_DEVICE_HOST_H */
