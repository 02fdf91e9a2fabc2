/*
 * view.c - a rank's view of its machine (struct tutti_topo_rank: its GPU, NUMA node, switch,
 * nearest NIC, NVLink peers), the check of a view received from another rank, and the global
 * view: every rank's view (64 bytes) comes with its peer record at communicator init, as it
 * stands before the local ranks are known; where some rank has a GPU (which the local rank
 * picks) the views are all-gathered once more over the bootstrap. Every rank derives the same
 * layout (hosts, locality ring: layout.h) from them.
 */
#include "topology/view.h"
#include "base/check.h"
#include "base/log.h"
#include "topology/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct tutti_topo_rank) == 64, "the view's wire size (no padding)");

void tutti__topo_rank_view(const struct tutti_topo *t, int local_rank, struct tutti_topo_rank *v)
{
    memset(v, 0, sizeof(*v));
    v->magic = TUTTI_TOPO_RANK_MAGIC;
    v->flags =
        (uint8_t)((t->ok ? TUTTI_TOPO_F_DETECTED : 0) | (t->from_file ? TUTTI_TOPO_F_FILE : 0));
    v->ngpus = (uint8_t)t->ngpus;
    v->nnics = (uint8_t)t->nnics;
    v->gpu = v->pci_switch = v->host_bridge = v->nic = -1;
    v->package = (int8_t)t->cpu_package;
    v->numa = (int8_t)t->cpu_numa;
    v->nic_link = TUTTI_LINK_COUNT;
    int cpus = t->allowed_pus < 1 ? 1 : t->allowed_pus;
    v->cpus = (uint16_t)(cpus > 0xffff ? 0xffff : cpus);
    v->cpu_first = (uint16_t)(t->first_pu >= 0 && t->first_pu <= 0xffff ? t->first_pu : 0);
    v->machine = t->machine;
    if (t->ngpus > 0) {
        int g = local_rank % t->ngpus;
        const struct tutti_topo_dev *d = &t->gpu[g];
        v->gpu = (int8_t)g;
        v->package = (int8_t)d->package;
        v->numa = (int8_t)d->numa;
        v->pci_switch = (int8_t)d->pci_switch;
        v->host_bridge = (int8_t)d->host_bridge;
        v->nvlink = d->nvlink;
        v->nic = (int8_t)d->nic;
        v->nic_link = (uint8_t)d->nic_link;
        memcpy(v->gpu_busid, d->busid, sizeof(v->gpu_busid));
    } else if (t->nnics > 0) {
        /* No GPU: the NIC on our NUMA node (or package), else the first one. */
        v->nic = 0;
        v->nic_link = TUTTI_LINK_HOST;
        for (int n = t->nnics - 1; n >= 0; n--) {
            if (v->numa >= 0 && t->nic[n].numa == v->numa) {
                v->nic = (int8_t)n;
                v->nic_link = TUTTI_LINK_NUMA;
            } else if (v->nic_link != TUTTI_LINK_NUMA && v->package >= 0 &&
                       t->nic[n].package == v->package) {
                v->nic = (int8_t)n;
                v->nic_link = TUTTI_LINK_PACKAGE;
            }
        }
    }
    if (v->nic >= 0) {
        memcpy(v->nic_name, t->nic[v->nic].name, sizeof(v->nic_name));
        v->flags |= t->nic[v->nic].rdma ? TUTTI_TOPO_F_RDMA : 0;
    }
}

tutti_status_t tutti__topo_rank_validate(const struct tutti_topo_rank *v, char *why, size_t len)
{
    const char *bad = NULL;
    if (v->magic != TUTTI_TOPO_RANK_MAGIC) {
        bad = "bad magic";
    } else if (v->ngpus > TUTTI_TOPO_MAX_GPUS || v->nnics > TUTTI_TOPO_MAX_NICS) {
        bad = "device counts out of range";
    } else if (v->gpu < -1 || v->gpu >= (int)v->ngpus || v->nic < -1 || v->nic >= (int)v->nnics) {
        bad = "GPU or NIC index out of range";
    } else if (v->nic_link > TUTTI_LINK_COUNT || v->package < -1 || v->numa < -1 ||
               v->pci_switch < -1 || v->host_bridge < -1) {
        bad = "locality out of range";
    } else if (memchr(v->nic_name, 0, sizeof(v->nic_name)) == NULL ||
               memchr(v->gpu_busid, 0, sizeof(v->gpu_busid)) == NULL) {
        bad = "unterminated name";
    } else if (v->cpus == 0) {
        bad = "no CPU";
    } else if (v->ngpus < 32 && (v->nvlink >> v->ngpus) != 0) {
        bad = "NVLink to a GPU the machine does not have";
    }
    if (bad != NULL) {
        snprintf(why, len, "%s", bad);
        return TUTTI_ERR_INVALID_ARG;
    }
    return TUTTI_OK;
}

