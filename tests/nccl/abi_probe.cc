/*
 * abi_probe.cc - prints the ABI of NCCL's host headers, one fact a line: the size and offset of
 * every struct member, the size of every enum and the value of each enumerator, the value of
 * every #define, every field of the *_INITIALIZER macros, and the type of every exported entry
 * point (its C++ mangled name, which spells out the return and argument types). Built twice:
 * with -DPROBE_NVIDIA against the nccl.h and nccl_device/host.h of NVIDIA's wheel (CUDA's
 * headers beside), which made tests/nccl/fixtures/nccl-2.32.3-abi.txt (make_fixtures.sh); and
 * against tutti's src/nccl/nccl.h and nccl_device_host.h, whose output the test nccl_abi_layout
 * compares with that file. C++ because only C++ can print a function's type.
 *
 * Not probed, as NVIDIA's Linux headers do not declare them: ncclResetDebugInit (only with
 * NCCL_OS_LINUX, which nothing defines), ncclResetDebugInitInternal (not declared at all),
 * ncclGinOutboxCreateRequirement and ncclGinInboxA2ACreateRequirement (declared for Windows).
 */
#ifdef PROBE_NVIDIA
#include <nccl.h>
#include <nccl_device/host.h>
#else
#include "nccl.h"
#include "nccl_device_host.h"
#endif

#include <cstddef>
#include <cstdio>
#include <typeinfo>

static void value(const char *what, long long v)
{
    std::printf("value %s %lld\n", what, v);
}

static void value(const char *what, const void *p)
{
    std::printf("value %s %s\n", what, p == nullptr ? "null" : "non-null");
}

static void value(const char *what, double v)
{
    std::printf("value %s %g\n", what, v);
}

static void value(const char *what, const char *s)
{
    std::printf("value %s \"%s\"\n", what, s);
}

