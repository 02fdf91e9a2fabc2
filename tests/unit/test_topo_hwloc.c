/*
 * test_topo_hwloc.c - detection, rings and trees on real machines: hwloc's own test topologies
 * (tests/topo/hwloc-xml, BSD-3-Clause, from hwloc 2.9.0). For every file, what detection finds
 * is compared with tests/topo/hwloc-xml/expected.txt (hwloc-info's counts, GPUs and NICs
 * counted by hand); every device sits inside its machine; each GPU takes the NIC the table
 * names and no NIC is closer; for 1..16 ranks laid on the machine the ring visits every rank
 * once, keeps hosts and packages together and NVLink pairs adjacent, and both double binary
 * trees are trees. Two machines pin detection bugs these files found.
 */
#include "topology/topo.h"
#include "topology/tree.h"
#include "../topo/check.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MAX_FILES 32
#define MAX_RANKS 16

struct expect {
    char file[96];
    int pkg, numa, cores, pus, pci, gpus, nics, rdma, nvlink;
    char gpu_nics[256]; /* "mlx4_0,mlx4_0" or "-" */
};

/* The table's rows; returns how many. */
static int read_expected(struct expect *e)
{
    FILE *f = fopen(HWLOC_XML_DIR "/expected.txt", "r");
    cr_assert(f != NULL, "cannot open %s/expected.txt", HWLOC_XML_DIR);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        cr_assert(n < MAX_FILES, "more than %d files in expected.txt", MAX_FILES);
        struct expect *x = &e[n++];
        int got = sscanf(line, "%95s %d %d %d %d %d %d %d %d %d %255s", x->file, &x->pkg, &x->numa,
                         &x->cores, &x->pus, &x->pci, &x->gpus, &x->nics, &x->rdma, &x->nvlink,
                         x->gpu_nics);
        cr_assert_eq(got, 11, "expected.txt: bad line '%s'", line);
    }
    fclose(f);
    cr_assert_geq(n, 8, "expected.txt lists only %d files", n);
    return n;
}

static struct tutti_topo load(const char *file)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", HWLOC_XML_DIR, file);
    struct tutti_topo t;
    tutti_status_t st = tutti__topo_load(path, &t);
    cr_assert(st == TUTTI_OK && t.ok && t.from_file, "%s: %s", file, t.error);
    return t;
}

static int popcount(uint32_t m)
{
    int c = 0;
    for (; m != 0; m &= m - 1) {
        c++;
    }
    return c;
}

Test(topo_hwloc, counts_match_hwloc_and_the_files)
{
    struct expect e[MAX_FILES];
    int nf = read_expected(e);
    for (int i = 0; i < nf; i++) {
        const struct expect *x = &e[i];
        struct tutti_topo t = load(x->file);
        int rdma = 0, pairs = 0;
        for (int n = 0; n < t.nnics; n++) {
            rdma += t.nic[n].rdma;
        }
        for (int g = 0; g < t.ngpus; g++) {
            pairs += popcount(t.gpu[g].nvlink);
        }
        cr_expect(t.packages == x->pkg && t.numa_nodes == x->numa && t.cores == x->cores &&
                      t.pus == x->pus,
                  "%s: %d packages, %d NUMA, %d cores, %d PUs; hwloc: "
                  "%d, %d, %d, %d",
                  x->file, t.packages, t.numa_nodes, t.cores, t.pus, x->pkg, x->numa, x->cores,
                  x->pus);
        cr_expect_eq(t.pci_devices, x->pci, "%s: %d PCI devices, hwloc %d", x->file, t.pci_devices,
                     x->pci);
        cr_expect_eq(t.gpus_seen, x->gpus, "%s: %d GPUs, expected %d", x->file, t.gpus_seen,
                     x->gpus);
        cr_expect_eq(t.nics_seen, x->nics, "%s: %d NICs, expected %d", x->file, t.nics_seen,
                     x->nics);
        cr_expect_eq(rdma, x->rdma, "%s: %d RDMA NICs, expected %d", x->file, rdma, x->rdma);
        cr_expect_eq(pairs / 2, x->nvlink, "%s: %d NVLink pairs, expected %d", x->file, pairs / 2,
                     x->nvlink);
        cr_expect_eq(t.allowed_pus, t.pus, "%s: a file's machine is all usable", x->file);
    }
}

static void check_place(const char *file, const char *what, int i, const struct tutti_topo *t,
                        const struct tutti_topo_dev *d)
{
    cr_expect(d->package >= -1 && d->package < t->packages && d->numa >= -1 &&
                  d->numa < t->numa_nodes,
              "%s %s%d: package %d of %d, NUMA %d of %d", file, what, i, d->package, t->packages,
              d->numa, t->numa_nodes);
    cr_expect(d->pci_switch >= -1 && d->pci_switch < t->pci_switches && d->host_bridge >= -1 &&
                  d->host_bridge < t->host_bridges,
              "%s %s%d: switch %d of %d, bridge %d of %d", file, what, i, d->pci_switch,
              t->pci_switches, d->host_bridge, t->host_bridges);
    cr_expect(d->name[0] != '\0' && memchr(d->name, 0, sizeof(d->name)) != NULL &&
                  strlen(d->busid) == 12,
              "%s %s%d: name '%s', bus id '%s'", file, what, i, d->name, d->busid);
}

