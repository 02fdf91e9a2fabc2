/*
 * test_topo.c - topology detection on synthetic DGX-like machines (tests/topo/gen_dgx_xml.py,
 * generated at test time), the per-rank view and its check, and the locality rings: NVLink
 * neighbours first, then PCIe switch, NUMA node, package; hosts kept together and joined
 * rail to rail; each GPU's nearest NIC under its own switch.
 */
#include "topology/topo.h"
#include "topology/view.h"
#include "../topo/check.h"
#include "../topo/gen.h"
#include "exec/peer.h"
#include "tutti/comm.h"
#include "topology/layout.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tutti_topo load_gen(const char *args)
{
    char path[64];
    cr_assert(topo_gen(args, path) == 0, "generator failed");
    struct tutti_topo t;
    tutti_status_t st = tutti__topo_load(path, &t);
    unlink(path);
    cr_assert(st == TUTTI_OK, "loading the generated XML: %s", t.error);
    return t;
}

Test(topo, dgx_counts)
{
    struct tutti_topo t = load_gen("");
    cr_assert(t.ok && t.from_file);
    cr_expect_eq(t.packages, 2);
    cr_expect_eq(t.numa_nodes, 2);
    cr_expect_eq(t.cores, 32);
    cr_expect_eq(t.pus, 64);
    cr_expect_eq(t.ngpus, 8);
    cr_expect_eq(t.nnics, 8);
    cr_expect_eq(t.pci_switches, 4);
    cr_expect_eq(t.host_bridges, 4);
    cr_expect_eq(t.nvlink_source, 1, "NVLink from the file's NVLinkBandwidth matrix");
    for (int g = 0; g < t.ngpus; g++) {
        cr_expect_eq(t.gpu[g].nvlink, 0xffu & ~(1u << g), "gpu%d: NVLink to all others", g);
        cr_expect_eq(t.gpu[g].package, g / 4);
        cr_expect_eq(t.gpu[g].pci_switch, g / 2);
    }
    for (int n = 0; n < t.nnics; n++) {
        cr_expect(t.nic[n].rdma, "nic%d is an RDMA device", n);
        char want[16];
        snprintf(want, sizeof(want), "mlx5_%d", n);
        cr_expect_str_eq(t.nic[n].name, want);
    }
}

Test(topo, dgx_variants_count_what_the_generator_made)
{
    struct tutti_topo t =
        load_gen("--gpus-per-switch 4 --nics-per-switch 1 --switches-per-package 1");
    cr_expect_eq(t.ngpus, 8);
    cr_expect_eq(t.nnics, 2);
    cr_expect_eq(t.pci_switches, 2);
}

Test(topo, each_gpu_gets_its_own_nic_under_its_switch)
{
    struct tutti_topo t = load_gen("");
    for (int g = 0; g < t.ngpus; g++) {
        cr_assert_eq(t.gpu[g].nic, g, "gpu%d: nearest NIC nic%d, expected nic%d", g, t.gpu[g].nic,
                     g);
        cr_expect_eq(t.gpu[g].nic_link, TUTTI_LINK_PCI_SWITCH);
    }
    /* One NIC per switch: both GPUs of a switch share it. */
    t = load_gen("--nics-per-switch 1");
    for (int g = 0; g < t.ngpus; g++) {
        cr_expect_eq(t.gpu[g].nic, g / 2, "gpu%d: nic%d", g, t.gpu[g].nic);
        cr_expect_eq(t.gpu[g].nic_link, TUTTI_LINK_PCI_SWITCH);
    }
}

Test(topo, ring_takes_nvlink_pairs_first)
{
    struct tutti_topo t = load_gen("--nvlink-pairs 0-4,1-5,2-6,3-7");
    for (int g = 0; g < 8; g++) {
        cr_assert_eq(t.gpu[g].nvlink, 1u << (g ^ 4), "gpu%d NVLink mask 0x%x", g, t.gpu[g].nvlink);
    }
    struct tutti_topo_rank v[8];
    int host[8], order[8];
    views(&t, 8, 8, NULL, v, host);
    tutti__topo_ring(v, host, 8, order);
    assert_permutation(order, 8);
    for (int g = 0; g < 4; g++) {
        cr_expect(adjacent(order, 8, g, g + 4), "NVLink peers %d and %d not adjacent", g, g + 4);
    }
    cr_expect_eq(count_links(v, host, order, 8, TUTTI_LINK_NVLINK), 4);
    cr_expect_eq(count_links(v, host, order, 8, TUTTI_LINK_HOST), 0,
                 "no hop between packages "
                 "that is not NVLink");
}

