/*
 * test_fill.c - how the engine writes send slots (exec/fill.c): the timed clock's choice
 * between cached and streamed writes, fed with made-up times, and every collective's results
 * when the slots are streamed or timed, or the results streamed (TUTTI_STREAM_MIN), on the
 * simulated network (sim.c).
 */
#include "coll/coll.h"
#include "exec/fabric.h"
#include "exec/fill.h"
#include "exec/op.h"
#include "sched_world.h"
#include "sim.h"

#include <criterion/criterion.h>
#include <string.h>

#define FRAME (128 * 1024)
#define WARM  8

/* Bytes per ns of a write, by the way it goes and whether a cached one meets streamed slots. */
struct machine {
    double cached, streamed, cold;
    unsigned lag;       /* cached frames after the cold ones that still run at the cold rate */
    unsigned low_every; /* every low_every-th streamed frame runs at streamed_low (0: none) */
    double streamed_low;
};

/* Run the clock for n frames on machine m; the frames it streamed. */
static unsigned run_clock(struct tutti_fill_clock *c, const struct machine *m, unsigned n,
                          unsigned *cold_left)
{
    unsigned streamed = 0;
    for (unsigned i = 0; i < n; i++) {
        int s = tutti__fill_pick(c);
        double rate = s ? m->streamed : (*cold_left > 0 ? m->cold : m->cached);
        if (s && m->low_every > 0 && (c->frames % m->low_every) == 0) {
            rate = m->streamed_low;
        }
        if (s) {
            *cold_left = WARM + m->lag;
            streamed++;
        } else if (*cold_left > 0) {
            (*cold_left)--;
        }
        tutti__fill_note(c, s, FRAME, (int64_t)(FRAME / rate));
    }
    return streamed;
}

static struct tutti_fill_clock timed(void)
{
    return (struct tutti_fill_clock){.mode = TUTTI_FILL_TIMED, .warm = WARM};
}

Test(fill, fixed_modes_never_change)
{
    struct machine slow = {.cached = 3, .streamed = 25, .cold = 9};
    for (uint32_t mode = TUTTI_FILL_CACHED; mode <= TUTTI_FILL_STREAMED; mode++) {
        struct tutti_fill_clock c = {.mode = mode, .stream = mode == TUTTI_FILL_STREAMED};
        unsigned cold = 0;
        unsigned s = run_clock(&c, &slow, 1000, &cold);
        cr_expect_eq(s, mode == TUTTI_FILL_STREAMED ? 1000u : 0u, "mode %u streamed %u of 1000",
                     mode, s);
    }
}

Test(fill, a_shared_cache_keeps_cached_writes_and_probes_ever_more_rarely)
{
    struct machine fast = {.cached = 30, .streamed = 25, .cold = 9};
    struct tutti_fill_clock c = timed();
    unsigned cold = 0;
    unsigned s = run_clock(&c, &fast, 10000, &cold);
    cr_expect(!c.stream, "it streams where cached writes are faster");
    /* probes of 3 frames after 16, 32, ..., 1024 frames, then every 1024 */
    cr_expect(s >= 24 && s <= 60, "it streamed %u of 10000 frames", s);
}

Test(fill, the_cold_writes_after_a_streamed_probe_are_not_timed)
{
    /* Cold cached writes (after a streamed one) at a fifth of the streamed rate would make it
     * stream if they were timed. */
    struct machine fast = {.cached = 30, .streamed = 25, .cold = 5};
    struct tutti_fill_clock c = timed();
    unsigned cold = 0;
    unsigned s = run_clock(&c, &fast, 5000, &cold);
    cr_expect(!c.stream && s < 60, "it streamed %u frames (now: %u)", s, c.stream);
}

Test(fill, unshared_caches_stream_and_cached_bursts_stay_rare)
{
    struct machine slow = {.cached = 3, .streamed = 25, .cold = 9};
    struct tutti_fill_clock c = timed();
    unsigned cold = 0;
    unsigned s = run_clock(&c, &slow, 10000, &cold);
    cr_expect(c.stream, "it writes through the caches where that is 8 times slower");
    cr_expect(s >= 9300, "it streamed only %u of 10000 frames", s);
}

Test(fill, it_follows_the_machine_both_ways)
{
    struct machine fast = {.cached = 30, .streamed = 25, .cold = 9};
    struct machine slow = {.cached = 3, .streamed = 25, .cold = 9};
    struct tutti_fill_clock c = timed();
    unsigned cold = 0;
    run_clock(&c, &fast, 5000, &cold);
    cr_assert(!c.stream);
    /* the cores part: within one probe gap and its burst it streams */
    unsigned n = 0;
    while (!c.stream && n < 1024 + WARM + 4) {
        run_clock(&c, &slow, 1, &cold);
        n++;
    }
    cr_expect(c.stream, "still cached %u frames after the caches parted", n);
    run_clock(&c, &slow, 5000, &cold);
    cr_assert(c.stream);
    n = 0;
    while (c.stream && n < 1024 + WARM + 4) {
        run_clock(&c, &fast, 1, &cold);
        n++;
    }
    cr_expect(!c.stream, "still streaming %u frames after the caches met again", n);
}

