/*
 * config.c - NCCL's configs under the shim: ncclConfig_t (a communicator's) and
 * ncclCollConfig_t (one collective call's). Both are versioned structs: the caller's size says
 * which fields its copy has, and a field is read only when it lies inside that size. What
 * tutti has the concept of is honoured: blocking, commName, minCTAs/maxCTAs as bounds of its
 * channels (its rings, NCCL's channels, each of which is one CTA in NCCL). Every other field
 * that is set is accepted and named: all of a communicator's in one warning, a collective
 * config's once per field and communicator. The list with the reasons: docs/FRAMEWORKS.md.
 */
#include "shim.h"
#include "base/env.h"
#include "base/log.h"

#include <stdio.h>
#include <string.h>

/* The fields of ncclConfig_t tutti does not use, and a few words of why. */
enum kind { INT_FIELD, PTR_FIELD, U64_FIELD };

static const struct field {
    size_t off;
    const char *name;
    enum kind kind;
    const char *why;
} ignored[] = {
    {offsetof(ncclConfig_t, cgaClusterSize), "cgaClusterSize", INT_FIELD, "no kernels"},
    {offsetof(ncclConfig_t, netName), "netName", PTR_FIELD, "transport per pair: TUTTI_TRANSPORT"},
    {offsetof(ncclConfig_t, splitShare), "splitShare", INT_FIELD, "children share nothing"},
    {offsetof(ncclConfig_t, trafficClass), "trafficClass", INT_FIELD, "TUTTI_IB_TC is per process"},
    {offsetof(ncclConfig_t, collnetEnable), "collnetEnable", INT_FIELD, "no CollNet"},
    {offsetof(ncclConfig_t, CTAPolicy), "CTAPolicy", INT_FIELD, "no kernels"},
    {offsetof(ncclConfig_t, shrinkShare), "shrinkShare", INT_FIELD, "children share nothing"},
    {offsetof(ncclConfig_t, nvlsCTAs), "nvlsCTAs", INT_FIELD, "no NVLink SHARP"},
    {offsetof(ncclConfig_t, nChannelsPerNetPeer), "nChannelsPerNetPeer", INT_FIELD,
     "channels are per communicator"},
    {offsetof(ncclConfig_t, nvlinkCentricSched), "nvlinkCentricSched", INT_FIELD,
     "no NVLink scheduling"},
    {offsetof(ncclConfig_t, graphUsageMode), "graphUsageMode", INT_FIELD,
     "graph capture is refused"},
    {offsetof(ncclConfig_t, numRmaCtx), "numRmaCtx", INT_FIELD, "no one-sided RMA"},
    {offsetof(ncclConfig_t, maxP2pPeers), "maxP2pPeers", INT_FIELD, "peers connect on first use"},
    {offsetof(ncclConfig_t, graphStreamOrdering), "graphStreamOrdering", INT_FIELD,
     "graph capture is refused"},
    {offsetof(ncclConfig_t, launchOrderImplicit), "launchOrderImplicit", INT_FIELD,
     "calls run in issue order per communicator"},
    {offsetof(ncclConfig_t, numRmaSig), "numRmaSig", INT_FIELD, "no one-sided RMA"},
    {offsetof(ncclConfig_t, rmaEagerInit), "rmaEagerInit", INT_FIELD, "no one-sided RMA"},
    {offsetof(ncclConfig_t, hostCftMode), "hostCftMode", INT_FIELD, "no collective fabric"},
    {offsetof(ncclConfig_t, nvlsHostMode), "nvlsHostMode", INT_FIELD, "no NVLink SHARP"},
};

/* Does the caller's struct of `size` bytes hold the field at off of `len` bytes? */
static int has(size_t size, size_t off, size_t len)
{
    return size >= off + len;
}

/* The bytes a field of that kind takes. */
static size_t field_len(enum kind kind)
{
    return kind == INT_FIELD ? sizeof(int) : kind == PTR_FIELD ? sizeof(void *) : sizeof(uint64_t);
}

/* Append "name value (why)" of a set int or string field to buf. */
static void name_field(char *buf, size_t len, const char *name, const void *base, size_t off,
                       enum kind kind, const char *why)
{
    size_t n = strlen(buf);
    if (kind == PTR_FIELD) {
        const char *v;
        memcpy(&v, (const char *)base + off, sizeof(v));
        snprintf(buf + n, len - n, "%s%s '%.40s' (%s)", n > 0 ? ", " : "", name, v, why);
    } else {
        int v;
        memcpy(&v, (const char *)base + off, sizeof(v));
        snprintf(buf + n, len - n, "%s%s %d (%s)", n > 0 ? ", " : "", name, v, why);
    }
}

