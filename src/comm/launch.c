/*
 * launch.c - tutti_comm_init_env: rank, size, root address and secret from the launcher's
 * environment (tutti's own variables, torchrun, Open MPI's mpirun, Slurm). Rank 0 hosts the
 * bootstrap root. On one host without a root address, rank 0 publishes a fresh root and secret
 * in a private file (mode 0600) that the other ranks read: no configuration, no shared secret
 * in the environment (rendezvous.c). README "Launching" documents every case.
 */
#include "comm/bootstrap.h"
#include "base/check.h"
#include "base/env.h"
#include "base/global.h"
#include "comm/init.h"
#include "comm/launch.h"
#include "comm/pmix.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A launcher's integer variable: decimal, in lo..hi, else an error naming it (RANK=4294967296
 * was rank 0, "010" was 8). *out_p is -1 when it is unset.
 */
static tutti_status_t foreign_int(const char *name, long lo, long hi, long *out_p)
{
    const char *v = tutti__env_foreign(name);
    long x = -1;
    if (v != NULL && (tutti__parse_long(v, &x) != 0 || x < lo || x > hi)) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "%s value '%.40s' is not a decimal integer in %ld to %ld", name, v,
                                lo, hi);
    }
    *out_p = v != NULL ? x : -1;
    return TUTTI_OK;
}

int tutti__hex_decode(const char *hex, uint8_t *out, size_t n)
{
    size_t len = strlen(hex);
    while (len > 0 && isspace((unsigned char)hex[len - 1])) {
        len--;
    }
    if (len != 2 * n) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        char pair[3] = {hex[2 * i], hex[2 * i + 1], 0};
        if (!isxdigit((unsigned char)pair[0]) || !isxdigit((unsigned char)pair[1]) ||
            sscanf(pair, "%2x", &v) != 1) {
            return -1;
        }
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* First host of a Slurm node list: "gpu[03-05,9],cpu1" -> "gpu03". */
int tutti__slurm_first_host(const char *list, char *out, size_t len)
{
    size_t o = 0;
    if (len == 0) {
        return -1; /* no room even for the terminator */
    }
    /* Up to the first comma; each bracket ("[03-05,9]") gives its first number, so that a
     * list of several ranges ("rack[1-2]-n[3-4]") starts with "rack1-n3". */
    for (const char *p = list; *p != '\0' && *p != ',';) {
        if (*p != '[') {
            if (o + 1 < len) {
                out[o++] = *p;
            }
            p++;
            continue;
        }
        for (p++; isdigit((unsigned char)*p); p++) {
            if (o + 1 < len) {
                out[o++] = *p;
            }
        }
        while (*p != '\0' && *p != ']') {
            p++;
        }
        p += *p == ']';
    }
    out[o] = '\0';
    return o > 0 ? 0 : -1;
}

/* The variables of a launcher: rank, size and (optional) the ranks on this host. */
struct launcher_vars {
    const char *name, *rank, *size, *local_size;
};

static const struct launcher_vars launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", NULL},
};

/* Rank, size and "one host" from a launcher's variables, each range-checked (the ranges of
 * TUTTI_RANK and TUTTI_NRANKS, so that every rank fits an int). */
static tutti_status_t launcher_rank(const struct launcher_vars *v, struct tutti_launch *l)
{
    long max_rank = 0, max_size = 0, lo, rank, size, local = -1;
    (void)tutti__env_int_range("RANK", &lo, &max_rank);
    (void)tutti__env_int_range("NRANKS", &lo, &max_size);
    TUTTI_CHECK(foreign_int(v->rank, 0, max_rank, &rank));
    TUTTI_CHECK(foreign_int(v->size, 1, max_size, &size));
    if (v->local_size != NULL) {
        TUTTI_CHECK(foreign_int(v->local_size, 1, max_size, &local));
    }
    l->source = v->name;
    l->rank = (int)rank;
    l->nranks = (int)size;
    if (strcmp(v->name, "slurm") == 0) {
        long nodes;
        TUTTI_CHECK(foreign_int("SLURM_NNODES", 1, max_size, &nodes));
        l->single_host = (nodes == 1);
    } else {
        l->single_host = (local > 0 && local == l->nranks);
    }
    return TUTTI_OK;
}

