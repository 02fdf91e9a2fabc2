/*
 * init.c - tutti_get_unique_id, tutti_comm_init_rank and the phases every new communicator goes
 * through: local set-up, agreement that everyone got that far, all-gather of peer records,
 * attaching transports. Each phase's failure on any rank reaches every rank through the
 * bootstrap's sync, so no rank is left waiting for one that gave up.
 */
#include "comm/init.h"
#include "base/check.h"
#include "exec/registry.h"
#include "coll/coll.h"
#include "comm/comm.h"
#include "exec/connect.h"
#include "base/env.h"
#include "base/fork_gate.h"
#include "base/llc.h"
#include "base/global.h"
#include "exec/peer.h"
#include "comm/premul.h"
#include "comm/register.h"
#include "topology/layout.h"
#include "base/util.h"
#include "win/win.h"
#include "topology/host_share.h"
#include "transports/shm/shm.h"
#include "topology/topo.h"
#include "topology/view.h"

#include "tutti/version.h"

#include <arpa/inet.h>
#include <string.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define UID_MAGIC   0x44495554u /* "TUID" */
#define UID_VERSION 1u

struct uid_wire {
    uint32_t magic;
    uint32_t version;
    uint64_t job_id;
    uint8_t secret[TUTTI_SECRET_BYTES];
    struct tutti_wire_addr root;
};
_Static_assert(sizeof(struct uid_wire) <= sizeof(tutti_unique_id_t), "unique id fits");

void tutti__uid_encode(const struct tutti_uid *u, tutti_unique_id_t *id)
{
    struct uid_wire w;
    memset(id, 0, sizeof(*id));
    memset(&w, 0, sizeof(w));
    w.magic = htonl(UID_MAGIC);
    w.version = htonl(UID_VERSION);
    w.job_id = u->boot.job_id;
    memcpy(w.secret, u->boot.secret, TUTTI_SECRET_BYTES);
    tutti__wire_addr_encode(&u->boot.root, &w.root);
    memcpy(id->internal, &w, sizeof(w));
}

tutti_status_t tutti__uid_decode(const tutti_unique_id_t *id, struct tutti_uid *u)
{
    struct uid_wire w;
    memcpy(&w, id->internal, sizeof(w));
    if (ntohl(w.magic) != UID_MAGIC) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "id is not a tutti unique id (bad magic): was it made by "
                                "tutti_get_unique_id and copied whole?");
    }
    if (ntohl(w.version) != UID_VERSION) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "id has version %u, this library understands %u", ntohl(w.version),
                                UID_VERSION);
    }
    if (tutti__wire_addr_decode(&w.root, &u->boot.root) != TUTTI_OK) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "id holds no valid root address");
    }
    u->boot.job_id = w.job_id;
    memcpy(u->boot.secret, w.secret, TUTTI_SECRET_BYTES);
    return TUTTI_OK;
}

int tutti__uid_remove_leftovers(const tutti_unique_id_t *id)
{
    struct tutti_uid u;
    if (tutti__uid_decode(id, &u) != TUTTI_OK) {
        return 0;
    }
    tutti__topo_share_remove_job(u.boot.job_id);
    return tutti__shm_remove_job(u.boot.job_id);
}

tutti_status_t tutti_get_unique_id(tutti_unique_id_t *id_p)
{
    if (id_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "id_p is NULL");
    }
    TUTTI_CHECK(tutti__env_check());
    struct tutti_uid u;
    union tutti_sockaddr local;
    TUTTI_CHECK(tutti__sock_local_addr(NULL, &local));
    tutti__random_bytes(u.boot.secret, sizeof(u.boot.secret));
    tutti__random_bytes(&u.boot.job_id, sizeof(u.boot.job_id));
    TUTTI_CHECK(tutti__boot_root_start(&local, u.boot.secret, u.boot.job_id, &u.boot.root, NULL));
    tutti__uid_encode(&u, id_p);
    return TUTTI_OK;
}

