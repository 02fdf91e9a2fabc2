/*
 * topo_dot.c - the picture behind `tutti-info --dot FILE` / `--png FILE`: each host of a planned
 * communicator as a Graphviz cluster (packages, PCIe switches, GPUs, NICs, the ranks on them),
 * NVLink as dashed green edges, and the locality ring as numbered red arrows. --png hands the
 * file to dot(1) (Debian package graphviz).
 */
#include "topo_tool.h"

#include <errno.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#define MAX_DRAWN_HOSTS 8 /* beyond this a picture is unreadable; the ring table has them all */

extern char **environ;

static int drawn_hosts(const struct topo_plan *p)
{
    return p->nhosts < MAX_DRAWN_HOSTS ? p->nhosts : MAX_DRAWN_HOSTS;
}

/* Node name of the thing rank r runs on: its GPU, else a node of its own. */
static void anchor(const struct topo_plan *p, int r, char *buf, size_t len)
{
    int h = p->host[r] / p->per_host;
    if (p->v[r].gpu >= 0) {
        snprintf(buf, len, "h%d_g%d", h, p->v[r].gpu);
    } else {
        snprintf(buf, len, "h%d_r%d", h, r);
    }
}

/* ", ranks 0 8" for what runs on GPU g of host h (or the rank of a CPU-only node). */
static void ranks_on(const struct topo_plan *p, int h, int g, char *buf, size_t len)
{
    size_t o = 0;
    int k = 0;
    buf[0] = '\0';
    for (int r = h * p->per_host; r < p->n && r < (h + 1) * p->per_host && o < len; r++) {
        if (p->v[r].gpu == g && k++ < 4) {
            o += (size_t)snprintf(buf + o, len - o, "%s%d", k == 1 ? "\\nrank " : " ", r);
        }
    }
    if (k > 4 && o < len) {
        snprintf(buf + o, len - o, " (+%d)", k - 4);
    }
}

static void dev_node(FILE *f, int h, const char *kind, int i, const struct tutti_topo_dev *d,
                     const char *extra, const char *color)
{
    fprintf(f, "      h%d_%s%d [label=\"%s%d %s\\n%s%s\", style=filled, fillcolor=%s];\n", h, kind,
            i, kind[0] == 'g' ? "gpu" : "nic", i, d->name, d->busid, extra, color);
    if (d->pci_switch >= 0) {
        fprintf(f, "      h%d_sw%d -> h%d_%s%d [dir=none, color=gray50];\n", h, d->pci_switch, h,
                kind, i);
    }
}

/* One package (or pkg -1: what has none) of host h: switches, GPUs, NICs, CPU-only ranks. */
static void package(FILE *f, const struct topo_plan *p, int h, int pkg)
{
    const struct tutti_topo *t = p->t;
    if (pkg >= 0) {
        fprintf(f, "    subgraph cluster_h%d_p%d {\n      label=\"package %d\";\n", h, pkg, pkg);
    }
    uint64_t switches = 0;
    char extra[64];
    for (int g = 0; g < t->ngpus; g++) {
        if (t->gpu[g].package == pkg) {
            ranks_on(p, h, g, extra, sizeof(extra));
            dev_node(f, h, "g", g, &t->gpu[g], extra, "palegreen");
            switches |= t->gpu[g].pci_switch >= 0 ? 1ull << (t->gpu[g].pci_switch & 63) : 0;
        }
    }
    for (int n = 0; n < t->nnics; n++) {
        if (t->nic[n].package == pkg) {
            dev_node(f, h, "n", n, &t->nic[n], t->nic[n].rdma ? "\\nRDMA" : "", "lightblue");
            switches |= t->nic[n].pci_switch >= 0 ? 1ull << (t->nic[n].pci_switch & 63) : 0;
        }
    }
    for (int s = 0; s < 64; s++) {
        if ((switches >> s) & 1u) {
            fprintf(f, "      h%d_sw%d [label=\"PCIe switch %d\", shape=ellipse];\n", h, s, s);
        }
    }
    for (int r = h * p->per_host; r < p->n && r < (h + 1) * p->per_host; r++) {
        if (p->v[r].gpu < 0 && p->v[r].package == pkg) {
            fprintf(f, "      h%d_r%d [label=\"rank %d\", shape=circle];\n", h, r, r);
        }
    }
    if (pkg >= 0) {
        fprintf(f, "    }\n");
    }
}

static void nvlinks(FILE *f, const struct topo_plan *p, int h)
{
    const struct tutti_topo *t = p->t;
    uint32_t all = t->ngpus < 32 ? (1u << t->ngpus) - 1 : ~0u;
    int mesh = t->ngpus > 2;
    for (int g = 0; g < t->ngpus; g++) {
        mesh &= (t->gpu[g].nvlink | (1u << g)) == all;
    }
    if (mesh) { /* all-to-all (NVSwitch): one node, not n^2 edges */
        fprintf(f, "  h%d_nvl [label=\"NVLink all-to-all\", shape=hexagon, color=darkgreen];\n", h);
        for (int g = 0; g < t->ngpus; g++) {
            fprintf(f, "  h%d_nvl -> h%d_g%d [dir=none, color=darkgreen, style=dashed];\n", h, h,
                    g);
        }
        return;
    }
    for (int g = 0; g < t->ngpus; g++) {
        for (int q = g + 1; q < t->ngpus; q++) {
            if ((t->gpu[g].nvlink >> q) & 1u) {
                fprintf(f, "  h%d_g%d -> h%d_g%d [dir=none, color=darkgreen, style=dashed];\n", h,
                        g, h, q);
            }
        }
    }
}

void tutti__topo_dot(FILE *f, const struct topo_plan *p)
{
    int nh = drawn_hosts(p);
    fprintf(f,
            "digraph tutti_topology {\n  label=\"%s: %d rank(s) on %d host(s)%s; red: the "
            "ring, green: NVLink\";\n  newrank=true;\n  node [shape=box, fontsize=10];\n",
            p->t->source, p->n, p->nhosts, nh < p->nhosts ? " (first hosts drawn)" : "");
    for (int h = 0; h < nh; h++) {
        fprintf(f, "  subgraph cluster_h%d {\n    label=\"host %d\";\n", h, h);
        for (int pkg = -1; pkg < p->t->packages; pkg++) {
            package(f, p, h, pkg);
        }
        fprintf(f, "  }\n");
        nvlinks(f, p, h);
    }
    for (int i = 0; p->n > 1 && i < p->n; i++) {
        int r = p->order[i], nx = p->order[(i + 1) % p->n];
        if (p->host[r] / p->per_host >= nh || p->host[nx] / p->per_host >= nh) {
            continue;
        }
        char a[32], b[32];
        anchor(p, r, a, sizeof(a));
        anchor(p, nx, b, sizeof(b));
        fprintf(f,
                "  %s -> %s [color=red, penwidth=2, fontcolor=red, label=\"%d\", "
                "];\n",
                a, b, i);
    }
    fprintf(f, "}\n");
}

int tutti__topo_png(const char *dot_file, const char *png)
{
    char *argv[] = {"dot", "-Tpng", "-o", (char *)png, (char *)dot_file, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, "dot", NULL, NULL, argv, environ);
    if (err != 0) {
        fprintf(stderr, "tutti-info: cannot run dot(1): %s%s\n", strerror(err),
                err == ENOENT ? " (install Graphviz: apt-get install graphviz)" : "");
        return -1;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "tutti-info: dot -Tpng -o %s %s failed\n", png, dot_file);
        return -1;
    }
    return 0;
}
