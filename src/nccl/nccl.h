/*
 * nccl.h - tutti's own declaration of NCCL's host API (version 2.28), from which the shim
 * src/nccl/ builds libnccl.so.2 over tutti. Written from NCCL's documented interface: the
 * numeric values, the struct layouts and the function signatures are what programs compiled
 * against NVIDIA's nccl.h pass across the ABI, and the assertions at the end pin them.
 * Nothing outside src/nccl/ includes this file: NCCL's names stay in the shim.
 *
 * Differences from NVIDIA's header: no CUDA header is included (cudaStream_t is declared as
 * CUDA declares it, an opaque struct pointer). Like NVIDIA's, it leaves the device API (teams,
 * device communicators) to nccl_device.h: a program that uses it includes NVIDIA's
 * nccl_device.h, which includes this nccl.h; the shim's own declarations of the host entry
 * points it exports are in nccl_device_host.h. The header is valid C11 and C++.
 */
#ifndef TUTTI_NCCL_H
#define TUTTI_NCCL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR  2
#define NCCL_MINOR  28
#define NCCL_PATCH  9
#define NCCL_SUFFIX ""
/* Versions from 2.9 on are coded as MAJOR * 10000 + MINOR * 100 + PATCH. */
#define NCCL_VERSION(X, Y, Z)                                                                      \
    (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

/* CUDA's own definition of a stream handle; the shim passes it to tutti as a void *. */
typedef struct CUstream_st *cudaStream_t;

/* The communicator handle. Its body is the shim's (src/nccl/shim.h). */
typedef struct ncclComm *ncclComm_t;
/* A registered memory window (ncclCommWindowRegister). */
typedef struct ncclWindow_vidmem *ncclWindow_t;
#define NCCL_COMM_NULL NULL

/* The bytes every rank needs to join one communicator (tutti's unique id fits them exactly). */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* Results. */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR    -1
#define NCCL_UNDEF_FLOAT      -1.0f

/* ncclCommWindowRegister flags and the alignment a symmetric window needs. */
#define NCCL_WIN_DEFAULT            0x00
#define NCCL_WIN_COLL_SYMMETRIC     0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT    0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO       0x02

/* ncclCommShrink flags: shrink a healthy parent, or stop its operations first. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT   0x01

/* ncclCommRevoke flags (none defined: must be 0). */
#define NCCL_REVOKE_DEFAULT 0x00

/*
 * Communicator settings. size, magic and version are set by NCCL_CONFIG_INITIALIZER and tell the
 * library which fields the caller's copy has (older programs pass a shorter struct). Every other
 * field starts "undefined" (NCCL_CONFIG_UNDEF_*), meaning "the library's default".
 */
typedef struct ncclConfig_v22800 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_CONFIG_INITIALIZER                                                                    \
    {                                                                                              \
        sizeof(ncclConfig_t), NCCL_CONFIG_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                           \
    }

/* What ncclGroupSimulateEnd fills in: the estimated time of the group, in microseconds. */
typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_MAGIC 0x74685283u
#define NCCL_SIM_INFO_INITIALIZER                                                                  \
    {                                                                                              \
        sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC,                                                \
            NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT                     \
    }

/* Reduction operators. Values from ncclNumOps on are made by ncclRedOpCreatePreMulSum. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/* Element types (the aliases share values). */
typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

/* Where a PreMulSum scalar lives and when it is read. */
typedef enum {
    ncclScalarDevice = 0,       /* read while the collective runs (device-visible memory) */
    ncclScalarHostImmediate = 1 /* read before ncclRedOpCreatePreMulSum returns */
} ncclScalarResidence_t;

/*
 * Every entry point exists twice, as NCCL ships it: pnccl<Name> (the implementation) and
 * nccl<Name> (a weak alias a profiler may interpose). NCCL_DECL declares both.
 */
#define NCCL_DECL(ret, name, args)                                                                 \
    ret nccl##name args;                                                                           \
    ret pnccl##name args

/* Memory, version, unique id. */
NCCL_DECL(ncclResult_t, MemAlloc, (void **ptr, size_t size));
NCCL_DECL(ncclResult_t, MemFree, (void *ptr));
NCCL_DECL(ncclResult_t, GetVersion, (int *version));
NCCL_DECL(ncclResult_t, GetUniqueId, (ncclUniqueId * uniqueId));

/* Communicators. */
NCCL_DECL(ncclResult_t, CommInitRankConfig,
          (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config));
NCCL_DECL(ncclResult_t, CommInitRank,
          (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));
NCCL_DECL(ncclResult_t, CommInitAll, (ncclComm_t * comm, int ndev, const int *devlist));
NCCL_DECL(ncclResult_t, CommInitRankScalable,
          (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
           ncclConfig_t *config));
NCCL_DECL(ncclResult_t, CommFinalize, (ncclComm_t comm));
NCCL_DECL(ncclResult_t, CommDestroy, (ncclComm_t comm));
NCCL_DECL(ncclResult_t, CommAbort, (ncclComm_t comm));
NCCL_DECL(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags));
NCCL_DECL(ncclResult_t, CommSplit,
          (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config));
