/*
 * topo_tool.c - `tutti-info --topo | --topo-file F | --rings N | --ranks N` and their options:
 * print the machine as tutti sees it (detected, TUTTI_TOPO_FILE or --topo-file), say plainly
 * what is missing (no PCI view, no GPU, no RDMA NIC, no NVLink: common in containers and VMs),
 * write it as hwloc XML (--dump), and plan a communicator of N ranks on it: the ring that
 * follows locality (topology/ring.c) as a table, and as a Graphviz picture (--dot, --png).
 */
#include "topo_tool.h"
#include "base/env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_dev_place(FILE *f, const struct tutti_topo_dev *d)
{
    fprintf(f, " %s", d->busid);
    if (d->package >= 0) {
        fprintf(f, ", package %d", d->package);
    }
    if (d->numa >= 0) {
        fprintf(f, ", NUMA %d", d->numa);
    }
    if (d->pci_switch >= 0) {
        fprintf(f, ", PCIe switch %d", d->pci_switch);
    }
    if (d->host_bridge >= 0) {
        fprintf(f, ", host bridge %d", d->host_bridge);
    }
}

static void print_gpus(FILE *f, const struct tutti_topo *t)
{
    static const char *const src[] = {"none", "the file's NVLinkBandwidth matrix", "NVML"};
    fprintf(f, "GPUs: %d", t->gpus_seen);
    if (t->gpus_seen > t->ngpus) {
        fprintf(f, " (the first %d kept)", t->ngpus);
    }
    fprintf(f, "; NVLink: %s\n", src[t->nvlink_source]);
    for (int g = 0; g < t->ngpus; g++) {
        const struct tutti_topo_dev *d = &t->gpu[g];
        fprintf(f, "  gpu%d %s:", g, d->name);
        print_dev_place(f, d);
        if (d->nvlink != 0) {
            fprintf(f, "; NVLink to");
            for (int p = 0; p < t->ngpus; p++) {
                if ((d->nvlink >> p) & 1u) {
                    fprintf(f, " %d", p);
                }
            }
        }
        if (d->nic >= 0) {
            fprintf(f, "; nearest NIC %s (%s)", t->nic[d->nic].name, tutti__link_name(d->nic_link));
        }
        fprintf(f, "\n");
    }
}

static void print_nics(FILE *f, const struct tutti_topo *t)
{
    int rdma = 0;
    for (int n = 0; n < t->nnics; n++) {
        rdma += t->nic[n].rdma;
    }
    fprintf(f, "NICs: %d (%d RDMA)", t->nics_seen, rdma);
    fprintf(f, t->nics_seen > t->nnics ? " (the first %d kept)\n" : "\n", t->nnics);
    for (int n = 0; n < t->nnics; n++) {
        const struct tutti_topo_dev *d = &t->nic[n];
        fprintf(f, "  nic%d %s%s%s%s:", n, d->name, d->alias[0] ? " (" : "", d->alias,
                d->alias[0] ? ")" : "");
        print_dev_place(f, d);
        fprintf(f, "; %s\n", d->rdma ? "RDMA" : "not RDMA (TCP only)");
    }
}

/* What is missing, one "missing:" line each, so that a user in a container knows why. */
static void print_missing(FILE *f, const struct tutti_topo *t)
{
    int any_rdma = 0;
    for (int n = 0; n < t->nnics; n++) {
        any_rdma |= t->nic[n].rdma;
    }
    if (!t->ok) {
        fprintf(f, "missing: hwloc's view (%s); CPU counts come from sysconf\n", t->error);
    }
    if (t->ok && t->pci_devices == 0) {
        fprintf(f, "missing: PCI devices: hwloc saw none (containers and some VMs hide "
                   "/sys/bus/pci); GPUs and NICs cannot be placed. Dump the host's topology "
                   "there (tutti-info --topo --dump FILE) and set TUTTI_TOPO_FILE=FILE\n");
    }
    if (t->ngpus == 0) {
        fprintf(f, "missing: GPU: no NVIDIA GPU on PCI and no CUDA device in the topology%s%s\n",
                t->from_file ? "" : "; NVML: ", t->from_file ? "" : t->nvml_note);
    } else if (t->ngpus > 1 && t->nvlink_source == 0) {
        fprintf(f, "missing: NVLink: none between the GPUs (NVML: %s); rings use PCIe\n",
                t->nvml_note);
    }
    if (t->nnics == 0) {
        fprintf(f, "missing: NIC: no network device on PCI (a virtual NIC outside the PCI view "
                   "still works for TCP)\n");
    }
    if (!any_rdma) {
        fprintf(f, "missing: RDMA: no OpenFabrics (verbs) device, so no RDMA transport (an "
                   "RDMA NIC needs its kernel driver and rdma-core; Soft-RoCE: rdma_rxe)\n");
    }
}

