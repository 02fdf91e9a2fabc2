/*
 * connect.c - owns the fabric's net (fabric.h): which transports a communicator uses, which one
 * reaches each peer, and the table of connections, filled on first use by the engine.
 */
#include "exec/connect.h"
#include "exec/registry.h"
#include "base/check.h"
#include "exec/fabric.h"
#include "base/env.h"
#include "exec/peer.h"
#include "topology/layout.h"
#include "topology/topo.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill_args(struct tutti_fabric *fab, const union tutti_sockaddr *root_hint,
                      struct tutti_tctx_args *a)
{
    memset(a, 0, sizeof(*a));
    a->err = &fab->err;
    a->rank = fab->rank;
    a->nranks = fab->nranks;
    a->comm_id = fab->comm_id;
    a->secret = fab->secret;
    a->env = tutti__env();
    a->nchannels = fab->cfg.nchannels;
    a->timeout_ns = fab->cfg.timeout_ns;
    a->root_hint = (root_hint != NULL && fab->root_hint.sa.sa_family != 0) ? &fab->root_hint : NULL;
    a->force_ib = fab->cfg.force_ib;
}

/* TUTTI_TRANSPORT=<name>: the transport every pair must use, or TUTTI_TRANSPORT_COUNT. */
static tutti_transport_id_t forced(const struct tutti_fabric *fab)
{
    return fab->cfg.force_tcp  ? TUTTI_TRANSPORT_TCP
           : fab->cfg.force_ib ? TUTTI_TRANSPORT_IB
                               : TUTTI_TRANSPORT_COUNT;
}

/* The transports' view of the ranks (targs.peers), from the all-gathered records: O(n), names
 * left to the messages that need them (tutti__tpeer_name). */
static tutti_status_t fill_tpeers(struct tutti_fabric *fab)
{
    struct tutti_tpeer *t = (struct tutti_tpeer *)fab->net.targs.peers;
    const struct tutti_layout *l = fab->layout;
    int *lowest = l != NULL ? malloc((size_t)l->nhosts * sizeof(*lowest)) : NULL;
    if (l != NULL && lowest == NULL) {
        return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_NO_MEMORY,
                                "no memory for the peers' hosts");
    }
    for (int h = 0; l != NULL && h < l->nhosts; h++) {
        lowest[h] = -1;
    }
    for (int r = 0; r < fab->nranks; r++) {
        const struct tutti_peer_info *p = &fab->peers[r];
        if (l != NULL) { /* ranks in order: the first seen of a host is its lowest */
            int *first = &lowest[l->host[r]];
            *first = *first < 0 ? r : *first;
            t[r].host = *first;
        } else {
            t[r].host = r;
            for (int q = 0; q < r; q++) {
                if (memcmp(fab->peers[q].hostid, p->hostid, TUTTI_HOSTID_BYTES) == 0) {
                    t[r].host = q;
                    break;
                }
            }
        }
        t[r].pid = p->pid;
        t[r].hostname = p->hostname; /* validated: terminated (peer.c) */
        memcpy(t[r].blob, p->blob, sizeof(t[r].blob));
    }
    free(lowest);
    return TUTTI_OK;
}

static void drop_transport(struct tutti_fabric *fab, tutti_transport_id_t id)
{
    if (fab->net.tctx[id] != NULL) {
        fab->net.ops[id]->fini(fab->net.tctx[id]);
        fab->net.tctx[id] = NULL;
    }
    fab->net.ops[id] = NULL;
}

