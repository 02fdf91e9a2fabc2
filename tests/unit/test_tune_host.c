/*
 * test_tune_host.c - the cost model's host-path terms (src/coll/tune.c): the CPU time of each
 * message sent or received, the wake-ups and scheduler switches when ranks outnumber CPUs, the
 * CPU-bound and per-channel bandwidths, and the search over chunk sizes and channel counts;
 * and that the calibrated figures give back the measurements they come from
 * (topology/tune_links.c, perf/results/2026-11-25-tuner.md).
 */
#include "coll/tune.h"
#include "exec/plan.h"

#include <criterion/criterion.h>
#include <math.h>

static struct tutti_tune_links links(tutti_link_kind_t intra, double load)
{
    struct tutti_tune_links l;
    tutti__tune_links_make(intra, TUTTI_LINK_TCP, 1, &l);
    l.cpu_load = load;
    return l;
}

static double at(tutti_coll_t coll, const char *algo, size_t bytes, int n, int h,
                 const struct tutti_tune_links *l, size_t chunk, int nch)
{
    struct tutti_tune_sys s = {n, h, *l};
    struct tutti_tune_cfg cfg = {chunk, nch, TUTTI_PROTO_SIMPLE};
    double t = tutti__tune_time(coll, algo, bytes, &s, &cfg);
    cr_assert_gt(t, 0, "%s %s not modelled", tutti__coll_name(coll), algo);
    return t;
}

/* Within 30% (the model's stated error, the margin of coll/tuned.c). */
static void near(double model, double measured, const char *what)
{
    cr_expect(model > measured / 1.3 && model < measured * 1.3, "%s: model %g us, measured %g us",
              what, model, measured);
}

/* Each message sent or received costs cpu_us on the rank's thread: one-shot on n ranks sends
 * and receives n - 1, the ring 2(n - 1) steps of one each way. */
Test(tune_host, every_message_sent_or_received_costs_cpu_time)
{
    for (int n = 2; n <= 8; n++) {
        struct tutti_tune_links a = links(TUTTI_LINK_SHM, 1), b = a;
        b.intra.cpu_us += 1.0;
        double one = at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, n, 1, &b, 1 << 17, 1) -
                     at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, n, 1, &a, 1 << 17, 1);
        double ring = at(TUTTI_COLL_ALLREDUCE, "ring", 8, n, 1, &b, 1 << 17, 1) -
                      at(TUTTI_COLL_ALLREDUCE, "ring", 8, n, 1, &a, 1 << 17, 1);
        cr_expect(fabs(one - 2 * (n - 1)) < 1e-9, "%d ranks: one-shot +%g us", n, one);
        cr_expect(fabs(ring - 4 * (n - 1)) < 1e-9, "%d ranks: ring +%g us", n, ring);
        /* the root of a direct broadcast only sends */
        double bc = at(TUTTI_COLL_BROADCAST, "direct", 8, n, 1, &b, 1 << 17, 1) -
                    at(TUTTI_COLL_BROADCAST, "direct", 8, n, 1, &a, 1 << 17, 1);
        cr_expect(fabs(bc - (n - 1)) < 1e-9, "%d ranks: direct broadcast +%g us", n, bc);
    }
}

/* Ranks outnumbering CPUs: each step on the critical path costs a switch, each message a
 * wake-up, and all of a rank's CPU work load^2 times as much; nothing of it below one rank
 * per CPU. */
