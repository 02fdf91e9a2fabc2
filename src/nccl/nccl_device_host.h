/*
 * nccl_device_host.h - the host entry points of NCCL's device API that the shim exports (teams,
 * device communicators, their resource requirements, the communicator's properties, window
 * pointers for kernels), and the types they take, in C. NVIDIA declares these in the headers
 * under nccl_device/, which include nccl.h and define the same types: so they are kept out of
 * tutti's nccl.h, where they would clash with those headers in programs built with NVIDIA's
 * device API (nccl-tests, since its support of NCCL 2.28). Only src/nccl/ and the ABI probe
 * (tests/nccl/abi_probe.cc) include this file.
 */
#ifndef TUTTI_NCCL_DEVICE_HOST_H
#define TUTTI_NCCL_DEVICE_HOST_H

#include "nccl.h"

#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The device API's team: nRanks ranks, this rank's index, the world-rank stride between them. */
typedef struct ncclTeam {
    int nRanks, rank, stride;
} ncclTeam_t;
/* A multicast (NVLink SHARP) mapping, passed by value: its base address. */
typedef struct ncclMultimemHandle {
    void *mcBasePtr;
} ncclMultimemHandle_t;
/* An entry of the collective fabric (CFT) a window is reachable through. */
typedef uint32_t ncclCftLeId;
typedef ncclCftLeId ncclCftLeId_t;
/* Device-API objects the shim never creates (tutti has no device-side API). */
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
struct ncclGinOutboxHandle;
struct ncclGinInboxA2AHandle;

/* How GPU-initiated networking (GIN) connects ranks, and which back end does it. */
typedef enum {
    NCCL_GIN_CONNECTION_NONE,
    NCCL_GIN_CONNECTION_FULL,
    NCCL_GIN_CONNECTION_RAIL,
    NCCL_GIN_CONNECTION_CUSTOM_STRIDE
} ncclGinConnectionType_t;
typedef enum {
    NCCL_GIN_TYPE_NONE = 0,
    NCCL_GIN_TYPE_PROXY = 2,
    NCCL_GIN_TYPE_GDAKI = 3,
    NCCL_GIN_TYPE_GPI = 4,
    NCCL_GIN_TYPE_EFA_GDA = 5,
    NCCL_GIN_MAX_TYPES = 6
} ncclGinType_t;
/* The shapes of a collective-fabric team, and the fabric's capabilities (bits). */
typedef enum {
    NCCL_CFT_TEAM_FLAT,
    NCCL_CFT_TEAM_HIER_MULTIMEM,
    NCCL_CFT_TEAM_HIER_LSA
} ncclCftTeamMode_t;
typedef enum { NCCL_CFT_NONE = 0x0, NCCL_CFT = 0x1, NCCL_CFT_MULTIMEM = 0x2 } ncclCftCap_t;

/* What a communicator offers kernels (ncclCommQueryProperties), versioned like ncclConfig_t:
 * the library fills the fields that fit the caller's size. */
typedef struct ncclCommProperties {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int rank;
    int nRanks;
    int cudaDev;
    int nvmlDev;
    bool deviceApiSupport;
    bool multimemSupport;
    ncclGinType_t ginType;
    int nLsaTeams;
    bool hostRmaSupport;
    ncclGinType_t railedGinType;
    uint64_t commHash;
    int ginMinStride;
    ncclGinConnectionType_t ginConnectionType;
    bool ginSupport[64]; /* [t]: GIN back end t is available */
    size_t devCommRuntimeVersionSize;
    bool cftSupport;
    bool cftMulticastSupport;
    bool cftCountedSupport;
} ncclCommProperties_t;

#define NCCL_COMM_PROPERTIES_INITIALIZER                                                           \
    {                                                                                              \
        sizeof(ncclCommProperties_t), NCCL_API_MAGIC, NCCL_VERSION_CODE                            \
    }

/* Host entry points of the device API. */
NCCL_DECL(ncclResult_t, CommQueryProperties, (ncclComm_t comm, ncclCommProperties_t *props));
NCCL_DECL(ncclResult_t, DevCommCreate,
          (ncclComm_t comm, const ncclDevCommRequirements_t *reqs, ncclDevComm_t *outDevComm));
NCCL_DECL(ncclResult_t, DevCommDestroy, (ncclComm_t comm, const ncclDevComm_t *devComm));
NCCL_DECL(ncclTeam_t, TeamWorld, (ncclComm_t comm));
NCCL_DECL(ncclTeam_t, TeamLsa, (ncclComm_t comm));
NCCL_DECL(ncclTeam_t, TeamRail, (ncclComm_t comm));
NCCL_DECL(ncclTeam_t, TeamCft, (ncclComm_t comm, ncclCftTeamMode_t mode));
NCCL_DECL(ncclTeam_t, TeamCftMultimem, (ncclComm_t comm));
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
NCCL_DECL(ncclResult_t, GinOutboxCreateRequirement,
          (int nBlocks, int size_log2, struct ncclGinOutboxHandle *outHandle,
           ncclDevResourceRequirements_t *outReq));
NCCL_DECL(ncclResult_t, GinInboxA2ACreateRequirement,
          (ncclTeam_t peers, int nBlocks, int size_log2, struct ncclGinInboxA2AHandle *outHandle,
           ncclDevResourceRequirements_t *outReq));

/* Window addresses for kernels: of a rank of this one's LSA team, of any peer, of a multicast
 * mapping; and the collective fabric's entries for them. */
NCCL_DECL(ncclResult_t, GetLsaMultimemDevicePointer,
          (ncclWindow_t window, size_t offset, void **outPtr));
NCCL_DECL(ncclResult_t, GetMultimemDevicePointer,
          (ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem, void **outPtr));
NCCL_DECL(ncclResult_t, GetLsaDevicePointer,
          (ncclWindow_t window, size_t offset, int lsaRank, void **outPtr));
NCCL_DECL(ncclResult_t, GetPeerDevicePointer,
          (ncclWindow_t window, size_t offset, int peer, void **outPtr));
NCCL_DECL(ncclResult_t, GetMultimemDeviceLeInfo,
          (ncclWindow_t window, size_t offset, ncclCftLeId *leId, size_t *leOffset));
NCCL_DECL(ncclResult_t, GetCftDeviceLeInfo,
          (ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam, ncclCftLeId *leId,
           size_t *leOffset));
NCCL_DECL(ncclResult_t, GetPeerDeviceLeInfo,
          (ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId *leId, size_t *leOffset));

NCCL_ABI_ASSERT(sizeof(ncclTeam_t) == 12, "ncclTeam_t is three ints");
NCCL_ABI_ASSERT(sizeof(ncclMultimemHandle_t) == sizeof(void *),
                "ncclMultimemHandle_t is a pointer");
NCCL_ABI_ASSERT(offsetof(ncclCommProperties_t, commHash) == 56 &&
                    offsetof(ncclCommProperties_t, ginSupport) == 72 &&
                    offsetof(ncclCommProperties_t, devCommRuntimeVersionSize) == 136 &&
                    sizeof(ncclCommProperties_t) == 152,
                "ncclCommProperties_t layout (2.32, LP64)");

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_NCCL_DEVICE_HOST_H */
