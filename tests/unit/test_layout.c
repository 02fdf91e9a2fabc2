/*
 * test_layout.c - schedules on ranks spread over hosts (struct tutti_layout): every collective
 * with every algorithm that applies, on layouts with hosts contiguous, interleaved (round-robin
 * placement), uneven, and with a ring order that is not rank order, checked on the simulated
 * network like test_schedule.c. Also: the ring algorithms send along the layout's ring, the
 * all-reduce trees keep one rank per host on the links between hosts, and the hierarchical
 * all-reduce applies only to hosts with as many ranks each, and sends across hosts only to the
 * same local index.
 */
#include "coll/coll.h"
#include "sched_world.h"
#include "topology/layout.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

struct case_def {
    const char *name;
    int n;
    int host[MAXN]; /* host label per rank */
    int ring[MAXN]; /* ring order, or all zero: rank order */
};

static const struct case_def cases[] = {
    {"2 hosts x 2, contiguous", 4, {0, 0, 2, 2}, {0}},
    {"2 hosts x 2, round-robin", 4, {0, 1, 0, 1}, {0, 2, 1, 3}},
    {"3 hosts x 2, round-robin", 6, {0, 1, 2, 0, 1, 2}, {0, 3, 1, 4, 2, 5}},
    {"2 hosts x 3, ring not in rank order", 6, {0, 0, 0, 3, 3, 3}, {0, 2, 1, 5, 3, 4}},
    {"4 hosts x 2", 8, {0, 0, 2, 2, 4, 4, 6, 6}, {0}},
    {"uneven 1, 2, 1", 4, {0, 1, 1, 3}, {0}},
    {"3 hosts x 3, interleaved", 9, {0, 1, 2, 0, 1, 2, 0, 1, 2}, {0, 3, 6, 1, 4, 7, 2, 5, 8}},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static struct tutti_layout *make(const struct case_def *c)
{
    int any = 0;
    for (int i = 0; i < c->n; i++) {
        any |= c->ring[i];
    }
    struct tutti_layout *l = tutti__layout_new(c->n, c->host, any ? c->ring : NULL);
    cr_assert_not_null(l, "%s: layout", c->name);
    return l;
}

static const size_t sizes[] = {0, 1, 7, 100, 1031};

/* Every collective x every applicable algorithm x sizes x roots x in place, on one layout. */
static void sweep_layout(const struct case_def *cd)
{
    world_layout = make(cd);
    static const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST,
                                         TUTTI_COLL_REDUCE,    TUTTI_COLL_REDUCE_SCATTER,
                                         TUTTI_COLL_ALLGATHER, TUTTI_COLL_ALLTOALL};
    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++) {
        tutti_coll_t c = colls[ci];
        int rooted = c == TUTTI_COLL_BROADCAST || c == TUTTI_COLL_REDUCE, nalgos = 0;
        const struct tutti_algo *a = tutti__algos(c, &nalgos);
        for (int algo = 0; algo < nalgos; algo++) {
            for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
                for (int root = 0; root < (rooted ? cd->n : 1); root++) {
                    for (int inplace = 0; inplace <= (c != TUTTI_COLL_ALLTOALL); inplace++) {
                        int nch = 1 + (int)((k + (size_t)root) % 2) * 2; /* 1 or 3 channels */
                        size_t slot = 1 + (k + (size_t)root) % 4;
                        struct tutti_op_desc d = {.coll = c, .count = sizes[k], .root = root};
                        struct tutti_plan_params pp = params(0, cd->n, nch, slot, algo);
                        if (!a[algo].applies(&d, &pp)) {
                            slot = sizes[k] > 0 ? sizes[k] : 1; /* direct: one slot */
                            pp.chunk_elems = slot;
                            if (!a[algo].applies(&d, &pp)) {
                                continue;
                            }
                        }
                        struct world w = {.n = cd->n,
                                          .count = sizes[k],
                                          .root = rooted ? root : -1,
                                          .inplace = inplace};
                        world_fill(&w, c);
                        int rc = run_algo(&w, c, TUTTI_SUM, nch, slot, algo);
                        cr_assert_eq(rc, 0, "%s: %s/%s count=%zu root=%d: %s (%d)", cd->name,
                                     tutti__coll_name(c), a[algo].name, sizes[k], root,
                                     rc == -1 ? "deadlock" : "error", rc);
                        check(&w, c, a[algo].name);
                        world_free(&w);
                    }
                }
            }
        }
    }
    tutti__layout_free((struct tutti_layout *)world_layout);
    world_layout = NULL;
}

