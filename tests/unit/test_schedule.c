/*
 * test_schedule.c - every collective's schedule, for nranks 1..17, counts
 * {0,1,2,3,7,1023,65537}, every root, in place and out of place, 1 or 3 channels and tiny
 * slots: all ranks run their real plans on the real executor over the simulated network
 * (tests/common/sim.c), then every rank's result is compared with a reference.
 */
#include "coll/coll.h"
#include "comm/comm.h"
#include "sched_world.h"
#include "sim.h"
#include "slow.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const size_t counts[] = {0, 1, 2, 3, 7, 1023, 65537};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/*
 * Sweep nranks x counts (x roots) x in-place for one collective and one catalog entry. The
 * algorithms that apply to any size run with tiny slots (many chunks, full FIFOs); the direct
 * ones need the message in one slot, so their slot is the message.
 */
static void sweep_algo(tutti_coll_t c, int rooted, int can_inplace, int algo)
{
    /* Direct: it applies only when the message fits one slot (of one element here). */
    int nalgos = 0;
    const struct tutti_algo *a = &tutti__algos(c, &nalgos)[algo];
    struct tutti_op_desc two = {.coll = c, .count = 2, .dt = TUTTI_UINT32, .root = 0, .peer = -1};
    struct tutti_plan_params one = params(0, 2, 1, 1, algo);
    struct tutti_plan_params big = params(0, 2, 1, 1 << 20, algo);
    if (!a->applies(&two, &big)) {
        return; /* needs ranks on several hosts: test_layout.c */
    }
    int direct = !a->applies(&two, &one);
    for (int n = 1; n <= MAXN; n++) {
        for (size_t ci = 0; ci < NCOUNTS; ci++) {
            for (int root = 0; root < (rooted ? n : 1); root++) {
                for (int inplace = 0; inplace <= can_inplace; inplace++) {
                    struct world w = {.n = n,
                                      .count = counts[ci],
                                      .root = rooted ? root : -1,
                                      .inplace = inplace};
                    int nch = 1 + 2 * ((n + (int)ci + root) % 2); /* 1 or 3 channels */
                    size_t slot = counts[ci] > 1023 ? 1024 : 1 + (size_t)(ci + root) % 5;
                    if (direct) {
                        slot = counts[ci] > 0 ? counts[ci] : 1;
                    }
                    world_fill(&w, c);
                    int rc = run_algo(&w, c, TUTTI_SUM, nch, slot, algo);
                    cr_assert_eq(rc, 0, "%s/%d n=%d count=%zu root=%d: %s (%d)",
                                 tutti__coll_name(c), algo, n, counts[ci], root,
                                 rc == -1 ? "deadlock" : "error", rc);
                    check(&w, c, tutti__coll_name(c));
                    world_free(&w);
                }
            }
        }
    }
}

/* Every algorithm of the collective. */
static void sweep(tutti_coll_t c, int rooted, int can_inplace)
{
    int n = 0;
    (void)tutti__algos(c, &n);
    cr_assert_gt(n, 0);
    for (int a = 0; a < n; a++) {
        sweep_algo(c, rooted, can_inplace, a);
    }
}

Test(schedule, allreduce_every_size_and_nranks, .timeout = 120 * TEST_SLOW)
{
    sweep(TUTTI_COLL_ALLREDUCE, 0, 1);
}

Test(schedule, broadcast_every_root, .timeout = 120 * TEST_SLOW)
{
    sweep(TUTTI_COLL_BROADCAST, 1, 1);
}

Test(schedule, reduce_every_root, .timeout = 120 * TEST_SLOW)
{
    sweep(TUTTI_COLL_REDUCE, 1, 1);
}

Test(schedule, reduce_scatter_every_size_and_nranks, .timeout = 120 * TEST_SLOW)
{
    sweep(TUTTI_COLL_REDUCE_SCATTER, 0, 1);
}

Test(schedule, allgather_every_size_and_nranks, .timeout = 120 * TEST_SLOW)
{
    sweep(TUTTI_COLL_ALLGATHER, 0, 1);
}

Test(schedule, alltoall_every_size_and_nranks, .timeout = 120 * TEST_SLOW)
{
    sweep(TUTTI_COLL_ALLTOALL, 0, 0);
}