tutti_status_t tutti__params_check(const tutti_comm_params_t *params)
{
    if (params == NULL) {
        return TUTTI_OK;
    }
    uint64_t known = TUTTI_COMM_PARAM_TIMEOUT | TUTTI_COMM_PARAM_NCHANNELS;
    if ((params->field_mask & ~known) != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "params->field_mask has unknown bits 0x%llx",
                                (unsigned long long)(params->field_mask & ~known));
    }
    if ((params->field_mask & TUTTI_COMM_PARAM_TIMEOUT) && params->timeout_ms <= 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "params->timeout_ms %d is not > 0",
                                params->timeout_ms);
    }
    if ((params->field_mask & TUTTI_COMM_PARAM_NCHANNELS) &&
        (params->nchannels < 1 || params->nchannels > TUTTI_MAX_CHANNELS)) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "params->nchannels %d is not in 1..%d",
                                params->nchannels, TUTTI_MAX_CHANNELS);
    }
    return TUTTI_OK;
}

/* Settings from the environment, then the per-comm overrides. */
static tutti_status_t init_config(struct tutti_comm *comm, const tutti_comm_params_t *params)
{
    const struct tutti_env *env = tutti__env();
    /* Both within their ranges (env.h), checked before any communicator is made. */
    comm->fab.cfg.timeout_ns = env->TIMEOUT;
    comm->fab.cfg.nchannels = (int)env->NCHANNELS;
    if (strcmp(env->TRANSPORT, "tcp") == 0) {
        comm->fab.cfg.force_tcp = 1;
    } else if (strcmp(env->TRANSPORT, "ib") == 0) {
        comm->fab.cfg.force_ib = 1;
    } else if (strcmp(env->TRANSPORT, "auto") != 0 && strcmp(env->TRANSPORT, "shm") != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_TRANSPORT '%s' is not one of auto, shm, tcp, ib",
                                env->TRANSPORT);
    }
    comm->fab.cfg.direct_max = env->DIRECT_MAX;
    comm->fab.cfg.mem_budget = env->MEM_BUDGET;
    if (strcmp(env->TUNER, "model") == 0) {
        comm->fab.cfg.tuner = 1;
    } else if (strcmp(env->TUNER, "static") != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_TUNER '%s' is not one of static, model", env->TUNER);
    }
    /* Results larger than the last-level cache cannot stay cached for their next reader:
     * streaming them saves the read for ownership of every line (docs/PERFORMANCE.md). */
    comm->fab.cfg.nt_min = tutti__env_is_set("STREAM_MIN") ? env->STREAM_MIN : tutti__llc_bytes();
    char err[256];
    if (tutti__algo_parse(env->ALGO, comm->fab.cfg.forced, err, sizeof(err)) != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s", err);
    }
    if (params != NULL && (params->field_mask & TUTTI_COMM_PARAM_TIMEOUT)) {
        comm->fab.cfg.timeout_ns = (int64_t)params->timeout_ms * 1000000;
    }
    if (params != NULL && (params->field_mask & TUTTI_COMM_PARAM_NCHANNELS)) {
        comm->fab.cfg.nchannels = params->nchannels;
    }
    return TUTTI_OK;
}

static struct tutti_comm *comm_alloc(int nranks, int rank)
{
    struct tutti_comm *comm = calloc(1, sizeof(*comm));
    if (comm == NULL) {
        return NULL;
    }
    comm->fab.peers = calloc((size_t)nranks, sizeof(*comm->fab.peers));
    comm->fab.rank = rank;
    comm->fab.nranks = nranks;
    if (comm->fab.peers == NULL || tutti__fp_init(&comm->fab) != 0) {
        free(comm->fab.peers);
        free(comm);
        return NULL;
    }
    pthread_mutex_init(&comm->fab.err.lock, NULL);
    comm->run.fab = &comm->fab;
    pthread_mutex_init(&comm->run.queue.lock, NULL);
    pthread_cond_init(&comm->run.queue.cond, NULL);
    tutti__gpu_init(&comm->gpu, &comm->run);
    atomic_init(&comm->fab.state.status, TUTTI_OK);
    comm->fab.state.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    comm->shrink_fd = -1;
    return comm;
}

