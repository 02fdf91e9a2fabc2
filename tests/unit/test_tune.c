/*
 * test_tune.c - the cost model and the tuner (src/coll/tune.c): the choices the issue asks for
 * (tree for small and ring for large messages across many hosts), crossovers that move the
 * right way with the rank count and the latency, times that never fall as messages grow, the
 * growth of ring and tree latency, and invalid input refused.
 */
#include "coll/tune.h"
#include "exec/plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static const char *const ring_tree[] = {"ring", "tree"};

/* GPU hosts: 8 per host on NVLink, 8 NDR NICs each (the model tool's default). */
static struct tutti_tune_links gpu_links(void)
{
    struct tutti_tune_links l;
    tutti__tune_links_make(TUTTI_LINK_NVLINK, TUTTI_LINK_IB, 8, &l);
    return l;
}

/* CPU hosts: 2 ranks per host over shared memory, TCP between hosts, one NIC. */
static struct tutti_tune_links host_links(void)
{
    struct tutti_tune_links l;
    tutti__tune_links_make(TUTTI_LINK_SHM, TUTTI_LINK_TCP, 1, &l);
    return l;
}

static const char *pick(size_t bytes, int nranks, int nhosts, const struct tutti_tune_links *l)
{
    struct tutti_tune_choice ch;
    int i =
        tutti__tune_pick(TUTTI_COLL_ALLREDUCE, bytes, nranks, nhosts, ring_tree, 2, l, NULL, &ch);
    cr_assert_geq(i, 0, "nothing picked at %zu bytes, %d ranks", bytes, nranks);
    return ch.algo;
}

/* The smallest size (in steps of 1/8 of a doubling) from which ring is as fast as tree. */
static double crossover(int nranks, int nhosts, const struct tutti_tune_links *l)
{
    for (size_t b = 8; b <= ((size_t)1 << 40); b += b / 8) {
        if (strcmp(pick(b, nranks, nhosts, l), "ring") == 0) {
            return (double)b;
        }
    }
    return INFINITY;
}

Test(tune, tree_for_small_ring_for_large_across_many_hosts)
{
    struct tutti_tune_links g = gpu_links(), h = host_links();
    cr_expect_str_eq(pick(8, 1024, 128, &g), "tree");
    cr_expect_str_eq(pick(64 << 10, 1024, 128, &g), "tree");
    cr_expect_str_eq(pick((size_t)16 << 30, 128, 16, &g), "ring");
    cr_expect_str_eq(pick(8, 32, 16, &h), "tree");
    cr_expect_str_eq(pick((size_t)4 << 30, 32, 16, &h), "ring");
    /* the same hosts with 2 and 4 ranks per CPU (as the namespace hosts of one 2-core VM) */
    for (double load = 2; load <= 4; load *= 2) {
        h.cpu_load = load;
        cr_expect_str_eq(pick(8, 32, 16, &h), "tree", "%g ranks per CPU", load);
        cr_expect_str_eq(pick((size_t)4 << 30, 32, 16, &h), "ring", "%g ranks per CPU", load);
    }
}

Test(tune, crossover_grows_with_nranks)
{
    struct tutti_tune_links g = gpu_links();
    double prev = 0;
    for (int hosts = 8; hosts <= 1024; hosts *= 4) {
        double x = crossover(hosts * 8, hosts, &g);
        cr_expect(x > prev, "crossover %g B at %d hosts is not above %g B", x, hosts, prev);
        cr_expect(isfinite(x), "ring never wins at %d hosts", hosts);
        prev = x;
    }
}

Test(tune, crossover_grows_with_latency)
{
    struct tutti_tune_links g = gpu_links();
    double low = crossover(512, 64, &g);
    g.inter.lat_us *= 4;
    double high = crossover(512, 64, &g);
    cr_expect(high > low, "4x the network latency: crossover %g B, was %g B", high, low);
    g.inter.lat_us /= 16; /* a quarter of the original, and of the NVLink latency too */
    g.intra.lat_us /= 4;
    double lower = crossover(512, 64, &g);
    cr_expect(lower < low, "a quarter of the latencies: crossover %g B, was %g B", lower, low);
}