Test(schedule, barrier_completes_for_every_nranks)
{
    for (int n = 1; n <= MAXN; n++) {
        struct world w = {.n = n, .count = 0, .root = -1};
        world_fill(&w, TUTTI_COLL_BARRIER);
        uint8_t bytes[MAXN] = {0};
        struct sim_net *net = sim_net_new(n, 2, 4);
        struct tutti_plan plans[MAXN];
        struct tutti_exec exs[MAXN];
        memset(plans, 0, sizeof(plans));
        for (int r = 0; r < n; r++) {
            struct tutti_plan_params pp = params(r, n, 2, 4, -1);
            struct tutti_op_desc d = {.coll = TUTTI_COLL_BARRIER,
                                      .sendbuf = &bytes[r],
                                      .recvbuf = &bytes[r],
                                      .dt = TUTTI_UINT8,
                                      .root = -1,
                                      .peer = -1};
            cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0);
            cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 2), &plans[r], 1), TUTTI_OK);
        }
        cr_assert_eq(sim_run(exs, n), 0, "barrier n=%d did not complete", n);
        for (int r = 0; r < n; r++) {
            tutti__exec_fini(&exs[r]);
            tutti__plan_free(&plans[r]);
        }
        sim_net_free(net);
        world_free(&w);
    }
}

Test(schedule, barrier_waits_for_the_last_rank)
{
    for (int n = 2; n <= 9; n++) {
        uint8_t bytes[MAXN] = {0};
        struct sim_net *net = sim_net_new(n, 2, 4);
        struct tutti_plan plans[MAXN];
        struct tutti_exec exs[MAXN];
        memset(plans, 0, sizeof(plans));
        for (int r = 0; r < n; r++) {
            struct tutti_plan_params pp = params(r, n, 1, 4, -1);
            struct tutti_op_desc d = {.coll = TUTTI_COLL_BARRIER,
                                      .sendbuf = &bytes[r],
                                      .recvbuf = &bytes[r],
                                      .dt = TUTTI_UINT8,
                                      .root = -1,
                                      .peer = -1};
            cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0);
            cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 1), &plans[r], 1), TUTTI_OK);
        }
        /* Everyone but the last rank keeps trying: nobody may get through. */
        for (int round = 0; round < 100; round++) {
            for (int r = 0; r < n - 1; r++) {
                int p = 0;
                cr_assert_eq(tutti__exec_advance(&exs[r], &p), TUTTI_IN_PROGRESS,
                             "n=%d: rank %d left the barrier before rank %d entered", n, r, n - 1);
            }
        }
        cr_assert_eq(sim_run(exs, n), 0);
        for (int r = 0; r < n; r++) {
            tutti__exec_fini(&exs[r]);
            tutti__plan_free(&plans[r]);
        }
        sim_net_free(net);
    }
}

Test(schedule, allreduce_avg_divides_once_and_truncates)
{
    int nalgos = 0;
    const struct tutti_algo *a = tutti__algos(TUTTI_COLL_ALLREDUCE, &nalgos);
    for (int k = 0; k < nalgos * 7; k++) {
        int n = 1 + k % 7, algo = k / 7;
        struct tutti_op_desc probe = {.coll = TUTTI_COLL_ALLREDUCE, .count = 37, .peer = -1};
        struct tutti_plan_params pp = params(0, n, 2, 4, algo);
        if (!a[algo].applies(&probe, &pp)) {
            continue; /* oneshot: 37 elements do not fit a slot of 4 */
        }
        struct world w = {.n = n, .count = 37, .root = -1};
        world_fill(&w, TUTTI_COLL_ALLREDUCE);
        for (int r = 0; r < n; r++) {
            for (size_t i = 0; i < w.count; i++) {
                w.send[r][i] = (uint32_t)(r + 1) * 3u + (uint32_t)i; /* small: no wrap */
            }
        }
        cr_assert_eq(run_algo(&w, TUTTI_COLL_ALLREDUCE, TUTTI_AVG, 2, 4, algo), 0);
        for (int r = 0; r < n; r++) {
            for (size_t i = 0; i < w.count; i++) {
                uint32_t s = 0;
                for (int q = 0; q < n; q++) {
                    s += (uint32_t)(q + 1) * 3u + (uint32_t)i;
                }
                cr_assert_eq(w.recv[r][i], s / (uint32_t)n, "%s n=%d rank %d elem %zu",
                             a[algo].name, n, r, i);
            }
        }
        world_free(&w);
    }
}

/*
 * Float sums depend on the order of the additions: every all-reduce must still give every rank
 * the same bits (each element reduced in one order, wherever it is reduced).
 */
Test(schedule, allreduce_float_results_are_bitwise_identical_on_every_rank)
{
    int nalgos = 0;
    const struct tutti_algo *a = tutti__algos(TUTTI_COLL_ALLREDUCE, &nalgos);
    for (int algo = 0; algo < nalgos; algo++) {
        if (!a[algo].applies(&(struct tutti_op_desc){.count = 301},
                             &(struct tutti_plan_params){.chunk_elems = 1 << 20})) {
            continue; /* needs ranks on several hosts: test_layout.c */
        }
        for (int n = 2; n <= 11; n++) {
            size_t slot = a[algo].applies(&(struct tutti_op_desc){.count = 301},
                                          &(struct tutti_plan_params){.chunk_elems = 16})
                              ? 16
                              : 301;
            check_float_bitwise(n, algo, slot);
        }
    }
}

