/*
 * ring.c - rings that follow locality, as pure functions of the global view (every rank's
 * struct tutti_topo_rank and its host), so that every rank computes the same ring.
 *
 * Hosts are visited in the order of their lowest rank. Within a host the ring is greedy: from
 * the current rank it goes to the closest rank not yet visited (NVLink, then PCIe switch, host
 * bridge, NUMA node, package), ties to the lowest rank. It leaves a host from its last rank and
 * enters the next host through the rank that uses the same GPU index (the same rail: on a
 * DGX-like machine the same NIC position), so inter-host traffic stays rail-aligned. Cost:
 * O(n + sum over hosts of k^2) for k ranks per host.
 */
#include "topology/topo.h"

#include <stdlib.h>

const char *tutti__link_name(tutti_link_t l)
{
    static const char *const names[TUTTI_LINK_COUNT] = {
        "same GPU",  "NVLink",  "PCIe switch", "PCIe host bridge",
        "NUMA node", "package", "host",        "network",
    };
    return (unsigned)l < TUTTI_LINK_COUNT ? names[l] : "unknown";
}

tutti_link_t tutti__topo_place_link(const struct tutti_topo_place *a,
                                    const struct tutti_topo_place *b)
{
    if (a->pci_switch >= 0 && a->pci_switch == b->pci_switch) {
        return TUTTI_LINK_PCI_SWITCH;
    }
    if (a->host_bridge >= 0 && a->host_bridge == b->host_bridge) {
        return TUTTI_LINK_HOST_BRIDGE;
    }
    if (a->numa >= 0 && a->numa == b->numa) {
        return TUTTI_LINK_NUMA;
    }
    if (a->package >= 0 && a->package == b->package) {
        return TUTTI_LINK_PACKAGE;
    }
    return TUTTI_LINK_HOST;
}

/* The link of two ranks of one host, NVLink counted only when `nvlink` is set. */
static tutti_link_t local_link(const struct tutti_topo_rank *x, const struct tutti_topo_rank *y,
                               int nvlink)
{
    int gpus = x->gpu >= 0 && y->gpu >= 0; /* the PCIe places are their GPUs' */
    if (gpus && x->gpu == y->gpu) {
        return TUTTI_LINK_SELF;
    }
    if (gpus && nvlink && ((x->nvlink >> y->gpu) & 1u)) {
        return TUTTI_LINK_NVLINK;
    }
    struct tutti_topo_place px = {x->package, x->numa, gpus ? x->pci_switch : -1,
                                  gpus ? x->host_bridge : -1};
    struct tutti_topo_place py = {y->package, y->numa, gpus ? y->pci_switch : -1,
                                  gpus ? y->host_bridge : -1};
    return tutti__topo_place_link(&px, &py);
}

tutti_link_t tutti__topo_rank_link(const struct tutti_topo_rank *v, const int *host, int a, int b)
{
    if (a == b) {
        return TUTTI_LINK_SELF;
    }
    if (host[a] != host[b]) {
        return TUTTI_LINK_NET;
    }
    return local_link(&v[a], &v[b], 1);
}

/*
 * How far b is from a, for the greedy walk: the link, then among equal links the PCIe/CPU
 * locality (of two NVLink peers, the one under the same switch comes first).
 */
static int distance(const struct tutti_topo_rank *v, int a, int b)
{
    return (int)local_link(&v[a], &v[b], 1) * TUTTI_LINK_COUNT + (int)local_link(&v[a], &v[b], 0);
}

/* Do ranks x and y sit on the same devices (everything local_link looks at)? */
static int same_place(const struct tutti_topo_rank *x, const struct tutti_topo_rank *y)
{
    return x->gpu == y->gpu && x->package == y->package && x->numa == y->numa &&
           x->pci_switch == y->pci_switch && x->host_bridge == y->host_bridge &&
           x->nvlink == y->nvlink;
}

/*
 * Greedy walk through the k ranks m[0..k) (in rank order) of one host, starting at m[start],
 * into out: each next rank is the nearest left (distance, then the lowest rank). Ranks on the
 * same devices are as far from any rank, so the walk looks at the lowest rank left of each
 * place only: O(k x places), where comparing every pair made 512 ranks of one host spend
 * O(k^2) each (131,072 distances per rank, per communicator). Without memory: rank order.
 */