static void print_topo(FILE *f, const struct tutti_topo *t)
{
    fprintf(f, "topology: %s%s\n", t->from_file ? "file " : "", t->source);
    fprintf(f, "CPUs: %d package(s), %d NUMA node(s), %d core(s), %d hardware thread(s)",
            t->packages, t->numa_nodes, t->cores, t->pus);
    if (!t->from_file) {
        fprintf(f, ", %d usable by this process", t->allowed_pus);
    }
    fprintf(f, "\nPCI: %d device(s) kept by hwloc, %d host bridge(s), %d PCIe switch(es)\n",
            t->pci_devices, t->host_bridges, t->pci_switches);
    print_gpus(f, t);
    print_nics(f, t);
    if (!t->from_file) {
        fprintf(f, "NVML: %s\n", t->nvml_note);
    }
    print_missing(f, t);
}

#define MAX_PER_HOST 4096 /* the ring's walk within a host is quadratic in its ranks */

static int plan_make(const struct tutti_topo *t, int n, int nhosts, struct topo_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->t = t;
    p->n = n;
    p->nhosts = nhosts > 0 ? nhosts : t->ngpus > 0 ? (n + t->ngpus - 1) / t->ngpus : 1;
    if (p->nhosts > n) {
        p->nhosts = n;
    }
    p->per_host = (n + p->nhosts - 1) / p->nhosts;
    p->nhosts = (n + p->per_host - 1) / p->per_host;
    if (p->per_host > MAX_PER_HOST) {
        fprintf(stderr, "tutti-info: %d ranks on one host; at most %d (--hosts H spreads them)\n",
                p->per_host, MAX_PER_HOST);
        return -1;
    }
    p->v = calloc((size_t)n, sizeof(*p->v));
    p->host = calloc((size_t)n, sizeof(*p->host));
    p->order = calloc((size_t)n, sizeof(*p->order));
    if (p->v == NULL || p->host == NULL || p->order == NULL) {
        return -1;
    }
    for (int r = 0; r < n; r++) {
        p->host[r] = r / p->per_host * p->per_host;
        tutti__topo_rank_view(t, r % p->per_host, &p->v[r]);
    }
    tutti__topo_ring(p->v, p->host, n, p->order);
    return 0;
}

static void plan_free(struct topo_plan *p)
{
    free(p->v);
    free(p->host);
    free(p->order);
}