/*
 * The cost model's choices (TUTTI_TUNER=model) for every collective, nranks, count and root,
 * as crowded as 1 and 4 ranks per CPU, on 1 or 3 channels and tiny slots: every rank must pick
 * the same algorithm, chunk and channels (a disagreement deadlocks or corrupts the run) and
 * every result must be right.
 */
Test(schedule, the_cost_models_choices_run_right_on_every_rank, .timeout = 120 * TEST_SLOW)
{
    static const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST,
                                         TUTTI_COLL_REDUCE,    TUTTI_COLL_REDUCE_SCATTER,
                                         TUTTI_COLL_ALLGATHER, TUTTI_COLL_ALLTOALL};
    world_tuner = 1;
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
        int rooted = colls[c] == TUTTI_COLL_BROADCAST || colls[c] == TUTTI_COLL_REDUCE;
        for (int n = 1; n <= MAXN; n += 1 + (n > 4)) {
            for (size_t ci = 0; ci < NCOUNTS; ci++) {
                int root = rooted ? (int)ci % n : -1;
                struct world w = {.n = n, .count = counts[ci], .root = root};
                int nch = 1 + 2 * ((n + (int)ci) % 2);
                size_t slot = counts[ci] > 1023 ? 1024 : 1 + ci % 5;
                world_cpu_load = (n + ci) % 2 ? 4.0 : 1.0;
                world_fill(&w, colls[c]);
                int rc = run_algo(&w, colls[c], TUTTI_SUM, nch, slot, -1);
                cr_assert_eq(rc, 0, "%s n=%d count=%zu: %s (%d)", tutti__coll_name(colls[c]), n,
                             counts[ci], rc == -1 ? "deadlock" : "error", rc);
                check(&w, colls[c], tutti__coll_name(colls[c]));
                world_free(&w);
            }
        }
    }
}

/*
 * The double binary trees cut a message into a part per (tree, channel), except one of at most
 * a chunk: it goes whole over one tree on channel 0 (halves would double the messages and the
 * channels for nothing: 8 bytes were two 4-byte halves on two channels).
 */
Test(schedule, trees_take_one_tree_on_one_channel_below_a_chunk)
{
    static const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST,
                                         TUTTI_COLL_REDUCE};
    uint32_t in[64], out[64];
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
        int na = 0, tree = -1;
        const struct tutti_algo *a = tutti__algos(colls[c], &na);
        for (int i = 0; i < na; i++) {
            tree = strcmp(a[i].name, "tree") == 0 ? i : tree;
        }
        cr_assert_geq(tree, 0);
        for (int n = 2; n <= 9; n++) {
            for (size_t count = 2; count <= 64; count *= 2) {
                int top = -1;
                for (int r = 0; r < n; r++) {
                    struct tutti_op_desc d = {.coll = colls[c],
                                              .sendbuf = in,
                                              .recvbuf = out,
                                              .count = count,
                                              .dt = TUTTI_UINT32,
                                              .op = TUTTI_SUM,
                                              .root = 0,
                                              .peer = -1};
                    struct tutti_plan_params pp = params(r, n, 2, 16, tree);
                    struct tutti_plan plan;
                    memset(&plan, 0, sizeof(plan));
                    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0);
                    for (int l = 0; l < plan.nlanes; l++) {
                        top = plan.lanes[l].channel > top ? plan.lanes[l].channel : top;
                    }
                    tutti__plan_free(&plan);
                }
                if (count <= 16) {
                    cr_expect_eq(top, 0, "%s of %zu on %d ranks: channels up to %d",
                                 tutti__coll_name(colls[c]), count, n, top);
                } else {
                    cr_expect_eq(top, 3, "%s of %zu on %d ranks: channels up to %d",
                                 tutti__coll_name(colls[c]), count, n, top);
                }
            }
        }
    }
}

/* The static rule never picks the manual algorithms (trees, recursive doubling, Bruck...):
 * they run when forced or when the cost model picks them. (Gather, scatter and the v forms
 * have none; test_schedule_v.c runs their plans, which need count arrays.) */