/* Free a communicator that never became usable, or whose connections are closed. */
void tutti__comm_free(struct tutti_comm *comm)
{
    tutti__reg_free_all(comm); /* registrations left by the program go before the transports */
    comm->fab.watch = NULL;
    tutti__winset_free(comm->run.win);
    comm->run.win = NULL;
    tutti__fabric_fini(&comm->fab);
    if (comm->fab.state.wakefd >= 0) {
        close(comm->fab.state.wakefd);
    }
    if (comm->shrink_fd >= 0) {
        tutti__fork_gate_fd_del(comm->shrink_fd);
        close(comm->shrink_fd);
    }
    pthread_mutex_destroy(&comm->fab.err.lock);
    pthread_mutex_destroy(&comm->run.queue.lock);
    pthread_cond_destroy(&comm->run.queue.cond);
    tutti__plan_free(&comm->run.plan);
    tutti__plan_free(&comm->run.group_plan);
    tutti__exec_fini(&comm->fab.exec);
    free(comm->fab.topo);
    tutti__layout_free(comm->fab.layout);
    tutti__fp_fini(&comm->fab);
    tutti__premul_free(comm);
    free(comm->fab.peers);
    free(comm);
}

static void fill_me(struct tutti_comm *comm, struct tutti_peer_info *me)
{
    memset(me, 0, sizeof(*me));
    me->magic = TUTTI_PEER_MAGIC;
    me->rank = comm->fab.rank;
    me->nranks = comm->fab.nranks;
    me->pid = (uint32_t)getpid();
    tutti__host_id(me->hostid);
    if (gethostname(me->hostname, sizeof(me->hostname) - 1) != 0) {
        strcpy(me->hostname, "unknown");
    }
    me->hostname[sizeof(me->hostname) - 1] = '\0';
}

_Static_assert(sizeof(struct tutti_wire_addr) == sizeof(((struct tutti_peer_info *)0)->shrink_addr),
               "a shrink address fits the peer record");

/* Open the socket this rank would serve a tutti_comm_shrink bootstrap on (shrink.c), toward
 * root_hint, and publish its address in me->shrink_addr. */
static tutti_status_t shrink_listen(struct tutti_comm *comm, const union tutti_sockaddr *root_hint,
                                    struct tutti_peer_info *me)
{
    union tutti_sockaddr local, bound;
    TUTTI_CHECK(tutti__sock_local_addr(root_hint, &local));
    TUTTI_CHECK(tutti__sock_listen(&local, &comm->shrink_fd, &bound));
    (void)tutti__fork_gate_fd_add(comm->shrink_fd); /* not in a forked child (fork_gate.h) */
    struct tutti_wire_addr w;
    tutti__wire_addr_encode(&bound, &w);
    memcpy(me->shrink_addr, &w, sizeof(w));
    return TUTTI_OK;
}

/* The bootstrap's all-gather, as topology/view.h takes it. */
static tutti_status_t boot_allgather(void *boot, const void *mine, void *all, size_t size)
{
    struct tutti_boot *b = boot;
    return b->ops->allgather(b, mine, all, size);
}

/*
 * Channels when neither TUTTI_NCHANNELS nor the params say: 1 over shared memory alone, 2 where
 * another transport is in use, and TCP_CHANNELS where every pair uses TCP and the one-hop
 * algorithms still fit the connection budget on that many (their n - 1 peers count every
 * channel: up to 5 ranks at the defaults). Beyond that, more channels would turn small calls
 * from one hop into rings. The tuner then takes fewer where a call is small (one channel per
 * half chunk per rank, tutti__algo_static_channels). Loopback, 2 ranks, 40 calls a size
 * (perf/results/2026-12-01-tcp-channels.md): 4 channels took 0.75-0.96 of 2's time for
 * all-reduce, reduce-scatter, all-gather and all-to-all from 256 KiB to 16 MiB and 0.72-0.97
 * for send/recv from 64 KiB; the same time below that and for broadcast and reduce.
 */