/* Rank and size from the first launcher whose variables are set. */
static tutti_status_t detect_rank(struct tutti_launch *l)
{
    const struct tutti_env *env = tutti__env();
    const char *rank_var = "TUTTI_RANK", *size_var = "TUTTI_NRANKS";
    if (env->RANK >= 0 || env->NRANKS >= 0) {
        l->source = "tutti";
        l->rank = (int)env->RANK; /* both within their ranges (tutti__env_check) */
        l->nranks = (int)env->NRANKS;
    } else {
        for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
            if (tutti__env_foreign(launchers[i].rank) != NULL) {
                TUTTI_CHECK(launcher_rank(&launchers[i], l));
                rank_var = launchers[i].rank;
                size_var = launchers[i].size;
                break;
            }
        }
    }
    if (l->source == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_init_env: no launcher environment found: set "
                                "TUTTI_RANK/TUTTI_NRANKS/TUTTI_ROOT, or run under torchrun "
                                "(RANK, WORLD_SIZE), mpirun (OMPI_COMM_WORLD_RANK) or srun "
                                "(SLURM_PROCID)");
    }
    if (l->rank < 0 || l->nranks < 1) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_init_env (%s): %s is not set", l->source,
                                l->rank < 0 ? rank_var : size_var);
    }
    if (l->rank >= l->nranks) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_init_env (%s): rank %d (%s) is not below %d (%s)",
                                l->source, l->rank, rank_var, l->nranks, size_var);
    }
    return TUTTI_OK;
}

/* Root "host:port" from TUTTI_ROOT, torchrun's MASTER_* or Slurm's node list; "" if none. */
static tutti_status_t detect_root(struct tutti_launch *l)
{
    const char *addr = tutti__env_foreign("MASTER_ADDR");
    long p = -1;
    if (tutti__env()->ROOT[0] != '\0') {
        snprintf(l->root, sizeof(l->root), "%s", tutti__env()->ROOT);
        l->root_from = "TUTTI_ROOT";
    } else if (addr != NULL && tutti__env_foreign("MASTER_PORT") != NULL) {
        /* torchrun's store listens on MASTER_PORT: tutti takes the next port, so 65534 at most. */
        TUTTI_CHECK(foreign_int("MASTER_PORT", 1, 65534, &p));
        l->root_from = "MASTER_ADDR and MASTER_PORT + 1";
        snprintf(l->root, sizeof(l->root), "%s%s%s:%ld", strchr(addr, ':') ? "[" : "", addr,
                 strchr(addr, ':') ? "]" : "", p + 1);
    } else if (strcmp(l->source, "slurm") == 0 && !l->single_host) {
        const char *nodes = tutti__env_foreign("SLURM_STEP_NODELIST");
        char host[128];
        if (nodes == NULL) {
            nodes = tutti__env_foreign("SLURM_JOB_NODELIST");
        }
        long job, step; /* Slurm's ids are 32-bit unsigned */
        TUTTI_CHECK(foreign_int("SLURM_JOB_ID", 0, 4294967295L, &job));
        TUTTI_CHECK(foreign_int("SLURM_STEP_ID", 0, 4294967295L, &step));
        int lo = 0, hi = 0, ranged = 0; /* a malformed range: tutti__root_port_check says so */
        if (tutti__sock_port_range(&lo, &hi, &ranged) != TUTTI_OK || !ranged) {
            lo = hi = 0;
        }
        if (nodes != NULL && tutti__slurm_first_host(nodes, host, sizeof(host)) == 0 && job >= 0) {
            snprintf(l->root, sizeof(l->root), "%s:%d", host,
                     tutti__slurm_root_port(job, step, lo, hi));
            l->root_from = "the Slurm node list";
        }
    }
    return TUTTI_OK;
}