Test(topo_hwloc, every_device_sits_inside_its_machine)
{
    struct expect e[MAX_FILES];
    int nf = read_expected(e);
    for (int i = 0; i < nf; i++) {
        struct tutti_topo t = load(e[i].file);
        for (int g = 0; g < t.ngpus; g++) {
            check_place(e[i].file, "gpu", g, &t, &t.gpu[g]);
            for (int h = 0; h < t.ngpus; h++) { /* NVLink goes both ways, never to itself */
                cr_expect_eq((t.gpu[g].nvlink >> h) & 1u, (t.gpu[h].nvlink >> g) & 1u,
                             "%s: NVLink gpu%d-gpu%d one way only", e[i].file, g, h);
            }
            cr_expect_eq((t.gpu[g].nvlink >> g) & 1u, 0u, "%s: gpu%d NVLinked to itself", e[i].file,
                         g);
        }
        for (int n = 0; n < t.nnics; n++) {
            check_place(e[i].file, "nic", n, &t, &t.nic[n]);
        }
    }
}

static tutti_link_t place_link(const struct tutti_topo_dev *a, const struct tutti_topo_dev *b)
{
    struct tutti_topo_place pa = {a->package, a->numa, a->pci_switch, a->host_bridge};
    struct tutti_topo_place pb = {b->package, b->numa, b->pci_switch, b->host_bridge};
    return tutti__topo_place_link(&pa, &pb);
}

Test(topo_hwloc, each_gpu_takes_the_nearest_nic)
{
    struct expect e[MAX_FILES];
    int nf = read_expected(e);
    for (int i = 0; i < nf; i++) {
        struct tutti_topo t = load(e[i].file);
        char got[256] = "";
        for (int g = 0; g < t.ngpus; g++) {
            const struct tutti_topo_dev *gpu = &t.gpu[g];
            if (gpu->nic < 0) {
                cr_expect_eq(t.nnics, 0, "%s: gpu%d has no NIC, the machine has %d", e[i].file, g,
                             t.nnics);
                continue;
            }
            size_t len = strlen(got);
            snprintf(got + len, sizeof(got) - len, "%s%s", g > 0 ? "," : "", t.nic[gpu->nic].name);
            cr_expect_eq(gpu->nic_link, place_link(gpu, &t.nic[gpu->nic]));
            for (int n = 0; n < t.nnics; n++) {
                cr_expect_geq(place_link(gpu, &t.nic[n]), gpu->nic_link,
                              "%s: gpu%d took %s, "
                              "but %s is closer",
                              e[i].file, g, t.nic[gpu->nic].name, t.nic[n].name);
            }
            /* A rank on this GPU reports the same NIC to its peers. */
            struct tutti_topo_rank v;
            tutti__topo_rank_view(&t, g, &v);
            cr_expect_str_eq(v.nic_name, t.nic[gpu->nic].name);
        }
        cr_expect_str_eq(got[0] != '\0' ? got : "-", e[i].gpu_nics, "%s: nearest NICs", e[i].file);
    }
}

/* Ring edges between ranks of one host on different packages (both known). */
static int package_changes(const struct tutti_topo_rank *v, const int *host, const int *order,
                           int n, int h)
{
    int c = 0;
    for (int i = 0; i < n; i++) {
        const struct tutti_topo_rank *a = &v[order[i]], *b = &v[order[(i + 1) % n]];
        c += host[order[i]] == h && host[order[(i + 1) % n]] == h && a->package >= 0 &&
             b->package >= 0 && a->package != b->package;
    }
    return c;
}

/* The packages the ranks of host h use. */
static int packages_used(const struct tutti_topo_rank *v, const int *host, int n, int h)
{
    uint64_t seen = 0;
    for (int r = 0; r < n; r++) {
        if (host[r] == h && v[r].package >= 0) {
            seen |= 1ull << (v[r].package & 63);
        }
    }
    return popcount((uint32_t)seen) + popcount((uint32_t)(seen >> 32));
}