Test(tune_host, crowded_cpus_cost_a_switch_per_step_and_a_wake_up_per_message)
{
    struct tutti_tune_links a = links(TUTTI_LINK_LOOPBACK, 2), b = a;
    b.intra.switch_us += 1.0;
    for (int n = 4; n <= 16; n *= 2) {
        double ring = at(TUTTI_COLL_ALLREDUCE, "ring", 8, n, 1, &b, 1 << 19, 1) -
                      at(TUTTI_COLL_ALLREDUCE, "ring", 8, n, 1, &a, 1 << 19, 1);
        double rd = at(TUTTI_COLL_ALLREDUCE, "rd", 8, n, 1, &b, 1 << 19, 1) -
                    at(TUTTI_COLL_ALLREDUCE, "rd", 8, n, 1, &a, 1 << 19, 1);
        cr_expect(fabs(ring - 4.0 * 2 * (n - 1)) < 1e-9, "%d ranks: ring +%g us", n, ring);
        cr_expect(fabs(rd - 4.0 * log2(n)) < 1e-9, "%d ranks: rd +%g us", n, rd);
    }
    b = a;
    b.intra.wake_us += 1.0;
    double one = at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 4, 1, &b, 1 << 19, 1) -
                 at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 4, 1, &a, 1 << 19, 1);
    cr_expect(fabs(one - 4.0 * 6) < 1e-9, "6 messages, 4x: +%g us", one);
    /* a CPU each (or more): no switch, no wake-up */
    struct tutti_tune_links c = links(TUTTI_LINK_LOOPBACK, 1), d = c;
    d.intra.switch_us += 5;
    d.intra.wake_us += 5;
    cr_expect_eq(at(TUTTI_COLL_ALLREDUCE, "ring", 8, 4, 1, &c, 1 << 19, 1),
                 at(TUTTI_COLL_ALLREDUCE, "ring", 8, 4, 1, &d, 1 << 19, 1));
    c.cpu_load = d.cpu_load = 0.25;
    cr_expect_eq(at(TUTTI_COLL_ALLREDUCE, "ring", 8, 4, 1, &c, 1 << 19, 1),
                 at(TUTTI_COLL_ALLREDUCE, "ring", 8, 4, 1, &d, 1 << 19, 1));
}

/* GPU links have no host-path CPU terms: a crowded host does not change their predictions. */
Test(tune_host, gpu_links_ignore_the_cpu_load)
{
    struct tutti_tune_links g;
    tutti__tune_links_make(TUTTI_LINK_NVLINK, TUTTI_LINK_IB, 8, &g);
    struct tutti_tune_links crowded = g;
    crowded.cpu_load = 8;
    for (size_t b = 8; b <= ((size_t)1 << 30); b *= 64) {
        cr_expect_eq(at(TUTTI_COLL_ALLREDUCE, "ring", b, 64, 8, &g, 1 << 20, 4),
                     at(TUTTI_COLL_ALLREDUCE, "ring", b, 64, 8, &crowded, 1 << 20, 4));
    }
}

/* A CPU-bound link shares its bandwidth among the ranks of a CPU; a TCP stream is capped per
 * channel, so two channels help only while the CPU has bandwidth to spare. */
Test(tune_host, bandwidth_is_shared_by_a_crowded_cpu_and_capped_per_stream)
{
    size_t big = (size_t)256 << 20;
    struct tutti_tune_links one = links(TUTTI_LINK_SHM, 1), two = links(TUTTI_LINK_SHM, 2);
    double t1 = at(TUTTI_COLL_ALLGATHER, "ring", big, 4, 1, &one, 1 << 17, 1);
    double t2 = at(TUTTI_COLL_ALLGATHER, "ring", big, 4, 1, &two, 1 << 17, 1);
    cr_expect(t2 / t1 > 1.9 && t2 / t1 < 2.5, "256 MiB all-gather, 2 ranks per CPU: %g x", t2 / t1);
    struct tutti_tune_links lo = links(TUTTI_LINK_LOOPBACK, 1);
    double c1 = at(TUTTI_COLL_ALLREDUCE, "ring", big, 2, 1, &lo, 1 << 19, 1);
    double c2 = at(TUTTI_COLL_ALLREDUCE, "ring", big, 2, 1, &lo, 1 << 19, 2);
    cr_expect(c1 / c2 > 1.2, "loopback, a CPU each: 2 channels %g x faster", c1 / c2);
    lo.cpu_load = 2;
    c1 = at(TUTTI_COLL_ALLREDUCE, "ring", big, 4, 1, &lo, 1 << 19, 1);
    c2 = at(TUTTI_COLL_ALLREDUCE, "ring", big, 4, 1, &lo, 1 << 19, 2);
    cr_expect(c1 / c2 < 1.05, "loopback, 2 ranks per CPU: 2 channels %g x faster", c1 / c2);
}

/* The search stays within the transports' slot and the communicator's channels, and takes
 * the larger chunk and the fewer channels when they tie. */