Test(algos, the_static_rule_never_picks_the_manual_algorithms)
{
    static const size_t sizes[] = {1, 100, 4096, 1 << 20};
    uint32_t buf[1];
    for (int c = 0; c < TUTTI_COLL_ALLTOALLV; c++) {
        int nalgos = 0;
        const struct tutti_algo *a = tutti__algos((tutti_coll_t)c, &nalgos);
        for (int n = 1; n <= 20; n++) {
            for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && c != TUTTI_COLL_SEND &&
                               c != TUTTI_COLL_RECV;
                 k++) {
                struct tutti_op_desc d = {.coll = (tutti_coll_t)c,
                                          .sendbuf = buf,
                                          .recvbuf = buf,
                                          .count = sizes[k],
                                          .dt = TUTTI_UINT32,
                                          .root = 0,
                                          .peer = -1};
                struct tutti_plan plan;
                memset(&plan, 0, sizeof(plan));
                struct tutti_plan_params pp = params(0, n, 1, 1024, -1);
                pp.direct_max = 8192;
                cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0);
                for (int i = 0; i < nalgos; i++) {
                    cr_assert(!(a[i].manual && strcmp(plan.algo, a[i].name) == 0),
                              "%s of %zu on %d ranks chose %s", tutti__coll_name((tutti_coll_t)c),
                              sizes[k], n, plan.algo);
                }
                tutti__plan_free(&plan);
            }
        }
    }
}

/* Ranks disagree on the count (calls differ: the fingerprint says so), or agree on the call
 * but plan it differently (chunks): the receiver must notice, never overrun a buffer. */
static tutti_status_t run_two(const size_t cnt[2], const size_t chunk[2])
{
    int n = 2;
    uint32_t a[64] = {0}, b[64] = {0}, ra[64], rb[64];
    struct sim_net *net = sim_net_new(n, 2, 4 * 64);
    struct tutti_plan plans[2];
    struct tutti_exec exs[2];
    memset(plans, 0, sizeof(plans));
    uint32_t *s[2] = {a, b}, *rv[2] = {ra, rb};
    for (int r = 0; r < n; r++) {
        struct tutti_plan_params pp = params(r, n, 1, chunk[r], -1);
        struct tutti_op_desc d = {.coll = TUTTI_COLL_ALLREDUCE,
                                  .sendbuf = s[r],
                                  .recvbuf = rv[r],
                                  .count = cnt[r],
                                  .dt = TUTTI_UINT32,
                                  .op = TUTTI_SUM,
                                  .root = -1,
                                  .peer = -1};
        cr_assert_eq(tutti__plan_build(&d, &pp, &plans[r]), 0);
        cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 1), &plans[r], 1), TUTTI_OK);
    }
    tutti_status_t st = (tutti_status_t)sim_run(exs, n);
    for (int r = 0; r < n; r++) {
        tutti__exec_fini(&exs[r]);
        tutti__plan_free(&plans[r]);
    }
    sim_net_free(net);
    return st;
}

Test(schedule, mismatched_counts_are_an_error_not_a_corruption)
{
    cr_assert_eq(run_two((size_t[]){40, 30}, (size_t[]){64, 64}), TUTTI_ERR_MISMATCH);
    cr_assert(strstr(tutti_last_error(NULL), "mismatched calls") != NULL, "%s",
              tutti_last_error(NULL));
    cr_assert_eq(run_two((size_t[]){40, 40}, (size_t[]){64, 16}), TUTTI_ERR_INVALID_USAGE);
    cr_assert(strstr(tutti_last_error(NULL), "the calls match, their plans do not") != NULL, "%s",
              tutti_last_error(NULL));
}