/* Order ranks by machine, then CPU set (qsort: the records carry everything). */
static int by_cpus(const void *a, const void *b)
{
    const struct tutti_topo_rank *x = *(const struct tutti_topo_rank *const *)a;
    const struct tutti_topo_rank *y = *(const struct tutti_topo_rank *const *)b;
    if (x->machine != y->machine) {
        return x->machine < y->machine ? -1 : 1;
    }
    if (x->cpu_first != y->cpu_first) {
        return x->cpu_first < y->cpu_first ? -1 : 1;
    }
    return (x->cpus > y->cpus) - (x->cpus < y->cpus);
}

void tutti__topo_cpu_load(const struct tutti_topo_rank *v, int n, int me, double *mine_p,
                          double *max_p)
{
    const struct tutti_topo_rank **s = malloc((size_t)(n > 0 ? n : 1) * sizeof(*s));
    double mine = 0, max = 0;
    if (s == NULL || n < 1) { /* no memory: as if every rank had CPUs of its own */
        free(s);
        *mine_p = mine;
        *max_p = max;
        return;
    }
    for (int r = 0; r < n; r++) {
        s[r] = &v[r];
    }
    qsort(s, (size_t)n, sizeof(*s), by_cpus);
    for (int i = 0; i < n;) {
        int ranks = 0, is_me = 0;
        double cpus = 0;
        int j = i;
        for (; j < n && s[j]->machine == s[i]->machine; j++) {
            ranks++;
            is_me |= s[j] == &v[me];
            if (j == i || by_cpus(&s[j - 1], &s[j]) != 0) {
                cpus += s[j]->cpus; /* a set not seen yet on this machine */
            }
        }
        double load = ranks / (cpus > 0 ? cpus : 1);
        mine = is_me ? load : mine;
        max = load > max ? load : max;
        i = j;
    }
    free(s);
    *mine_p = mine;
    *max_p = max;
}

static const uint8_t *host_id(const struct tutti_topo_hostids *ids, int r)
{
    return ids->ids + (size_t)r * ids->stride;
}

static int same_host(const struct tutti_topo_hostids *ids, int a, int b)
{
    return memcmp(host_id(ids, a), host_id(ids, b), ids->len) == 0;
}

static int local_rank(const struct tutti_topo_group *g)
{
    int lr = 0;
    for (int r = 0; r < g->rank; r++) {
        lr += same_host(&g->hosts, r, g->rank);
    }
    return lr;
}

/* Order ranks by host id, then rank (qsort_r: no shared state). */
static int by_host(const void *a, const void *b, void *arg)
{
    const struct tutti_topo_hostids *ids = arg;
    int ra = *(const int *)a, rb = *(const int *)b;
    int c = memcmp(host_id(ids, ra), host_id(ids, rb), ids->len);
    return c != 0 ? c : (ra > rb) - (ra < rb);
}

/* host[r]: the lowest rank on r's host, so that equal values mean one machine. O(n log n). */
int *tutti__topo_hosts(int n, const struct tutti_topo_hostids *ids)
{
    int *host = malloc((size_t)n * sizeof(*host));
    int *idx = malloc((size_t)n * sizeof(*idx));
    if (host == NULL || idx == NULL) {
        free(host);
        free(idx);
        return NULL;
    }
    for (int r = 0; r < n; r++) {
        idx[r] = r;
    }
    qsort_r(idx, (size_t)n, sizeof(*idx), by_host, (void *)ids);
    for (int i = 0, first = idx[0]; i < n; i++) {
        if (i > 0 && !same_host(ids, idx[i - 1], idx[i])) {
            first = idx[i]; /* sorted by rank within a host: the first is the lowest */
        }
        host[idx[i]] = first;
    }
    free(idx);
    return host;
}

