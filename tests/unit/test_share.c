/*
 * test_share.c - a rank that only sends shares the copying with its receivers
 * (tutti_tconn.share_every, TUTTI_SHM_CMA_SHARE): on a transport that takes frames by
 * reference, every share_every-th frame it could send that way goes through the slot instead;
 * or, where the connection has a limit (tutti_tconn.lone_max, TUTTI_SHM_CMA_LONE), every frame
 * of a call larger than that and none of a smaller one. A rank that also receives in the call sends
 * every frame by reference. Run on the simulated network (sim.c), whose reference frames are
 * counted apart from the copied ones.
 */
#include "coll/coll.h"
#include "sched_world.h"
#include "sim.h"

#include <criterion/criterion.h>
#include <string.h>

#define SLOT_ELEMS 64
#define NFRAMES    10

struct posts {
    unsigned long by_ref[MAXN], copied[MAXN];
};

/* Run collective c on world w over a network whose connections take references. */
static void run_refs(struct world *w, tutti_coll_t c, uint32_t share_every, size_t lone_max,
                     struct posts *p)
{
    struct sim_net *net = sim_net_new(w->n, 4, SLOT_ELEMS * 4);
    sim_net_refs(net, share_every, lone_max);
    struct tutti_plan plans[MAXN];
    struct tutti_exec exs[MAXN];
    memset(plans, 0, sizeof(plans));
    for (int r = 0; r < w->n; r++) {
        struct tutti_plan_params pp = params(r, w->n, 1, SLOT_ELEMS, 0);
        struct tutti_op_desc d = desc(w, c, r, TUTTI_SUM);
        cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0, "plan build failed");
        cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 1), &plans[r], 1), TUTTI_OK);
    }
    cr_assert_eq(sim_run(exs, w->n), 0, "the call did not complete: %s", sim_error(net, 0));
    for (int r = 0; r < w->n; r++) {
        sim_posts(net, r, &p->by_ref[r], &p->copied[r]);
        tutti__exec_fini(&exs[r]);
        tutti__plan_free(&plans[r]);
    }
    sim_net_free(net);
}

Test(share, a_broadcast_root_copies_every_nth_frame_itself)
{
    for (uint32_t every = 0; every <= 4; every++) {
        struct world w = {.n = 2, .count = NFRAMES * SLOT_ELEMS, .root = 0};
        world_fill(&w, TUTTI_COLL_BROADCAST);
        struct posts p;
        run_refs(&w, TUTTI_COLL_BROADCAST, every, 0, &p);
        check(&w, TUTTI_COLL_BROADCAST, "broadcast");
        unsigned long want = every == 0 ? 0 : NFRAMES / every;
        cr_expect_eq(p.by_ref[0] + p.copied[0], NFRAMES, "share %u: root posted %lu frames", every,
                     p.by_ref[0] + p.copied[0]);
        cr_expect_eq(p.copied[0], want, "share %u: the root copied %lu frames itself, not %lu",
                     every, p.copied[0], want);
        cr_expect_eq(p.by_ref[1] + p.copied[1], 0, "the receiver sent nothing");
        world_free(&w);
    }
}

Test(share, a_rank_that_also_receives_sends_every_frame_by_reference)
{
    struct world w = {.n = 2, .count = NFRAMES * SLOT_ELEMS, .root = -1};
    world_fill(&w, TUTTI_COLL_ALLGATHER);
    struct posts p;
    run_refs(&w, TUTTI_COLL_ALLGATHER, 1, 0, &p);
    check(&w, TUTTI_COLL_ALLGATHER, "all-gather");
    for (int r = 0; r < 2; r++) {
        cr_expect_eq(p.copied[r], 0, "rank %d copied %lu frames into slots", r, p.copied[r]);
        cr_expect_eq(p.by_ref[r], NFRAMES, "rank %d sent %lu frames by reference", r, p.by_ref[r]);
    }
    world_free(&w);
}

Test(share, only_the_root_shares_when_others_forward)
{
    for (int n = 3; n <= 5; n++) {
        for (int root = 0; root < n; root++) {
            struct world w = {.n = n, .count = NFRAMES * SLOT_ELEMS + 17, .root = root};
            world_fill(&w, TUTTI_COLL_BROADCAST);
            struct posts p;
            run_refs(&w, TUTTI_COLL_BROADCAST, 2, 0, &p);
            check(&w, TUTTI_COLL_BROADCAST, "broadcast");
            unsigned long sent = p.by_ref[root] + p.copied[root];
            cr_expect(sent > 0, "n=%d: the root sent nothing", n);
            cr_expect_eq(p.copied[root], sent / 2, "n=%d root %d: copied %lu of %lu frames", n,
                         root, p.copied[root], sent);
            for (int r = 0; r < n; r++) {
                cr_expect(r == root || p.copied[r] == 0,
                          "n=%d: rank %d, which receives, copied %lu frames into slots", n, r,
                          p.copied[r]);
            }
            world_free(&w);
        }
    }
}