/* A group's sends and receives: a ring shift plus a self copy, in one plan per rank. */
Test(schedule, grouped_sendrecv_ring_shift_and_self_copy)
{
    for (int n = 1; n <= 9; n++) {
        size_t cnt = 1000 + (size_t)n;
        uint32_t *out[MAXN], *in[MAXN], *self_in[MAXN];
        struct sim_net *net = sim_net_new(n, 2, 64);
        struct tutti_plan plans[MAXN];
        struct tutti_exec exs[MAXN];
        struct tutti_op_desc ops[MAXN][3];
        memset(plans, 0, sizeof(plans));
        for (int r = 0; r < n; r++) {
            out[r] = malloc(cnt * 4);
            in[r] = calloc(cnt, 4);
            self_in[r] = calloc(cnt, 4);
            for (size_t i = 0; i < cnt; i++) {
                out[r][i] = input(r, i);
            }
            ops[r][0] = (struct tutti_op_desc){.coll = TUTTI_COLL_RECV,
                                               .recvbuf = in[r],
                                               .count = cnt,
                                               .dt = TUTTI_UINT32,
                                               .root = -1,
                                               .peer = (r + n - 1) % n};
            ops[r][1] = (struct tutti_op_desc){.coll = TUTTI_COLL_SEND,
                                               .sendbuf = out[r],
                                               .count = cnt,
                                               .dt = TUTTI_UINT32,
                                               .root = -1,
                                               .peer = (r + 1) % n};
            ops[r][2] = (struct tutti_op_desc){.coll = TUTTI_COLL_RECV,
                                               .recvbuf = self_in[r],
                                               .count = cnt,
                                               .dt = TUTTI_UINT32,
                                               .root = -1,
                                               .peer = r};
            const struct tutti_op_desc *list[4] = {&ops[r][0], &ops[r][1], &ops[r][2]};
            struct tutti_op_desc self_send = ops[r][1];
            self_send.peer = r;
            list[3] = &self_send;
            struct tutti_plan_params pp = params(r, n, 2, 64, -1);
            cr_assert_eq(tutti__p2p_group_build(list, 4, &pp, &plans[r]), 0);
            cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 2), &plans[r], 1), TUTTI_OK);
        }
        cr_assert_eq(sim_run(exs, n), 0, "n=%d", n);
        for (int r = 0; r < n; r++) {
            for (size_t i = 0; i < cnt; i++) {
                cr_assert_eq(in[r][i], input((r + n - 1) % n, i), "n=%d rank %d elem %zu", n, r, i);
                cr_assert_eq(self_in[r][i], input(r, i));
            }
            tutti__exec_fini(&exs[r]);
            tutti__plan_free(&plans[r]);
            free(out[r]);
            free(in[r]);
            free(self_in[r]);
        }
        sim_net_free(net);
    }
}

/* A send of count uint32 elements from buf to peer. */
static struct tutti_op_desc send_of(const uint32_t *buf, size_t count, int peer)
{
    return (struct tutti_op_desc){.coll = TUTTI_COLL_SEND,
                                  .sendbuf = buf,
                                  .count = count,
                                  .dt = TUTTI_UINT32,
                                  .root = -1,
                                  .peer = peer};
}

Test(schedule, unpaired_self_send_is_refused)
{
    uint32_t x[4] = {0};
    struct tutti_op_desc send = send_of(x, 4, 0);
    const struct tutti_op_desc *list[1] = {&send};
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct tutti_plan_params pp = params(0, 1, 1, 16, -1);
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), -2);
    tutti__plan_free(&plan);
}

/* Bug: a group sending and receiving on the same buffer (in-place ring shift) read data already
 * overwritten by its own receive. Receives that overlap a send are now staged. */
Test(schedule, grouped_inplace_ring_shift_reads_before_it_writes)
{
    for (int n = 2; n <= 6; n++) {
        size_t cnt = 5000 + (size_t)n;
        uint32_t *buf[MAXN];
        struct sim_net *net = sim_net_new(n, 2, 256);
        struct tutti_plan plans[MAXN];
        struct tutti_exec exs[MAXN];
        memset(plans, 0, sizeof(plans));
        for (int r = 0; r < n; r++) {
            buf[r] = malloc(cnt * 4);
            for (size_t i = 0; i < cnt; i++) {
                buf[r][i] = input(r, i);
            }
            struct tutti_op_desc send = {.coll = TUTTI_COLL_SEND,
                                         .sendbuf = buf[r],
                                         .count = cnt,
                                         .dt = TUTTI_UINT32,
                                         .root = -1,
                                         .peer = (r + 1) % n};
            struct tutti_op_desc recv = {.coll = TUTTI_COLL_RECV,
                                         .recvbuf = buf[r],
                                         .count = cnt,
                                         .dt = TUTTI_UINT32,
                                         .root = -1,
                                         .peer = (r + n - 1) % n};
            const struct tutti_op_desc *list[2] = {&recv, &send};
            struct tutti_plan_params pp = params(r, n, 1, 64, -1);
            cr_assert_eq(tutti__p2p_group_build(list, 2, &pp, &plans[r]), 0);
            cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 1), &plans[r], 1), TUTTI_OK);
        }
        cr_assert_eq(sim_run(exs, n), 0, "n=%d", n);
        for (int r = 0; r < n; r++) {
            for (size_t i = 0; i < cnt; i++) {
                cr_assert_eq(buf[r][i], input((r + n - 1) % n, i), "n=%d rank %d elem %zu", n, r,
                             i);
            }
            tutti__exec_fini(&exs[r]);
            tutti__plan_free(&plans[r]);
            free(buf[r]);
        }
        sim_net_free(net);
    }
}