/* The seconds without a shared cache as a 256 MiB send/recv met them: the first timed frame of
 * a cached burst still runs at the cold rate, and a streamed frame now and then at 14 GB/s. */
Test(fill, one_odd_frame_in_a_probe_does_not_turn_it)
{
    struct machine lagging = {.cached = 3.5, .streamed = 18, .cold = 9, .lag = 1};
    struct tutti_fill_clock c = timed();
    unsigned cold = 0;
    unsigned s = run_clock(&c, &lagging, 20000, &cold);
    cr_expect(s >= 19000, "a cold first frame in cached bursts: streamed only %u of 20000", s);

    /* from a shared cache, where it writes cached and probes rarely, into such seconds */
    struct machine fast = {.cached = 30, .streamed = 25, .cold = 9};
    struct machine noisy = {
        .cached = 3.7, .streamed = 18, .cold = 9, .low_every = 3, .streamed_low = 14};
    c = timed();
    cold = 0;
    run_clock(&c, &fast, 5000, &cold);
    s = run_clock(&c, &noisy, 20000, &cold);
    cr_expect(s >= 18500, "a slow streamed frame now and then: streamed only %u of 20000", s);
}

/* Every collective at 2-4 ranks (in place or not) over a network whose slots are written as mode
 * says, and whose results of at least nt_min bytes (0: none) are written with non-temporal stores:
 * except a reduction in place, which has just read the lines its result lands on. */
static void run_colls_in(uint32_t mode, size_t slot_elems, size_t nt_min, int inplace)
{
    const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST,
                                  TUTTI_COLL_REDUCE,    TUTTI_COLL_REDUCE_SCATTER,
                                  TUTTI_COLL_ALLGATHER, TUTTI_COLL_ALLTOALL};
    for (int n = 2; n <= 4; n++) {
        for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); k++) {
            struct world w = {
                .n = n, .count = 5 * slot_elems * (size_t)n + 3, .root = n - 1, .inplace = inplace};
            world_fill(&w, colls[k]);
            struct sim_net *net = sim_net_new(n, WARM, slot_elems * 4);
            sim_net_fill(net, mode);
            struct tutti_plan plans[MAXN];
            struct tutti_exec exs[MAXN];
            memset(plans, 0, sizeof(plans));
            for (int r = 0; r < n; r++) {
                struct tutti_plan_params pp = params(r, n, 1, slot_elems, 0);
                struct tutti_op_desc d = desc(&w, colls[k], r, TUTTI_SUM);
                cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0, "plan build failed");
                struct tutti_fabric *fab = sim_fabric(net, r, 1);
                fab->cfg.nt_min = nt_min;
                cr_assert_eq(tutti__exec_init(&exs[r], fab, &plans[r], 1), TUTTI_OK);
                int has_result = colls[k] != TUTTI_COLL_REDUCE || r == w.root;
                int cached = inplace && tutti__coll_reduces(colls[k]);
                cr_assert_eq(exs[r].nt_dst, nt_min > 0 && has_result && !cached,
                             "%s%s on rank %d: results %sstreamed", tutti__coll_name(colls[k]),
                             inplace ? " in place" : "", r, exs[r].nt_dst ? "" : "not ");
            }
            cr_assert_eq(sim_run(exs, n), 0, "%s on %d ranks did not complete: %s",
                         tutti__coll_name(colls[k]), n, sim_error(net, 0));
            check(&w, colls[k], tutti__coll_name(colls[k]));
            for (int r = 0; r < n; r++) {
                tutti__exec_fini(&exs[r]);
                tutti__plan_free(&plans[r]);
            }
            sim_net_free(net);
            world_free(&w);
        }
    }
}

static void run_colls(uint32_t mode, size_t slot_elems, size_t nt_min)
{
    run_colls_in(mode, slot_elems, nt_min, 0);
}

Test(fill, every_collective_is_right_with_streamed_slots)
{
    run_colls(TUTTI_FILL_STREAMED, 1000, 0); /* 4000-byte frames: streamed in 64-byte lines */
}

Test(fill, every_collective_is_right_with_timed_slots)
{
    run_colls(TUTTI_FILL_TIMED, TUTTI_FILL_TIMED_MIN / 4, 0); /* frames the clock times */
}

/* Results streamed to the user's buffers (TUTTI_STREAM_MIN): every step that writes a result,
 * the local copies of all-to-all and all-gather included, still writes the right bytes. */
Test(fill, every_collective_is_right_with_streamed_results)
{
    run_colls(TUTTI_FILL_CACHED, 1000, 1);
    run_colls(TUTTI_FILL_STREAMED, 1000, 1);
}

/* In place, broadcast, all-gather and all-to-all still stream their results; the reductions
 * (all-reduce, reduce, reduce-scatter) keep cached writes. Both are right. */
Test(fill, in_place_reductions_keep_cached_results)
{
    run_colls_in(TUTTI_FILL_CACHED, 1000, 1, 1);
    run_colls_in(TUTTI_FILL_STREAMED, 1000, 1, 1);
}
