/*
 * launch.c - tutti_comm_init_env: rank, size, root address and secret from the launcher's
 * environment (tutti's own variables, torchrun, Open MPI's mpirun, Slurm). Rank 0 hosts the
 * bootstrap root. On one host without a root address, rank 0 publishes a fresh root and secret
 * in a private file (mode 0600) that the other ranks read: no configuration, no shared secret
 * in the environment (rendezvous.c). README "Launching" documents every case.
 */
#include "bootstrap.h"
#include "check.h"
#include "env.h"
#include "global.h"
#include "init.h"
#include "launch.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Integer launcher variable, or -1 when unset or malformed. */
static long foreign_long(const char *name)
{
    const char *v = tutti__env_foreign(name);
    long x;
    return (v != NULL && tutti__parse_long(v, &x) == 0) ? x : -1;
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

/* Rank and size from the first launcher whose variables are set. */
static tutti_status_t detect_rank(struct tutti_launch *l)
{
    const struct tutti_env *env = tutti__env();
    struct {
        const char *name, *rank, *size, *local_size;
    } const srcs[] = {
        {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
        {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {"slurm", "SLURM_PROCID", "SLURM_NTASKS", NULL},
    };
    if (env->RANK >= 0 || env->NRANKS >= 0) {
        l->source = "tutti";
        l->rank = (int)env->RANK;
        l->nranks = (int)env->NRANKS;
    } else {
        for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]) && l->source == NULL; i++) {
            if (tutti__env_foreign(srcs[i].rank) != NULL) {
                l->source = srcs[i].name;
                l->rank = (int)foreign_long(srcs[i].rank);
                l->nranks = (int)foreign_long(srcs[i].size);
                long local = srcs[i].local_size ? foreign_long(srcs[i].local_size) : -1;
                if (strcmp(l->source, "slurm") == 0) {
                    long nodes = foreign_long("SLURM_NNODES");
                    l->single_host = (nodes == 1);
                } else {
                    l->single_host = (local > 0 && local == l->nranks);
                }
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
    if (l->nranks < 1 || l->rank < 0 || l->rank >= l->nranks) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_init_env (%s): rank %d of %d is not valid", l->source,
                                l->rank, l->nranks);
    }
    return TUTTI_OK;
}

/* Root "host:port" from TUTTI_ROOT, torchrun's MASTER_* or Slurm's node list; "" if none. */
static void detect_root(struct tutti_launch *l)
{
    const char *addr = tutti__env_foreign("MASTER_ADDR");
    const char *port = tutti__env_foreign("MASTER_PORT");
    long p;
    if (tutti__env()->ROOT[0] != '\0') {
        snprintf(l->root, sizeof(l->root), "%s", tutti__env()->ROOT);
        l->root_from = "TUTTI_ROOT";
    } else if (addr != NULL && port != NULL && tutti__parse_long(port, &p) == 0) {
        l->root_from = "MASTER_ADDR and MASTER_PORT + 1";
        /* torchrun's own store listens on MASTER_PORT: tutti takes the next port. */
        snprintf(l->root, sizeof(l->root), "%s%s%s:%ld", strchr(addr, ':') ? "[" : "", addr,
                 strchr(addr, ':') ? "]" : "", p + 1);
    } else if (strcmp(l->source, "slurm") == 0 && !l->single_host) {
        const char *nodes = tutti__env_foreign("SLURM_STEP_NODELIST");
        char host[128];
        if (nodes == NULL) {
            nodes = tutti__env_foreign("SLURM_JOB_NODELIST");
        }
        long job = foreign_long("SLURM_JOB_ID"), step = foreign_long("SLURM_STEP_ID");
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

static tutti_status_t read_secret(struct tutti_launch *l)
{
    const struct tutti_env *env = tutti__env();
    char buf[128] = "";
    const char *hex = env->SECRET;
    if (hex[0] == '\0' && env->SECRET_FILE[0] != '\0') {
        FILE *f = fopen(env->SECRET_FILE, "r");
        if (f == NULL) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "TUTTI_SECRET_FILE %s: %s",
                                    env->SECRET_FILE, strerror(errno));
        }
        struct stat sb;
        if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & 077) != 0) {
            tutti_warn("TUTTI_SECRET_FILE %s is readable by other users (chmod 600 it)",
                       env->SECRET_FILE);
        }
        if (fgets(buf, sizeof(buf), f) == NULL) {
            buf[0] = '\0';
        }
        fclose(f);
        hex = buf;
    }
    if (hex[0] == '\0') {
        return TUTTI_OK;
    }
    if (tutti__hex_decode(hex, l->boot.secret, TUTTI_SECRET_BYTES) != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "%s must hold exactly 32 hex digits (128 bits)",
                                env->SECRET[0] != '\0' ? "TUTTI_SECRET" : "TUTTI_SECRET_FILE");
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

/* Single host, no root given: rank 0 publishes root and a fresh secret in a private file. */
static tutti_status_t file_rendezvous(struct tutti_launch *l, const char *key, int64_t deadline)
{
    char path[300];
    tutti__rendezvous_path(key, path, sizeof(path));
    if (l->rank == 0) {
        union tutti_sockaddr lo;
        TUTTI_CHECK(tutti__sockaddr_parse("127.0.0.1", 0, 0, &lo));
        tutti__random_bytes(l->boot.secret, TUTTI_SECRET_BYTES);
        derive_job_id(l, key);
        TUTTI_CHECK(tutti__boot_root_start(&lo, l->boot.secret, l->boot.job_id, &l->boot.root,
                                           &l->root_watch));
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
    detect_root(l);
    TUTTI_CHECK(read_secret(l));
    job_key(l, key, keylen);
    int64_t deadline = tutti__now_ns() + tutti__env()->TIMEOUT;
    if (l->root[0] == '\0') {
        if (!l->single_host) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                    "tutti_comm_init_env (%s): no root address: set TUTTI_ROOT "
                                    "to host:port of rank 0 (or MASTER_ADDR and MASTER_PORT)",
                                    l->source);
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
    struct tutti_launch l;
    char key[640]; /* job_key(): identifiers and the root address */
    tutti_status_t st = launch_detect(&l, key, sizeof(key));
    if (st == TUTTI_OK) {
        tutti__tls.rank = l.rank;
        tutti_info(TUTTI_SUBSYS_INIT, "launcher %s: rank %d of %d, root %s", l.source, l.rank,
                   l.nranks, l.root[0] ? l.root : "(local rendezvous)");
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
            boot->ops->close(boot, st == TUTTI_OK);
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
