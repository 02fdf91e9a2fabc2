/*
 * test_transport_pick.c - the transport of each pair of ranks, as the registry picks it through
 * the transports' own can_connect from a peer table alone: shared memory within a host, verbs
 * where both ranks published a port of one link layer, TCP for the rest; the same answer
 * whichever rank asks, and with a transport out of use the next one in order.
 */
#include "transports/ibverbs/ib.h"
#include "transports/shm/shm.h"
#include "transports/transport.h"
#include "exec/registry.h"

#include <criterion/criterion.h>
#include <string.h>

#define NR 5

/* Ranks 0 and 1 share host 0; ranks 2, 3 and 4 each have a host. RoCE on 0, 1 and 2,
 * InfiniBand on 3, no RDMA port on 4. */
static void make_peers(struct tutti_tpeer *p)
{
    static const int host[NR] = {0, 0, 2, 3, 4};
    static const int link[NR] = {TUTTI_IB_LINK_ETH, TUTTI_IB_LINK_ETH, TUTTI_IB_LINK_ETH,
                                 TUTTI_IB_LINK_IB, -1};
    memset(p, 0, NR * sizeof(*p));
    for (int r = 0; r < NR; r++) {
        p[r].host = host[r];
        if (link[r] >= 0) {
            struct ib_blob b = {
                .magic = IB_BLOB_MAGIC, .links = (uint8_t)(1u << link[r]), .nports = 1};
            memcpy(p[r].blob[TUTTI_TRANSPORT_IB], &b, sizeof(b)); /* little-endian host */
        }
    }
}

#define NBIG 48 /* the most ranks of a world */

struct world {
    struct tutti_tpeer peers[NBIG];
    struct tutti_tctx_args args;
    struct shm_ctx shm;
    struct ib_ctx ib;
    const struct tutti_transport_ops *ops[TUTTI_TRANSPORT_COUNT];
    void *tctx[TUTTI_TRANSPORT_COUNT];
};

/* Contexts of rank `me` of n holding nothing but the peer table: all a pair's judgement may
 * use. */
static void set_contexts(struct world *w, int me, int n)
{
    w->args = (struct tutti_tctx_args){.rank = me, .nranks = n, .peers = w->peers};
    w->shm.args = w->args;
    w->ib.args = &w->args;
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        w->ops[id] = tutti__transport_get((tutti_transport_id_t)id);
    }
    w->tctx[TUTTI_TRANSPORT_SHM] = &w->shm;
    w->tctx[TUTTI_TRANSPORT_IB] = &w->ib;
    w->tctx[TUTTI_TRANSPORT_TCP] = NULL; /* TCP's judgement needs no context */
}

static void make_world(struct world *w, int me)
{
    memset(w, 0, sizeof(*w));
    make_peers(w->peers);
    set_contexts(w, me, NR);
}

static tutti_transport_id_t pick(const struct world *w, int a, int b)
{
    tutti_transport_id_t id = TUTTI_TRANSPORT_COUNT;
    cr_assert_eq(tutti__transport_pick(w->ops, w->tctx, a, b, &id), TUTTI_OK, "pair %d %d", a, b);
    return id;
}

Test(transport_pick, shm_within_a_host_then_verbs_then_tcp_whoever_asks)
{
    static const tutti_transport_id_t S = TUTTI_TRANSPORT_SHM, I = TUTTI_TRANSPORT_IB,
                                      T = TUTTI_TRANSPORT_TCP;
    static const tutti_transport_id_t want[NR][NR] = {
        {S, S, I, T, T}, {S, S, I, T, T}, {I, I, S, T, T}, {T, T, T, S, T}, {T, T, T, T, S},
    };
    for (int me = 0; me < NR; me++) {
        struct world w;
        make_world(&w, me);
        for (int a = 0; a < NR; a++) {
            for (int b = 0; b < NR; b++) {
                if (a != b) {
                    cr_assert_eq(pick(&w, a, b), want[a][b], "rank %d asks about %d-%d: %s", me, a,
                                 b, tutti__transport_name(pick(&w, a, b)));
                }
            }
        }
    }
}