Test(algos, tutti_algo_forces_known_names_and_lists_valid_ones)
{
    int forced[TUTTI_COLL_COUNT];
    char err[256];
    cr_assert_eq(tutti__algo_parse("", forced, err, sizeof(err)), 0);
    cr_assert_eq(forced[TUTTI_COLL_ALLREDUCE], -1);
    cr_assert_eq(tutti__algo_parse("allreduce:oneshot,broadcast:ring", forced, err, sizeof(err)),
                 0);
    int n = 0;
    const struct tutti_algo *a = tutti__algos(TUTTI_COLL_ALLREDUCE, &n);
    cr_assert_str_eq(a[forced[TUTTI_COLL_ALLREDUCE]].name, "oneshot");
    cr_assert_eq(forced[TUTTI_COLL_REDUCE], -1);
    cr_assert_eq(tutti__algo_parse("allreduce:tree,allgather:bruck", forced, err, sizeof(err)), 0);
    cr_assert_str_eq(a[forced[TUTTI_COLL_ALLREDUCE]].name, "tree");
    cr_assert_eq(tutti__algo_parse("allreduce:butterfly", forced, err, sizeof(err)), -1);
    cr_assert(strstr(err, "ring") != NULL && strstr(err, "oneshot") != NULL, "%s", err);
    cr_assert_eq(tutti__algo_parse("allreduse:ring", forced, err, sizeof(err)), -1);
    cr_assert(strstr(err, "allreduse") != NULL, "%s", err);
}

/* fuzz_algo: a valid entry made a later misspelled one for the same collective pass. */
Test(algos, misspelled_entry_after_a_valid_one_is_refused)
{
    int forced[TUTTI_COLL_COUNT];
    char err[256];
    cr_assert_eq(tutti__algo_parse("barrier:oneshot,barrier:one", forced, err, sizeof(err)), -1);
    cr_assert(strstr(err, "'one'") != NULL, "%s", err);
}

/* fuzz_algo: entries past byte 511 were cut off unread, so a typo there passed. */
Test(algos, spec_longer_than_511_characters_is_refused)
{
    int forced[TUTTI_COLL_COUNT];
    char err[256], spec[600] = "";
    while (strlen(spec) < 500) {
        strcat(spec, "allreduce:ring,");
    }
    strcat(spec, "broadcast:rung");
    cr_assert_eq(tutti__algo_parse(spec, forced, err, sizeof(err)), -1);
    cr_assert(strstr(err, "characters long") != NULL, "%s", err);
}

Test(algos, small_messages_take_the_direct_variant_large_ones_the_ring)
{
    uint32_t buf[4096];
    struct tutti_op_desc d = {.coll = TUTTI_COLL_ALLREDUCE,
                              .sendbuf = buf,
                              .recvbuf = buf,
                              .count = 16,
                              .dt = TUTTI_UINT32,
                              .op = TUTTI_SUM,
                              .root = -1,
                              .peer = -1};
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct tutti_plan_params pp = params(0, 4, 1, 1024, -1);
    pp.direct_max = 1024;
    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0);
    cr_assert_str_eq(plan.algo, "oneshot");
    d.count = 4096; /* 16 KiB: above direct_max */
    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), 0);
    cr_assert_str_eq(plan.algo, "ring");
    pp.forced = 1; /* oneshot forced on a message larger than a slot */
    cr_assert_eq(tutti__plan_build(&d, &pp, &plan), -2);
    tutti__plan_free(&plan);
}

Test(algos, a_plan_is_reused_only_for_the_same_call)
{
    uint32_t a[4096], b[4096];
    struct tutti_op_desc d = {.coll = TUTTI_COLL_ALLREDUCE,
                              .sendbuf = a,
                              .recvbuf = a,
                              .count = 16,
                              .dt = TUTTI_UINT32,
                              .op = TUTTI_SUM,
                              .root = -1,
                              .peer = -1};
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct tutti_plan_params pp = params(1, 4, 1, 1024, -1);
    pp.direct_max = 1024;
    cr_assert_eq(tutti__plan_build_cached(&d, &pp, &plan), 0);
    uint64_t gen = plan.gen;
    cr_assert_neq(gen, 0);
    cr_assert_eq(tutti__plan_build_cached(&d, &pp, &plan), 0);
    cr_assert_eq(plan.gen, gen, "the same call must keep its plan");
    /* Each change of the call or of the parameters plans again, and the plan is the new one. */
    struct tutti_op_desc changed[4] = {d, d, d, d};
    changed[0].recvbuf = b;
    changed[1].count = 4096;
    changed[2].op = TUTTI_MAX;
    changed[3].dt = TUTTI_INT32;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(tutti__plan_build_cached(&changed[i], &pp, &plan), 0);
        cr_assert_neq(plan.gen, gen, "change %d kept the old plan", i);
        gen = plan.gen;
        cr_assert_eq(plan.op.count, changed[i].count);
        cr_assert_eq(plan.op.recvbuf, changed[i].recvbuf);
        cr_assert_eq(plan.op.op, changed[i].op);
    }
    cr_assert_str_eq(plan.algo, "oneshot");
    pp.forced = 0; /* TUTTI_ALGO=allreduce:ring */
    cr_assert_eq(tutti__plan_build_cached(&changed[3], &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen);
    cr_assert_str_eq(plan.algo, "ring");
    /* A failed build leaves nothing to reuse. */
    d.count = 4096;
    pp.forced = 1;
    cr_assert_eq(tutti__plan_build_cached(&d, &pp, &plan), -2);
    cr_assert_eq(plan.reusable, 0);
    tutti__plan_free(&plan);
}

