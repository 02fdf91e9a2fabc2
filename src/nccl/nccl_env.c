/*
 * nccl_env.c - NCCL's environment variables under the shim. Where tutti has the same concept,
 * an NCCL_* variable stands in for the TUTTI_* one that is not set (src/base/env.h's fallback): the
 * debug level, subsystems and file, the socket interface and family, the RDMA devices and their
 * settings, the root address, the host id, sockets per connection, a forced algorithm, and
 * NCCL_SHM_DISABLE (TCP between every pair). Every other NCCL_* variable that is set gets one
 * warning that names it. With NCCL_DEBUG at VERSION or above, the first communicator says which
 * library this is.
 */
#include "shim.h"
#include "base/env.h"
#include "base/log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One NCCL variable read as TUTTI_<tutti>, through `conv` when the values differ. */
struct nccl_var {
    const char *nccl, *tutti;
    const char *(*conv)(const char *v, char *buf, size_t len);
};

/* NCCL_DEBUG: VERSION, WARN, INFO, TRACE (ABORT is NCCL's own) to tutti's levels. */
static const char *debug_level(const char *v, char *buf, size_t len)
{
    static const char *const map[][2] = {
        {"VERSION", "warn"}, {"WARN", "warn"}, {"INFO", "info"}, {"TRACE", "trace"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcasecmp(v, map[i][0]) == 0) {
            snprintf(buf, len, "%s", map[i][1]);
            return buf;
        }
    }
    return v; /* not a level: the warning names it */
}

/* NCCL_DEBUG_SUBSYS: a list of NCCL's names, ^ first to exclude, to tutti's. */
static const char *debug_subsys(const char *v, char *buf, size_t len)
{
    static const char *const map[][2] = {
        {"INIT", "init"},   {"COLL", "coll"},   {"P2P", "p2p"},        {"SHM", "shm"},
        {"NET", "net"},     {"GRAPH", "topo"},  {"TUNING", "tune"},    {"ENV", "env"},
        {"ALLOC", "alloc"}, {"PROXY", "proxy"}, {"BOOTSTRAP", "boot"}, {"ALL", "all"}};
    size_t o = 0;
    buf[0] = '\0';
    if (*v == '^') {
        o += (size_t)snprintf(buf, len, "^");
        v++;
    }
    int any = 0;
    while (*v != '\0' && o < len) {
        size_t n = strcspn(v, ",");
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
            if (strlen(map[i][0]) == n && strncasecmp(v, map[i][0], n) == 0) {
                o += (size_t)snprintf(buf + o, len - o, "%s%s", any ? "," : "", map[i][1]);
                any = 1;
            }
        }
        v += n + (v[n] == ',');
    }
    return any ? buf : NULL; /* only subsystems tutti lacks (CALL, NVLS, ...): none */
}

static const char *socket_family(const char *v, char *buf, size_t len)
{
    snprintf(buf, len, "%s",
             strcasecmp(v, "AF_INET") == 0    ? "ipv4"
             : strcasecmp(v, "AF_INET6") == 0 ? "ipv6"
                                              : v);
    return buf;
}

/* NCCL_ALGO: one algorithm, Ring or Tree, for all-reduce (NCCL's others have no counterpart). */
static const char *algo(const char *v, char *buf, size_t len)
{
    if (strcasecmp(v, "Ring") == 0 || strcasecmp(v, "Tree") == 0) {
        snprintf(buf, len, "allreduce:%c%s", (char)tolower((unsigned char)v[0]), v + 1);
        for (char *p = buf; *p != '\0'; p++) {
            *p = (char)tolower((unsigned char)*p);
        }
        return buf;
    }
    return NULL;
}

/* NCCL_SHM_DISABLE=1: no shared memory, so TCP between every pair. */
static const char *shm_disable(const char *v, char *buf, size_t len)
{
    (void)buf;
    (void)len;
    return strcmp(v, "1") == 0 ? "tcp" : NULL;
}