Test(layout, every_collective_and_algorithm_on_every_layout, .timeout = 300)
{
    for (size_t i = 0; i < NCASES; i++) {
        sweep_layout(&cases[i]);
    }
}

static int algo_index(tutti_coll_t c, const char *name)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(c, &n);
    for (int i = 0; i < n; i++) {
        if (strcmp(a[i].name, name) == 0) {
            return i;
        }
    }
    cr_assert_fail("no %s algorithm %s", tutti__coll_name(c), name);
    return -1;
}

/* The peers rank r's plan sends to (a bit per rank). */
static unsigned send_peers(const struct case_def *cd, tutti_coll_t c, const char *algo, int r,
                           size_t count)
{
    uint32_t buf[2048];
    struct tutti_op_desc d = {.coll = c,
                              .sendbuf = buf,
                              .recvbuf = buf,
                              .count = count,
                              .dt = TUTTI_UINT32,
                              .root = 0,
                              .peer = -1};
    struct tutti_plan_params pp = params(r, cd->n, 1, 4, algo_index(c, algo));
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0, "%s: %s", cd->name, algo);
    unsigned peers = 0;
    for (int i = 0; i < plan.nlanes; i++) {
        for (size_t k = 0; k < plan.lanes[i].nsteps; k++) {
            int p = plan.lanes[i].steps[k].send_peer;
            peers |= p >= 0 ? 1u << p : 0u;
        }
    }
    tutti__plan_free(&plan);
    return peers;
}

Test(layout, ring_algorithms_send_along_the_layout_ring)
{
    const struct case_def *cd = &cases[2]; /* round-robin over 3 hosts: ring 0 3 1 4 2 5 */
    world_layout = make(cd);
    const struct tutti_layout *l = world_layout;
    static const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_REDUCE_SCATTER,
                                         TUTTI_COLL_ALLGATHER};
    for (size_t ci = 0; ci < 3; ci++) {
        int crossings = 0;
        for (int r = 0; r < cd->n; r++) {
            unsigned peers = send_peers(cd, colls[ci], "ring", r, 64);
            int next = l->ring[(l->ring_pos[r] + 1) % cd->n];
            cr_assert_eq(peers, 1u << next, "%s: rank %d sends to %#x, not to %d",
                         tutti__coll_name(colls[ci]), r, peers, next);
            crossings += l->host[next] != l->host[r];
        }
        cr_assert_eq(crossings, l->nhosts, "the ring leaves each host once");
    }
    tutti__layout_free((struct tutti_layout *)world_layout);
    world_layout = NULL;
}

Test(layout, allreduce_trees_cross_hosts_from_one_rank_per_host_and_tree)
{
    const struct case_def *cd = &cases[6]; /* 3 hosts x 3, interleaved */
    world_layout = make(cd);
    const struct tutti_layout *l = world_layout;
    for (int t = 0; t < 2; t++) {
        int talkers[MAXN] = {0}, cross = 0;
        for (int r = 0; r < cd->n; r++) {
            struct tutti_plan_params pp = params(r, cd->n, 1, 4, -1);
            struct tutti_tree_node nd;
            cr_assert_eq(tutti__coll_tree(&pp, -1, t, &nd), 0);
            if (nd.parent >= 0 && l->host[nd.parent] != l->host[r]) {
                talkers[l->host[r]]++;
                cross++;
            }
        }
        cr_assert_eq(cross, l->nhosts - 1,
                     "tree %d: %d links between hosts, a tree over %d "
                     "hosts has %d",
                     t, cross, l->nhosts, l->nhosts - 1);
        for (int h = 0; h < l->nhosts; h++) {
            cr_assert_leq(talkers[h], 1,
                          "tree %d: host %d reaches its parent host through %d "
                          "ranks",
                          t, h, talkers[h]);
        }
    }
    tutti__layout_free((struct tutti_layout *)world_layout);
    world_layout = NULL;
}