Test(tune_host, the_search_stays_within_the_slot_and_the_channels)
{
    struct tutti_tune_links l = links(TUTTI_LINK_LOOPBACK, 1);
    static const size_t slots[] = {100000, 1 << 17, 1 << 19, 4096, 1000};
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        for (int nch = 1; nch <= 4; nch *= 2) {
            l.max_chunk = slots[i];
            l.max_channels = nch;
            struct tutti_tune_sys s = {4, 1, l};
            for (size_t b = 8; b <= ((size_t)1 << 28); b *= 8) {
                struct tutti_tune_cfg cfg;
                cr_assert_gt(tutti__tune_best(TUTTI_COLL_BROADCAST, "ring", b, &s, &cfg), 0);
                cr_expect(cfg.chunk_bytes <= slots[i] && cfg.chunk_bytes > 0, "slot %zu: chunk %zu",
                          slots[i], cfg.chunk_bytes);
                cr_expect(cfg.nchannels >= 1 && cfg.nchannels <= nch, "%d channels of %d",
                          cfg.nchannels, nch);
            }
        }
    }
    /* 8 bytes: every chunk and channel count gives one message; the first tried stays */
    l.max_chunk = 1 << 19;
    l.max_channels = 4;
    struct tutti_tune_sys s = {4, 1, l};
    struct tutti_tune_cfg cfg;
    cr_assert_gt(tutti__tune_best(TUTTI_COLL_ALLREDUCE, "oneshot", 8, &s, &cfg), 0);
    cr_expect_eq(cfg.chunk_bytes, (size_t)1 << 19);
    cr_expect_eq(cfg.nchannels, 1);
}

/*
 * Chunks: where a message crosses many fast hops one after the other (a tree of GPUs across
 * hosts), smaller chunks fill the pipeline sooner and the model takes them for mid sizes;
 * on this machine's host path a message costs more than its pipeline saves, and the model
 * keeps whole slots, as measured (tune_links.c: 8 and 32 KiB slots slower than 128 KiB).
 */
Test(tune_host, chunks_shrink_where_the_pipeline_fill_pays_not_on_the_host_path)
{
    struct tutti_tune_links g;
    tutti__tune_links_make(TUTTI_LINK_NVLINK, TUTTI_LINK_IB, 8, &g);
    struct tutti_tune_sys gs = {1024, 128, g};
    struct tutti_tune_cfg mid, big;
    cr_assert_gt(tutti__tune_best(TUTTI_COLL_ALLREDUCE, "tree", (size_t)16 << 20, &gs, &mid), 0);
    cr_assert_gt(tutti__tune_best(TUTTI_COLL_ALLREDUCE, "tree", (size_t)4 << 30, &gs, &big), 0);
    cr_expect_lt(mid.chunk_bytes, (size_t)4 << 20, "16 MiB tree over 128 hosts: chunk %zu",
                 mid.chunk_bytes);
    cr_expect_geq(big.chunk_bytes, mid.chunk_bytes);
    for (double load = 1; load <= 2; load++) {
        struct tutti_tune_links h = links(TUTTI_LINK_SHM, load);
        h.max_chunk = 1 << 17;
        struct tutti_tune_sys hs = {4, 1, h};
        for (size_t b = 1 << 16; b <= (1 << 26); b *= 4) {
            struct tutti_tune_cfg c;
            cr_assert_gt(tutti__tune_best(TUTTI_COLL_ALLREDUCE, "ring", b, &hs, &c), 0);
            cr_expect_eq(c.chunk_bytes, (size_t)1 << 17, "shm all-reduce %zu B: chunk %zu", b,
                         c.chunk_bytes);
            cr_assert_gt(tutti__tune_best(TUTTI_COLL_BROADCAST, "ring", b, &hs, &c), 0);
            cr_expect_eq(c.chunk_bytes, (size_t)1 << 17, "shm broadcast %zu B: chunk %zu", b,
                         c.chunk_bytes);
        }
    }
}

/*
 * The calibration: the figures give back the medians they were fitted to (2-core VM, ranks
 * forked by the perf tools, perf/results/2026-11-25-tuner.md), within 30%.
 */