/* A loop of the same send/recv group plans once (a sendrecv costs no build); a change of any
 * call, or a collective planned in the same storage, plans again. */
Test(algos, a_groups_exchange_is_reused_only_for_the_same_calls)
{
    static uint32_t a[256], b[256];
    struct tutti_op_desc send = send_of(a, 64, 1);
    struct tutti_op_desc recv = send;
    recv.coll = TUTTI_COLL_RECV;
    recv.sendbuf = NULL;
    recv.recvbuf = b;
    const struct tutti_op_desc *list[2] = {&send, &recv};
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct tutti_plan_params pp = params(0, 2, 1, 1024, -1);
    cr_assert_eq(tutti__p2p_group_build(list, 2, &pp, &plan), 0);
    uint64_t gen = plan.gen;
    cr_assert_neq(gen, 0);
    send.seq = recv.seq = 7; /* the next calls of the loop */
    cr_assert_eq(tutti__p2p_group_build(list, 2, &pp, &plan), 0);
    cr_assert_eq(plan.gen, gen, "the same calls must keep their plan");
    cr_assert_eq(plan.calls[0].seq, 7, "each call's number is the new one (its fingerprint)");
    cr_assert_eq(plan.calls[1].seq, 7);
    recv.count = 32;
    cr_assert_eq(tutti__p2p_group_build(list, 2, &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen, "a changed receive kept the old plan");
    gen = plan.gen;
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen, "fewer calls kept the old plan");
    gen = plan.gen;
    pp.chunk_elems = 512;
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen, "new parameters kept the old plan");
    gen = plan.gen;
    /* The same storage planned a collective in between: each plans again. */
    struct tutti_op_desc ar = {.coll = TUTTI_COLL_ALLREDUCE,
                               .sendbuf = a,
                               .recvbuf = b,
                               .count = 16,
                               .dt = TUTTI_UINT32,
                               .op = TUTTI_SUM,
                               .root = -1,
                               .peer = -1};
    cr_assert_eq(tutti__plan_build_cached(&ar, &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen);
    gen = plan.gen;
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen, "the collective's storage passed for the group's plan");
    gen = plan.gen;
    cr_assert_eq(plan.ncalls, 1);
    cr_assert_eq(tutti__plan_build_cached(&ar, &pp, &plan), 0);
    cr_assert_neq(plan.gen, gen, "the group's plan passed for the collective's");
    cr_assert_eq(plan.op.coll, TUTTI_COLL_ALLREDUCE);
    tutti__plan_free(&plan);
}

/* Bytes a plan moves on each channel (its lanes' steps). */
static void bytes_per_channel(const struct tutti_plan *plan, size_t out[4])
{
    memset(out, 0, 4 * sizeof(out[0]));
    for (int i = 0; i < plan->nlanes; i++) {
        cr_assert_lt(plan->lanes[i].channel, 4);
        for (size_t k = 0; k < plan->lanes[i].nsteps; k++) {
            out[plan->lanes[i].channel] += plan->lanes[i].steps[k].count;
        }
    }
}

/* A message takes one channel per chunk of it, at most all of them: a small send/recv is one
 * frame on channel 0, not a sliver on each channel (a system call each over TCP). */