#define TCP_CHANNELS 4

static int default_channels(const struct tutti_comm *comm, const struct tutti_net_shape *shape)
{
    if (!shape->remote) {
        return 1;
    }
    double one_hop = (double)(comm->fab.nranks - 1) * TCP_CHANNELS * (double)shape->conn_bytes;
    int fits = comm->fab.cfg.mem_budget == 0 || one_hop <= (double)comm->fab.cfg.mem_budget;
    return shape->tcp_only && fits ? TCP_CHANNELS : 2;
}

/*
 * The connection memory budget. Unset, TUTTI_MEM_BUDGET is its default (32 MiB) or 1 GiB shared
 * by the ranks of the most crowded host, whichever is smaller, and never below a ring's two
 * connections: 512 ranks on one host get rings and trees, 32 get one hop for small messages.
 * Every rank computes it from what all know alike (the layout), so all choose alike. A budget
 * set below the ring's two neighbours, the least any schedule of every collective needs, leaves
 * no algorithm: every rank fails alike; the boot's sync lets the root know the set-up ended.
 * That sync also agrees on st, this rank's result of tutti__fabric_attach's last steps.
 */
#define HOST_CONN_BYTES ((size_t)1 << 30)

static tutti_status_t check_budget(struct tutti_comm *comm, struct tutti_boot *boot,
                                   tutti_status_t st)
{
    int ring_peers = comm->fab.nranks > 2 ? 2 : comm->fab.nranks - 1;
    size_t ring_bytes = (size_t)ring_peers * comm->fab.cfg.conn_bytes;
    comm->fab.cfg.budget_strict = tutti__env_is_set("MEM_BUDGET");
    if (!comm->fab.cfg.budget_strict) {
        int crowd = 1;
        for (int r = 0; r < comm->fab.nranks; r++) {
            crowd = TUTTI_MAX(crowd, comm->fab.layout != NULL ? comm->fab.layout->local[r] + 1
                                                              : comm->fab.nranks);
        }
        size_t share = HOST_CONN_BYTES / (size_t)crowd;
        comm->fab.cfg.mem_budget =
            TUTTI_MAX(TUTTI_MIN(comm->fab.cfg.mem_budget, share), ring_bytes);
    }
    tutti_status_t agreed;
    int who = -1;
    if (st == TUTTI_OK && comm->fab.cfg.mem_budget > 0 && ring_bytes > comm->fab.cfg.mem_budget) {
        st = tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                              "TUTTI_MEM_BUDGET is %zu bytes per rank, below what any algorithm "
                              "needs: a ring connects %d peers, at %zu bytes each (the FIFO "
                              "slots of the transport in use: TUTTI_*_NSLOTS x "
                              "TUTTI_*_SLOT_SIZE); raise it, or 0 for no limit",
                              comm->fab.cfg.mem_budget, ring_peers, comm->fab.cfg.conn_bytes);
    }
    TUTTI_CHECK(boot->ops->sync(boot, st, &agreed, &who));
    boot->failed_together = agreed < 0;
    if (agreed < 0 && st >= 0) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_REMOTE,
                                "rank %d failed while attaching transports or refused "
                                "TUTTI_MEM_BUDGET: %s",
                                who, tutti_status_string(agreed));
    }
    return agreed < 0 ? st : TUTTI_OK;
}
/* When each phase of setup() ended, for the info line that names where init's time went. */
enum init_phase { PH_DETECT, PH_LOCAL, PH_RECORDS, PH_CONNECT, PH_N };