NCCL_DECL(ncclResult_t, CommShrink,
          (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
           ncclConfig_t *config, int shrinkFlags));
NCCL_DECL(const char *, GetErrorString, (ncclResult_t result));
NCCL_DECL(const char *, GetLastError, (ncclComm_t comm));
NCCL_DECL(void, ResetDebugInit, (void));
NCCL_DECL(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError));
NCCL_DECL(ncclResult_t, CommCount, (const ncclComm_t comm, int *count));
NCCL_DECL(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int *device));
NCCL_DECL(ncclResult_t, CommUserRank, (const ncclComm_t comm, int *rank));
NCCL_DECL(ncclResult_t, CommRegister,
          (const ncclComm_t comm, void *buff, size_t size, void **handle));
NCCL_DECL(ncclResult_t, CommDeregister, (const ncclComm_t comm, void *handle));
NCCL_DECL(ncclResult_t, CommWindowRegister,
          (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags));
NCCL_DECL(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));
/* NCCL exports this one without a pnccl twin. */
void ncclResetDebugInitInternal(void);

/* Reduction operators made at run time. */
NCCL_DECL(ncclResult_t, RedOpCreatePreMulSum,
          (ncclRedOp_t * op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
           ncclComm_t comm));
NCCL_DECL(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

/* Collectives and point-to-point (argument order and in-place forms as tutti's). */
NCCL_DECL(ncclResult_t, Reduce,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, Bcast,
          (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
           cudaStream_t stream));
NCCL_DECL(ncclResult_t, Broadcast,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
           ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, AllReduce,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, ReduceScatter,
          (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, AllGather,
          (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, AlltoAll,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, Gather,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
           ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, Scatter,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
           ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, Send,
          (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream));
NCCL_DECL(ncclResult_t, Recv,
          (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream));

/* Groups. */
NCCL_DECL(ncclResult_t, GroupStart, (void));
NCCL_DECL(ncclResult_t, GroupEnd, (void));
NCCL_DECL(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t * simInfo));

/* ---- the ABI, pinned: a change here breaks programs built against NCCL 2.28 ---- */
/* C11's _Static_assert is not a C++ keyword: C++ programs (nccl-tests, PyTorch) include this
 * header too. */
#ifdef __cplusplus
#define NCCL_ABI_ASSERT(cond, what) static_assert(cond, what)
#else
#define NCCL_ABI_ASSERT(cond, what) _Static_assert(cond, what)
#endif
NCCL_ABI_ASSERT(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");
NCCL_ABI_ASSERT(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 &&
                    ncclInternalError == 3 && ncclInvalidArgument == 4 && ncclInvalidUsage == 5 &&
                    ncclRemoteError == 6 && ncclInProgress == 7 && ncclNumResults == 8,
                "ncclResult_t values");
NCCL_ABI_ASSERT(ncclSum == 0 && ncclProd == 1 && ncclMax == 2 && ncclMin == 3 && ncclAvg == 4 &&
                    ncclNumOps == 5 && ncclMaxRedOp == 0x7fffffff,
                "ncclRedOp_t values");
NCCL_ABI_ASSERT(sizeof(ncclRedOp_t) == 4 && sizeof(ncclDataType_t) == 4, "enums are 32-bit");
NCCL_ABI_ASSERT(ncclInt8 == 0 && ncclUint8 == 1 && ncclInt32 == 2 && ncclUint32 == 3 &&
                    ncclInt64 == 4 && ncclUint64 == 5 && ncclFloat16 == 6 && ncclFloat32 == 7 &&
                    ncclFloat64 == 8 && ncclBfloat16 == 9 && ncclFloat8e4m3 == 10 &&
                    ncclFloat8e5m2 == 11 && ncclNumTypes == 12,
                "ncclDataType_t values");
NCCL_ABI_ASSERT(ncclScalarDevice == 0 && ncclScalarHostImmediate == 1, "residence values");
NCCL_ABI_ASSERT(NCCL_VERSION_CODE == 22809, "the 2.28.9 version code");
NCCL_ABI_ASSERT(offsetof(ncclConfig_t, magic) == 8 && offsetof(ncclConfig_t, version) == 12 &&
                    offsetof(ncclConfig_t, blocking) == 16 &&
                    offsetof(ncclConfig_t, netName) == 32 &&
                    offsetof(ncclConfig_t, commName) == 48 &&
                    offsetof(ncclConfig_t, shrinkShare) == 64 &&
                    offsetof(ncclConfig_t, nvlinkCentricSched) == 76 && sizeof(ncclConfig_t) == 80,
                "ncclConfig_t layout (2.28, LP64)");
NCCL_ABI_ASSERT(offsetof(ncclSimInfo_t, estimatedTime) == 16 && sizeof(ncclSimInfo_t) == 24,
                "ncclSimInfo_t layout");

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_NCCL_H */
