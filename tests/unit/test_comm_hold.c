/*
 * test_comm_hold.c - src/base/hold.c and comm/comm_live.c: a thread that found a communicator
 * live enters it again by its hold, without the live set's lock or state.inflight; the hold
 * lasts only while nothing has left the live set; a communicator taken out of the set is
 * refused, and a remover that waits for tutti__comm_busy never sees a thread still inside after
 * it stops waiting. The communicators here are zeroed structs put into the live set by hand.
 */
#include "base/global.h"
#include "comm/comm.h"
#include "base/hold.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>

static struct tutti_comm *live_comm(void)
{
    struct tutti_comm *c = calloc(1, sizeof(*c));
    cr_assert_not_null(c);
    cr_assert_eq(tutti__comm_publish(c), TUTTI_OK);
    return c;
}

static int inflight(const struct tutti_comm *c)
{
    return atomic_load(&((struct tutti_comm *)c)->fab.state.inflight);
}

Test(comm_hold, the_second_entry_holds_instead_of_counting)
{
    struct tutti_comm *c = live_comm();
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    cr_expect_eq(inflight(c), 1, "the first entry takes the locked way");
    tutti__comm_leave(c);
    cr_expect_eq(tutti__comm_busy(c), 0);
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    cr_expect_eq(inflight(c), 0, "the second entry should not touch inflight");
    cr_expect(tutti__held(TUTTI_HOLD_COMM, c), "the second entry should be a hold");
    cr_expect_eq(tutti__comm_busy(c), 1);
    tutti__comm_leave(c);
    cr_expect_eq(tutti__comm_busy(c), 0);
    cr_expect(!tutti__held(TUTTI_HOLD_COMM, c));
}

Test(comm_hold, a_nested_entry_counts_and_both_leaves_balance)
{
    struct tutti_comm *c = live_comm();
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    tutti__comm_leave(c);
    cr_assert_eq(tutti__comm_enter(c, 0), 0); /* held */
    cr_assert_eq(tutti__comm_enter(c, 0), 0); /* counted: the thread's one hold is taken */
    cr_expect_eq(inflight(c), 1);
    cr_expect_eq(tutti__comm_busy(c), 2);
    tutti__comm_leave(c);
    cr_expect_eq(tutti__comm_busy(c), 1, "one entry is still inside");
    tutti__comm_leave(c);
    cr_expect_eq(tutti__comm_busy(c), 0);
    cr_expect_eq(inflight(c), 0);
}

Test(comm_hold, any_removal_sends_the_next_entry_through_the_lock)
{
    struct tutti_comm *c = live_comm(), *other = live_comm();
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    tutti__comm_leave(c);
    cr_assert(tutti__handle_take(&tutti__g.live_comms, other));
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    cr_expect_eq(inflight(c), 1, "a removal since the last lookup must cost a lookup");
    tutti__comm_leave(c);
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    cr_expect_eq(inflight(c), 0, "held again once looked up");
    tutti__comm_leave(c);
}

Test(comm_hold, a_communicator_taken_out_is_refused_by_the_thread_that_held_it)
{
    struct tutti_comm *c = live_comm();
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tutti__comm_enter(c, 0), 0);
        tutti__comm_leave(c);
    }
    cr_assert(tutti__handle_take(&tutti__g.live_comms, c));
    cr_expect_eq(tutti__comm_enter(c, 0), -1);
    cr_expect_eq(tutti__comm_busy(c), 0, "a refused entry leaves nothing behind");
}

Test(comm_hold, an_entry_by_serial_always_looks_up)
{
    struct tutti_comm *c = live_comm();
    cr_assert_eq(tutti__comm_enter(c, 0), 0);
    tutti__comm_leave(c);
    cr_expect_eq(tutti__comm_enter(c, c->serial + 1), -1, "another serial is another comm");
    cr_assert_eq(tutti__comm_enter(c, c->serial), 0);
    cr_expect_eq(inflight(c), 1);
    tutti__comm_leave(c);
}

static void *enter_leave(void *arg)
{
    struct tutti_comm *c = arg;
    for (int i = 0; i < 2; i++) {
        if (tutti__comm_enter(c, 0) != 0) {
            return (void *)1;
        }
        tutti__comm_leave(c);
    }
    return NULL;
}

Test(comm_hold, threads_that_exit_give_their_records_to_the_next)
{
    struct tutti_comm *c = live_comm();
    for (int i = 0; i < 40; i++) {
        pthread_t th;
        void *rc = (void *)1;
        cr_assert_eq(pthread_create(&th, NULL, enter_leave, c), 0);
        pthread_join(th, &rc);
        cr_assert_null(rc, "thread %d was refused", i);
    }
    cr_expect_leq(tutti__hold_records(), 2, "%d records for 40 threads one after another",
                  tutti__hold_records());
    cr_expect_eq(tutti__comm_busy(c), 0);
}

/* One thread enters and leaves as fast as it can; another takes the communicator out of the
 * live set, waits until tutti__comm_busy is 0 and marks it freed. The first must never be
 * inside while it is marked, nor get in afterwards. */
struct race {
    struct tutti_comm *c;
    atomic_int freed, stop;
    atomic_long entries, inside_freed, after_freed;
};

static void *racer(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->stop)) {
        int freed_before = atomic_load(&r->freed);
        if (tutti__comm_enter(r->c, 0) == 0) {
            atomic_fetch_add(&r->entries, 1);
            if (atomic_load(&r->freed)) {
                atomic_fetch_add(&r->inside_freed, 1);
            }
            if (freed_before) {
                atomic_fetch_add(&r->after_freed, 1);
            }
            tutti__comm_leave(r->c);
        }
    }
    return NULL;
}

Test(comm_hold, a_remover_that_waits_never_meets_a_thread_inside, .timeout = 120)
{
    long held_rounds = 0;
    for (int round = 0; round < 300; round++) {
        struct race r = {.c = live_comm()};
        pthread_t th;
        cr_assert_eq(pthread_create(&th, NULL, racer, &r), 0);
        while (atomic_load(&r.entries) < 1 + round % 50) {
            sched_yield();
        }
        held_rounds += inflight(r.c) == 0; /* the racer's later entries were holds */
        cr_assert(tutti__handle_take(&tutti__g.live_comms, r.c));
        while (tutti__comm_busy(r.c) > 0) {
            sched_yield();
        }
        atomic_store(&r.freed, 1);
        long seen = atomic_load(&r.entries);
        for (int i = 0; i < 200; i++) {
            sched_yield();
        }
        atomic_store(&r.stop, 1);
        pthread_join(th, NULL);
        cr_assert_eq(atomic_load(&r.inside_freed), 0,
                     "round %d: a thread was inside after the "
                     "remover stopped waiting",
                     round);
        cr_assert_eq(atomic_load(&r.after_freed), 0, "round %d: entered after removal", round);
        cr_assert_eq(atomic_load(&r.entries), seen, "round %d: entries after removal", round);
        free(r.c);
    }
    cr_expect_gt(held_rounds, 0, "no round raced a hold against the removal");
}