/*
 * A name for this job that every rank computes alike (for files and derived keys). It ends with
 * the root address: without a launcher's job identifier, two jobs with the same secret would
 * otherwise get the same comm id, and on one host the same shared-memory segment names; two jobs
 * that run at once cannot share a root address. The number of ranks is not part of it: a rank
 * started with another number must reach the root, which then names the mismatch to every rank
 * at once (it would otherwise fail the handshake like a stranger, and the others wait for it).
 */
static void job_key(const struct tutti_launch *l, char *out, size_t len)
{
    const char *keys[] = {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID",
                          "TORCHELASTIC_RUN_ID"};
    const char *k = NULL;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && k == NULL; i++) {
        k = tutti__env_foreign(keys[i]);
    }
    const char *step = tutti__env_foreign("SLURM_STEP_ID");
    snprintf(out, len, "%s-%s-%s-%s", l->source, k != NULL ? k : "nojob", step ? step : "",
             l->root);
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a plain file";
}

/* Read the whole of a secret file that passed its checks (at most len - 1 bytes). */
static tutti_status_t read_all(int fd, const char *path, char *buf, size_t len)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "TUTTI_SECRET_FILE %s: read: %s",
                                    path, strerror(errno));
        }
        if (r == 0 || (n += (size_t)r) == len - 1) {
            break;
        }
    }
    buf[n] = '\0';
    return TUTTI_OK;
}

tutti_status_t tutti__secret_file_read(const char *path, uint8_t *secret, size_t n)
{
    /* O_NONBLOCK: a FIFO without a writer must not block the open (it is refused below). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "TUTTI_SECRET_FILE %s: %s", path,
                                strerror(errno));
    }
    char buf[TUTTI_SECRET_FILE_MAX + 1];
    struct stat sb;
    tutti_status_t st = TUTTI_OK;
    if (fstat(fd, &sb) != 0) {
        st = tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "TUTTI_SECRET_FILE %s: fstat: %s", path,
                              strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                              "TUTTI_SECRET_FILE %s is not a regular file (%s): it must be a file "
                              "holding the job secret, 32 hex digits",
                              path, file_kind(sb.st_mode));
    } else if (sb.st_size == 0) {
        st = tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                              "TUTTI_SECRET_FILE %s is empty: it must hold the job secret, 32 hex "
                              "digits (openssl rand -hex 16 > FILE)",
                              path);
    } else if (sb.st_size > TUTTI_SECRET_FILE_MAX) {
        st = tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                              "TUTTI_SECRET_FILE %s has %lld bytes: a secret file holds 32 hex "
                              "digits (at most %d bytes with white space)",
                              path, (long long)sb.st_size, TUTTI_SECRET_FILE_MAX);
    } else {
        st = read_all(fd, path, buf, sizeof(buf));
    }
    close(fd);
    TUTTI_CHECK(st);
    if ((sb.st_mode & 077) != 0) {
        tutti_warn("TUTTI_SECRET_FILE %s is readable by other users (chmod 600 it)", path);
    }
    const char *hex = buf;
    while (isspace((unsigned char)*hex)) {
        hex++;
    }
    int bad = tutti__hex_decode(hex, secret, n);
    explicit_bzero(buf, sizeof(buf));
    if (bad) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_SECRET_FILE %s must hold exactly %zu hex digits (%zu bits) "
                                "and white space, nothing else",
                                path, 2 * n, 8 * n);
    }
    return TUTTI_OK;
}

/* The job secret: TUTTI_SECRET, else TUTTI_SECRET_FILE (whose every problem is an error: a
 * secret file that cannot be read never means "no secret"), else none. */
static tutti_status_t read_secret(struct tutti_launch *l)
{
    const struct tutti_env *env = tutti__env();
    if (env->SECRET[0] != '\0') {
        if (tutti__hex_decode(env->SECRET, l->boot.secret, TUTTI_SECRET_BYTES) != 0) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                    "TUTTI_SECRET must hold exactly 32 hex digits (128 bits)");
        }
    } else if (env->SECRET_FILE[0] != '\0') {
        TUTTI_CHECK(tutti__secret_file_read(env->SECRET_FILE, l->boot.secret, TUTTI_SECRET_BYTES));
    } else {
        return TUTTI_OK;
    }
    l->have_secret = 1;
    return TUTTI_OK;
}

