/*
 * test_pair.c - the two-rank all-gather over shared memory: a lane of sends and a lane of
 * receives per channel instead of the ring's one lane, chosen only where the plan knows the pair
 * talks over shm; its results on the simulated network for every size, channel count, slot and
 * in place.
 */
#include "coll/coll.h"
#include "sched_world.h"
#include "transports/transport.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

static const uint8_t by_shm[2] = {TUTTI_TRANSPORT_SHM, TUTTI_TRANSPORT_SHM};
static const uint8_t by_tcp[2] = {TUTTI_TRANSPORT_TCP, TUTTI_TRANSPORT_TCP};

/* The catalog index of the ring all-gather. */
static int ring_index(void)
{
    int n = 0;
    const struct tutti_algo *a = tutti__algos(TUTTI_COLL_ALLGATHER, &n);
    for (int i = 0; i < n; i++) {
        if (strcmp(a[i].name, "ring") == 0) {
            return i;
        }
    }
    cr_assert_fail("no ring all-gather in the catalog");
    return -1;
}

/* Lanes that only send, lanes that only receive, lanes that do both; elements each way. */
struct shape {
    int sends, takes, both;
    size_t sent, taken;
};

static struct shape shape_of(const uint8_t *transport, int rank, int nch, size_t count)
{
    static uint32_t in[70000], out[140000];
    struct tutti_op_desc ag = {.coll = TUTTI_COLL_ALLGATHER,
                               .sendbuf = in,
                               .recvbuf = out,
                               .count = count,
                               .dt = TUTTI_UINT32,
                               .op = TUTTI_SUM,
                               .root = -1,
                               .peer = -1};
    world_peer_transport = transport;
    struct tutti_plan_params pp = params(rank, 2, nch, 1024, ring_index());
    world_peer_transport = NULL;
    struct tutti_plan plan;
    memset(&plan, 0, sizeof(plan));
    cr_assert_eq(tutti__plan_build(&ag, &pp, &plan), 0);
    struct shape s = {0};
    for (int i = 0; i < plan.nlanes; i++) {
        const struct tutti_lane *l = &plan.lanes[i];
        s.sends += l->send_peer >= 0 && l->recv_peer < 0;
        s.takes += l->send_peer < 0 && l->recv_peer >= 0;
        s.both += l->send_peer >= 0 && l->recv_peer >= 0;
        for (size_t k = 0; k < l->nsteps; k++) {
            const struct tutti_step *st = &l->steps[k];
            s.sent += st->send_peer >= 0 ? st->count : 0;
            s.taken += st->recv_peer >= 0 ? st->count : 0;
            cr_assert(st->send_peer < 0 || st->send_peer == 1 - rank, "a send to rank %d",
                      st->send_peer);
            cr_assert(st->recv_peer < 0 || st->recv_peer == 1 - rank, "a receive from rank %d",
                      st->recv_peer);
        }
    }
    tutti__plan_free(&plan);
    return s;
}

Test(pair, over_shm_an_allgather_sends_on_one_lane_and_receives_on_another)
{
    for (int rank = 0; rank < 2; rank++) {
        for (int nch = 1; nch <= 4; nch++) {
            struct shape s = shape_of(by_shm, rank, nch, 65537);
            cr_expect(s.sends == nch && s.takes == nch && s.both == 0,
                      "rank %d, %d channels: %d sending lanes, %d receiving, %d both", rank, nch,
                      s.sends, s.takes, s.both);
            cr_expect(s.sent == 65537 && s.taken == 65537, "rank %d: sent %zu, took %zu", rank,
                      s.sent, s.taken);
        }
    }
}

Test(pair, over_tcp_or_where_the_transport_is_unknown_the_allgather_keeps_the_ring)
{
    const uint8_t *kinds[] = {by_tcp, NULL};
    for (int k = 0; k < 2; k++) {
        struct shape s = shape_of(kinds[k], 0, 3, 65537);
        cr_expect(s.sends == 0 && s.takes == 0 && s.both == 3,
                  "%s: %d sending lanes, %d receiving, %d both", k == 0 ? "tcp" : "unknown",
                  s.sends, s.takes, s.both);
        cr_expect(s.sent == 65537 && s.taken == 65537);
    }
}

Test(pair, over_shm_the_allgather_is_right_for_every_size_channel_count_and_slot)
{
    static const size_t counts[] = {0, 1, 2, 3, 7, 1023, 65537};
    static const size_t slots[] = {1, 2, 5, 1024};
    world_peer_transport = by_shm;
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        for (size_t si = 0; si < sizeof(slots) / sizeof(slots[0]); si++) {
            for (int nch = 1; nch <= 3; nch++) {
                for (int inplace = 0; inplace <= 1; inplace++) {
                    struct world w = {.n = 2, .count = counts[ci], .root = -1, .inplace = inplace};
                    world_fill(&w, TUTTI_COLL_ALLGATHER);
                    int rc =
                        run_algo(&w, TUTTI_COLL_ALLGATHER, TUTTI_SUM, nch, slots[si], ring_index());
                    cr_assert_eq(rc, 0, "count %zu slot %zu, %d channels%s: %s (%d)", counts[ci],
                                 slots[si], nch, inplace ? ", in place" : "",
                                 rc == -1 ? "deadlock" : "error", rc);
                    check(&w, TUTTI_COLL_ALLGATHER, "pair all-gather");
                    world_free(&w);
                }
            }
        }
    }
    world_peer_transport = NULL;
}