Test(topo, ring_without_nvlink_follows_switches_then_numa)
{
    struct tutti_topo t = load_gen("--nvlink-mbps 0");
    cr_assert_eq(t.nvlink_source, 0);
    /* Ranks placed against locality: rank r on GPU perm[r]. */
    static const int perm[8] = {0, 4, 2, 6, 1, 5, 3, 7};
    struct tutti_topo_rank v[8];
    int host[8], order[8];
    views(&t, 8, 8, perm, v, host);
    tutti__topo_ring(v, host, 8, order);
    assert_permutation(order, 8);
    for (int s = 0; s < 4; s++) { /* the two ranks on each switch are neighbours */
        int a = -1, b = -1;
        for (int r = 0; r < 8; r++) {
            if (perm[r] / 2 == s) {
                *(a < 0 ? &a : &b) = r;
            }
        }
        cr_expect(adjacent(order, 8, a, b), "ranks %d and %d share switch %d", a, b, s);
    }
    cr_expect_eq(count_links(v, host, order, 8, TUTTI_LINK_PCI_SWITCH), 4);
    cr_expect_eq(count_links(v, host, order, 8, TUTTI_LINK_NUMA), 2);
    cr_expect_eq(count_links(v, host, order, 8, TUTTI_LINK_HOST), 2,
                 "the package is crossed "
                 "only twice");
}

Test(topo, ring_keeps_hosts_together_and_rail_aligned)
{
    struct tutti_topo t = load_gen("");
    enum { N = 32, PER = 8 };
    struct tutti_topo_rank v[N];
    int host[N], order[N];
    /* Hosts interleaved by rank: rank r on host r % 4, as some launchers number them. */
    for (int r = 0; r < N; r++) {
        tutti__topo_rank_view(&t, r / 4, &v[r]);
        host[r] = r % 4;
    }
    tutti__topo_ring(v, host, N, order);
    assert_permutation(order, N);
    cr_expect_eq(count_links(v, host, order, N, TUTTI_LINK_NET), 4, "one hop per host");
    cr_expect_eq(count_links(v, host, order, N, TUTTI_LINK_NVLINK), N - 4);
    int aligned = 0;
    for (int i = 0; i < N; i++) {
        int a = order[i], b = order[(i + 1) % N];
        if (host[a] != host[b]) {
            aligned += v[a].gpu == v[b].gpu && strcmp(v[a].nic_name, v[b].nic_name) == 0;
        }
    }
    cr_expect_eq(aligned, 4, "with an even number of hosts every network hop joins one rail");
    (void)PER;
}

Test(topo, ring_is_a_permutation_for_any_hosts)
{
    struct tutti_topo t = load_gen("--nvlink-pairs 0-1,2-3");
    struct tutti_topo_rank v[200];
    int host[200], order[200];
    srand(7);
    for (int n = 1; n <= 200; n += 13) {
        int nhosts = 1 + rand() % 9;
        int first[9];
        for (int h = 0; h < 9; h++) {
            first[h] = -1;
        }
        int distinct = 0;
        for (int r = 0; r < n; r++) {
            int h = rand() % nhosts;
            if (first[h] < 0) {
                first[h] = r;
                distinct++;
            }
            host[r] = first[h];
            tutti__topo_rank_view(&t, r, &v[r]);
        }
        tutti__topo_ring(v, host, n, order);
        assert_permutation(order, n);
        cr_expect_eq(count_links(v, host, order, n, TUTTI_LINK_NET), distinct > 1 ? distinct : 0,
                     "n %d: hosts visited once each", n);
        cr_expect_eq(order[0], 0);
    }
}