static void log_ring(const struct tutti_topo_group *g, const struct tutti_layout *l)
{
    if (!tutti__log_on(TUTTI_LOG_INFO, TUTTI_SUBSYS_TOPO) || g->rank != 0) {
        return;
    }
    char line[256];
    size_t o = 0;
    for (int i = 0; i < g->nranks && o < sizeof(line) - 16; i++) {
        o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%d", i ? " " : "", l->ring[i]);
    }
    tutti_info(TUTTI_SUBSYS_TOPO, "%d hosts (%s ranks each); ring: %s%s", l->nhosts,
               l->ppn > 0 ? "same" : "not the same", line, o >= sizeof(line) - 16 ? " ..." : "");
}

/* The layout from the all-gathered view: hosts and the locality ring. */
static tutti_status_t make_layout(const struct tutti_topo_group *g,
                                  const struct tutti_topo_rank *all, struct tutti_layout **l_p)
{
    int *host = tutti__topo_hosts(g->nranks, &g->hosts);
    int *order = malloc((size_t)g->nranks * sizeof(*order));
    struct tutti_layout *l = NULL;
    if (host != NULL && order != NULL) {
        tutti__topo_ring(all, host, g->nranks, order);
        l = tutti__layout_new(g->nranks, host, order);
    }
    free(order);
    free(host);
    if (l == NULL) {
        return tutti__set_error(g->err, TUTTI_ERR_NO_MEMORY, "no memory for the layout of %d ranks",
                                g->nranks);
    }
    *l_p = l;
    return TUTTI_OK;
}

/* The views as they came with the records, where no rank has a GPU (nothing depends on the local
 * rank then); whether they serve. */
static int early_views(const struct tutti_topo_group *g, struct tutti_topo_rank *all)
{
    if (g->early == NULL) {
        return 0;
    }
    for (int r = 0; r < g->nranks; r++) {
        memcpy(&all[r], (const uint8_t *)g->early + (size_t)r * g->early_stride, sizeof(*all));
        if (all[r].ngpus > 0) {
            return 0;
        }
    }
    return 1;
}

tutti_status_t tutti__topo_gather(const struct tutti_topo_group *g, struct tutti_topo_rank **topo_p,
                                  struct tutti_layout **layout_p)
{
    if (g->nranks <= 0) {
        return tutti__set_error(g->err, TUTTI_ERR_INVALID_ARG, "topology of %d ranks", g->nranks);
    }
    struct tutti_topo_rank *all = calloc((size_t)g->nranks, sizeof(*all));
    if (all == NULL) {
        return tutti__set_error(g->err, TUTTI_ERR_NO_MEMORY,
                                "no memory for the topology of %d ranks", g->nranks);
    }
    struct tutti_layout *layout = NULL;
    tutti_status_t st = TUTTI_OK;
    if (!early_views(g, all)) {
        struct tutti_topo_rank me;
        tutti__topo_rank_view(tutti__topo(), local_rank(g), &me);
        st = g->allgather(g->allgather_arg, &me, all, sizeof(me));
    }
    if (st != TUTTI_OK) {
        goto err_free_all;
    }
    for (int r = 0; r < g->nranks; r++) {
        char why[64];
        if (tutti__topo_rank_validate(&all[r], why, sizeof(why)) != TUTTI_OK) {
            st = tutti__set_error(g->err, TUTTI_ERR_REMOTE,
                                  "rank %d sent a bad topology record: %s", r, why);
            goto err_free_all;
        }
    }
    TUTTI_CHECK_GOTO(make_layout(g, all, &layout), st, err_free_all);
    log_ring(g, layout);
    *topo_p = all;
    *layout_p = layout;
    return TUTTI_OK;
err_free_all:
    free(all);
    return st;
}

tutti_status_t tutti__topo_check(struct tutti_errbuf *err, const char *share)
{
    const struct tutti_topo *t = tutti__topo_host(share);
    if (t->from_file && !t->ok) {
        return tutti__set_error(err, TUTTI_ERR_INVALID_ARG, "TUTTI_TOPO_FILE: %s", t->error);
    }
    return TUTTI_OK;
}