tutti_status_t tutti__fabric_init(struct tutti_fabric *fab, const union tutti_sockaddr *root_hint,
                                  struct tutti_peer_info *me)
{
    struct tutti_tctx_args *a = &fab->net.targs;
    fill_args(fab, root_hint, a);
    fab->net.conns = calloc((size_t)fab->nranks * TUTTI_MAX_CHANNELS, sizeof(*fab->net.conns));
    fab->net.peer_transport = calloc((size_t)fab->nranks, 1);
    a->peers = calloc((size_t)fab->nranks, sizeof(*a->peers)); /* filled at attach */
    if (fab->net.conns == NULL || fab->net.peer_transport == NULL || a->peers == NULL) {
        return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_NO_MEMORY,
                                "no memory for the connection table");
    }
    tutti_transport_id_t only = forced(fab);
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        const struct tutti_transport_ops *ops = tutti__transport_get((tutti_transport_id_t)id);
        /* A forced transport goes alone, but for TCP: it carries the others' side connections. */
        int off = only != TUTTI_TRANSPORT_COUNT && id != (int)only && id != TUTTI_TRANSPORT_TCP;
        if (ops == NULL || off) {
            continue;
        }
        tutti_status_t st = ops->init(a, &fab->net.tctx[id], me->blob[id]);
        if (st == TUTTI_ERR_UNSUPPORTED && id == TUTTI_TRANSPORT_SHM) {
            tutti_info(TUTTI_SUBSYS_SHM, "shared memory unavailable; peers on this host use TCP");
            continue;
        }
        if (st != TUTTI_OK) {
            return st;
        }
        fab->net.ops[id] = ops;
        if (ops->side != NULL) {
            a->side_tctx = fab->net.tctx[id]; /* the verbs transport's side connections */
            a->side_ops = ops;
        }
    }
    return TUTTI_OK;
}

/* Sync wrapper: agree on a status; a failure elsewhere becomes this rank's error. */
static tutti_status_t agree(struct tutti_fabric *fab, struct tutti_boot *boot, tutti_status_t st,
                            const char *what)
{
    tutti_status_t agreed;
    int culprit = -1;
    TUTTI_CHECK(boot->ops->sync(boot, st, &agreed, &culprit));
    boot->failed_together = agreed < 0;
    if (agreed < 0 && st >= 0) {
        return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                                "rank %d failed while %s: %s", culprit, what,
                                tutti_status_string(agreed));
    }
    return agreed < 0 ? st : TUTTI_OK;
}

/*
 * The transport between ranks r and q, as the registry picks it among the transports every rank
 * kept: they judge a pair from what every rank knows alike (the peer table), so each rank can
 * tell what any pair uses.
 */
static tutti_status_t pair_transport(struct tutti_fabric *fab, int r, int q,
                                     tutti_transport_id_t *id_p)
{
    tutti_status_t st = tutti__transport_pick(fab->net.ops, fab->net.tctx, r, q, id_p);
    if (st != TUTTI_ERR_UNSUPPORTED) {
        return st;
    }
    char a[128], b[128];
    return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_INTERNAL,
                            "no transport connects %s and %s",
                            tutti__peer_str(&fab->peers[r], a, sizeof(a)),
                            tutti__peer_str(&fab->peers[q], b, sizeof(b)));
}

static size_t slot_size_of(tutti_transport_id_t id, const struct tutti_env *env)
{
    return id == TUTTI_TRANSPORT_SHM  ? env->SHM_SLOT_SIZE
           : id == TUTTI_TRANSPORT_IB ? env->IB_SLOT_SIZE
                                      : env->TCP_SLOT_SIZE;
}

/* Memory of one connection of one channel: the receive FIFO's slots (verbs registers a FIFO
 * each way). */
static size_t conn_bytes_of(tutti_transport_id_t id, const struct tutti_env *env)
{
    return id == TUTTI_TRANSPORT_SHM  ? (size_t)env->SHM_NSLOTS * env->SHM_SLOT_SIZE
           : id == TUTTI_TRANSPORT_IB ? 2 * (size_t)env->IB_NSLOTS * env->IB_SLOT_SIZE
                                      : (size_t)env->TCP_NSLOTS * env->TCP_SLOT_SIZE;
}