Test(topo, cpu_only_ranks_ring_by_numa)
{
    struct tutti_topo_rank v[4];
    int host[4] = {0, 0, 0, 0}, order[4];
    static const int numa[4] = {0, 1, 0, 1};
    for (int r = 0; r < 4; r++) {
        memset(&v[r], 0, sizeof(v[r]));
        v[r].magic = TUTTI_TOPO_RANK_MAGIC;
        v[r].gpu = v[r].nic = v[r].pci_switch = v[r].host_bridge = -1;
        v[r].numa = (int8_t)numa[r];
        v[r].package = (int8_t)numa[r];
    }
    tutti__topo_ring(v, host, 4, order);
    static const int want[4] = {0, 2, 1, 3};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(order[i], want[i], "position %d: rank %d, expected %d", i, order[i], want[i]);
    }
}

Test(topo, view_of_a_rank_uses_gpu_local_rank_mod_gpus)
{
    struct tutti_topo t = load_gen("");
    struct tutti_topo_rank v;
    tutti__topo_rank_view(&t, 11, &v);
    cr_expect_eq(v.gpu, 3);
    cr_expect_str_eq(v.nic_name, "mlx5_3");
    cr_expect(v.flags & TUTTI_TOPO_F_RDMA);
    cr_expect(v.flags & TUTTI_TOPO_F_FILE);
    cr_expect_eq(v.nic_link, TUTTI_LINK_PCI_SWITCH);
    char why[64];
    cr_expect_eq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK, "%s", why);
}

Test(topo, validate_rejects_bad_records)
{
    struct tutti_topo t = load_gen("");
    struct tutti_topo_rank good, v;
    char why[64];
    tutti__topo_rank_view(&t, 0, &good);
    v = good;
    v.magic ^= 1;
    cr_expect_neq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK);
    cr_expect(strstr(why, "magic") != NULL, "%s", why);
    v = good;
    v.gpu = 8;
    cr_expect_neq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK);
    v = good;
    v.nic = -2;
    cr_expect_neq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK);
    v = good;
    memset(v.nic_name, 'x', sizeof(v.nic_name));
    cr_expect_neq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK);
    v = good;
    v.nvlink |= 1u << 9;
    cr_expect_neq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK);
    v = good;
    v.ngpus = TUTTI_TOPO_MAX_GPUS + 1;
    cr_expect_neq(tutti__topo_rank_validate(&v, why, sizeof(why)), TUTTI_OK);
}

static void cpu_record(struct tutti_topo_rank *v, uint64_t machine, int first, int cpus)
{
    memset(v, 0, sizeof(*v));
    v->magic = TUTTI_TOPO_RANK_MAGIC;
    v->machine = machine;
    v->cpu_first = (uint16_t)first;
    v->cpus = (uint16_t)cpus;
    v->gpu = v->nic = v->pci_switch = v->host_bridge = -1;
}

/* The bug: 2 ranks pinned to a CPU each (the perf tools' --bind core) counted 2 local ranks
 * against the 1 CPU each may use, so they never spun. */
Test(topo, ranks_bound_to_a_cpu_each_are_not_oversubscribed)
{
    struct tutti_topo_rank v[2];
    cpu_record(&v[0], 7, 0, 1);
    cpu_record(&v[1], 7, 1, 1);
    double mine, max;
    tutti__topo_cpu_load(v, 2, 1, &mine, &max);
    cr_expect_eq(mine, 1.0);
    cr_expect_eq(max, 1.0);
}

/* Unbound ranks share one set; network namespaces on one machine ("hosts" with their own host
 * ids) share its CPUs; another machine's load is its own; the most crowded one is max. */