Test(layout, hier_applies_to_even_hosts_and_sends_across_only_on_its_rail)
{
    int hier = algo_index(TUTTI_COLL_ALLREDUCE, "hier");
    const struct tutti_algo *a = &tutti__algos(TUTTI_COLL_ALLREDUCE, &(int){0})[hier];
    struct tutti_op_desc d = {.coll = TUTTI_COLL_ALLREDUCE, .count = 64};
    struct tutti_plan_params none = params(0, 4, 1, 4, hier);
    none.layout = NULL;
    cr_assert(!a->applies(&d, &none), "hier without a layout");
    for (size_t i = 0; i < NCASES; i++) {
        const struct case_def *cd = &cases[i];
        world_layout = make(cd);
        const struct tutti_layout *l = world_layout;
        struct tutti_plan_params pp = params(0, cd->n, 1, 4, hier);
        int even = strncmp(cd->name, "uneven", 6) != 0;
        cr_assert_eq(a->applies(&d, &pp), even, "%s: hier %s", cd->name,
                     even ? "must apply" : "must not apply");
        for (int r = 0; r < cd->n && even; r++) {
            unsigned peers = send_peers(cd, TUTTI_COLL_ALLREDUCE, "hier", r, 1031);
            for (int p = 0; p < cd->n; p++) {
                if ((peers >> p & 1u) && l->host[p] != l->host[r]) {
                    cr_assert_eq(l->local[p], l->local[r],
                                 "%s: rank %d (local %d) sends to "
                                 "rank %d (local %d) on another host",
                                 cd->name, r, l->local[r], p, l->local[p]);
                }
            }
        }
        tutti__layout_free((struct tutti_layout *)world_layout);
        world_layout = NULL;
    }
}

Test(layout, float_allreduce_results_are_bitwise_identical_on_every_layout)
{
    int nalgos = 0;
    const struct tutti_algo *a = tutti__algos(TUTTI_COLL_ALLREDUCE, &nalgos);
    for (size_t i = 0; i < NCASES; i++) {
        world_layout = make(&cases[i]);
        for (int algo = 0; algo < nalgos; algo++) {
            struct tutti_op_desc d = {.coll = TUTTI_COLL_ALLREDUCE, .count = 301};
            struct tutti_plan_params pp = params(0, cases[i].n, 1, 16, algo);
            size_t slot = a[algo].applies(&d, &pp) ? 16 : 301;
            pp.chunk_elems = slot;
            if (a[algo].applies(&d, &pp)) {
                check_float_bitwise(cases[i].n, algo, slot);
            }
        }
        tutti__layout_free((struct tutti_layout *)world_layout);
        world_layout = NULL;
    }
}

Test(layout, a_ring_that_is_not_a_permutation_is_refused)
{
    int host[3] = {0, 0, 0}, dup[3] = {0, 1, 1}, out[3] = {0, 1, 3};
    cr_assert_null(tutti__layout_new(3, host, dup));
    cr_assert_null(tutti__layout_new(3, host, out));
    struct tutti_layout *l = tutti__layout_new(3, host, NULL);
    cr_assert_not_null(l);
    cr_assert_eq(l->nhosts, 1);
    cr_assert_eq(l->ppn, 3);
    tutti__layout_free(l);
}