#define SIZE(T) std::printf("sizeof %s %zu\n", #T, sizeof(T))
#define MEMBER(T, m)                                                                               \
    std::printf("member %s.%s offset %zu size %zu\n", #T, #m, offsetof(T, m), sizeof(((T *)0)->m))
#define ENUM(e)         value(#e, (long long)(e))
#define DEFINE_INT(d)   value(#d, (long long)(d))
#define INIT_INT(v, f)  value(#v "." #f, (long long)(v).f)
#define INIT_PTR(v, f)  value(#v "." #f, (const void *)(v).f)
#define FUNC(f)         std::printf("function %s %s\n", #f, typeid(decltype(&f)).name())
#define FUNC2(f)        FUNC(f), FUNC(p##f)

static void structs(void)
{
    SIZE(ncclUniqueId);
    MEMBER(ncclUniqueId, internal);
    SIZE(ncclConfig_t);
    MEMBER(ncclConfig_t, size);
    MEMBER(ncclConfig_t, magic);
    MEMBER(ncclConfig_t, version);
    MEMBER(ncclConfig_t, blocking);
    MEMBER(ncclConfig_t, cgaClusterSize);
    MEMBER(ncclConfig_t, minCTAs);
    MEMBER(ncclConfig_t, maxCTAs);
    MEMBER(ncclConfig_t, netName);
    MEMBER(ncclConfig_t, splitShare);
    MEMBER(ncclConfig_t, trafficClass);
    MEMBER(ncclConfig_t, commName);
    MEMBER(ncclConfig_t, collnetEnable);
    MEMBER(ncclConfig_t, CTAPolicy);
    MEMBER(ncclConfig_t, shrinkShare);
    MEMBER(ncclConfig_t, nvlsCTAs);
    MEMBER(ncclConfig_t, nChannelsPerNetPeer);
    MEMBER(ncclConfig_t, nvlinkCentricSched);
    MEMBER(ncclConfig_t, graphUsageMode);
    MEMBER(ncclConfig_t, numRmaCtx);
    MEMBER(ncclConfig_t, maxP2pPeers);
    MEMBER(ncclConfig_t, graphStreamOrdering);
    MEMBER(ncclConfig_t, launchOrderImplicit);
    MEMBER(ncclConfig_t, numRmaSig);
    MEMBER(ncclConfig_t, rmaEagerInit);
    MEMBER(ncclConfig_t, hostCftMode);
    MEMBER(ncclConfig_t, nvlsHostMode);
    SIZE(ncclConfigExt_t);
    MEMBER(ncclConfigExt_t, next);
    MEMBER(ncclConfigExt_t, key);
    MEMBER(ncclConfigExt_t, key.vendorId);
    MEMBER(ncclConfigExt_t, key.optionId);
    MEMBER(ncclConfigExt_t, val);
    MEMBER(ncclConfigExt_t, val.i);
    MEMBER(ncclConfigExt_t, val.s);
    MEMBER(ncclConfigExt_t, val.raw);
    SIZE(ncclCollConfig_t);
    MEMBER(ncclCollConfig_t, size);
    MEMBER(ncclCollConfig_t, magic);
    MEMBER(ncclCollConfig_t, version);
    MEMBER(ncclCollConfig_t, ext);
    MEMBER(ncclCollConfig_t, minCTAs);
    MEMBER(ncclCollConfig_t, maxCTAs);
    MEMBER(ncclCollConfig_t, nvlsCTAs);
    MEMBER(ncclCollConfig_t, cgaClusterSize);
    MEMBER(ncclCollConfig_t, algSelection);
    MEMBER(ncclCollConfig_t, forceAlgSelection);
    MEMBER(ncclCollConfig_t, CTAPolicy);
    MEMBER(ncclCollConfig_t, userProfilerTag);
    MEMBER(ncclCollConfig_t, launchCompletionEvent);
    SIZE(ncclSimInfo_t);
    MEMBER(ncclSimInfo_t, size);
    MEMBER(ncclSimInfo_t, magic);
    MEMBER(ncclSimInfo_t, version);
    MEMBER(ncclSimInfo_t, estimatedTime);
    SIZE(ncclWaitSignalDesc_t);
    MEMBER(ncclWaitSignalDesc_t, opCnt);
    MEMBER(ncclWaitSignalDesc_t, peer);
    MEMBER(ncclWaitSignalDesc_t, sigIdx);
    MEMBER(ncclWaitSignalDesc_t, ctx);
    SIZE(ncclEncryptionConfig_t);
    MEMBER(ncclEncryptionConfig_t, size);
    MEMBER(ncclEncryptionConfig_t, magic);
    MEMBER(ncclEncryptionConfig_t, version);
    MEMBER(ncclEncryptionConfig_t, mode);
    MEMBER(ncclEncryptionConfig_t, psk);
}

/* The device API's host-visible types that the exported functions take or fill. */
static void device_structs(void)
{
    SIZE(ncclTeam_t);
    MEMBER(ncclTeam_t, nRanks);
    MEMBER(ncclTeam_t, rank);
    MEMBER(ncclTeam_t, stride);
    SIZE(ncclMultimemHandle_t);
    MEMBER(ncclMultimemHandle_t, mcBasePtr);
    SIZE(ncclCftLeId);
    SIZE(ncclCommProperties_t);
    MEMBER(ncclCommProperties_t, size);
    MEMBER(ncclCommProperties_t, magic);
    MEMBER(ncclCommProperties_t, version);
    MEMBER(ncclCommProperties_t, rank);
    MEMBER(ncclCommProperties_t, nRanks);
    MEMBER(ncclCommProperties_t, cudaDev);
    MEMBER(ncclCommProperties_t, nvmlDev);
    MEMBER(ncclCommProperties_t, deviceApiSupport);
    MEMBER(ncclCommProperties_t, multimemSupport);
    MEMBER(ncclCommProperties_t, ginType);
    MEMBER(ncclCommProperties_t, nLsaTeams);
    MEMBER(ncclCommProperties_t, hostRmaSupport);
    MEMBER(ncclCommProperties_t, railedGinType);
    MEMBER(ncclCommProperties_t, commHash);
    MEMBER(ncclCommProperties_t, ginMinStride);
    MEMBER(ncclCommProperties_t, ginConnectionType);
    MEMBER(ncclCommProperties_t, ginSupport);
    MEMBER(ncclCommProperties_t, devCommRuntimeVersionSize);
    MEMBER(ncclCommProperties_t, cftSupport);
    MEMBER(ncclCommProperties_t, cftMulticastSupport);
    MEMBER(ncclCommProperties_t, cftCountedSupport);
}

static void enums(void)
{
    SIZE(ncclResult_t);
    ENUM(ncclSuccess);
    ENUM(ncclUnhandledCudaError);
    ENUM(ncclSystemError);
    ENUM(ncclInternalError);
    ENUM(ncclInvalidArgument);
    ENUM(ncclInvalidUsage);
    ENUM(ncclRemoteError);
    ENUM(ncclInProgress);
    ENUM(ncclTimeout);
    ENUM(ncclNumResults);
    SIZE(ncclHostCftMode_t);
    ENUM(ncclHostCftDefault);
    ENUM(ncclHostCftEnable);
    ENUM(ncclHostCftDisable);
    ENUM(ncclHostCftFallback);
    SIZE(ncclNvlsHostMode_t);
    ENUM(ncclNvlsHostModeDefault);
    ENUM(ncclNvlsHostModeEnable);
    ENUM(ncclNvlsHostModeDisableTransport);
    ENUM(ncclNvlsHostModeDisableSymmetricMultimem);
    ENUM(ncclNvlsHostModeDisable);
    SIZE(ncclCommMemStat_t);
    ENUM(ncclStatGpuMemSuspend);
    ENUM(ncclStatGpuMemSuspended);
    ENUM(ncclStatGpuMemPersist);
    ENUM(ncclStatGpuMemTotal);
    SIZE(ncclRedOp_dummy_t);
    ENUM(ncclNumOps_dummy);
    SIZE(ncclRedOp_t);
    ENUM(ncclSum);
    ENUM(ncclProd);
    ENUM(ncclMax);
    ENUM(ncclMin);
    ENUM(ncclAvg);
    ENUM(ncclNumOps);
    ENUM(ncclMaxRedOp);
    SIZE(ncclDataType_t);
    ENUM(ncclInt8);
    ENUM(ncclChar);
    ENUM(ncclUint8);
    ENUM(ncclInt32);
    ENUM(ncclInt);
    ENUM(ncclUint32);
    ENUM(ncclInt64);
    ENUM(ncclUint64);
    ENUM(ncclFloat16);
    ENUM(ncclHalf);
    ENUM(ncclFloat32);
    ENUM(ncclFloat);
    ENUM(ncclFloat64);
    ENUM(ncclDouble);
    ENUM(ncclBfloat16);
    ENUM(ncclFloat8e4m3);
    ENUM(ncclFloat8e5m2);
    ENUM(ncclNumTypes);
    SIZE(ncclScalarResidence_t);
    ENUM(ncclScalarDevice);
    ENUM(ncclScalarHostImmediate);
    SIZE(ncclEncryptionMode_t);
    ENUM(NCCL_ENCRYPTION_MODE_NONE);
    ENUM(NCCL_ENCRYPTION_MODE_PSK);
    SIZE(ncclGinConnectionType_t);
    ENUM(NCCL_GIN_CONNECTION_NONE);
    ENUM(NCCL_GIN_CONNECTION_FULL);
    ENUM(NCCL_GIN_CONNECTION_RAIL);
    ENUM(NCCL_GIN_CONNECTION_CUSTOM_STRIDE);
    SIZE(ncclGinType_t);
    ENUM(NCCL_GIN_TYPE_NONE);
    ENUM(NCCL_GIN_TYPE_PROXY);
    ENUM(NCCL_GIN_TYPE_GDAKI);
    ENUM(NCCL_GIN_TYPE_GPI);
    ENUM(NCCL_GIN_TYPE_EFA_GDA);
    ENUM(NCCL_GIN_MAX_TYPES);
    SIZE(ncclCftTeamMode_t);
    ENUM(NCCL_CFT_TEAM_FLAT);
    ENUM(NCCL_CFT_TEAM_HIER_MULTIMEM);
    ENUM(NCCL_CFT_TEAM_HIER_LSA);
    SIZE(ncclCftCap_t);
    ENUM(NCCL_CFT_NONE);
    ENUM(NCCL_CFT);
    ENUM(NCCL_CFT_MULTIMEM);
}

static void defines(void)
{
    DEFINE_INT(NCCL_MAJOR);
    DEFINE_INT(NCCL_MINOR);
    DEFINE_INT(NCCL_PATCH);
    value("NCCL_SUFFIX", NCCL_SUFFIX);
    DEFINE_INT(NCCL_VERSION_CODE);
    DEFINE_INT(NCCL_VERSION(2, 8, 4));
    DEFINE_INT(NCCL_VERSION(2, 32, 3));
    DEFINE_INT(NCCL_UNIQUE_ID_BYTES);
    DEFINE_INT(NCCL_CONFIG_UNDEF_INT);
    value("NCCL_CONFIG_UNDEF_PTR", (const void *)NCCL_CONFIG_UNDEF_PTR);
    value("NCCL_COMM_NULL", (const void *)NCCL_COMM_NULL);
    DEFINE_INT(NCCL_SPLIT_NOCOLOR);
    value("NCCL_UNDEF_FLOAT", (double)NCCL_UNDEF_FLOAT);
    DEFINE_INT(NCCL_API_MAGIC);
    DEFINE_INT(NCCL_WIN_DEFAULT);
    DEFINE_INT(NCCL_WIN_COLL_SYMMETRIC);
    DEFINE_INT(NCCL_WIN_STRICT_ORDERING);
    DEFINE_INT(NCCL_WIN_GIN_ONLY);
    DEFINE_INT(NCCL_WIN_CFT_COUNTED);
    DEFINE_INT(NCCL_WIN_REQUIRED_ALIGNMENT);
    DEFINE_INT(NCCL_CTA_POLICY_DEFAULT);
    DEFINE_INT(NCCL_CTA_POLICY_EFFICIENCY);
    DEFINE_INT(NCCL_CTA_POLICY_ZERO);
    DEFINE_INT(NCCL_SHRINK_DEFAULT);
    DEFINE_INT(NCCL_SHRINK_ABORT);
    DEFINE_INT(NCCL_REVOKE_DEFAULT);
    DEFINE_INT(NCCL_SUSPEND_MEM);
}

/* Each field of each initializer, as a program compiled against the header gets it. */
static void initializers(void)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    INIT_INT(cfg, size);
    INIT_INT(cfg, magic);
    INIT_INT(cfg, version);
    INIT_INT(cfg, blocking);
    INIT_INT(cfg, cgaClusterSize);
    INIT_INT(cfg, minCTAs);
    INIT_INT(cfg, maxCTAs);
    INIT_PTR(cfg, netName);
    INIT_INT(cfg, splitShare);
    INIT_INT(cfg, trafficClass);
    INIT_PTR(cfg, commName);
    INIT_INT(cfg, collnetEnable);
    INIT_INT(cfg, CTAPolicy);
    INIT_INT(cfg, shrinkShare);
    INIT_INT(cfg, nvlsCTAs);
    INIT_INT(cfg, nChannelsPerNetPeer);
    INIT_INT(cfg, nvlinkCentricSched);
    INIT_INT(cfg, graphUsageMode);
    INIT_INT(cfg, numRmaCtx);
    INIT_INT(cfg, maxP2pPeers);
    INIT_INT(cfg, graphStreamOrdering);
    INIT_INT(cfg, launchOrderImplicit);
    INIT_INT(cfg, numRmaSig);
    INIT_INT(cfg, rmaEagerInit);
    INIT_INT(cfg, hostCftMode);
    INIT_INT(cfg, nvlsHostMode);
    ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
    INIT_INT(coll, size);
    INIT_INT(coll, magic);
    INIT_INT(coll, version);
    INIT_PTR(coll, ext);
    INIT_INT(coll, minCTAs);
    INIT_INT(coll, maxCTAs);
    INIT_INT(coll, nvlsCTAs);
    INIT_INT(coll, cgaClusterSize);
    INIT_PTR(coll, algSelection);
    INIT_INT(coll, forceAlgSelection);
    INIT_INT(coll, CTAPolicy);
    INIT_INT(coll, userProfilerTag);
    INIT_PTR(coll, launchCompletionEvent);
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    INIT_INT(sim, size);
    INIT_INT(sim, magic);
    INIT_INT(sim, version);
    value("sim.estimatedTime", (double)sim.estimatedTime);
    ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
    INIT_INT(enc, size);
    INIT_INT(enc, magic);
    INIT_INT(enc, version);
    INIT_INT(enc, mode);
    INIT_PTR(enc, psk);
    ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
    INIT_INT(props, size);
    INIT_INT(props, magic);
    INIT_INT(props, version);
    INIT_INT(props, rank);
    INIT_INT(props, commHash);
    INIT_INT(props, cftCountedSupport);
}