Test(topo, cpu_load_counts_a_machines_ranks_over_its_cpu_sets)
{
    struct tutti_topo_rank v[10];
    for (int r = 0; r < 8; r++) {
        cpu_record(&v[r], 42, 0, 2);
    }
    cpu_record(&v[8], 99, 0, 8);
    cpu_record(&v[9], 99, 8, 8);
    double mine, max;
    tutti__topo_cpu_load(v, 10, 3, &mine, &max);
    cr_expect_eq(mine, 4.0, "8 ranks on one 2-CPU set: %g", mine);
    cr_expect_eq(max, 4.0);
    tutti__topo_cpu_load(v, 10, 9, &mine, &max);
    cr_expect_eq(mine, 2.0 / 16.0, "2 ranks on two sets of 8: %g", mine);
    cr_expect_eq(max, 4.0, "the most crowded machine, seen from another: %g", max);
    char why[64] = "";
    cr_expect_eq(tutti__topo_rank_validate(&v[2], why, sizeof(why)), TUTTI_OK, "%s", why);
    v[2].cpus = 0;
    cr_expect_neq(tutti__topo_rank_validate(&v[2], why, sizeof(why)), TUTTI_OK);
    cr_expect(strstr(why, "CPU") != NULL, "%s", why);
}

Test(topo, missing_file_is_a_clear_error)
{
    struct tutti_topo t;
    cr_assert_eq(tutti__topo_load("/nonexistent/dgx.xml", &t), TUTTI_ERR_INVALID_ARG);
    cr_expect(strstr(t.error, "/nonexistent/dgx.xml") != NULL, "%s", t.error);
    cr_expect(strstr(t.error, "No such file") != NULL, "%s", t.error);
    cr_expect(t.pus >= 1, "the sysconf fallback stays usable");
}

Test(topo, bad_xml_is_a_clear_error)
{
    char path[] = "/tmp/tutti-topo-bad-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    static const char junk[] = "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"><object";
    cr_assert(write(fd, junk, sizeof(junk) - 1) == (ssize_t)sizeof(junk) - 1);
    close(fd);
    struct tutti_topo t;
    tutti_status_t st = tutti__topo_load(path, &t);
    unlink(path);
    cr_assert_eq(st, TUTTI_ERR_INVALID_ARG);
    cr_expect(strstr(t.error, path) != NULL && strstr(t.error, "not a valid hwloc XML") != NULL,
              "%s", t.error);
}

/* Load tests/fuzz/corpus/topo/<name>: it must be refused with an error naming the file and
 * saying `why` (or `or_why` when not NULL), the sysconf fallback left usable. */
static void expect_refused(const char *name, const char *why, const char *or_why)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/topo/%s", SOURCE_ROOT, name);
    struct tutti_topo t;
    tutti_status_t st = tutti__topo_load(path, &t);
    cr_assert_eq(st, TUTTI_ERR_INVALID_ARG, "%s", t.error);
    int said = strstr(t.error, why) != NULL || (or_why != NULL && strstr(t.error, or_why) != NULL);
    cr_expect(strstr(t.error, path) != NULL && said, "%s", t.error);
    cr_expect(t.pus >= 1, "the sysconf fallback stays usable");
}

/* hwloc 2.9 reads memory it did not initialise loading this (a Core without complete_cpuset;
 * found by fuzz_topo, a NULL dereference under ASan, whose malloc fills new memory; glibc's
 * zeroed pages make it a clean refusal): tutti probes a file in a child process first, so
 * either way it is an error naming the file, never a crash. */
Test(topo, xml_that_crashes_hwloc_is_a_clear_error)
{
    expect_refused("hwloc-crash-no-complete-cpuset.xml", "malformed", "not a valid");
}

/* hwloc sizes a NUMA node's nodeset by its os_index, 2^32 - 1 when the attribute is absent:
 * 512 MB for this 12-line file (found by fuzz_topo, whose process then passed libFuzzer's
 * memory limit when it loaded such files again after the probe). The probe measures what the
 * load took and refuses the file, so the caller never allocates it. */
Test(topo, xml_that_takes_hwloc_too_much_memory_is_refused)
{
    /* On a loaded machine (meson's MALLOC_PERTURB_ fills the 512 MB) the probe may pass its
     * time limit first: that refusal names the file too. */
    expect_refused("hwloc-numa-without-os-index.xml", " MB to load", "did not finish loading");
}