Test(transport_pick, a_transport_out_of_use_leaves_the_pair_to_the_next)
{
    struct world w;
    make_world(&w, 0);
    w.ops[TUTTI_TRANSPORT_SHM] = NULL; /* shared memory off (TUTTI_TRANSPORT=ib, no /dev/shm) */
    cr_assert_eq(pick(&w, 0, 1), TUTTI_TRANSPORT_IB, "same host, RoCE on both");
    cr_assert_eq(pick(&w, 3, 4), TUTTI_TRANSPORT_TCP);
    w.ops[TUTTI_TRANSPORT_IB] = NULL; /* TUTTI_TRANSPORT=tcp */
    cr_assert_eq(pick(&w, 0, 1), TUTTI_TRANSPORT_TCP);
    cr_assert_eq(pick(&w, 0, 2), TUTTI_TRANSPORT_TCP);
    w.ops[TUTTI_TRANSPORT_TCP] = NULL;
    tutti_transport_id_t id = TUTTI_TRANSPORT_COUNT;
    cr_assert_eq(tutti__transport_pick(w.ops, w.tctx, 0, 1, &id), TUTTI_ERR_UNSUPPORTED);
    cr_assert_eq(id, TUTTI_TRANSPORT_COUNT, "no output on failure");
}

/* ---- the transports some pair uses, by kinds of pairs, against every pair asked ---- */

/* n ranks on up to `hosts` hosts, each with no RDMA port, RoCE, InfiniBand or both. */
static void make_big_world(struct world *w, int n, int hosts, unsigned *seed)
{
    memset(w, 0, sizeof(*w));
    for (int r = 0; r < n; r++) {
        w->peers[r].host = (int)(rand_r(seed) % (unsigned)hosts);
        unsigned links = rand_r(seed) % 4; /* bit 0: RoCE, bit 1: InfiniBand */
        if (links != 0) {
            struct ib_blob b = {.magic = IB_BLOB_MAGIC,
                                .links = (uint8_t)(((links & 1) ? 1u << TUTTI_IB_LINK_ETH : 0) |
                                                   ((links & 2) ? 1u << TUTTI_IB_LINK_IB : 0)),
                                .nports = 1};
            memcpy(w->peers[r].blob[TUTTI_TRANSPORT_IB], &b, sizeof(b));
        }
    }
    set_contexts(w, 0, n);
}

Test(transport_pick, transports_used_by_kinds_of_pairs_match_every_pair_asked)
{
    unsigned seed = 2026;
    int seen = 0; /* masks met, so that the worlds cover more than one answer */
    for (int trial = 0; trial < 400; trial++) {
        struct world w;
        int n = 1 + (int)(rand_r(&seed) % NBIG);
        make_big_world(&w, n, 1 + (int)(rand_r(&seed) % 6), &seed);
        if (trial % 3 == 1) {
            w.ops[TUTTI_TRANSPORT_SHM] = NULL;
        }
        unsigned want = 0, got = 0;
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                tutti_transport_id_t id;
                cr_assert_eq(tutti__transport_pick(w.ops, w.tctx, a, b, &id), TUTTI_OK);
                want |= 1u << id;
            }
        }
        int bad[2];
        cr_assert_eq(tutti__transport_used(w.ops, w.tctx, w.peers, n, &got, bad), TUTTI_OK);
        cr_assert_eq(got, want, "trial %d, %d ranks: used %#x, every pair says %#x", trial, n, got,
                     want);
        seen |= 1 << want;
    }
    cr_assert_gt(__builtin_popcount((unsigned)seen), 4, "worlds met only masks %#x", seen);
}

Test(transport_pick, transports_used_names_a_pair_nothing_takes)
{
    struct world w;
    make_world(&w, 0);
    w.ops[TUTTI_TRANSPORT_TCP] = NULL; /* ranks 3 and 4: no shared host, no common link */
    unsigned used = 0;
    int bad[2] = {-1, -1};
    cr_assert_eq(tutti__transport_used(w.ops, w.tctx, w.peers, NR, &used, bad),
                 TUTTI_ERR_UNSUPPORTED);
    tutti_transport_id_t id;
    cr_assert_eq(tutti__transport_pick(w.ops, w.tctx, bad[0], bad[1], &id), TUTTI_ERR_UNSUPPORTED,
                 "ranks %d and %d", bad[0], bad[1]);
}

Test(transport_pick, a_peers_name_is_made_when_a_message_needs_it)
{
    struct tutti_tpeer p[2] = {{.host = 0, .pid = 4242, .hostname = "node7"}, {.host = 1}};
    char buf[128];
    cr_expect_str_eq(tutti__tpeer_name(p, 0, buf, sizeof(buf)), "rank 0 (host node7, pid 4242)");
    cr_expect_str_eq(tutti__tpeer_name(p, 1, buf, sizeof(buf)), "rank 1", "no host name known");
    cr_expect_str_eq(tutti__tpeer_name(NULL, 3, buf, sizeof(buf)), "rank 3", "no table yet");
}
