/*
 * unsupported.c - NCCL 2.32's calls that need what tutti does not have, each refused with
 * ncclInvalidUsage and a message naming what is missing (ncclGetLastError of the communicator,
 * of the window's communicator, or of the thread for calls that take neither): one-sided puts
 * and signals into peers' windows (tutti has no one-sided transport), multicast addresses and
 * the collective fabric's entries of windows, GPU-initiated networking's outboxes and inboxes,
 * and encryption of the library's sockets (tutti sends plaintext after an authenticated
 * handshake; ncclSetEncryption with mode NONE asks for what tutti does, and succeeds). The
 * list of every call tutti refuses, with its result: docs/GPU.md.
 */
#include "shim.h"
#include "nccl_device_host.h"

#define NO_MULTIMEM                                                                                \
    "tutti has no NVLink SHARP multicast memory (multimem): a window has no multicast address"
#define NO_CFT                                                                                     \
    "tutti has no collective fabric (CFT): a window has no fabric entries; reach peers with "      \
    "NCCL's host collectives"
#define NO_GIN                                                                                     \
    "tutti has no GPU-initiated networking (GIN): no device communicators, outboxes or inboxes; "  \
    "use NCCL's host collectives"
#define NO_RMA                                                                                     \
    "one-sided puts and signals into peers' windows are not supported by tutti (it has no "        \
    "one-sided transport); use ncclSend/ncclRecv"

/* Enter comm and refuse the call on it (its last error says why). */
static ncclResult_t refuse(ncclComm_t comm, const char *what)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_error(c, ncclInvalidUsage, "%s: " NO_RMA, what);
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, PutSignal, const void *localbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
         unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
    (void)localbuff;
    (void)count;
    (void)datatype;
    (void)peer;
    (void)peerWin;
    (void)peerWinOffset;
    (void)sigIdx;
    (void)ctx;
    (void)flags;
    (void)stream;
    return refuse(comm, "ncclPutSignal");
}

NCCL_API(ncclResult_t, Signal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream)
{
    (void)peer;
    (void)sigIdx;
    (void)ctx;
    (void)flags;
    (void)stream;
    return refuse(comm, "ncclSignal");
}

NCCL_API(ncclResult_t, WaitSignal, int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
         cudaStream_t stream)
{
    (void)nDesc;
    (void)signalDescs;
    (void)stream;
    return refuse(comm, "ncclWaitSignal");
}

/*
 * Encryption of NCCL's TCP sockets with a pre-shared key. tutti authenticates every connection
 * with the unique id's secret but encrypts nothing (docs/SECURITY.md): plaintext (mode NONE) is
 * what it does already; a key is refused.
 */
NCCL_API(ncclResult_t, SetEncryption, const ncclEncryptionConfig_t *config)
{
    if (config == NULL || config->magic != NCCL_API_MAGIC ||
        config->size < offsetof(ncclEncryptionConfig_t, mode) + sizeof(int)) {
        return shim_error(NULL, ncclInvalidArgument, "ncclSetEncryption: config %s",
                          config == NULL ? "is NULL"
                                         : "was not set up by NCCL_ENCRYPTION_CONFIG_INITIALIZER");
    }
    if (config->mode == NCCL_ENCRYPTION_MODE_NONE) {
        return ncclSuccess;
    }
    if (config->mode != NCCL_ENCRYPTION_MODE_PSK) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclSetEncryption: mode %d is not an ncclEncryptionMode_t",
                          config->mode);
    }
    return shim_error(NULL, ncclInvalidUsage,
                      "ncclSetEncryption: tutti does not encrypt data in transit (it authenticates "
                      "connections with the unique id's secret; docs/SECURITY.md): encrypt below "
                      "it (WireGuard, IPsec), or ask for NCCL_ENCRYPTION_MODE_NONE");
}

/* A window call tutti cannot answer: refused on the window's communicator (a window that is not
 * registered is an invalid argument first, as for the calls that answer). */
static ncclResult_t refuse_window(ncclWindow_t win, const char *what, const char *why)
{
    struct ncclComm *c;
    const struct shim_reg *reg;
    ncclResult_t r = shim_window_enter(win, what, &c, &reg);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_error(c, ncclInvalidUsage, "%s: %s", what, why);
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, GetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset,
         void **outPtr)
{
    (void)offset;
    (void)outPtr;
    return refuse_window(window, "ncclGetLsaMultimemDevicePointer", NO_MULTIMEM);
}

NCCL_API(ncclResult_t, GetMultimemDevicePointer, ncclWindow_t window, size_t offset,
         ncclMultimemHandle_t multimem, void **outPtr)
{
    (void)offset;
    (void)multimem;
    (void)outPtr;
    return refuse_window(window, "ncclGetMultimemDevicePointer", NO_MULTIMEM);
}

NCCL_API(ncclResult_t, GetMultimemDeviceLeInfo, ncclWindow_t window, size_t offset,
         ncclCftLeId *leId, size_t *leOffset)
{
    (void)offset;
    (void)leId;
    (void)leOffset;
    return refuse_window(window, "ncclGetMultimemDeviceLeInfo", NO_CFT);
}

NCCL_API(ncclResult_t, GetCftDeviceLeInfo, ncclWindow_t window, size_t offset, int peerCft,
         ncclTeam_t cftTeam, ncclCftLeId *leId, size_t *leOffset)
{
    (void)offset;
    (void)peerCft;
    (void)cftTeam;
    (void)leId;
    (void)leOffset;
    return refuse_window(window, "ncclGetCftDeviceLeInfo", NO_CFT);
}

NCCL_API(ncclResult_t, GetPeerDeviceLeInfo, ncclWindow_t window, size_t offset, int peerWorld,
         ncclCftLeId *leId, size_t *leOffset)
{
    (void)offset;
    (void)peerWorld;
    (void)leId;
    (void)leOffset;
    return refuse_window(window, "ncclGetPeerDeviceLeInfo", NO_CFT);
}

NCCL_API(ncclResult_t, GinOutboxCreateRequirement, int nBlocks, int size_log2,
         struct ncclGinOutboxHandle *outHandle, ncclDevResourceRequirements_t *outReq)
{
    (void)nBlocks;
    (void)size_log2;
    (void)outHandle;
    (void)outReq;
    return shim_error(NULL, ncclInvalidUsage, "ncclGinOutboxCreateRequirement: " NO_GIN);
}

NCCL_API(ncclResult_t, GinInboxA2ACreateRequirement, ncclTeam_t peers, int nBlocks, int size_log2,
         struct ncclGinInboxA2AHandle *outHandle, ncclDevResourceRequirements_t *outReq)
{
    (void)peers;
    (void)nBlocks;
    (void)size_log2;
    (void)outHandle;
    (void)outReq;
    return shim_error(NULL, ncclInvalidUsage, "ncclGinInboxA2ACreateRequirement: " NO_GIN);
}