Test(topo, dump_and_reload_keep_the_machine)
{
    char path[64], out[] = "/tmp/tutti-topo-dump-XXXXXX";
    cr_assert(topo_gen("--nvlink-pairs 0-4", path) == 0);
    int fd = mkstemp(out);
    cr_assert(fd >= 0);
    close(fd);
    char err[512];
    cr_assert_eq(tutti__topo_dump(path, out, err, sizeof(err)), TUTTI_OK, "%s", err);
    struct tutti_topo a, b;
    cr_assert_eq(tutti__topo_load(path, &a), TUTTI_OK);
    cr_assert_eq(tutti__topo_load(out, &b), TUTTI_OK, "%s", b.error);
    unlink(path);
    unlink(out);
    cr_expect_eq(a.ngpus, b.ngpus);
    cr_expect_eq(a.nnics, b.nnics);
    cr_expect_eq(a.pci_switches, b.pci_switches);
    cr_expect_eq(b.gpu[0].nvlink, 1u << 4, "the NVLink matrix survives the dump");
}

Test(topo, this_machine_loads_or_says_why)
{
    struct tutti_topo t;
    tutti_status_t st = tutti__topo_load(NULL, &t);
    cr_expect(st == TUTTI_OK || t.error[0] != '\0');
    cr_expect(t.pus >= 1 && t.allowed_pus >= 1 && t.allowed_pus <= t.pus);
    cr_expect(t.nvml_note[0] != '\0', "NVML's state is reported either way");
}

Test(topo, hosts_label_each_rank_with_its_hosts_lowest_rank)
{
    enum { N = 9 };
    static const int machine[N] = {2, 0, 2, 1, 0, 1, 2, 3, 0}; /* host id byte of each rank */
    static const int want[N] = {0, 1, 0, 3, 1, 3, 0, 7, 1};
    struct tutti_peer_info peers[N];
    memset(peers, 0, sizeof(peers));
    for (int r = 0; r < N; r++) {
        peers[r].hostid[0] =
            (uint8_t)(0xf0 - machine[r]); /* sorted order differs from rank order */
    }
    struct tutti_topo_hostids ids = {peers[0].hostid, TUTTI_HOSTID_BYTES, sizeof(peers[0])};
    int *host = tutti__topo_hosts(N, &ids);
    cr_assert(host != NULL);
    for (int r = 0; r < N; r++) {
        cr_expect_eq(host[r], want[r], "rank %d: host label %d, expected %d", r, host[r], want[r]);
    }
    free(host);
}

/* ---- the greedy walk by places, against the walk over every pair it replaced ---- */

static int ref_distance(const struct tutti_topo_rank *v, const int *host, int a, int b)
{
    const struct tutti_topo_rank *x = &v[a], *y = &v[b];
    int gpus = x->gpu >= 0 && y->gpu >= 0;
    struct tutti_topo_place px = {x->package, x->numa, gpus ? x->pci_switch : -1,
                                  gpus ? x->host_bridge : -1};
    struct tutti_topo_place py = {y->package, y->numa, gpus ? y->pci_switch : -1,
                                  gpus ? y->host_bridge : -1};
    tutti_link_t no_nvlink =
        gpus && x->gpu == y->gpu ? TUTTI_LINK_SELF : tutti__topo_place_link(&px, &py);
    tutti_link_t with = tutti__topo_rank_link(v, host, a, b); /* NVLink counted */
    return (int)with * TUTTI_LINK_COUNT + (int)no_nvlink;
}

/* One host, ranks 0..n-1: from rank 0, always the nearest left, then the lowest rank. */
static void ref_walk(const struct tutti_topo_rank *v, const int *host, int n, int *out)
{
    int used[64] = {0};
    out[0] = 0;
    used[0] = 1;
    for (int i = 1; i < n; i++) {
        int best = -1, bd = 0;
        for (int r = 0; r < n; r++) {
            int d = used[r] ? 0 : ref_distance(v, host, out[i - 1], r);
            if (!used[r] && (best < 0 || d < bd)) {
                best = r;
                bd = d;
            }
        }
        out[i] = best;
        used[best] = 1;
    }
}