/* Is the field set (not NCCL_CONFIG_UNDEF_INT / NULL; a 64-bit tag: not 0)? */
static int is_set(const void *base, size_t off, enum kind kind)
{
    if (kind == PTR_FIELD) {
        const void *v;
        memcpy(&v, (const char *)base + off, sizeof(v));
        return v != NULL;
    }
    if (kind == U64_FIELD) {
        uint64_t v;
        memcpy(&v, (const char *)base + off, sizeof(v));
        return v != 0;
    }
    int v;
    memcpy(&v, (const char *)base + off, sizeof(v));
    return v != NCCL_CONFIG_UNDEF_INT;
}

/*
 * tutti's channel count for NCCL's CTA bounds lo..hi (0 and INT_MAX when unset): the count
 * tutti would use, brought inside the bounds. That count is TUTTI_NCHANNELS when it is set,
 * else 1 or 2 (chosen per transport at init): inside bounds that hold 1 and 2 it is left to
 * tutti (0 returned), else the bounds decide it. At most TUTTI_MAX_CHANNELS.
 */
static int channels_for(int lo, int hi)
{
    const struct tutti_env *env = tutti__env();
    int n;
    if (env->NCHANNELS > 0) {
        n = (int)env->NCHANNELS;
        n = n < lo ? lo : n > hi ? hi : n;
        if (n == env->NCHANNELS) {
            return 0;
        }
    } else if (lo <= 1 && hi >= 2) {
        return 0;
    } else {
        n = lo >= 2 ? lo : 1;
    }
    return n > TUTTI_MAX_CHANNELS ? TUTTI_MAX_CHANNELS : n;
}

/* minCTAs/maxCTAs: bounds of tutti's channels, set as the communicator's params at creation. */
static ncclResult_t ctas(struct ncclComm *c, const ncclConfig_t *config, enum shim_made how,
                         char *noeffect, size_t len)
{
    int lo = 0, hi = INT_MAX;
    int lo_set = has(config->size, offsetof(ncclConfig_t, minCTAs), sizeof(int)) &&
                 config->minCTAs != NCCL_CONFIG_UNDEF_INT;
    int hi_set = has(config->size, offsetof(ncclConfig_t, maxCTAs), sizeof(int)) &&
                 config->maxCTAs != NCCL_CONFIG_UNDEF_INT;
    if ((lo_set && config->minCTAs < 1) || (hi_set && config->maxCTAs < 1) ||
        (lo_set && hi_set && config->minCTAs > config->maxCTAs)) {
        return shim_error(NULL, ncclInvalidArgument,
                          "config.minCTAs %d and maxCTAs %d: each at least 1, min <= max",
                          lo_set ? config->minCTAs : 0, hi_set ? config->maxCTAs : 0);
    }
    lo = lo_set ? config->minCTAs : lo;
    hi = hi_set ? config->maxCTAs : hi;
    if (how == SHIM_MADE_SPLIT) {
        for (int i = 0; i < 2; i++) {
            if (i == 0 ? lo_set : hi_set) {
                name_field(noeffect, len, i == 0 ? "minCTAs" : "maxCTAs", config,
                           i == 0 ? offsetof(ncclConfig_t, minCTAs)
                                  : offsetof(ncclConfig_t, maxCTAs),
                           INT_FIELD, "a split keeps its parent's channels");
            }
        }
        return ncclSuccess;
    }
    int n = lo_set || hi_set ? channels_for(lo, hi) : 0;
    if (n > 0) {
        c->params.field_mask |= TUTTI_COMM_PARAM_NCHANNELS;
        c->params.nchannels = n;
        tutti_info(TUTTI_SUBSYS_INIT, "nccl shim: config minCTAs %d, maxCTAs %d: %d channel%s",
                   lo_set ? lo : 0, hi_set ? hi : 0, n, n == 1 ? "" : "s");
    }
    return ncclSuccess;
}

ncclResult_t shim_config_apply(struct ncclComm *c, const ncclConfig_t *config, enum shim_made how)
{
    if (config == NULL) {
        return ncclSuccess;
    }
    if (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclConfig_t, cgaClusterSize) ||
        config->version < (unsigned)NCCL_VERSION(2, 14, 0)) {
        return shim_error(NULL, ncclInvalidArgument,
                          "config %p was not set up by NCCL_CONFIG_INITIALIZER (size %zu, magic "
                          "0x%x, version %u)",
                          (const void *)config, config->size, config->magic, config->version);
    }
    if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 &&
        config->blocking != 1) {
        return shim_error(NULL, ncclInvalidArgument, "config.blocking is %d: 0 or 1",
                          config->blocking);
    }
    c->blocking = config->blocking == 0 ? 0 : 1;
    if (has(config->size, offsetof(ncclConfig_t, commName), sizeof(const char *)) &&
        config->commName != NULL) {
        snprintf(c->name, sizeof(c->name), "%s", config->commName);
    }
    char noeffect[1024] = "";
    ncclResult_t r = ctas(c, config, how, noeffect, sizeof(noeffect));
    if (r != ncclSuccess) {
        return r;
    }
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
        const struct field *f = &ignored[i];
        if (has(config->size, f->off, field_len(f->kind)) && is_set(config, f->off, f->kind)) {
            name_field(noeffect, sizeof(noeffect), f->name, config, f->off, f->kind, f->why);
        }
    }
    if (noeffect[0] != '\0') {
        tutti_warn("nccl shim: communicator%s%s%s: config fields accepted with no effect in "
                   "tutti: %s",
                   c->name[0] != '\0' ? " '" : "", c->name, c->name[0] != '\0' ? "'" : "",
                   noeffect);
    }
    return ncclSuccess;
}