/* Keys everyone can compute when no secret was given: this keeps jobs apart, it is no secret. */
static void public_secret(struct tutti_launch *l, const char *key)
{
    static const uint8_t zero[TUTTI_SECRET_BYTES]; /* constant key: nothing is secret here */
    uint8_t mac[32];
    const void *parts[2] = {"tutti-public", key};
    const size_t lens[2] = {12, strlen(key)};
    tutti__hmac(zero, parts, lens, 2, mac);
    memcpy(l->boot.secret, mac, TUTTI_SECRET_BYTES);
    if (l->rank == 0) {
        tutti_warn("no TUTTI_SECRET or TUTTI_SECRET_FILE: connections are authenticated with a "
                   "key derived from public job identifiers, so anyone who can reach %s can "
                   "join this job; set TUTTI_SECRET (32 hex digits) on every rank",
                   l->root);
    }
}

/* The job id (the comm id on the wire) must match on every rank: derived from secret and key. */
static void derive_job_id(struct tutti_launch *l, const char *key)
{
    uint8_t mac[32];
    const void *parts[2] = {"tutti-job", key};
    const size_t lens[2] = {9, strlen(key)};
    tutti__hmac(l->boot.secret, parts, lens, 2, mac);
    memcpy(&l->boot.job_id, mac, sizeof(l->boot.job_id));
}

/* The reason a reader gave up on the rendezvous file, naming a stale file and its removal. */
static tutti_status_t rendezvous_timeout(const char *path, const struct tutti_rdv_owner *o)
{
    if (!o->stale) {
        return tutti__set_error(NULL, TUTTI_ERR_TIMEOUT,
                                "rank 0 did not publish its root in %s within TUTTI_TIMEOUT (set "
                                "TUTTI_ROOT to host:port of rank 0 to skip this rendezvous)",
                                path);
    }
    char who[48] = "a process of another version";
    if (o->pid != 0) {
        snprintf(who, sizeof(who), "pid %u", o->pid);
    }
    return tutti__set_error(NULL, TUTTI_ERR_TIMEOUT,
                            "rank 0 did not publish its root in %s within TUTTI_TIMEOUT; the file "
                            "there is stale: %s wrote it, which has ended (a killed rank 0?). It "
                            "is replaced when rank 0 starts; remove it with: rm -f %s",
                            path, who, path);
}

/* Rank 0 of a one-host job without a root address: a fresh secret, and the root on loopback. */
static tutti_status_t loopback_root(struct tutti_launch *l, const char *key)
{
    union tutti_sockaddr lo;
    TUTTI_CHECK(tutti__sockaddr_parse("127.0.0.1", 0, 0, &lo));
    tutti__random_bytes(l->boot.secret, TUTTI_SECRET_BYTES);
    derive_job_id(l, key);
    return tutti__boot_root_start(&lo, l->boot.secret, l->boot.job_id, &l->boot.root,
                                  &l->root_watch);
}

/* What rank 0 hands out through PMIx: whether it could, a fresh secret, and on one host without
 * a root address the root it serves on loopback (else no address). */
struct pmix_boot {
    int32_t status;
    uint32_t has_root;
    struct tutti_boot_id boot;
};

/*
 * Under a PMIx launcher, without a secret given (TUTTI_PMIX=1): rank 0 draws the secret (and on
 * one host without a root address serves the root on loopback, as file_rendezvous does) and
 * hands both out through the launcher (pmix.c). Not under PMIx: nothing happens.
 */