static void check_ring(const char *file, const struct tutti_topo *t, int n)
{
    /* As tutti-info lays them: one rank per GPU, hosts of ngpus ranks; no GPU: one host. */
    int per_host = t->ngpus > 0 ? t->ngpus : n;
    int nhosts = (n + per_host - 1) / per_host;
    struct tutti_topo_rank v[MAX_RANKS];
    int host[MAX_RANKS], order[MAX_RANKS];
    views(t, n, per_host, NULL, v, host);
    tutti__topo_ring(v, host, n, order);
    assert_permutation(order, n);
    cr_expect_eq(order[0], 0, "%s n=%d: the ring starts at rank 0", file, n);
    cr_expect_eq(count_links(v, host, order, n, TUTTI_LINK_NET), nhosts > 1 ? nhosts : 0,
                 "%s n=%d: hosts not kept together", file, n);
    for (int h = 0; h < n; h += per_host) {
        /* A host's ranks are a path of the ring (a cycle with one host): each package one arc. */
        int k = packages_used(v, host, n, h);
        int most = nhosts > 1 ? k - 1 : k > 1 ? k : 0;
        cr_expect_leq(package_changes(v, host, order, n, h), most,
                      "%s n=%d host %d: the ring "
                      "leaves and re-enters a package",
                      file, n, h / per_host);
    }
    for (int a = 0; a < n; a++) { /* a GPU with one NVLink peer on its host sits next to it */
        for (int b = a + 1; b < n; b++) {
            if (host[a] == host[b] && popcount(v[a].nvlink) == 1 && v[b].gpu >= 0 &&
                v[a].nvlink == 1u << v[b].gpu) {
                cr_expect(adjacent(order, n, a, b), "%s n=%d: NVLink ranks %d, %d apart", file, n,
                          a, b);
            }
        }
    }
    for (int tree = 0; tree < 2; tree++) {
        struct tutti_tree_node nd[MAX_RANKS];
        for (int r = 0; r < n; r++) {
            cr_assert_eq(tutti__dtree_hosts_node(n, host, r, tree, &nd[r]), 0);
        }
        check_tree(nd, n, tree, file);
    }
}

Test(topo_hwloc, rings_and_trees_for_1_to_16_ranks)
{
    struct expect e[MAX_FILES];
    int nf = read_expected(e);
    for (int i = 0; i < nf; i++) {
        struct tutti_topo t = load(e[i].file);
        for (int n = 1; n <= MAX_RANKS; n++) {
            check_ring(e[i].file, &t, n);
        }
    }
}

/* Bug: every CoProc OS device made a GPU, so an AMD Radeon with an OpenCL device became gpu3. */
Test(topo_hwloc, an_opencl_device_on_an_amd_gpu_is_not_a_gpu)
{
    struct tutti_topo t = load("32em64t-2n8c2t-pci-normalio.xml");
    cr_assert_eq(t.ngpus, 3, "the three Tesla M2075, not the Radeon at 0000:84:00.1");
    for (int g = 0; g < t.ngpus; g++) {
        cr_expect_str_neq(t.gpu[g].busid, "0000:84:00.1");
    }
    cr_expect_str_eq(t.gpu[2].name, "cuda0");
}

/*
 * Bug: network functions with no port on this host (15 usNIC virtual functions) were listed in
 * PCI order and filled the 16 places, so eth7 (0000:89:00.0) was dropped.
 */
Test(topo_hwloc, nics_without_a_port_do_not_push_usable_nics_out)
{
    struct tutti_topo t = load("16intel64-manyVFs.xml");
    cr_assert_eq(t.nnics, TUTTI_TOPO_MAX_NICS);
    static const char *const usable[] = {"eth0", "eth1", "usnic_0", "usnic_1", "usnic_2", "eth7"};
    for (int n = 0; n < 6; n++) {
        cr_expect_str_eq(t.nic[n].name, usable[n], "nic%d", n);
        cr_expect(t.nic[n].port, "nic%d has a port", n);
    }
    for (int n = 6; n < t.nnics; n++) {
        cr_expect(!t.nic[n].port && strcmp(t.nic[n].name, t.nic[n].busid) == 0,
                  "nic%d %s: a function without a port, named by its bus id", n, t.nic[n].name);
    }
}

/*
 * Bug: a device whose package also holds GPU-memory NUMA nodes (POWER9 with NVLink, its nodes
 * kept) had NUMA node "unknown". The file's GPUs have blank PCI ids; given NVIDIA's, each GPU
 * must sit on its package's DRAM node: logical 0 (P#0) for package 0, 4 (P#8) for package 1.
 */
Test(topo_hwloc, gpus_beside_gpu_memory_numa_nodes_get_the_dram_node)
{
    FILE *f = fopen(HWLOC_XML_DIR "/linux-nvidiagpunumanodes-kept.xml", "r");
    cr_assert(f != NULL);
    static char buf[64 << 10];
    size_t len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[len] = '\0';
    int patched = 0;
    for (char *p = buf; (p = strstr(p, "\"0300 [0000:0000]")) != NULL; p++, patched++) {
        memcpy(p, "\"0300 [10de:1db1]", 17);
    }
    cr_assert_eq(patched, 6, "the file's six GPUs");
    struct tutti_topo t;
    cr_assert(tutti__topo_load_buffer(buf, len, &t) == TUTTI_OK, "%s", t.error);
    cr_assert_eq(t.numa_nodes, 8);
    cr_assert_eq(t.ngpus, 6);
    for (int g = 0; g < t.ngpus; g++) {
        cr_expect_eq(t.gpu[g].numa, t.gpu[g].package == 0 ? 0 : 4, "gpu%d (package %d): NUMA %d", g,
                     t.gpu[g].package, t.gpu[g].numa);
    }
}