/* Every modelled algorithm of every collective, on host (crowded too) and GPU systems: time
 * never falls as the message grows (the best configuration, and a fixed one), but where the
 * trees pass a chunk: a message of at most a chunk goes whole over one tree, one a byte larger
 * in halves over both trees at once (coll/trees.c), which can be faster. */
Test(tune, time_monotonic_in_bytes)
{
    static const struct {
        tutti_coll_t coll;
        const char *algo;
    } all[] = {
        {TUTTI_COLL_ALLREDUCE, "ring"},         {TUTTI_COLL_ALLREDUCE, "tree"},
        {TUTTI_COLL_ALLREDUCE, "hier"},         {TUTTI_COLL_ALLREDUCE, "rd"},
        {TUTTI_COLL_ALLREDUCE, "rabenseifner"}, {TUTTI_COLL_ALLREDUCE, "oneshot"},
        {TUTTI_COLL_BROADCAST, "ring"},         {TUTTI_COLL_BROADCAST, "tree"},
        {TUTTI_COLL_BROADCAST, "direct"},       {TUTTI_COLL_REDUCE, "tree"},
        {TUTTI_COLL_REDUCE_SCATTER, "ring"},    {TUTTI_COLL_REDUCE_SCATTER, "direct"},
        {TUTTI_COLL_ALLGATHER, "ring"},         {TUTTI_COLL_ALLGATHER, "bruck"},
        {TUTTI_COLL_ALLGATHER, "direct"},       {TUTTI_COLL_ALLTOALL, "pairwise"},
        {TUTTI_COLL_ALLTOALL, "bruck"},
    };
    struct tutti_tune_sys systems[] = {
        {2, 1, host_links()}, {4, 1, host_links()},     {12, 3, host_links()},
        {64, 8, gpu_links()}, {1000, 125, gpu_links()}, {24, 24, host_links()},
        {8, 4, host_links()}, {8, 1, host_links()},
    };
    systems[6].links.cpu_load = 4; /* 4 namespace hosts of 2 ranks on 2 CPUs */
    systems[7].links.cpu_load = 2.5;
    for (size_t s = 0; s < sizeof(systems) / sizeof(systems[0]); s++) {
        for (size_t a = 0; a < sizeof(all) / sizeof(all[0]); a++) {
            double prev_best = -1, prev_fixed = -1;
            struct tutti_tune_cfg fixed = {128 << 10, 2, TUTTI_PROTO_SIMPLE}, cfg;
            size_t prev_b = 0;
            for (size_t b = 0; b <= ((size_t)1 << 32); b = b < 8 ? b + 1 : b + b / 3) {
                double best = tutti__tune_best(all[a].coll, all[a].algo, b, &systems[s], &cfg);
                double t = tutti__tune_time(all[a].coll, all[a].algo, b, &systems[s], &fixed);
                cr_assert(best > 0 && t > 0, "%s %s not modelled", tutti__coll_name(all[a].coll),
                          all[a].algo);
                /* Trees past a chunk the search tries (4 KiB..4 MiB; the fixed one is 128 KiB):
                 * one tree, then halves over two; hier's rails (B / ranks per host) likewise. */
                int tree = strcmp(all[a].algo, "tree") == 0;
                int hier = strcmp(all[a].algo, "hier") == 0;
                size_t per =
                    hier ? (size_t)((systems[s].nranks + systems[s].nhosts - 1) / systems[s].nhosts)
                         : 1;
                for (size_t c = 4096; (tree || hier) && c <= (4u << 20); c *= 2) {
                    if (prev_b <= c * per && b > c * per) {
                        prev_fixed = t;
                        prev_best = best;
                    }
                }
                prev_b = b;
                cr_assert(best >= prev_best && t >= prev_fixed,
                          "%s %s, %d ranks on %d hosts: %zu bytes takes %g us (fixed %g), less "
                          "than a smaller message (%g, %g)",
                          tutti__coll_name(all[a].coll), all[a].algo, systems[s].nranks,
                          systems[s].nhosts, b, best, t, prev_best, prev_fixed);
                prev_best = best;
                prev_fixed = t;
            }
        }
    }
}

/* Small-message latency less the base: ring doubles when the ranks double; tree adds a
 * constant per doubling of the hosts. */