static void walk_host(const struct tutti_topo_rank *v, const int *m, int k, int start, int *out)
{
    int *cls = malloc((size_t)k * sizeof(int));  /* index in m -> its place */
    int *rep = malloc((size_t)k * sizeof(int));  /* place -> its first index in m */
    int *next = malloc((size_t)k * sizeof(int)); /* index in m -> next index of its place */
    int *head = malloc((size_t)k * sizeof(int)); /* place -> lowest index left, or -1 */
    int *tail = malloc((size_t)k * sizeof(int));
    if (cls == NULL || rep == NULL || next == NULL || head == NULL || tail == NULL) {
        for (int i = 0; i < k; i++) {
            out[i] = m[i];
        }
        goto out_free;
    }
    int nplaces = 0;
    for (int i = 0; i < k; i++) {
        int c = 0;
        while (c < nplaces && !same_place(&v[m[rep[c]]], &v[m[i]])) {
            c++;
        }
        if (c == nplaces) {
            rep[nplaces] = i;
            head[nplaces] = -1;
            nplaces++;
        }
        cls[i] = c;
        next[i] = -1;
        if (head[c] < 0) {
            head[c] = i;
        } else {
            next[tail[c]] = i;
        }
        tail[c] = i;
    }
    /* Take m[start] out of its place's list. */
    for (int *p = &head[cls[start]]; *p >= 0; p = &next[*p]) {
        if (*p == start) {
            *p = next[start];
            break;
        }
    }
    out[0] = m[start];
    for (int i = 1; i < k; i++) {
        int best = -1, bd = 0;
        for (int c = 0; c < nplaces; c++) {
            if (head[c] < 0) {
                continue;
            }
            int d = distance(v, out[i - 1], m[head[c]]);
            if (best < 0 || d < bd || (d == bd && m[head[c]] < m[head[best]])) {
                best = c;
                bd = d;
            }
        }
        out[i] = m[head[best]];
        head[best] = next[head[best]];
    }
out_free:
    free(cls);
    free(rep);
    free(next);
    free(head);
    free(tail);
}

/* Do two hosts' ranks (in rank order) sit on the same devices, one for one? */
static int same_shape(const struct tutti_topo_rank *v, const int *a, const int *b, int k)
{
    for (int i = 0; i < k; i++) {
        const struct tutti_topo_rank *x = &v[a[i]], *y = &v[b[i]];
        if (x->gpu != y->gpu || x->numa != y->numa || x->package != y->package ||
            x->pci_switch != y->pci_switch) {
            return 0;
        }
    }
    return 1;
}

/*
 * Ring through the k ranks m[0..k) (in rank order) of one host, into out. After a host of the
 * same shape, the previous host's path reversed: the ring leaves that host from a GPU and enters
 * this one at the same GPU, and (with an even number of hosts) comes back the same way, so the
 * links between hosts join NICs of one rail. Else a greedy walk from the GPU the ring came from.
 */
static void host_path(const struct tutti_topo_rank *v, const int *prev_m, const int *prev_out,
                      int prev_k, int *lidx, int *m, int k, int *out)
{
    if (prev_m != NULL && prev_k == k && same_shape(v, prev_m, m, k)) {
        for (int i = 0; i < k; i++) {
            out[i] = m[lidx[prev_out[k - 1 - i]]];
        }
        return;
    }
    int start = 0;
    int prev_gpu = prev_out != NULL ? v[prev_out[prev_k - 1]].gpu : -1;
    for (int i = 0; i < k && prev_gpu >= 0; i++) {
        if (v[m[i]].gpu == prev_gpu) {
            start = i;
            break;
        }
    }
    walk_host(v, m, k, start, out);
}

void tutti__topo_ring(const struct tutti_topo_rank *v, const int *host, int n, int *order)
{
    /* Counting sort of the ranks by host; hosts in order of their first rank, ranks in order. */
    int *count = calloc((size_t)n, sizeof(int));
    int *end = calloc((size_t)n, sizeof(int));
    int *label = malloc((size_t)n * sizeof(int));
    int *members = malloc((size_t)n * sizeof(int));
    int *lidx = malloc((size_t)n * sizeof(int)); /* rank -> its index among its host's ranks */
    if (count == NULL || end == NULL || label == NULL || members == NULL || lidx == NULL) {
        for (int r = 0; r < n; r++) {
            order[r] = r; /* no memory: rank order is still a valid ring */
        }
        goto out_free;
    }
    int nhosts = 0;
    for (int r = 0; r < n; r++) {
        if (count[host[r]]++ == 0) {
            label[nhosts++] = host[r];
        }
    }
    for (int h = 0, pos = 0; h < nhosts; h++) {
        end[label[h]] = pos;
        pos += count[label[h]];
    }
    for (int r = 0; r < n; r++) {
        members[end[host[r]]++] = r;
    }
    for (int h = 0, prev = -1; h < nhosts; h++) {
        int k = count[label[h]], pos = end[label[h]] - k;
        for (int i = 0; i < k; i++) {
            lidx[members[pos + i]] = i;
        }
        int pk = prev >= 0 ? count[label[h - 1]] : 0;
        host_path(v, prev >= 0 ? members + prev : NULL, prev >= 0 ? order + prev : NULL, pk, lidx,
                  members + pos, k, order + pos);
        prev = pos;
    }
out_free:
    free(count);
    free(end);
    free(label);
    free(members);
    free(lidx);
}