Test(share, a_root_under_lone_max_shares_no_frame_and_over_it_every_frame)
{
    size_t bytes = (size_t)NFRAMES * SLOT_ELEMS * 4; /* a 2-rank broadcast's root sends these */
    size_t limits[] = {bytes - 1, bytes, 0};
    /* over the limit all, within it none, with no limit every third (share 3) */
    unsigned long want[] = {NFRAMES, 0, NFRAMES / 3};
    for (int i = 0; i < 3; i++) {
        struct world w = {.n = 2, .count = NFRAMES * SLOT_ELEMS, .root = 0, .inplace = 1};
        world_fill(&w, TUTTI_COLL_BROADCAST);
        struct posts p;
        run_refs(&w, TUTTI_COLL_BROADCAST, 3, limits[i], &p);
        check(&w, TUTTI_COLL_BROADCAST, "broadcast");
        cr_expect_eq(p.by_ref[0] + p.copied[0], NFRAMES, "lone_max %zu: root posted %lu frames",
                     limits[i], p.by_ref[0] + p.copied[0]);
        cr_expect_eq(p.copied[0], want[i], "lone_max %zu (call %zu): root copied %lu, not %lu",
                     limits[i], bytes, p.copied[0], want[i]);
        world_free(&w);
    }
}

Test(share, a_gather_leaf_counts_every_block_its_root_takes)
{
    /* Each leaf sends `bytes`; its root takes n blocks of as many: a leaf goes through the slots
     * where bytes * n > lone_max (lone_need), whatever share_every says. */
    size_t bytes = (size_t)NFRAMES * SLOT_ELEMS * 4;
    for (int n = 2; n <= 4; n++) {
        size_t limits[] = {bytes * (size_t)n - 1, bytes * (size_t)n};
        for (int i = 0; i < 2; i++) {
            struct world w = {.n = n, .count = NFRAMES * SLOT_ELEMS, .root = 0};
            world_fill(&w, TUTTI_COLL_GATHER);
            struct posts p;
            run_refs(&w, TUTTI_COLL_GATHER, 2, limits[i], &p);
            check(&w, TUTTI_COLL_GATHER, "gather");
            cr_expect_eq(p.by_ref[0] + p.copied[0], 0, "n=%d: the root sent %lu frames", n,
                         p.by_ref[0] + p.copied[0]);
            for (int r = 1; r < n; r++) {
                unsigned long sent = p.by_ref[r] + p.copied[r];
                cr_expect_eq(sent, NFRAMES, "n=%d: leaf %d posted %lu frames", n, r, sent);
                cr_expect_eq(p.copied[r], i == 0 ? sent : 0,
                             "n=%d lone_max %zu: leaf %d copied %lu of %lu frames itself", n,
                             limits[i], r, p.copied[r], sent);
            }
            world_free(&w);
        }
    }
}

Test(share, lone_max_holds_for_a_scatter_root_and_not_for_ranks_that_receive)
{
    for (int n = 2; n <= 4; n++) {
        const tutti_coll_t colls[] = {TUTTI_COLL_BROADCAST, TUTTI_COLL_SCATTER};
        for (int k = 0; k < 2; k++) {
            tutti_coll_t c = colls[k];
            struct world w = {.n = n, .count = NFRAMES * SLOT_ELEMS, .root = n - 1};
            world_fill(&w, c);
            struct posts p;
            run_refs(&w, c, 0, 64, &p); /* far below what any of these roots sends */
            check(&w, c, c == TUTTI_COLL_SCATTER ? "scatter" : "broadcast");
            cr_expect(p.copied[n - 1] > 0, "n=%d: the root sent nothing", n);
            cr_expect_eq(p.by_ref[n - 1], 0, "n=%d: the root sent %lu frames by reference", n,
                         p.by_ref[n - 1]);
            for (int r = 0; r < n - 1; r++) {
                cr_expect_eq(p.copied[r], 0, "n=%d: rank %d, which receives, copied %lu frames", n,
                             r, p.copied[r]);
            }
            world_free(&w);
        }
    }
}

Test(share, a_root_with_copies_of_its_own_sends_larger_calls_by_reference)
{
    /* Both roots send `bytes`; the scatter's also copies its own block of as many (the
     * broadcast's works in place: no copy): such a root goes by reference up to
     * sent * sent <= lone_max * (sent + 4 own) (exec.c, lone_need). */
    size_t bytes = (size_t)NFRAMES * SLOT_ELEMS * 4;
    const tutti_coll_t colls[] = {TUTTI_COLL_BROADCAST, TUTTI_COLL_SCATTER};
    const unsigned long want[] = {NFRAMES, 0}; /* frames the root copies itself */
    for (int k = 0; k < 2; k++) {
        struct world w = {.n = 2, .count = NFRAMES * SLOT_ELEMS, .root = 0, .inplace = k == 0};
        world_fill(&w, colls[k]);
        struct posts p;
        run_refs(&w, colls[k], 0, bytes / 2, &p);
        check(&w, colls[k], k == 0 ? "broadcast" : "scatter");
        cr_expect_eq(p.by_ref[0] + p.copied[0], NFRAMES, "root %d posted %lu frames", k,
                     p.by_ref[0] + p.copied[0]);
        cr_expect_eq(p.copied[0], want[k], "%s root copied %lu frames itself, not %lu",
                     k == 0 ? "broadcast" : "scatter", p.copied[0], want[k]);
        world_free(&w);
    }
}
