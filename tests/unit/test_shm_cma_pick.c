/*
 * test_shm_cma_pick.c - when two local ranks send large frames by reference
 * (transports/shm/shm_cma_pick.c): each process's cost of one kernel copy follows
 * TUTTI_SHM_CMA, and a pair's answer comes from both costs, the same for both directions.
 * Each test runs in its own process, so the environment is read afresh.
 */
#include "base/env.h"
#include "transports/shm/shm.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#define REFUSED TUTTI_SHM_CMA_REFUSED

static int pair_pays(uint32_t a, uint32_t b)
{
    return tutti__shm_cma_pays(a, b, TUTTI_SHM_CMA_PAIR_PCT);
}

static int lone_pays(uint32_t a, uint32_t b)
{
    return tutti__shm_cma_pays(a, b, TUTTI_SHM_CMA_LONE_PCT);
}

Test(shm_cma_pick, a_side_that_refuses_decides_for_the_pair)
{
    uint32_t others[] = {0, 1, 150, 300, 5000, REFUSED};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        cr_expect_not(pair_pays(REFUSED, others[i]), "refused with %u", others[i]);
        cr_expect_not(pair_pays(others[i], REFUSED), "%u with refused", others[i]);
    }
}

Test(shm_cma_pick, a_side_that_always_takes_the_copy_decides_unless_the_other_refuses)
{
    cr_expect(pair_pays(0, 900), "TUTTI_SHM_CMA=1 beside a dear kernel copy");
    cr_expect(pair_pays(900, 0));
    cr_expect(pair_pays(0, 0));
}

Test(shm_cma_pick, measured_costs_pay_while_they_average_three_memcpys_at_most)
{
    struct {
        uint32_t a, b;
        int pays;
    } cases[] = {
        {190, 220, 1}, /* the VM of 2026-12-01: by reference */
        {300, 300, 1}, /* on the line */
        {100, 500, 1}, /* an average of 3.00 */
        {301, 300, 0}, /* just past it */
        {350, 450, 0}, /* the VM of 2026-11-30: the FIFO */
        {200, 420, 0}, /* one side's dear copy outweighs the other's cheap one */
        {1, 1, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int ab = pair_pays(cases[i].a, cases[i].b);
        int ba = pair_pays(cases[i].b, cases[i].a);
        cr_expect_eq(ab, cases[i].pays, "costs %u and %u: %d", cases[i].a, cases[i].b, ab);
        cr_expect_eq(ab, ba, "costs %u and %u: the two directions differ", cases[i].a, cases[i].b);
    }
}

Test(shm_cma_pick, setting_0_refuses_and_sends_nothing_by_reference)
{
    setenv("TUTTI_SHM_CMA", "0", 1);
    cr_assert_eq(tutti__shm_cma_cost(tutti__env()), REFUSED);
    cr_assert_eq(tutti__shm_cma_min(tutti__env()), SIZE_MAX);
}

Test(shm_cma_pick, setting_1_takes_the_copy_whatever_it_costs)
{
    setenv("TUTTI_SHM_CMA", "1", 1);
    setenv("TUTTI_SHM_CMA_MIN", "16k", 1);
    cr_assert_eq(tutti__shm_cma_cost(tutti__env()), 0);
    cr_assert_eq(tutti__shm_cma_min(tutti__env()), 16384);
}

Test(shm_cma_pick, setting_2_times_the_copy_once)
{
    setenv("TUTTI_SHM_CMA", "2", 1);
    uint32_t cost = tutti__shm_cma_cost(tutti__env());
    cr_assert_neq(cost, 0, "a measured cost is never 0 (0 is TUTTI_SHM_CMA=1's)");
    cr_assert_eq(tutti__shm_cma_cost(tutti__env()), cost, "timed once per process");
    size_t min = tutti__shm_cma_min(tutti__env());
    cr_assert_eq(min, cost == REFUSED ? SIZE_MAX : tutti__env()->SHM_CMA_MIN,
                 "cost %u, smallest frame by reference %zu", cost, min);
}

Test(shm_cma_pick, a_rank_that_only_sends_does_so_in_any_call_only_where_the_kernel_beats_memcpy)
{
    cr_expect(lone_pays(80, 110), "an average under one memcpy");
    cr_expect(lone_pays(100, 100), "on the line");
    cr_expect_not(lone_pays(190, 220), "the VM of 2026-12-01: the FIFO");
    cr_expect_not(lone_pays(101, 100));
    cr_expect(lone_pays(0, 400), "TUTTI_SHM_CMA=1: whatever it costs");
    cr_expect(lone_pays(400, 0));
    cr_expect_not(lone_pays(REFUSED, 0), "a side that refuses still decides");
}