/* The transport per peer, and the shape every rank derives alike. */
static tutti_status_t choose_transports(struct tutti_fabric *fab, struct tutti_net_shape *shape_p)
{
    const uint8_t *mine = fab->peers[fab->rank].hostid;
    tutti_transport_id_t only = forced(fab);
    fab->nlocal = 0;
    for (int r = 0; r < fab->nranks; r++) {
        fab->nlocal += memcmp(fab->peers[r].hostid, mine, TUTTI_HOSTID_BYTES) == 0;
        tutti_transport_id_t id = TUTTI_TRANSPORT_SHM; /* to itself: never connected */
        if (r != fab->rank) {
            TUTTI_CHECK(pair_transport(fab, fab->rank, r, &id));
        }
        /* Only verbs can fail here: TCP, the only transport left with TUTTI_TRANSPORT=tcp,
         * takes every pair. */
        if (only != TUTTI_TRANSPORT_COUNT && r != fab->rank && id != only) {
            char who[128];
            return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_UNSUPPORTED,
                                    "TUTTI_TRANSPORT=%s, but %s has no RDMA port of the link layer "
                                    "this rank uses (tutti-info --rdma on both)",
                                    tutti__transport_name(only),
                                    tutti__peer_str(&fab->peers[r], who, sizeof(who)));
        }
        fab->net.peer_transport[r] = (uint8_t)id;
    }
    /* The chunk size must be the same on every rank, so it is derived from the global view:
     * which transports any pair of ranks uses, not only this rank's pairs. */
    unsigned used = 0;
    int bad[2] = {0, 0};
    tutti_status_t st = tutti__transport_used(fab->net.ops, fab->net.tctx, fab->net.targs.peers,
                                              fab->nranks, &used, bad);
    if (st == TUTTI_ERR_UNSUPPORTED) {
        tutti_transport_id_t id;
        return pair_transport(fab, bad[0], bad[1], &id); /* names the pair */
    }
    if (st == TUTTI_ERR_NO_MEMORY) {
        return tutti__set_error(tutti__fabric_err(fab), st,
                                "no memory to judge the transports of %d ranks", fab->nranks);
    }
    TUTTI_CHECK(st);
    const struct tutti_env *env = tutti__env();
    size_t chunk = SIZE_MAX;
    shape_p->conn_bytes = 0;
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        if ((used & (1u << id)) != 0 && slot_size_of((tutti_transport_id_t)id, env) < chunk) {
            chunk = slot_size_of((tutti_transport_id_t)id, env);
        }
        if ((used & (1u << id)) != 0) {
            shape_p->conn_bytes =
                TUTTI_MAX(shape_p->conn_bytes, conn_bytes_of((tutti_transport_id_t)id, env));
        }
    }
    shape_p->chunk_bytes = chunk == SIZE_MAX ? env->SHM_SLOT_SIZE : chunk;
    shape_p->remote = (used & ~(1u << TUTTI_TRANSPORT_SHM)) != 0;
    shape_p->tcp_only = used == (1u << TUTTI_TRANSPORT_TCP);
    return TUTTI_OK;
}

tutti_status_t tutti__fabric_attach(struct tutti_fabric *fab, struct tutti_boot *boot,
                                    struct tutti_net_shape *shape_p, tutti_status_t *pending_p)
{
    *pending_p = TUTTI_OK;
    TUTTI_CHECK(fill_tpeers(fab));
    void *shm = fab->net.tctx[TUTTI_TRANSPORT_SHM];
    const struct tutti_transport_ops *shm_ops = fab->net.ops[TUTTI_TRANSPORT_SHM];
    /* Phase 0: each host's first rank makes what its local peers join in phase 1. */
    tutti_status_t s = shm != NULL ? shm_ops->attach(shm, 0) : TUTTI_ERR_UNSUPPORTED;
    TUTTI_CHECK(
        agree(fab, boot, s == TUTTI_ERR_UNSUPPORTED ? TUTTI_OK : s, "attaching shared memory"));
    s = s == TUTTI_OK ? shm_ops->attach(shm, 1) : s;
    tutti_status_t use_shm;
    int who = -1;
    TUTTI_CHECK(
        boot->ops->sync(boot, s == TUTTI_OK ? TUTTI_OK : TUTTI_ERR_UNSUPPORTED, &use_shm, &who));
    if (use_shm != TUTTI_OK) {
        if (shm != NULL) {
            tutti_info(TUTTI_SUBSYS_SHM, "rank %d cannot use shared memory: TCP for every pair",
                       who);
        }
        drop_transport(fab, TUTTI_TRANSPORT_SHM);
    }
    tutti_status_t st = TUTTI_OK;
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT && st == TUTTI_OK; id++) {
        if (fab->net.ops[id] != NULL) {
            st = fab->net.ops[id]->attach(fab->net.tctx[id], id == TUTTI_TRANSPORT_SHM ? 2 : 0);
        }
    }
    if (st == TUTTI_OK) {
        st = choose_transports(fab, shape_p);
    }
    *pending_p = st; /* agreed by the caller, with its own checks (one sync fewer each) */
    if (st != TUTTI_OK) {
        return TUTTI_OK;
    }
    /* A rank with a GPU uses the RDMA NIC nearest it (topology/view.c), as NCCL does; without
     * one, local ranks spread over the NICs (tutti__ib_pick_port). */
    const struct tutti_topo_rank *v = fab->topo != NULL ? &fab->topo[fab->rank] : NULL;
    if (v != NULL && v->gpu >= 0 && (v->flags & TUTTI_TOPO_F_RDMA) != 0) {
        snprintf(fab->net.targs.nic_hint, sizeof(fab->net.targs.nic_hint), "%s", v->nic_name);
    }
    if (fab->net.ops[TUTTI_TRANSPORT_SHM] != NULL) {
        fab->net.doorbell =
            fab->net.ops[TUTTI_TRANSPORT_SHM]->doorbell(fab->net.tctx[TUTTI_TRANSPORT_SHM]);
        fab->net.board = fab->net.ops[TUTTI_TRANSPORT_SHM]->seq_board(
            fab->net.tctx[TUTTI_TRANSPORT_SHM], fab->rank);
    }
    return TUTTI_OK;
}