/* The fields of ncclCollConfig_t, each named once per communicator (bit i of coll_warned). */
static const struct field coll_fields[] = {
    {offsetof(ncclCollConfig_t, ext), "ext", PTR_FIELD,
     "vendor options: tutti defines none and ignores every one"},
    {offsetof(ncclCollConfig_t, minCTAs), "minCTAs", INT_FIELD,
     "tutti's channels are per communicator (ncclConfig_t.minCTAs/maxCTAs), not per call"},
    {offsetof(ncclCollConfig_t, maxCTAs), "maxCTAs", INT_FIELD,
     "tutti's channels are per communicator (ncclConfig_t.minCTAs/maxCTAs), not per call"},
    {offsetof(ncclCollConfig_t, nvlsCTAs), "nvlsCTAs", INT_FIELD, "tutti has no NVLink SHARP"},
    {offsetof(ncclCollConfig_t, cgaClusterSize), "cgaClusterSize", INT_FIELD,
     "tutti launches no collective kernels"},
    {offsetof(ncclCollConfig_t, algSelection), "algSelection", PTR_FIELD,
     "tutti chooses algorithms per process (TUTTI_ALGO), not per call; forceAlgSelection is 0, "
     "so tutti's choice runs"},
    {offsetof(ncclCollConfig_t, CTAPolicy), "CTAPolicy", INT_FIELD,
     "tutti launches no collective kernels"},
    {offsetof(ncclCollConfig_t, launchCompletionEvent), "launchCompletionEvent", PTR_FIELD,
     "tutti's GPU module records no events: the event is not recorded, and a wait on it does "
     "not wait"},
    {offsetof(ncclCollConfig_t, userProfilerTag), "userProfilerTag", U64_FIELD,
     "tutti has no profiler plugins to hand it to"},
};

/* Name field i of a collective config, once per communicator. */
static void coll_name_once(struct ncclComm *c, int i, const char *what, const char *value)
{
    pthread_mutex_lock(&c->lock);
    int first = !(c->coll_warned & (1u << i));
    c->coll_warned |= 1u << i;
    pthread_mutex_unlock(&c->lock);
    if (first) {
        tutti_warn("nccl shim: %s: ncclCollConfig_t.%s %s accepted with no effect: %s", what,
                   coll_fields[i].name, value, coll_fields[i].why);
    }
}

ncclResult_t shim_coll_config(struct ncclComm *c, const ncclCollConfig_t *config, const char *what)
{
    if (config == NULL) {
        return ncclSuccess;
    }
    if (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclCollConfig_t, minCTAs) ||
        config->version < (unsigned)NCCL_VERSION(2, 32, 0)) {
        return shim_error(c, ncclInvalidArgument,
                          "%s: config %p was not set up by NCCL_COLLCONFIG_INITIALIZER (size %zu, "
                          "magic 0x%x, version %u)",
                          what, (const void *)config, config->size, config->magic, config->version);
    }
    size_t size = config->size;
    const size_t sel = offsetof(ncclCollConfig_t, algSelection);
    const size_t force = offsetof(ncclCollConfig_t, forceAlgSelection);
    int selects = has(size, sel, sizeof(char *)) && config->algSelection != NULL &&
                  config->algSelection[0] != '\0';
    if (selects && (!has(size, force, sizeof(int)) || config->forceAlgSelection != 0)) {
        return shim_error(c, ncclInvalidUsage,
                          "%s: ncclCollConfig_t.algSelection '%.60s' with forceAlgSelection: "
                          "tutti cannot select algorithms per call (TUTTI_ALGO does, per "
                          "process); set forceAlgSelection to 0 to run tutti's choice",
                          what, config->algSelection);
    }
    for (int i = 0; i < (int)(sizeof(coll_fields) / sizeof(coll_fields[0])); i++) {
        const struct field *f = &coll_fields[i];
        if (!has(size, f->off, field_len(f->kind)) || !is_set(config, f->off, f->kind) ||
            (f->off == sel && !selects)) {
            continue;
        }
        char value[80] = "";
        if (f->off == sel) {
            snprintf(value, sizeof(value), "'%.60s'", config->algSelection);
        } else if (f->kind == INT_FIELD) {
            int v;
            memcpy(&v, (const char *)config + f->off, sizeof(v));
            snprintf(value, sizeof(value), "%d", v);
        } else if (f->kind == U64_FIELD) {
            snprintf(value, sizeof(value), "0x%llx", (unsigned long long)config->userProfilerTag);
        }
        coll_name_once(c, i, what, value);
    }
    return ncclSuccess;
}