static tutti_status_t pmix_boot(struct tutti_launch *l, const char *key)
{
    struct tutti_pmix *p = NULL;
    char why[256];
    if (tutti__env()->PMIX == 0 || !tutti__pmix_open(l->rank, l->nranks, &p, why, sizeof(why))) {
        if (tutti__env()->PMIX != 0 && tutti__env_foreign("PMIX_NAMESPACE") != NULL) {
            tutti_info(TUTTI_SUBSYS_BOOT, "PMIx not used: %s", why);
        }
        return TUTTI_OK;
    }
    struct pmix_boot b;
    memset(&b, 0, sizeof(b));
    int serve = l->root[0] == '\0' && l->single_host;
    if (l->rank == 0) {
        if (serve) {
            b.status = loopback_root(l, key);
            b.has_root = b.status == TUTTI_OK;
        } else {
            tutti__random_bytes(l->boot.secret, TUTTI_SECRET_BYTES);
        }
        b.boot = l->boot;
    }
    char k[64];
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the job key: one value per launch key */
    for (const char *c = key; *c != '\0'; c++) {
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    }
    snprintf(k, sizeof(k), "tutti.boot.%016llx", (unsigned long long)h);
    tutti_status_t st = tutti__pmix_bcast(p, k, &b, sizeof(b), tutti__env()->TIMEOUT);
    if (st == TUTTI_OK && b.status != TUTTI_OK) {
        st = tutti__set_error(NULL, TUTTI_ERR_REMOTE, "rank 0 could not serve the root: %s",
                              tutti_status_string((tutti_status_t)b.status));
    }
    if (st == TUTTI_OK) {
        memcpy(l->boot.secret, b.boot.secret, TUTTI_SECRET_BYTES);
        if (b.has_root) {
            l->boot.root = b.boot.root;
            l->root_by_pmix = 1;
        }
        l->have_secret = 1;
        tutti_info(TUTTI_SUBSYS_BOOT, "the job's secret came from PMIx (job %s)%s",
                   tutti__pmix_namespace(p), b.has_root ? ", with rank 0's root address" : "");
    }
    explicit_bzero(&b, sizeof(b));
    tutti__pmix_close(p);
    return st;
}

/* Single host, no root given: rank 0 publishes root and a fresh secret in a private file. */
static tutti_status_t file_rendezvous(struct tutti_launch *l, const char *key, int64_t deadline)
{
    char path[300];
    tutti__rendezvous_path(key, path, sizeof(path));
    if (l->rank == 0) {
        TUTTI_CHECK(loopback_root(l, key));
        TUTTI_CHECK(tutti__rendezvous_publish(path, &l->boot, l->nranks));
        l->have_secret = 1;
        snprintf(l->rendezvous, sizeof(l->rendezvous), "%s", path);
        return TUTTI_OK;
    }
    int64_t t0 = tutti__now_ns();
    for (int said_stale = 0, warned = 0;;) {
        struct tutti_rdv_owner owner;
        tutti_status_t st = tutti__rendezvous_read(path, &l->boot, &owner);
        if (st == TUTTI_OK) {
            l->have_secret = 1;
            derive_job_id(l, key);
            return TUTTI_OK;
        }
        TUTTI_CHECK(st == TUTTI_IN_PROGRESS ? TUTTI_OK : st);
        if (owner.stale && !said_stale) {
            said_stale = 1;
            tutti_info(TUTTI_SUBSYS_BOOT,
                       "the rendezvous file %s is stale (pid %u wrote it, which has ended): "
                       "waiting for rank 0 to replace it",
                       path, owner.pid);
        }
        int64_t now = tutti__now_ns();
        if (now > deadline) {
            return rendezvous_timeout(path, &owner);
        }
        if (!warned && now - t0 >= TUTTI_BOOT_QUIET_WARN_NS) {
            warned = 1;
            tutti_warn("rank %d: rank 0 has not published its root in %s after %.0f s%s: is it "
                       "running, as part of this launch? waiting until TUTTI_TIMEOUT",
                       l->rank, path, (double)(now - t0) / 1e9,
                       owner.stale ? " (a stale file of a rank 0 that has ended is there)" : "");
        }
        usleep(2000);
    }
}