static void functions(void)
{
    FUNC2(ncclMemAlloc);
    FUNC2(ncclMemFree);
    FUNC2(ncclGetVersion);
    FUNC2(ncclGetUniqueId);
    FUNC2(ncclCommInitRankConfig);
    FUNC2(ncclCommInitRank);
    FUNC2(ncclCommInitAll);
    FUNC2(ncclCommFinalize);
    FUNC2(ncclCommDestroy);
    FUNC2(ncclCommAbort);
    FUNC2(ncclCommRevoke);
    FUNC2(ncclCommSplit);
    FUNC2(ncclCommShrink);
    FUNC2(ncclCommGetUniqueId);
    FUNC2(ncclCommGrow);
    FUNC2(ncclCommInitRankScalable);
    FUNC2(ncclGetErrorString);
    FUNC2(ncclGetLastError);
    FUNC2(ncclCommGetAsyncError);
    FUNC2(ncclCommCount);
    FUNC2(ncclCommCuDevice);
    FUNC2(ncclCommUserRank);
    FUNC2(ncclCommRegister);
    FUNC2(ncclCommDeregister);
    FUNC2(ncclCommSuspend);
    FUNC2(ncclCommResume);
    FUNC2(ncclCommMemStats);
    FUNC2(ncclCommWindowRegister);
    FUNC2(ncclCommWindowDeregister);
    FUNC2(ncclWinGetUserPtr);
    FUNC2(ncclRedOpCreatePreMulSum);
    FUNC2(ncclRedOpDestroy);
    FUNC2(ncclReduce);
    FUNC2(ncclBcast);
    FUNC2(ncclBroadcast);
    FUNC2(ncclAllReduce);
    FUNC2(ncclReduceScatter);
    FUNC2(ncclAllGather);
    FUNC2(ncclAlltoAll);
    FUNC2(ncclGather);
    FUNC2(ncclScatter);
    FUNC2(ncclAllReduceConfig);
    FUNC2(ncclBroadcastConfig);
    FUNC2(ncclReduceConfig);
    FUNC2(ncclAllGatherConfig);
    FUNC2(ncclReduceScatterConfig);
    FUNC2(ncclAlltoAllConfig);
    FUNC2(ncclGatherConfig);
    FUNC2(ncclScatterConfig);
    FUNC2(ncclSend);
    FUNC2(ncclRecv);
    FUNC2(ncclPutSignal);
    FUNC2(ncclSignal);
    FUNC2(ncclWaitSignal);
    FUNC2(ncclGroupStart);
    FUNC2(ncclGroupEnd);
    FUNC2(ncclGroupSimulateEnd);
    FUNC2(ncclSetEncryption);
    FUNC2(ncclParamBind);
    FUNC2(ncclParamGetI8);
    FUNC2(ncclParamGetI16);
    FUNC2(ncclParamGetI32);
    FUNC2(ncclParamGetI64);
    FUNC2(ncclParamGetU8);
    FUNC2(ncclParamGetU16);
    FUNC2(ncclParamGetU32);
    FUNC2(ncclParamGetU64);
    FUNC2(ncclParamGetStr);
    FUNC2(ncclParamGet);
    FUNC2(ncclParamGetParameter);
    FUNC2(ncclParamGetAllParameterKeys);
    FUNC2(ncclParamDumpAll);
    /* the device API's host functions: NVIDIA's headers declare no pnccl twin for these */
    FUNC(ncclCommQueryProperties);
    FUNC(ncclDevCommCreate);
    FUNC(ncclDevCommDestroy);
    FUNC(ncclGetLsaMultimemDevicePointer);
    FUNC(ncclGetMultimemDevicePointer);
    FUNC(ncclGetLsaDevicePointer);
    FUNC(ncclGetPeerDevicePointer);
    FUNC(ncclGetMultimemDeviceLeInfo);
    FUNC(ncclGetCftDeviceLeInfo);
    FUNC(ncclGetPeerDeviceLeInfo);
    FUNC(ncclTeamWorld);
    FUNC(ncclTeamLsa);
    FUNC(ncclTeamCft);
    FUNC(ncclTeamCftMultimem);
    FUNC(ncclTeamRankToWorld);
    FUNC(ncclTeamRankToLsa);
    FUNC(ncclTeamRail);
    FUNC(ncclLsaBarrierCreateRequirement);
    FUNC(ncclGinBarrierCreateRequirement);
    FUNC(ncclLLA2ACalcSlots);
    FUNC(ncclLLA2ACreateRequirement);
}

int main()
{
    structs();
    device_structs();
    enums();
    defines();
    initializers();
    functions();
    return 0;
}