Test(tune, ring_latency_linear_tree_logarithmic)
{
    struct tutti_tune_links g = gpu_links();
    struct tutti_tune_cfg cfg = {64 << 10, 1, TUTTI_PROTO_SIMPLE};
    double ring[4], tree[4];
    for (int i = 0; i < 4; i++) {
        int hosts = 64 << i;
        struct tutti_tune_sys s = {hosts * 8, hosts, g};
        ring[i] = tutti__tune_time(TUTTI_COLL_ALLREDUCE, "ring", 8, &s, &cfg) - g.base_us;
        tree[i] = tutti__tune_time(TUTTI_COLL_ALLREDUCE, "tree", 8, &s, &cfg) - g.base_us;
    }
    for (int i = 1; i < 4; i++) {
        cr_expect(fabs(ring[i] / ring[i - 1] - 2) < 0.05, "ring %g -> %g us", ring[i - 1], ring[i]);
        double step = tree[i] - tree[i - 1], first = tree[1] - tree[0];
        cr_expect(step > 0 && fabs(step - first) < 1e-6 * first, "tree step %g us, first %g us",
                  step, first);
    }
}

/* 1 GiB over 8 NICs per host: enough streams to use them all (a ring channel leaves a host
 * through one NIC, a tree channel carries two trees); 8 bytes on GPUs: a low-latency protocol. */
Test(tune, many_nics_get_many_channels)
{
    struct tutti_tune_links g = gpu_links();
    struct tutti_tune_choice ch;
    cr_assert_geq(tutti__tune_pick(TUTTI_COLL_ALLREDUCE, (size_t)1 << 30, 512, 64, ring_tree, 2, &g,
                                   NULL, &ch),
                  0);
    int streams = ch.cfg.nchannels * (strcmp(ch.algo, "tree") == 0 ? 2 : 1);
    cr_expect_geq(streams, 8, "1 GiB over 8 NICs: %s on %d channel(s)", ch.algo, ch.cfg.nchannels);
    cr_assert_geq(tutti__tune_pick(TUTTI_COLL_ALLREDUCE, 8, 512, 64, ring_tree, 2, &g, NULL, &ch),
                  0);
    cr_expect_neq(ch.cfg.proto, TUTTI_PROTO_SIMPLE, "8 bytes on GPUs chose the Simple protocol");
}

Test(tune, unknown_and_invalid_are_refused)
{
    struct tutti_tune_links h = host_links();
    struct tutti_tune_sys s = {4, 1, h};
    struct tutti_tune_cfg cfg = {128 << 10, 1, TUTTI_PROTO_SIMPLE};
    cr_expect_eq(tutti__tune_time(TUTTI_COLL_ALLREDUCE, "nosuch", 8, &s, &cfg), -1);
    cr_expect_eq(tutti__tune_time(TUTTI_COLL_ALLTOALL, "ring", 8, &s, &cfg), -1);
    cfg.proto = TUTTI_PROTO_LL; /* not offered by host links */
    cr_expect_eq(tutti__tune_time(TUTTI_COLL_ALLREDUCE, "ring", 8, &s, &cfg), -1);
    cfg.proto = TUTTI_PROTO_SIMPLE;
    struct tutti_tune_sys bad = {4, 5, h};
    cr_expect_eq(tutti__tune_time(TUTTI_COLL_ALLREDUCE, "ring", 8, &bad, &cfg), -1);

    const char *const names[] = {"nosuch", NULL};
    double times[2] = {0, 0};
    struct tutti_tune_choice ch = {.index = 42};
    cr_expect_eq(tutti__tune_pick(TUTTI_COLL_ALLREDUCE, 8, 4, 1, names, 2, &h, times, &ch), -1);
    cr_expect_eq(ch.index, 42, "the choice was written on failure");
    cr_expect(times[0] == -1 && times[1] == -1);
}

Test(tune, one_rank_costs_the_base)
{
    struct tutti_tune_links h = host_links();
    struct tutti_tune_sys s = {1, 1, h};
    struct tutti_tune_cfg cfg = {128 << 10, 1, TUTTI_PROTO_SIMPLE};
    cr_expect_eq(tutti__tune_time(TUTTI_COLL_ALLREDUCE, "ring", 1 << 20, &s, &cfg), h.base_us);
}