Test(algos, a_send_takes_one_channel_per_chunk)
{
    static uint32_t a[16384];
    struct tutti_op_desc send = send_of(a, 2, 1);
    const struct tutti_op_desc *list[1] = {&send};
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct tutti_plan_params pp = params(0, 2, 4, 1024, -1); /* a group's plan counts bytes */
    size_t per[4];
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), 0);
    bytes_per_channel(&plan, per);
    cr_assert(per[0] == 8 && per[1] == 0 && per[2] == 0 && per[3] == 0,
              "8 bytes: %zu %zu %zu %zu bytes on the channels", per[0], per[1], per[2], per[3]);
    send.count = 768; /* 3 KiB: three chunks, three channels */
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), 0);
    bytes_per_channel(&plan, per);
    cr_assert(per[0] == 1024 && per[1] == 1024 && per[2] == 1024 && per[3] == 0,
              "3 KiB: %zu %zu %zu %zu bytes on the channels", per[0], per[1], per[2], per[3]);
    send.count = 16384; /* 64 KiB: every channel, evenly */
    cr_assert_eq(tutti__p2p_group_build(list, 1, &pp, &plan), 0);
    bytes_per_channel(&plan, per);
    for (int ch = 0; ch < 4; ch++) {
        cr_assert_eq(per[ch], 16384, "64 KiB: channel %d moves %zu bytes", ch, per[ch]);
    }
    tutti__plan_free(&plan);
    size_t off, len;
    tutti__coll_channel_share(0, pp.chunk_elems, pp.nchannels, 0, &off, &len);
    cr_assert(off == 0 && len == 0, "nothing to move: channel 0 gets nothing");
    tutti__coll_channel_share(1025, pp.chunk_elems, pp.nchannels, 1, &off, &len);
    cr_assert(off + len == 1025 && len > 0, "just over a chunk: two channels");
    tutti__coll_channel_share(1025, pp.chunk_elems, pp.nchannels, 2, &off, &len);
    cr_assert_eq(len, 0);
}

/* Count the steps of each kind in a plan. */
static void kinds_of(const struct tutti_plan *plan, size_t counts_out[TUTTI_STEP_KIND_COUNT])
{
    memset(counts_out, 0, TUTTI_STEP_KIND_COUNT * sizeof(counts_out[0]));
    for (int i = 0; i < plan->nlanes; i++) {
        for (size_t k = 0; k < plan->lanes[i].nsteps; k++) {
            counts_out[plan->lanes[i].steps[k].kind]++;
        }
    }
}

Test(algos, out_of_place_input_is_read_once_while_it_is_sent)
{
    static uint32_t in[8192], out[4 * 8192];
    size_t kinds[TUTTI_STEP_KIND_COUNT];
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct tutti_plan_params pp = params(0, 4, 1, 1024, -1);
    /* Broadcast root and all-gather: every chunk of the input goes to the peer and to the
     * output in one copy-send step; no separate copy pass over the input. */
    struct tutti_op_desc bc = {.coll = TUTTI_COLL_BROADCAST,
                               .sendbuf = in,
                               .recvbuf = out,
                               .count = 8192,
                               .dt = TUTTI_UINT32,
                               .op = TUTTI_SUM,
                               .root = 0,
                               .peer = -1};
    struct tutti_op_desc ag = bc;
    ag.coll = TUTTI_COLL_ALLGATHER;
    ag.root = -1;
    const struct tutti_op_desc *ops[2] = {&bc, &ag};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tutti__plan_build(ops[i], &pp, &plan), 0);
        kinds_of(&plan, kinds);
        cr_assert_eq(kinds[TUTTI_STEP_COPY_SEND], 8, "op %d: %zu copy-send steps", i,
                     kinds[TUTTI_STEP_COPY_SEND]);
        cr_assert_eq(kinds[TUTTI_STEP_COPY], 0, "op %d: a separate copy pass", i);
        cr_assert_eq(kinds[TUTTI_STEP_SEND], 0);
    }
    /* In place there is nothing to copy: plain sends. */
    bc.sendbuf = out;
    cr_assert_eq(tutti__plan_build(&bc, &pp, &plan), 0);
    kinds_of(&plan, kinds);
    cr_assert_eq(kinds[TUTTI_STEP_COPY_SEND], 0);
    cr_assert_eq(kinds[TUTTI_STEP_SEND], 8);
    /* All-to-all: the own block is copied chunk by chunk between the sends, never in one step
     * larger than a chunk (which would stall every exchange while it runs). */
    struct tutti_op_desc a2a = ag;
    a2a.coll = TUTTI_COLL_ALLTOALL;
    a2a.sendbuf = out; /* 4 blocks of 8192 */
    static uint32_t out2[4 * 8192];
    a2a.recvbuf = out2;
    cr_assert_eq(tutti__plan_build(&a2a, &pp, &plan), 0);
    kinds_of(&plan, kinds);
    cr_assert_eq(kinds[TUTTI_STEP_COPY], 8);
    for (int i = 0; i < plan.nlanes; i++) {
        for (size_t k = 0; k < plan.lanes[i].nsteps; k++) {
            cr_assert_leq(plan.lanes[i].steps[k].count, pp.chunk_elems);
        }
    }
    tutti__plan_free(&plan);
}