static void log_phases(const struct tutti_comm *comm, const struct tutti_boot *boot, int64_t t0,
                       const int64_t end[PH_N])
{
    double ms[PH_N];
    for (int p = 0; p < PH_N; p++) {
        ms[p] = (double)(end[p] - (p == 0 ? t0 : end[p - 1])) / 1e6;
    }
    tutti_info(TUTTI_SUBSYS_INIT,
               "rank %d of %d init phases (ms): rendezvous %.1f, detection %.1f, local set-up "
               "%.1f, record exchange %.1f, connect %.1f; total %.1f",
               comm->fab.rank, comm->fab.nranks, (double)boot->join_ns / 1e6, ms[PH_DETECT],
               ms[PH_LOCAL], ms[PH_RECORDS], ms[PH_CONNECT],
               (double)(boot->join_ns + end[PH_N - 1] - t0) / 1e6);
}

/* The phases; every rank makes the same bootstrap calls whatever happens locally. */
static tutti_status_t setup(struct tutti_comm *comm, const union tutti_sockaddr *root_hint,
                            struct tutti_boot *boot)
{
    int64_t t0 = tutti__now_ns(), end[PH_N];
    struct tutti_peer_info me;
    fill_me(comm, &me);
    char share[64]; /* one detection per host and job (topology/host_share.h) */
    tutti__topo_share_name(comm->fab.comm_id, me.hostid, sizeof(me.hostid), share, sizeof(share));
    tutti_status_t st = tutti__topo_check(&comm->fab.err, share);
    tutti__topo_rank_view(tutti__topo(), 0, &me.view); /* a GPU waits for the local rank */
    end[PH_DETECT] = tutti__now_ns();
    if (st == TUTTI_OK) {
        st = shrink_listen(comm, root_hint, &me);
    }
    if (st == TUTTI_OK) {
        st = tutti__fabric_init(&comm->fab, root_hint, &me);
    }
    tutti_status_t agreed;
    int culprit = -1;
    tutti_status_t sst = boot->ops->sync(boot, st, &agreed, &culprit);
    tutti__topo_share_end(); /* every rank has detected: the host's file can go */
    TUTTI_CHECK(sst);
    if (st != TUTTI_OK) {
        return st;
    }
    if (agreed != TUTTI_OK) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_REMOTE,
                                "rank %d failed to set up: %s", culprit,
                                tutti_status_string(agreed));
    }
    end[PH_LOCAL] = tutti__now_ns();
    TUTTI_CHECK(boot->ops->allgather(boot, &me, comm->fab.peers, sizeof(me)));
    for (int r = 0; r < comm->fab.nranks; r++) {
        TUTTI_CHECK(tutti__peer_validate(&comm->fab.peers[r], r, comm->fab.nranks));
    }
    struct tutti_topo_group g = {
        .nranks = comm->fab.nranks,
        .rank = comm->fab.rank,
        .hosts = {comm->fab.peers[0].hostid, TUTTI_HOSTID_BYTES, sizeof(comm->fab.peers[0])},
        .early = &comm->fab.peers[0].view,
        .early_stride = sizeof(comm->fab.peers[0]),
        .allgather = boot_allgather,
        .allgather_arg = boot,
        .err = &comm->fab.err,
    };
    TUTTI_CHECK(tutti__topo_gather(&g, &comm->fab.topo, &comm->fab.layout));
    end[PH_RECORDS] = tutti__now_ns();
    /* More ranks on this machine than CPUs they may use: peers need our CPU, so do not spin.
     * From every rank's record, so that ranks bound to a CPU each are not counted crowded and
     * namespace "hosts" of one machine are; the busiest machine's figure is the tuner's, and
     * TCP's (its sockets per connection). */
    double mine = 0;
    tutti__topo_cpu_load(comm->fab.topo, comm->fab.nranks, comm->fab.rank, &mine,
                         &comm->fab.cfg.cpu_load);
    comm->fab.cfg.oversubscribed = mine > 1.0;
    comm->fab.net.targs.cpu_load = comm->fab.cfg.cpu_load;
    struct tutti_net_shape shape = {0};
    tutti_status_t pending;
    TUTTI_CHECK(tutti__fabric_attach(&comm->fab, boot, &shape, &pending));
    comm->fab.cfg.chunk_bytes = shape.chunk_bytes;
    comm->fab.cfg.conn_bytes = shape.conn_bytes;
    TUTTI_CHECK(check_budget(comm, boot, pending)); /* agrees on both */
    end[PH_CONNECT] = tutti__now_ns();
    log_phases(comm, boot, t0, end);
    if (comm->fab.cfg.nchannels == 0) { /* not set by TUTTI_NCHANNELS or the params */
        comm->fab.cfg.nchannels = default_channels(comm, &shape);
    }
    return TUTTI_OK;
}

