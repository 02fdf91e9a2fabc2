/*
 * nccl.h - tutti's own declaration of NCCL's host API (version 2.32.3), from which the shim
 * src/nccl/ builds libnccl.so.2 over tutti. Written from NCCL's documented interface: the
 * numeric values, the struct layouts and the function signatures are what programs compiled
 * against NVIDIA's nccl.h pass across the ABI, and the assertions at the end pin them
 * (tests/nccl/abi_probe.cc compares every layout, value and signature with NVIDIA's header).
 * Nothing outside src/nccl/ includes this file: NCCL's names stay in the shim.
 *
 * Differences from NVIDIA's header: no CUDA header is included (cudaStream_t and cudaEvent_t
 * are declared as CUDA declares them, opaque struct pointers). Like NVIDIA's, it leaves the
 * device API (teams, device communicators, window pointers) to nccl_device.h: a program that
 * uses it includes NVIDIA's nccl_device.h, which includes this nccl.h; the shim's own
 * declarations of the host entry points it exports are in nccl_device_host.h. The header is
 * valid C11 and C++.
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
#define NCCL_MINOR  32
#define NCCL_PATCH  3
#define NCCL_SUFFIX ""
/* Versions from 2.9 on are coded as MAJOR * 10000 + MINOR * 100 + PATCH. */
#define NCCL_VERSION(X, Y, Z)                                                                      \
    (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE 23203

/* CUDA's own definitions of a stream and an event handle; the shim passes streams to tutti as a
 * void *. */
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

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

/* Results. ncclTimeout is new in 2.32: an operation gave up waiting (tutti's TUTTI_ERR_TIMEOUT). */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclTimeout = 8,
    ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR    -1
#define NCCL_UNDEF_FLOAT      -1.0f

/* The magic of every versioned struct (configs, collective configs, encryption, properties). */
#define NCCL_API_MAGIC 0xcafebeef

/* ncclCommWindowRegister flags and the alignment a symmetric window needs. */
#define NCCL_WIN_DEFAULT            0x00
#define NCCL_WIN_COLL_SYMMETRIC     0x01
#define NCCL_WIN_STRICT_ORDERING    0x02
#define NCCL_WIN_GIN_ONLY           0x04 /* for GPU-initiated networking only */
#define NCCL_WIN_CFT_COUNTED        0x08 /* for the fabric's counted entries only */
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

/* ncclConfig_t.hostCftMode values. */
typedef enum {
    ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
    ncclHostCftEnable = 1,
    ncclHostCftDisable = 2,
    ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* ncclConfig_t.nvlsHostMode: which host-side NVLink SHARP parts are off (bits combine). */
typedef enum {
    ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
    ncclNvlsHostModeEnable = 0,
    ncclNvlsHostModeDisableTransport = 1 << 0,
    ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
    ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

/*
 * Communicator settings. size, magic and version are set by NCCL_CONFIG_INITIALIZER and tell the
 * library which fields the caller's copy has (older programs pass a shorter struct). Every other
 * field starts "undefined" (NCCL_CONFIG_UNDEF_*), meaning "the library's default". Which fields
 * tutti honours: docs/FRAMEWORKS.md.
 */
typedef struct ncclConfig_v23100 {
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
    int graphUsageMode;
    int numRmaCtx;
    int maxP2pPeers;
    int graphStreamOrdering;
    int launchOrderImplicit;
    int numRmaSig;
    int rmaEagerInit;
    int hostCftMode;
    int nvlsHostMode;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                    \
    {                                                                                              \
        sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_INT,            \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT                                                                  \
    }

/*
 * One vendor option of a collective config: a list node (next, or NULL to end it), a key of the
 * vendor's id and its option id, and a value. NVIDIA's library ignores every option; so does
 * tutti, which defines none.
 */
typedef struct ncclConfigExt {
    struct ncclConfigExt *next;
    struct {
        int vendorId;
        int optionId;
    } key;
    union {
        int i;
        const char *s;
        void *raw;
    } val;
} ncclConfigExt_t;

/*
 * Settings of one collective call (the nccl*Config entry points), versioned like ncclConfig_t:
 * set up with NCCL_COLLCONFIG_INITIALIZER, the same on every rank. NULL means the plain call.
 */
typedef struct ncclCollConfig_v23200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    ncclConfigExt_t *ext;     /* vendor options, or NULL */
    int minCTAs;              /* bounds of the thread blocks (channels) the call may use */
    int maxCTAs;              /* ... at most the communicator's maxCTAs */
    int nvlsCTAs;             /* NVLink SHARP's own cap */
    int cgaClusterSize;       /* thread-block cluster size */
    const char *algSelection; /* which algorithms the call may use; NULL or "": automatic */
    int forceAlgSelection;    /* 1 (default): a selection that cannot be met is an error */
    int CTAPolicy;            /* NCCL_CTA_POLICY_*; undefined: the communicator's */
    uint64_t userProfilerTag; /* handed to profiler plugins with the call's events */
    cudaEvent_t launchCompletionEvent; /* recorded once the call's kernel is launched */
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                                                                \
    {                                                                                              \
        sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_PTR,        \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, 1, NCCL_CONFIG_UNDEF_INT, 0,             \
            NCCL_CONFIG_UNDEF_PTR                                                                  \
    }

/* What ncclGroupSimulateEnd fills in: the estimated time of the group, in microseconds. */
typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

/* The magic of ncclSimInfo_t (NVIDIA's initializer writes the number itself). */
#define NCCL_SIM_INFO_MAGIC 0x74685283u
#define NCCL_SIM_INFO_INITIALIZER                                                                  \
    {                                                                                              \
        sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT            \
    }

/* ncclCommSuspend flags: release the memory that can be rebuilt on demand. */
#define NCCL_SUSPEND_MEM 0x01

/* What ncclCommMemStats reports (the mapping onto tutti: docs/FRAMEWORKS.md). */
typedef enum {
    ncclStatGpuMemSuspend = 0,   /* bytes ncclCommSuspend(NCCL_SUSPEND_MEM) would release */
    ncclStatGpuMemSuspended = 1, /* 1 while that memory is released, else 0 */
    ncclStatGpuMemPersist = 2,   /* bytes held that suspending does not release */
    ncclStatGpuMemTotal = 3      /* all the bytes counted */
} ncclCommMemStat_t;

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

/* One wait of ncclWaitSignal: opCnt signals from peer on signal sigIdx of context ctx. */
typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;

/* ncclSetEncryption: plaintext, or a pre-shared key. */
typedef enum { NCCL_ENCRYPTION_MODE_NONE = 0, NCCL_ENCRYPTION_MODE_PSK = 1 } ncclEncryptionMode_t;

typedef struct ncclEncryptionConfig_v23200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int mode;        /* ncclEncryptionMode_t */
    const char *psk; /* the key, for NCCL_ENCRYPTION_MODE_PSK */
} ncclEncryptionConfig_t;

#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                                         \
    {                                                                                              \
        sizeof(ncclEncryptionConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE,                         \
            NCCL_ENCRYPTION_MODE_NONE, NCCL_CONFIG_UNDEF_PTR                                       \
    }

/* A parameter of the library, found by its key (ncclParamBind); owned by the library. */
typedef struct ncclParamHandle *ncclParamHandle_t;

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
/*
 * Growing a communicator: an existing rank (the root) makes an id for the grow, once per grow
 * (a second one before the first is used is refused; an id serves one grow). Every rank of the
 * grown communicator then calls ncclCommGrow: existing ranks with comm and rank -1 (the root
 * with the id, the others with NULL), new ranks with comm NULL, the id and their new rank.
 */
NCCL_DECL(ncclResult_t, CommGetUniqueId, (ncclComm_t comm, ncclUniqueId *uniqueId));
NCCL_DECL(ncclResult_t, CommGrow,
          (ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
           ncclConfig_t *config));
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
/* Suspend: the communicator refuses calls until resumed; NCCL_SUSPEND_MEM also releases memory
 * that is rebuilt on demand. */
NCCL_DECL(ncclResult_t, CommSuspend, (ncclComm_t comm, int flags));
NCCL_DECL(ncclResult_t, CommResume, (ncclComm_t comm));
NCCL_DECL(ncclResult_t, CommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value));
NCCL_DECL(ncclResult_t, CommWindowRegister,
          (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags));
NCCL_DECL(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));
/* The buffer a window was registered with. */
NCCL_DECL(ncclResult_t, WinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void **outUserPtr));
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

/* The same collectives with a per-call config (NULL: the plain call). */
NCCL_DECL(ncclResult_t, AllReduceConfig,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, BroadcastConfig,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
           ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, ReduceConfig,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
           const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, AllGatherConfig,
          (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, ReduceScatterConfig,
          (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, AlltoAllConfig,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, GatherConfig,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
           ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
NCCL_DECL(ncclResult_t, ScatterConfig,
          (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
           ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));

NCCL_DECL(ncclResult_t, Send,
          (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream));
NCCL_DECL(ncclResult_t, Recv,
          (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream));

/* One-sided puts and signals into peers' windows (tutti refuses them: docs/GPU.md). */
NCCL_DECL(ncclResult_t, PutSignal,
          (const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
           ncclComm_t comm, cudaStream_t stream));
NCCL_DECL(ncclResult_t, Signal,
          (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
           cudaStream_t stream));
NCCL_DECL(ncclResult_t, WaitSignal,
          (int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream));

/* Groups. */
NCCL_DECL(ncclResult_t, GroupStart, (void));
NCCL_DECL(ncclResult_t, GroupEnd, (void));
NCCL_DECL(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t * simInfo));

/* Encryption of the library's sockets (tutti: plaintext only). */
NCCL_DECL(ncclResult_t, SetEncryption, (const ncclEncryptionConfig_t *config));

/*
 * Parameters, by key (the variable's name: NCCL_* the shim maps, or TUTTI_*): a handle from
 * ncclParamBind, read typed, as a string or as bytes; or a key's value as a string; every key;
 * a dump of them all to standard output. Strings returned stay valid until the same call is
 * made again on the same thread.
 */
NCCL_DECL(ncclResult_t, ParamBind, (ncclParamHandle_t * out, const char *key));
NCCL_DECL(ncclResult_t, ParamGetI8, (ncclParamHandle_t h, int8_t *out));
NCCL_DECL(ncclResult_t, ParamGetI16, (ncclParamHandle_t h, int16_t *out));
NCCL_DECL(ncclResult_t, ParamGetI32, (ncclParamHandle_t h, int32_t *out));
NCCL_DECL(ncclResult_t, ParamGetI64, (ncclParamHandle_t h, int64_t *out));
NCCL_DECL(ncclResult_t, ParamGetU8, (ncclParamHandle_t h, uint8_t *out));
NCCL_DECL(ncclResult_t, ParamGetU16, (ncclParamHandle_t h, uint16_t *out));
NCCL_DECL(ncclResult_t, ParamGetU32, (ncclParamHandle_t h, uint32_t *out));
NCCL_DECL(ncclResult_t, ParamGetU64, (ncclParamHandle_t h, uint64_t *out));
NCCL_DECL(ncclResult_t, ParamGetStr, (ncclParamHandle_t h, const char **out));
NCCL_DECL(ncclResult_t, ParamGet, (ncclParamHandle_t h, void *out, int maxLen, int *len));
NCCL_DECL(ncclResult_t, ParamGetParameter, (const char *key, const char **value, int *valueLen));
NCCL_DECL(ncclResult_t, ParamGetAllParameterKeys, (const char ***table, int *tableLen));
NCCL_DECL(void, ParamDumpAll, (void));

/* ---- the ABI, pinned: a change here breaks programs built against NCCL 2.32 ---- */
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
                    ncclRemoteError == 6 && ncclInProgress == 7 && ncclTimeout == 8 &&
                    ncclNumResults == 9,
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
NCCL_ABI_ASSERT(NCCL_VERSION_CODE == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH) &&
                    NCCL_VERSION_CODE == 23203,
                "the 2.32.3 version code");
NCCL_ABI_ASSERT(offsetof(ncclConfig_t, magic) == 8 && offsetof(ncclConfig_t, version) == 12 &&
                    offsetof(ncclConfig_t, blocking) == 16 &&
                    offsetof(ncclConfig_t, netName) == 32 &&
                    offsetof(ncclConfig_t, commName) == 48 &&
                    offsetof(ncclConfig_t, shrinkShare) == 64 &&
                    offsetof(ncclConfig_t, nvlinkCentricSched) == 76 &&
                    offsetof(ncclConfig_t, graphUsageMode) == 80 &&
                    offsetof(ncclConfig_t, nvlsHostMode) == 112 && sizeof(ncclConfig_t) == 120,
                "ncclConfig_t layout (2.32, LP64)");
NCCL_ABI_ASSERT(offsetof(ncclCollConfig_t, ext) == 16 &&
                    offsetof(ncclCollConfig_t, algSelection) == 40 &&
                    offsetof(ncclCollConfig_t, userProfilerTag) == 56 &&
                    offsetof(ncclCollConfig_t, launchCompletionEvent) == 64 &&
                    sizeof(ncclCollConfig_t) == 72,
                "ncclCollConfig_t layout (LP64)");
NCCL_ABI_ASSERT(offsetof(ncclSimInfo_t, estimatedTime) == 16 && sizeof(ncclSimInfo_t) == 24,
                "ncclSimInfo_t layout");
NCCL_ABI_ASSERT(offsetof(ncclEncryptionConfig_t, psk) == 24 && sizeof(ncclEncryptionConfig_t) == 32,
                "ncclEncryptionConfig_t layout (LP64)");
NCCL_ABI_ASSERT(sizeof(ncclWaitSignalDesc_t) == 16 && sizeof(ncclConfigExt_t) == 24,
                "ncclWaitSignalDesc_t and ncclConfigExt_t layouts");

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_NCCL_H */