static tutti_status_t launch_detect(struct tutti_launch *l, char *key, size_t keylen)
{
    memset(l, 0, sizeof(*l));
    TUTTI_CHECK(detect_rank(l));
    TUTTI_CHECK(detect_root(l));
    TUTTI_CHECK(read_secret(l));
    job_key(l, key, keylen);
    int64_t deadline = tutti__now_ns() + tutti__env()->TIMEOUT;
    if (!l->have_secret) {
        TUTTI_CHECK(pmix_boot(l, key));
    }
    if (l->root[0] == '\0') {
        if (!l->single_host) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                    "tutti_comm_init_env (%s): no root address: set TUTTI_ROOT "
                                    "to host:port of rank 0 (or MASTER_ADDR and MASTER_PORT)",
                                    l->source);
        }
        if (l->root_by_pmix) {
            derive_job_id(l, key);
            return TUTTI_OK;
        }
        return file_rendezvous(l, key, deadline);
    }
    TUTTI_CHECK(tutti__sockaddr_parse(l->root, -1, tutti__sock_family_pref(), &l->boot.root));
    if (!l->have_secret) {
        public_secret(l, key);
    }
    derive_job_id(l, key);
    TUTTI_CHECK(tutti__root_port_check(l));
    union tutti_sockaddr at, bound;
    TUTTI_CHECK(tutti__root_addrs(l, &at));
    if (l->rank == 0) {
        tutti_status_t st =
            tutti__boot_root_start(&at, l->boot.secret, l->boot.job_id, &bound, &l->root_watch);
        if (st != TUTTI_OK) {
            return tutti__set_error(NULL, st, "rank 0 cannot serve the root at %s: %s", l->root,
                                    tutti_last_error(NULL));
        }
        /* Port 0 picks a free port: fine for rank 0 itself (a one-rank job), no one else. */
        if (l->boot.root.sa.sa_family == AF_INET6) {
            l->boot.root.in6.sin6_port = bound.in6.sin6_port;
        } else {
            l->boot.root.in.sin_port = bound.in.sin_port;
        }
    } else if ((l->boot.root.sa.sa_family == AF_INET6 ? l->boot.root.in6.sin6_port
                                                      : l->boot.root.in.sin_port) == 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "root %s has port 0: name the port rank 0 listens on", l->root);
    }
    return TUTTI_OK;
}

tutti_status_t tutti_comm_init_env(tutti_comm_t **comm_p)
{
    if (comm_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "comm_p is NULL");
    }
    TUTTI_CHECK(tutti__env_check());
    struct tutti_launch l;
    char key[640]; /* job_key(): identifiers and the root address */
    tutti_status_t st = launch_detect(&l, key, sizeof(key));
    if (st == TUTTI_OK) {
        tutti__tls.rank = l.rank;
        tutti_info(TUTTI_SUBSYS_INIT, "launcher %s: rank %d of %d, root %s", l.source, l.rank,
                   l.nranks,
                   l.root[0]        ? l.root
                   : l.root_by_pmix ? "(rank 0's on loopback, through PMIx)"
                                    : "(local rendezvous)");
        struct tutti_boot *boot = NULL;
        /* A root read from the rendezvous file listened before it was published. */
        int flags = l.root[0] == '\0' ? TUTTI_BOOT_ROOT_UP : 0;
        st =
            tutti__boot_client_open(&l.boot, l.rank, l.nranks, tutti__env()->TIMEOUT, flags, &boot);
        if (st == TUTTI_OK) {
            /* A loopback root on a multi-host job (a host name resolving to 127.0.1.1): let the
             * TCP transport pick a routable interface instead of following the root's address. */
            int lo = tutti__sock_is_loopback(&l.boot.root);
            st = tutti__comm_create(l.nranks, l.rank, l.boot.job_id, l.boot.secret,
                                    (lo && !l.single_host) ? NULL : &l.boot.root, NULL, boot,
                                    comm_p);
            boot->ops->close(boot, st == TUTTI_OK || boot->failed_together);
        }
    }
    /* A failed set-up: the root (a thread of this process) stays to tell the ranks that have not
     * joined yet; returning at once might end the process under it, and them with a timeout. */
    tutti__boot_root_watch_end(l.root_watch,
                               st == TUTTI_OK ? 0 : tutti__now_ns() + tutti__env()->TIMEOUT);
    if (l.rendezvous[0] != '\0') {
        unlink(l.rendezvous); /* every rank has joined (or been told that the set-up failed) */
    }
    return st;
}