tutti_status_t tutti__comm_create(int nranks, int rank, uint64_t comm_id,
                                  const uint8_t secret[TUTTI_SECRET_BYTES],
                                  const union tutti_sockaddr *root_hint,
                                  const tutti_comm_params_t *params, struct tutti_boot *boot,
                                  struct tutti_comm **comm_p)
{
    struct tutti_comm *comm = comm_alloc(nranks, rank);
    if (comm == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for a communicator");
    }
    comm->fab.comm_id = comm_id;
    memcpy(comm->fab.secret, secret, TUTTI_SECRET_BYTES);
    if (root_hint != NULL) {
        comm->fab.root_hint = *root_hint;
    }
    tutti__tls.rank = rank;
    tutti_status_t st = init_config(comm, params);
    if (st == TUTTI_OK) {
        st = setup(comm, root_hint, boot);
    }
    if (st == TUTTI_OK) {
        st = tutti__comm_notes_setup(comm, boot);
    }
    if (st == TUTTI_OK) {
        st = tutti__comm_publish(comm); /* live: calls may use it now */
    }
    if (st != TUTTI_OK) {
        tutti__comm_free(comm);
        return st;
    }
    char transports[64] = "";
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        if (comm->fab.net.ops[id] != NULL) {
            size_t used = strlen(transports);
            snprintf(transports + used, sizeof(transports) - used, "%s%s", used ? ", " : "",
                     tutti__transport_name((tutti_transport_id_t)id));
        }
    }
    tutti_info(TUTTI_SUBSYS_INIT,
               "tutti %s: rank %d of %d ready: %d on this host%s, transports attached: %s; %d "
               "channel(s), chunk %zu bytes",
               TUTTI_VERSION_STRING, rank, nranks, comm->fab.nlocal,
               comm->fab.cfg.oversubscribed ? " (oversubscribed)" : "",
               transports[0] ? transports : "none", comm->fab.cfg.nchannels,
               comm->fab.cfg.chunk_bytes);
    *comm_p = comm;
    return TUTTI_OK;
}

tutti_status_t tutti_comm_init_rank_params(tutti_comm_t **comm_p, int nranks,
                                           const tutti_unique_id_t *id, int rank,
                                           const tutti_comm_params_t *params)
{
    if (comm_p == NULL || id == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s is NULL",
                                comm_p == NULL ? "comm_p" : "id");
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "rank %d / nranks %d: need nranks >= 1 and 0 <= rank < nranks",
                                rank, nranks);
    }
    TUTTI_CHECK(tutti__env_check());
    TUTTI_CHECK(tutti__params_check(params));
    struct tutti_uid u;
    TUTTI_CHECK(tutti__uid_decode(id, &u));
    struct tutti_boot *boot = NULL;
    tutti__tls.rank = rank;
    TUTTI_CHECK(tutti__boot_client_open(&u.boot, rank, nranks, tutti__env()->TIMEOUT,
                                        TUTTI_BOOT_ROOT_UP, &boot));
    tutti_status_t st = tutti__comm_create(nranks, rank, u.boot.job_id, u.boot.secret, &u.boot.root,
                                           params, boot, comm_p);
    boot->ops->close(boot, st == TUTTI_OK || boot->failed_together);
    return st;
}

tutti_status_t tutti_comm_init_rank(tutti_comm_t **comm_p, int nranks, const tutti_unique_id_t *id,
                                    int rank)
{
    return tutti_comm_init_rank_params(comm_p, nranks, id, rank, NULL);
}