Test(topo, ring_walk_by_places_matches_the_walk_over_every_pair)
{
    unsigned seed = 12345;
    for (int trial = 0; trial < 300; trial++) {
        int n = 1 + (int)(rand_r(&seed) % 64);
        struct tutti_topo_rank v[64];
        int host[64], order[64], ref[64];
        for (int r = 0; r < n; r++) {
            memset(&v[r], 0, sizeof(v[r]));
            v[r].magic = TUTTI_TOPO_RANK_MAGIC;
            v[r].gpu = (int8_t)((int)(rand_r(&seed) % 5) - 1); /* -1 (none) to 3 */
            v[r].package = (int8_t)(rand_r(&seed) % 2);
            v[r].numa = (int8_t)((int)(rand_r(&seed) % 3) - 1);
            v[r].pci_switch = (int8_t)((int)(rand_r(&seed) % 3) - 1);
            v[r].host_bridge = (int8_t)((int)(rand_r(&seed) % 2) - 1);
            v[r].nvlink = rand_r(&seed) % 16;
            host[r] = 0;
        }
        tutti__topo_ring(v, host, n, order);
        ref_walk(v, host, n, ref);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(order[i], ref[i], "trial %d, %d ranks: position %d is rank %d, not %d",
                         trial, n, i, order[i], ref[i]);
        }
    }
}

#define FAKE_N 6

/* A bootstrap all-gather for tutti__topo_gather: the other ranks' views from `theirs`. */
struct fake_boot {
    const struct tutti_topo_rank *theirs;
    int rank, calls;
};

static tutti_status_t fake_allgather(void *arg, const void *mine, void *all, size_t size)
{
    struct fake_boot *b = arg;
    b->calls++;
    cr_assert_eq(size, sizeof(struct tutti_topo_rank));
    memcpy(all, b->theirs, FAKE_N * size);
    memcpy((uint8_t *)all + (size_t)b->rank * size, mine, size);
    return TUTTI_OK;
}

/* Run tutti__topo_gather for rank 1 of FAKE_N ranks on two hosts, with the early views `early`
 * (or none); the all-gathers it made. */
static int gather_calls(const struct tutti_topo_rank *early, struct tutti_topo_rank *got)
{
    uint8_t ids[FAKE_N][TUTTI_HOSTID_BYTES] = {{0}};
    struct tutti_topo_rank later[FAKE_N];
    for (int r = 0; r < FAKE_N; r++) {
        ids[r][0] = (uint8_t)(r / 2);
        cpu_record(&later[r], 7, r, 1);
        later[r].pci_switch = 5; /* tells the all-gathered views from the early ones */
    }
    struct fake_boot b = {.theirs = later, .rank = 1};
    struct tutti_topo_group g = {
        .nranks = FAKE_N,
        .rank = 1,
        .hosts = {ids[0], TUTTI_HOSTID_BYTES, TUTTI_HOSTID_BYTES},
        .early = early,
        .early_stride = sizeof(*early),
        .allgather = fake_allgather,
        .allgather_arg = &b,
    };
    struct tutti_topo_rank *all = NULL;
    struct tutti_layout *layout = NULL;
    cr_assert_eq(tutti__topo_gather(&g, &all, &layout), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_expect_eq(layout->nhosts, FAKE_N / 2);
    memcpy(got, all, FAKE_N * sizeof(*all));
    free(all);
    tutti__layout_free(layout);
    return b.calls;
}

Test(topo, views_that_came_with_the_records_serve_unless_a_rank_has_a_gpu)
{
    struct tutti_topo_rank early[FAKE_N], got[FAKE_N];
    for (int r = 0; r < FAKE_N; r++) {
        cpu_record(&early[r], 7, r, 1);
    }
    cr_expect_eq(gather_calls(early, got), 0, "no GPU: no all-gather");
    cr_expect_eq(memcmp(got, early, sizeof(got)), 0, "the early views, as they came");
    cr_expect_eq(gather_calls(NULL, got), 1, "no early views: all-gathered");
    cr_expect_eq(got[0].pci_switch, 5);
    early[FAKE_N - 1].ngpus = 1; /* the last rank's machine has a GPU: its local rank picks it */
    early[FAKE_N - 1].gpu = 0;
    cr_expect_eq(gather_calls(early, got), 1, "a GPU somewhere: every rank all-gathers");
    cr_expect_eq(got[FAKE_N - 1].pci_switch, 5, "the all-gathered views, not the early ones");
}
