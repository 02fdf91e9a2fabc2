/*
 * api232_unsupported.c - what tutti refuses of NCCL 2.32, and what the device API's host calls
 * answer. Every refused call returns ncclInvalidUsage and ncclGetLastError (of its communicator,
 * of its window's, or of the thread) names what tutti lacks; ncclSetEncryption with mode NONE,
 * ncclWinGetUserPtr, this rank's own window addresses, ncclCommQueryProperties and the fabric
 * teams answer truthfully.
 */
#include "api232.h"

#include <stdint.h>
#include <stdlib.h>

int t_unsupported(ncclComm_t comm, int rank, int n)
{
    float x[4] = {0};
    void *p = NULL;
    ncclWindow_t win = NULL;
    ncclWaitSignalDesc_t desc = {1, (rank + 1) % n, 0, 0};
    NCCLOK(ncclCommWindowRegister(comm, x, sizeof(x), &win, NCCL_WIN_DEFAULT));
    REFUSED(comm, ncclPutSignal(x, 4, ncclFloat32, (rank + 1) % n, win, 0, 0, 0, 0, comm, NULL),
            ncclInvalidUsage, "ncclPutSignal: one-sided puts and signals");
    REFUSED(comm, ncclSignal((rank + 1) % n, 0, 0, 0, comm, NULL), ncclInvalidUsage,
            "ncclSignal: one-sided");
    REFUSED(comm, ncclWaitSignal(1, &desc, comm, NULL), ncclInvalidUsage,
            "ncclWaitSignal: one-sided");
    ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
    NCCLOK(ncclSetEncryption(&enc)); /* plaintext: what tutti does */
    enc.mode = NCCL_ENCRYPTION_MODE_PSK;
    enc.psk = "secret";
    REFUSED(NULL, ncclSetEncryption(&enc), ncclInvalidUsage, "does not encrypt data in transit");
    enc.magic = 1;
    REFUSED(NULL, ncclSetEncryption(&enc), ncclInvalidArgument, "INITIALIZER");
    /* windows: no multicast, no fabric entries (the message is the window's communicator's) */
    ncclMultimemHandle_t mm = {NULL};
    ncclCftLeId le = 0;
    size_t leoff = 0;
    ncclTeam_t team = {1, 0, 1};
    REFUSED(comm, ncclGetLsaMultimemDevicePointer(win, 0, &p), ncclInvalidUsage, "multimem");
    REFUSED(comm, ncclGetMultimemDevicePointer(win, 0, mm, &p), ncclInvalidUsage, "multimem");
    REFUSED(comm, ncclGetMultimemDeviceLeInfo(win, 0, &le, &leoff), ncclInvalidUsage,
            "collective fabric");
    REFUSED(comm, ncclGetCftDeviceLeInfo(win, 0, 0, team, &le, &leoff), ncclInvalidUsage,
            "collective fabric");
    REFUSED(comm, ncclGetPeerDeviceLeInfo(win, 0, rank, &le, &leoff), ncclInvalidUsage,
            "collective fabric");
    REFUSED(NULL, ncclGetLsaMultimemDevicePointer((ncclWindow_t)x, 0, &p), ncclInvalidArgument,
            "not a registered window");
    /* GPU-initiated networking and device communicators */
    REFUSED(NULL, ncclGinOutboxCreateRequirement(1, 12, NULL, NULL), ncclInvalidUsage,
            "GPU-initiated networking");
    REFUSED(NULL, ncclGinInboxA2ACreateRequirement(team, 1, 12, NULL, NULL), ncclInvalidUsage,
            "GPU-initiated networking");
    REFUSED(comm, ncclGinBarrierCreateRequirement(comm, team, 1, NULL, NULL), ncclInvalidUsage,
            "device-side");
    REFUSED(NULL, ncclLsaBarrierCreateRequirement(team, 1, NULL, NULL), ncclInvalidUsage,
            "device-side");
    REFUSED(NULL, ncclLLA2ACreateRequirement(1, 1, NULL, NULL), ncclInvalidUsage, "device-side");
    REFUSED(comm, ncclDevCommCreate(comm, NULL, NULL), ncclInvalidUsage, "device-side");
    REFUSED(comm, ncclDevCommDestroy(comm, NULL), ncclInvalidUsage, "device-side");
    NCCLOK(ncclCommWindowDeregister(comm, win));
    return 0;
}

int t_device_truthful(ncclComm_t comm, int rank, int n)
{
    char *buf = aligned_alloc(4096, 8192);
    void *p = NULL;
    ncclWindow_t win = NULL;
    NCCLOK(ncclCommWindowRegister(comm, buf, 8192, &win, NCCL_WIN_COLL_SYMMETRIC));
    NCCLOK(ncclWinGetUserPtr(comm, win, &p));
    CHECK(p == buf, "ncclWinGetUserPtr %p, registered %p", p, (void *)buf);
    NCCLOK(ncclGetLsaDevicePointer(win, 100, 0, &p));
    CHECK(p == buf + 100, "own LSA address %p", p);
    NCCLOK(ncclGetPeerDevicePointer(win, 8, rank, &p));
    CHECK(p == buf + 8, "own peer address %p", p);
    REFUSED(comm, ncclGetLsaDevicePointer(win, 0, 1, &p), ncclInvalidUsage,
            "LSA team is this rank");
    REFUSED(comm, ncclGetPeerDevicePointer(win, 0, (rank + 1) % n, &p), ncclInvalidUsage,
            "no access to other ranks' memory");
    REFUSED(comm, ncclGetLsaDevicePointer(win, 8192, 0, &p), ncclInvalidArgument,
            "past the window");
    NCCLOK(ncclCommWindowDeregister(comm, win));
    REFUSED(NULL, ncclGetLsaDevicePointer(win, 0, 0, &p), ncclInvalidArgument,
            "not a registered window");
    free(buf);
    ncclCommProperties_t props;
    memset(&props, 0, sizeof(props)); /* as NCCL_COMM_PROPERTIES_INITIALIZER (abi_probe.cc) */
    props.size = sizeof(props);
    props.magic = NCCL_API_MAGIC;
    props.version = NCCL_VERSION_CODE;
    NCCLOK(ncclCommQueryProperties(comm, &props));
    CHECK(props.rank == rank && props.nRanks == n && props.nLsaTeams == n && props.cudaDev == -1 &&
              !props.deviceApiSupport && !props.multimemSupport && !props.hostRmaSupport &&
              !props.cftSupport && props.ginType == NCCL_GIN_TYPE_NONE && props.commHash != 0,
          "properties: rank %d of %d, %d LSA teams, device %d, hash %llx", props.rank, props.nRanks,
          props.nLsaTeams, props.cudaDev, (unsigned long long)props.commHash);
    props.magic = 0;
    REFUSED(NULL, ncclCommQueryProperties(comm, &props), ncclInvalidArgument, "INITIALIZER");
    ncclTeam_t cft = ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT), mm = ncclTeamCftMultimem(comm);
    CHECK(cft.nRanks == 1 && cft.rank == 0 && mm.nRanks == 1, "fabric teams %d %d", cft.nRanks,
          mm.nRanks);
    int ver = 0;
    NCCLOK(ncclGetVersion(&ver));
    CHECK(ver == 23203 && ver == NCCL_VERSION_CODE, "version %d", ver);
    return 0;
}
