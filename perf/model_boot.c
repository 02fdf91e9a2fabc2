/*
 * model_boot.c - the cost of building a communicator of n ranks, for tutti-model: tutti's
 * bootstrap as the code does it today (a star through one root thread, src/comm/boot_root.c and
 * src/comm/boot_client.c) and the tree design proposed in perf/results/2026-11-22-model.md.
 *
 * What the star does, counted from the code: each rank opens one TCP connection to the root and
 * runs the handshake (3 messages: HELLO, PROVE carrying the rank's hello, ACCEPT; two HMACs at
 * the root), then makes 5 requests, each answered once every rank has sent it (sync in
 * setup(); the all-gather of 376-byte peer records; three syncs in tutti__net_attach), then
 * BYE: 14 messages per rank whatever n is. The root handles all of them, 14n messages, and
 * answers the all-gather with all n records to each rank: 376 n^2 bytes.
 */
#include "model_boot.h"

#include <math.h>

#define PEER_RECORD_BYTES 376 /* sizeof(struct tutti_peer_info), src/comm/peer.h */
#define ADDR_BYTES        24  /* a listening address (struct tutti_wire_addr) */
#define SYNCS             4   /* status agreements per communicator (init.c, connect.c) */
#define HS_MSGS           3   /* HELLO, PROVE, ACCEPT (src/net/handshake.h) */

static int ceil_log2(int n)
{
    int d = 0;
    while ((1 << d) < n) {
        d++;
    }
    return d;
}

void model_boot_star(int n, const struct model_boot_link *l, struct model_boot *out)
{
    double rounds = SYNCS + 1; /* request/reply rounds: the syncs and the all-gather */
    out->rank_msgs = HS_MSGS + 2 * rounds + 1;
    out->root_msgs = out->rank_msgs * n;
    out->root_bytes = (double)PEER_RECORD_BYTES * n * n + 64.0 * out->root_msgs;
    /* The root thread handles everything in turn: every handshake, then each round's 2n
     * messages; the all-gather's n^2 records leave through its one link. Its poll loop also
     * visits all n connections on every wake-up; that is left out (it only adds). */
    out->time_s = (n * l->hs_us + out->root_msgs * l->msg_us + rounds * l->lat_us) * 1e-6 +
                  (double)PEER_RECORD_BYTES * n * n / (l->gbps * 1e9);
}

void model_boot_tree(int n, const struct model_boot_link *l, struct model_boot *out)
{
    int d = ceil_log2(n);
    /* The busiest rank is the binomial tree's root: d children. Per rank: one hello to the
     * rendezvous, its neighbours' addresses down the tree (receive one, forward to each child),
     * and per sync one reduce up and one broadcast down (children + 1 messages each way). */
    out->rank_msgs = 1 + (1 + d) + SYNCS * 2.0 * (d + 1) + 1;
    out->root_msgs = n + out->rank_msgs; /* the rendezvous takes every hello, nothing more */
    out->root_bytes = (double)ADDR_BYTES * n * 2;
    /* Hellos serialise at the rendezvous; everything else is d levels deep. Peer records travel
     * only between neighbours, when they connect. */
    out->time_s = (n * l->hs_us + d * (l->lat_us + (double)ADDR_BYTES * n / (l->gbps * 1e3)) +
                   SYNCS * 2.0 * d * l->lat_us) *
                  1e-6;
}
