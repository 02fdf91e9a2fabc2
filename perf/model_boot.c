/*
 * model_boot.c - the cost of building a communicator of n ranks, for tutti-model: tutti's two
 * bootstraps, the star through one root thread (src/comm/boot_root.c, boot_client.c; below
 * TUTTI_BOOT_TREE ranks) and the tree between the ranks (src/comm/boot_tree.c; from
 * TUTTI_BOOT_TREE ranks, 64 by default).
 *
 * What a communicator's set-up asks of the bootstrap, counted from the code: 4 syncs (one in
 * setup(), two in tutti__fabric_attach, one in check_budget) and 1 all-gather of the peer records
 * (each with its rank's topology view), then BYE; where some rank has a GPU, a second
 * all-gather of the views (each with its rank's GPU: topology/view.c); where all ranks share
 * one host (at most TUTTI_WIN_CTL_RANKS), two more: the control pages' records and whether
 * every rank mapped them (comm/window.c).
 *
 * Star: each rank opens one TCP connection to the root and runs the handshake (3 messages, two
 * HMACs at the root), then sends each of the 6 requests and gets each answer: the root handles
 * every message, and answers each all-gather with all n records to each rank (records x n^2
 * bytes).
 *
 * Tree: the root handles the handshakes, one more round (each rank's listening address in, its
 * parent's out) and the BYEs: 6 messages per rank, a few hundred bytes, O(n) in all. The ranks
 * then connect their parents (a handshake each) and run each sync and all-gather up and down a
 * tree of fan-out 8 (depth ceil(log8 n)). The busiest rank is rank 0: per round, a message from
 * and to each of its children; per all-gather it sends the n records to each child.
 */
#include "model_boot.h"
#include "exec/peer.h"
#include "topology/topo.h"
#include "win/win.h"

#include <math.h>

#define PEER_RECORD_BYTES ((double)sizeof(struct tutti_peer_info))
#define TOPO_RECORD_BYTES ((double)sizeof(struct tutti_topo_rank))
#define SYNCS             4 /* status agreements per communicator (init.c, connect.c) */
#define CTL_RECORD_BYTES  ((double)(sizeof(struct tutti_win_rec) + sizeof(int32_t)))
/* All-gathers, and the bytes of one rank's records in all of them. */
#define ALLGATHERS(l)     (((l)->gpus ? 2 : 1) + ((l)->ctl ? 2 : 0))
#define RECORD_BYTES(l)                                                                             \
    (PEER_RECORD_BYTES + ((l)->gpus ? TOPO_RECORD_BYTES : 0) + ((l)->ctl ? CTL_RECORD_BYTES : 0))
#define ROUNDS(l)         (SYNCS + ALLGATHERS(l))
#define HS_MSGS           3   /* HELLO, PROVE, ACCEPT (src/net/handshake.h) */
#define HS_BYTES          140 /* their sizes with headers, about */
#define HDR_BYTES         8   /* a bootstrap message's header */
#define SYNC_BYTES        8
#define ADDR_BYTES        24 /* a listening address (struct tutti_wire_addr) */
#define FANOUT            8  /* BOOT_TREE_FANOUT, src/comm/boot_wire.h */

int model_boot_depth(int n)
{
    int d = 0;
    for (double reach = 1; reach < n; reach *= FANOUT) {
        d++;
    }
    return d;
}

void model_boot_star(int n, const struct model_boot_link *l, struct model_boot *out)
{
    out->rank_msgs = HS_MSGS + 2 * ROUNDS(l) + 1;
    out->root_msgs = out->rank_msgs * n;
    /* Requests and answers, beyond the handshakes: n requests of each round in, n answers out;
     * an all-gather's answer is all n records. */
    out->root_bytes_in = n * (ROUNDS(l) * HDR_BYTES + SYNCS * SYNC_BYTES + RECORD_BYTES(l) + HDR_BYTES);
    out->root_bytes_out = n * (ROUNDS(l) * HDR_BYTES + SYNCS * SYNC_BYTES) + RECORD_BYTES(l) * n * n;
    /* The root thread handles everything in turn: every handshake, then each round's 2n
     * messages; the all-gathers' n^2 records leave through its one link. */
    out->time_s = (n * l->hs_us + out->root_msgs * l->msg_us + ROUNDS(l) * l->lat_us) * 1e-6 +
                  out->root_bytes_out / (l->gbps * 1e9);
}

void model_boot_tree(int n, const struct model_boot_link *l, struct model_boot *out)
{
    int d = model_boot_depth(n);
    int kids = n - 1 < FANOUT ? n - 1 : FANOUT; /* rank 0's children */
    /* Rank 0: its root link (handshake, the tree round, BYE), a handshake with each child, and
     * per round one message from and one to each child. */
    out->rank_msgs = HS_MSGS + 2 + 1 + HS_MSGS * kids + ROUNDS(l) * 2.0 * kids;
    out->root_msgs = (HS_MSGS + 2 + 1) * (double)n;
    out->root_bytes_in = n * (2 * HDR_BYTES + ADDR_BYTES);
    out->root_bytes_out = n * (HDR_BYTES + ADDR_BYTES);
    /* The rendezvous: handshakes and the tree round in turn at the root. Then each round is d
     * levels up and d down; at each level a rank handles its children's messages in turn, and
     * an all-gather's way down sends the n records to each child. */
    double level_us = 2 * l->lat_us + 2 * kids * l->msg_us;
    double gather_down_s = d * kids * RECORD_BYTES(l) * n / (l->gbps * 1e9);
    out->time_s = (n * l->hs_us + 2.0 * n * l->msg_us + d * (HS_MSGS * l->lat_us + kids * l->hs_us) +
                   ROUNDS(l) * d * level_us) *
                      1e-6 +
                  gather_down_s;
}