static const struct nccl_var vars[] = {
    {"NCCL_DEBUG", "LOG_LEVEL", debug_level},
    {"NCCL_DEBUG_SUBSYS", "LOG_SUBSYS", debug_subsys},
    {"NCCL_DEBUG_FILE", "LOG_FILE", NULL},
    {"NCCL_SOCKET_IFNAME", "SOCKET_IFNAME", NULL},
    {"NCCL_SOCKET_FAMILY", "SOCKET_FAMILY", socket_family},
    {"NCCL_COMM_ID", "ROOT", NULL},
    {"NCCL_HOSTID", "HOSTID", NULL},
    {"NCCL_IB_HCA", "IB_HCA", NULL},
    {"NCCL_IB_GID_INDEX", "IB_GID_INDEX", NULL},
    {"NCCL_IB_TC", "IB_TC", NULL},
    {"NCCL_IB_SL", "IB_SL", NULL},
    {"NCCL_IB_TIMEOUT", "IB_TIMEOUT", NULL},
    {"NCCL_IB_RETRY_CNT", "IB_RETRY_CNT", NULL},
    {"NCCL_IB_QPS_PER_CONNECTION", "IB_QPS", NULL},
    {"NCCL_ALGO", "ALGO", algo},
    {"NCCL_SHM_DISABLE", "TRANSPORT", shm_disable},
};

int shim_env_nccl_var(int i, const char **nccl_p, const char **tutti_p)
{
    static const char *const socks[] = {"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"};
    const int nvars = (int)(sizeof(vars) / sizeof(vars[0]));
    if (i >= 0 && i < nvars) {
        *nccl_p = vars[i].nccl;
        *tutti_p = vars[i].tutti;
        return 1;
    }
    if (i >= nvars && i < nvars + 2) {
        *nccl_p = socks[i - nvars];
        *tutti_p = "NSOCKS"; /* their product (nsocks() below) */
        return 1;
    }
    return 0;
}

static const char *env_value(const char *name)
{
    return tutti__env_foreign(name); /* NULL when unset or empty */
}

/* NCCL's sockets per connection: threads x sockets per thread, when either is set. */
static const char *nsocks(char *buf, size_t len, const char **from_p)
{
    const char *t = env_value("NCCL_SOCKET_NTHREADS"), *s = env_value("NCCL_NSOCKS_PERTHREAD");
    if (t == NULL && s == NULL) {
        return NULL;
    }
    long n = (t ? atol(t) : 1) * (s ? atol(s) : 1);
    *from_p = t != NULL ? "NCCL_SOCKET_NTHREADS" : "NCCL_NSOCKS_PERTHREAD";
    snprintf(buf, len, "%ld", n);
    return buf;
}

static const char *value(const char *name, char *buf, size_t len, const char **from_p)
{
    if (strcmp(name, "NSOCKS") == 0) {
        return nsocks(buf, len, from_p);
    }
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = env_value(vars[i].nccl);
        if (strcmp(vars[i].tutti, name) != 0 || v == NULL) {
            continue;
        }
        *from_p = vars[i].nccl;
        return vars[i].conv != NULL ? vars[i].conv(v, buf, len) : v;
    }
    return NULL;
}

/* Is NCCL_<...> one that value() reads? */
static int known(const char *name, size_t len)
{
    const char *nccl, *tutti;
    for (int i = 0; shim_env_nccl_var(i, &nccl, &tutti); i++) {
        if (strlen(nccl) == len && strncmp(name, nccl, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static void name_unread(const char *entry, size_t len, void *arg)
{
    (void)arg;
    if (!known(entry, len)) {
        tutti_warn("%.*s is not read by tutti's NCCL shim (tutti has no equivalent); ignored",
                   (int)len, entry);
    }
}

/* Once the table is read: every NCCL_* variable that has no equivalent, named once. */
static void after(void)
{
    tutti__env_foreign_each("NCCL_", name_unread, NULL);
}

static const struct tutti_env_fallback fallback = {.value = value, .after = after};

__attribute__((constructor)) static void nccl_env_install(void)
{
    tutti__env_set_fallback(&fallback);
}

void shim_banner(int rank)
{
    static int said;
    if (rank != 0) {
        return; /* as NCCL: rank 0 says it */
    }
    const char *lvl = env_value("NCCL_DEBUG");
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) ||
        (lvl == NULL ? !tutti__log_on(TUTTI_LOG_INFO, TUTTI_SUBSYS_INIT)
                     : strcasecmp(lvl, "WARN") == 0 || strcasecmp(lvl, "ABORT") == 0)) {
        return;
    }
    tutti__log(TUTTI_LOG_WARN, TUTTI_SUBSYS_INIT,
               "NCCL version %d.%d.%d: tutti %s behind NCCL's interface (libnccl.so.2 shim)",
               NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, TUTTI_VERSION_STRING);
}