const struct tutti_seq_board *tutti__fabric_seq_board(struct tutti_fabric *fab, int rank)
{
    if (fab->net.board == NULL) {
        return NULL;
    }
    return fab->net.ops[TUTTI_TRANSPORT_SHM]->seq_board(fab->net.tctx[TUTTI_TRANSPORT_SHM], rank);
}

tutti_status_t tutti__fabric_conn(struct tutti_fabric *fab, int peer, int channel,
                                  struct tutti_tconn **conn_p)
{
    struct tutti_tconn **slot = &fab->net.conns[(size_t)peer * TUTTI_MAX_CHANNELS + channel];
    if (*slot == NULL) {
        int id = fab->net.peer_transport[peer];
        TUTTI_CHECK(fab->net.ops[id]->connect(fab->net.tctx[id], peer, channel, slot));
    }
    *conn_p = *slot;
    return TUTTI_OK;
}

void tutti__fabric_footprint(const struct tutti_fabric *fab, struct tutti_footprint *fp)
{
    for (size_t i = 0; fab->net.conns != NULL && i < (size_t)fab->nranks * TUTTI_MAX_CHANNELS;
         i++) {
        const struct tutti_tconn *c = fab->net.conns[i];
        if (c != NULL && c->ops->id >= 0 && c->ops->id < TUTTI_TRANSPORT_COUNT) {
            fp->conns[c->ops->id]++;
        }
    }
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        const struct tutti_transport_ops *ops = fab->net.ops[id];
        if (ops != NULL && ops->footprint != NULL) {
            ops->footprint(fab->net.tctx[id], fp);
        }
    }
}

tutti_status_t tutti__fabric_check(struct tutti_fabric *fab)
{
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        if (fab->net.ops[id] != NULL) {
            TUTTI_CHECK(fab->net.ops[id]->check(fab->net.tctx[id]));
        }
    }
    return TUTTI_OK;
}

void tutti__fabric_abort(struct tutti_fabric *fab, const struct tutti_abort_info *info)
{
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        if (fab->net.ops[id] != NULL) {
            (void)fab->net.ops[id]->abort(fab->net.tctx[id], info);
        }
    }
}

void tutti__fabric_fini(struct tutti_fabric *fab)
{
    for (size_t i = 0; fab->net.conns != NULL && i < (size_t)fab->nranks * TUTTI_MAX_CHANNELS;
         i++) {
        struct tutti_tconn *c = fab->net.conns[i];
        if (c != NULL) {
            c->ops->close(c);
        }
    }
    /* Last made, first gone: the verbs transport's side connections belong to TCP's context. */
    for (int id = TUTTI_TRANSPORT_COUNT - 1; id >= 0; id--) {
        drop_transport(fab, (tutti_transport_id_t)id);
    }
    free(fab->net.conns);
    free(fab->net.peer_transport);
    free((void *)fab->net.targs.peers);
    fab->net.conns = NULL;
    fab->net.peer_transport = NULL;
    fab->net.targs.peers = NULL;
}