static void print_ring(FILE *f, const struct topo_plan *p)
{
    int kinds[TUTTI_LINK_COUNT] = {0};
    fprintf(f, "ring of %d rank(s) on %d host(s) of this machine, %d per host%s:\n", p->n,
            p->nhosts, p->per_host, p->t->ngpus > 0 ? ", rank uses GPU local rank mod GPUs" : "");
    fprintf(f, "  %-4s %-6s %-5s %-14s %-10s %-6s %s\n", "pos", "rank", "host", "GPU", "NIC",
            "next", "link to next");
    for (int i = 0; i < p->n; i++) {
        int r = p->order[i], nx = p->order[(i + 1) % p->n];
        const struct tutti_topo_rank *v = &p->v[r];
        char gpu[32] = "-";
        if (v->gpu >= 0) {
            snprintf(gpu, sizeof(gpu), "gpu%d", v->gpu);
        }
        tutti_link_t l = tutti__topo_rank_link(p->v, p->host, r, nx);
        kinds[l] += p->n > 1;
        fprintf(f, "  %-4d %-6d %-5d %-14s %-10s %-6d %s", i, r, p->host[r] / p->per_host, gpu,
                v->nic_name[0] ? v->nic_name : "-", nx, tutti__link_name(l));
        if (l == TUTTI_LINK_NET) {
            fprintf(f, " (%s -> %s)", v->nic_name[0] ? v->nic_name : "?",
                    p->v[nx].nic_name[0] ? p->v[nx].nic_name : "?");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "links:");
    const char *sep = " ";
    for (int k = 0; k < TUTTI_LINK_COUNT; k++) {
        if (kinds[k] > 0) {
            fprintf(f, "%s%d %s", sep, kinds[k], tutti__link_name((tutti_link_t)k));
            sep = ", ";
        }
    }
    fprintf(f, "\n(a communicator of these ranks runs its ring schedules in this order)\n");
}

struct topo_args {
    int topo, nranks, nhosts;
    int no_table; /* a picture without a ring was asked for */
    const char *file, *dump, *dot, *png;
};

static int parse(int argc, char **argv, struct topo_args *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--topo") == 0) {
            a->topo = 1;
            continue;
        }
        if (val == NULL) {
            fprintf(stderr, "tutti-info: %s needs a value\n", o);
            return -1;
        }
        i++;
        if (strcmp(o, "--topo-file") == 0) {
            a->file = val;
        } else if (strcmp(o, "--dump") == 0) {
            a->dump = val;
        } else if (strcmp(o, "--dot") == 0) {
            a->dot = val;
        } else if (strcmp(o, "--png") == 0) {
            a->png = val;
        } else if (strcmp(o, "--rings") == 0 || strcmp(o, "--ranks") == 0 ||
                   strcmp(o, "--hosts") == 0) {
            char *end;
            long n = strtol(val, &end, 10);
            if (*end != '\0' || n < 1 || n > 1 << 20) {
                fprintf(stderr, "tutti-info: %s '%s' is not a number in 1..%d\n", o, val, 1 << 20);
                return -1;
            }
            *(strcmp(o, "--hosts") == 0 ? &a->nhosts : &a->nranks) = (int)n;
        } else {
            fprintf(stderr, "tutti-info: unknown topology option '%s'\n", o);
            return -1;
        }
    }
    if ((a->dot != NULL || a->png != NULL) && a->nranks == 0) {
        a->nranks = 1; /* a picture of the machine alone */
        a->no_table = 1;
    }
    return 0;
}

static int draw(const struct topo_args *a, const struct topo_plan *p)
{
    const char *dot_path = a->dot;
    char tmp[] = "/tmp/tutti-topo-XXXXXX";
    if (dot_path == NULL || strcmp(dot_path, "-") == 0) {
        int fd = a->png != NULL ? mkstemp(tmp) : -1;
        if (fd >= 0) {
            close(fd);
            dot_path = tmp;
        }
    }
    FILE *f = dot_path == NULL || strcmp(dot_path, "-") == 0 ? stdout : fopen(dot_path, "w");
    if (f == NULL) {
        fprintf(stderr, "tutti-info: cannot write %s: %s\n", dot_path, strerror(errno));
        return 1;
    }
    tutti__topo_dot(f, p);
    if (f != stdout) {
        fclose(f);
    }
    int ret = a->png != NULL && tutti__topo_png(dot_path, a->png) != 0 ? 1 : 0;
    if (dot_path == tmp) {
        unlink(tmp);
    }
    return ret;
}

int tutti__topo_tool(int argc, char **argv)
{
    struct topo_args a;
    if (parse(argc, argv, &a) != 0) {
        return 2;
    }
    const char *file = a.file != NULL ? a.file : tutti__env()->TOPO_FILE;
    if (file[0] == '\0') {
        file = NULL;
    }
    struct tutti_topo t;
    if (tutti__topo_load(file, &t) != TUTTI_OK && file != NULL) {
        fprintf(stderr, "tutti-info: %s\n", t.error);
        return 1;
    }
    int dot_out = a.dot != NULL && strcmp(a.dot, "-") == 0; /* stdout is the graph */
    if ((a.topo || a.file != NULL) && !dot_out) {
        print_topo(stdout, &t);
    }
    if (a.dump != NULL) {
        char err[512];
        if (tutti__topo_dump(file, a.dump, err, sizeof(err)) != TUTTI_OK) {
            fprintf(stderr, "tutti-info: %s\n", err);
            return 1;
        }
        fprintf(dot_out ? stderr : stdout, "wrote %s\n", a.dump);
    }
    int ret = 0;
    if (a.nranks > 0) {
        struct topo_plan p;
        if (plan_make(&t, a.nranks, a.nhosts, &p) != 0) {
            if (p.per_host <= MAX_PER_HOST) {
                fprintf(stderr, "tutti-info: no memory for %d ranks\n", a.nranks);
            }
            plan_free(&p);
            return 1;
        }
        if (!a.no_table && !dot_out) {
            print_ring(stdout, &p);
        }
        if (a.dot != NULL || a.png != NULL) {
            ret = draw(&a, &p);
        }
        plan_free(&p);
    }
    return ret;
}