Test(tune_host, host_figures_match_their_measurements)
{
    struct tutti_tune_links shm1 = links(TUTTI_LINK_SHM, 1), shm2 = links(TUTTI_LINK_SHM, 2);
    struct tutti_tune_links shm4 = links(TUTTI_LINK_SHM, 4);
    struct tutti_tune_links lo1 = links(TUTTI_LINK_LOOPBACK, 1);
    struct tutti_tune_links lo2 = links(TUTTI_LINK_LOOPBACK, 2);
    struct tutti_tune_links lo4 = links(TUTTI_LINK_LOOPBACK, 4);
    size_t shm = 1 << 17, tcp = 1 << 19;
    near(at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 2, 1, &shm1, shm, 1), 0.21, "shm 2, oneshot 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "ring", 8, 2, 1, &shm1, shm, 1), 0.28, "shm 2, ring 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 4, 1, &shm2, shm, 1), 2.7, "shm 4, oneshot 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "rd", 8, 4, 1, &shm2, shm, 1), 4.0, "shm 4, rd 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 8, 1, &shm4, shm, 1), 12.5, "shm 8, oneshot 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "rd", 8, 8, 1, &shm4, shm, 1), 17.5, "shm 8, rd 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "ring", 1 << 20, 2, 1, &shm1, shm, 1), 53.4, "shm 2, ring 1 MiB");
    near(at(TUTTI_COLL_ALLREDUCE, "ring", 4 << 20, 4, 1, &shm2, shm, 1), 747, "shm 4, ring 4 MiB");
    near(at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 2, 1, &lo1, tcp, 1), 6.4, "tcp 2, oneshot 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "ring", 8, 2, 1, &lo1, tcp, 1), 12.5, "tcp 2, ring 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 4, 1, &lo2, tcp, 1), 80, "tcp 4, oneshot 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "rd", 8, 4, 1, &lo2, tcp, 1), 60, "tcp 4, rd 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "rd", 8, 8, 1, &lo4, tcp, 1), 400, "tcp 8, rd 8 B");
    near(at(TUTTI_COLL_ALLREDUCE, "ring", 16 << 20, 2, 1, &lo1, tcp, 2), 3950,
         "tcp 2, ring 16 MiB");
    near(at(TUTTI_COLL_ALLREDUCE, "ring", 16 << 20, 4, 1, &lo2, tcp, 2), 14400,
         "tcp 4, ring 16 MiB");
}

/*
 * What the measurements rank, the model ranks alike: crowded shared memory favours one step
 * of many messages (one-shot over recursive doubling: a message is cheap, a step costs a
 * switch), crowded TCP the fewest messages (recursive doubling: each is a system call and a
 * wake-up); at 32 KiB on 4 crowded ranks recursive doubling beats the ring on both.
 */
Test(tune_host, crowded_rankings_follow_the_measurements)
{
    struct tutti_tune_links shm2 = links(TUTTI_LINK_SHM, 2), lo2 = links(TUTTI_LINK_LOOPBACK, 2);
    struct tutti_tune_links lo4 = links(TUTTI_LINK_LOOPBACK, 4);
    cr_expect_lt(at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 4, 1, &shm2, 1 << 17, 1),
                 at(TUTTI_COLL_ALLREDUCE, "rd", 8, 4, 1, &shm2, 1 << 17, 1));
    cr_expect_lt(at(TUTTI_COLL_ALLREDUCE, "rd", 8, 8, 1, &lo4, 1 << 19, 1),
                 at(TUTTI_COLL_ALLREDUCE, "oneshot", 8, 8, 1, &lo4, 1 << 19, 1));
    cr_expect_lt(at(TUTTI_COLL_ALLREDUCE, "rd", 32 << 10, 4, 1, &shm2, 1 << 17, 1),
                 at(TUTTI_COLL_ALLREDUCE, "ring", 32 << 10, 4, 1, &shm2, 1 << 17, 1));
    cr_expect_lt(at(TUTTI_COLL_ALLREDUCE, "rd", 32 << 10, 4, 1, &lo2, 1 << 19, 1),
                 at(TUTTI_COLL_ALLREDUCE, "ring", 32 << 10, 4, 1, &lo2, 1 << 19, 1));
}
