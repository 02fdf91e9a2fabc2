/*
 * tune.c - the cost model of every algorithm in the catalog and the tuner that picks among
 * them. Pure functions of (collective, algorithm, bytes, system, configuration).
 *
 * Each algorithm reduces to a few sums (struct cost): hop latencies along its critical path,
 * bytes over the bandwidth of its busiest link, the pipeline fill (the first chunk crossing the
 * path, which is what makes small chunks pay), a gap per message the busiest rank posts (which
 * is what makes large chunk counts pay) and, on a host path, the CPU time of every message the
 * busiest rank sends or receives, with a wake-up per message and a switch per step when ranks
 * outnumber CPUs. The time is their sum plus the call's base cost. Ranks are numbered host by
 * host, L = ceil(nranks / nhosts) per host. Flat algorithms (ring steps, one-shot) run in lock
 * step, so when they span hosts every step waits for the slower link; traffic leaving a host is
 * spread over its NICs by stream (channel, rail).
 */
#include "tune.h"

#include <math.h>
#include <string.h>

/*
 * Protocols relative to Simple, from NCCL's model (src/graph/tuning.cc, stored version 01afd20):
 * per-step latency of the ring over the network LL 2.7 us / LL128 4.0 us / Simple 9.6 us (over
 * NVLink .47 / 1.9 / 3.4 us), so LL ~0.2 and LL128 ~0.5 of Simple; bandwidth: LL carries a flag
 * per 8-byte word and NCCL takes 1/4 of the bus bandwidth for it, LL128 120 of every 128 bytes.
 */
static const struct {
    const char *name;
    double lat, bw;
} protos[TUTTI_PROTO_COUNT] = {
    [TUTTI_PROTO_SIMPLE] = {"simple", 1.0, 1.0},
    [TUTTI_PROTO_LL] = {"ll", 0.2, 0.25},
    [TUTTI_PROTO_LL128] = {"ll128", 0.5, 120.0 / 128.0},
};

const char *tutti__proto_name(tutti_proto_t p)
{
    return (unsigned)p < TUTTI_PROTO_COUNT ? protos[p].name : NULL;
}

/* One evaluation: the system with the protocol applied, the size, the configuration. */
struct ctx {
    int n, h, L;  /* ranks, hosts, ranks per host */
    double B;     /* bytes (NCCL's size convention, tune.h) */
    double chunk; /* bytes per message */
    int C;        /* channels */
    int nics;
    int parallel;              /* channels progress independently */
    int crowded;               /* ranks outnumber CPUs */
    double load;               /* ranks per CPU, at least 1 */
    struct tutti_link in, out; /* within a host, between hosts (per NIC); gbps as reached */
};

struct cost {
    double lat, bw, fill;
    double msgs, gap; /* further messages of the busiest rank's streams (beyond the first
                         chunk of each), and what each costs */
    double hops;      /* steps and further chunks on the critical path: each waits for the
                         scheduler when crowded */
    double cpu_msgs;  /* messages the busiest rank sends and receives, over all channels */
    double cpu_us;    /* the CPU cost of each of them, wake-up included */
    double switch_us; /* the scheduler's cost per step when crowded */
};

static double xfer_us(double bytes, double gbps)
{
    return gbps > 0 ? bytes / (gbps * 1e3) : INFINITY; /* 1 GB/s = 1000 bytes per us */
}

/* The host-path figures of the link(s) a cost runs over: the costlier when there are two. */
static void cpu_of(const struct ctx *c, const struct tutti_link *l, struct cost *k)
{
    double msg = l->cpu_us + (c->crowded ? l->wake_us : 0);
    k->cpu_us = fmax(k->cpu_us, msg);
    k->switch_us = fmax(k->switch_us, c->crowded ? l->switch_us : 0);
}

/*
 * Channels driven by one thread (tutti's host path) post their messages one after the other;
 * on GPUs each channel has its own thread block, so only one channel's messages add up. The
 * work of a rank's thread on a host path (its messages' CPU time and gaps, its waits) costs
 * load^2 times more when `load` ranks share each CPU: each rank gets 1/load of a CPU, and each
 * time it waits the scheduler runs the load - 1 others first. The square is what the
 * measurements on 2 CPUs say (tune_links.c: 2, 4 and 8 ranks); a factor of `load` leaves 4 and
 * 8 ranks 2-3x faster than measured.
 */
static double cost_us(const struct ctx *c, const struct cost *k)
{
    double msgs = c->parallel ? k->msgs / c->C : k->msgs;
    double cpu =
        msgs * k->gap + k->cpu_msgs * k->cpu_us + (c->crowded ? k->hops * k->switch_us : 0);
    return k->lat + k->bw + k->fill + (c->parallel ? 1 : c->load * c->load) * cpu;
}

static int ceil_log2(int n)
{
    int d = 0;
    while ((1 << d) < n) {
        d++;
    }
    return d;
}

static double ceil_div(double a, double b)
{
    return a <= 0 ? 0 : ceil(a / b);
}

/* Time for the bytes that leave one host, in `streams` equal streams placed on its NICs in
 * turn: the busiest NIC carries ceil(streams / nics) of them. */
static double nic_us(const struct ctx *c, double host_bytes, int streams)
{
    if (c->h <= 1 || host_bytes <= 0) {
        return 0;
    }
    streams = streams < 1 ? 1 : streams;
    double per_nic = ceil((double)streams / c->nics);
    return xfer_us(per_nic * host_bytes / streams, c->out.gbps);
}

/* The link a lock-step algorithm's step waits for: the slower one once hosts are involved. */
static const struct tutti_link *step_link(const struct ctx *c)
{
    return c->h > 1 ? &c->out : &c->in;
}

static double step_gap(const struct ctx *c)
{
    return c->h > 1 ? fmax(c->in.gap_us, c->out.gap_us) : c->in.gap_us;
}

/*
 * Trees reach 90% of the ring's bandwidth in NCCL's own model (tuning.cc: busBw * .9 for
 * Tree), an empirical figure for what the alpha-beta sums leave out (an interior rank
 * reduces two children while forwarding); it is used here too.
 */
#define TREE_EFFICIENCY 0.9

/* Each channel beyond the first costs a little to start and finish (a lane to set up, a thread
 * block to launch): assumed, small, so that channels that do not help are not taken. */
#define CHANNEL_US 0.05

/*
 * A ring of `steps` steps over all ranks in which each rank sends `vol` bytes in all (all-reduce:
 * 2(n-1) steps, 2(n-1)/n B; reduce-scatter and all-gather: n-1, (n-1)/n B). Per channel, a step
 * moves vol / steps / C bytes in messages of at most a chunk; each channel's ring leaves each host
 * once, through one NIC.
 */
static struct cost ring_cost(const struct ctx *c, int steps, double vol)
{
    struct cost k = {0};
    if (c->n <= 1) {
        return k;
    }
    double per_step = vol / steps / c->C;
    /* A chunk crosses every link of the ring on its way: of its steps, the share that crosses
     * a host boundary is (h - 1) / (n - 1) (as NCCL's model counts them). */
    double across = c->h > 1 ? (double)steps * (c->h - 1) / (c->n - 1) : 0;
    k.lat = (steps - across) * c->in.lat_us + across * c->out.lat_us;
    double intra = (c->h == 1 || c->L > 1) ? xfer_us(vol, c->in.gbps) : 0;
    k.bw = fmax(intra, nic_us(c, vol, c->C));
    double m = fmax(1, ceil_div(per_step, c->chunk)); /* chunks a step, per channel */
    k.msgs = (double)steps * c->C * (m - 1);
    k.gap = step_gap(c);
    k.hops = steps * m;
    k.cpu_msgs = 2.0 * steps * c->C * m; /* every step: as many in as out */
    cpu_of(c, &c->in, &k);
    if (c->h > 1) {
        cpu_of(c, &c->out, &k);
    }
    return k;
}

/*
 * A pipelined path: `hops_in` hops within hosts and `hops_out` between them, each stream of
 * `stream_bytes` cut into chunks. The fill is one chunk crossing every hop but the slowest
 * (whose crossing the bandwidth term counts with the rest of the bytes); the busiest rank
 * sends `copies` and receives `recvs` messages per chunk of each of its `streams` streams.
 */
static struct cost path_cost(const struct ctx *c, int hops_in, int hops_out, double stream_bytes,
                             int streams, int copies, int recvs)
{
    struct cost k = {0};
    double s = fmin(c->chunk, stream_bytes);
    double chunks = fmax(1, ceil_div(stream_bytes, c->chunk));
    k.lat = hops_in * c->in.lat_us + hops_out * c->out.lat_us;
    double hin = xfer_us(s, c->in.gbps), hout = xfer_us(s, c->out.gbps);
    k.fill = hops_in * hin + hops_out * hout - fmax(hops_in > 0 ? hin : 0, hops_out > 0 ? hout : 0);
    k.msgs = (double)streams * copies * (chunks - 1);
    k.gap = hops_out > 0 ? fmax(c->in.gap_us, c->out.gap_us) : c->in.gap_us;
    k.hops = hops_in + hops_out + streams * (chunks - 1);
    k.cpu_msgs = (double)streams * (copies + recvs) * chunks;
    cpu_of(c, &c->in, &k);
    if (hops_out > 0) {
        cpu_of(c, &c->out, &k);
    }
    return k;
}

/*
 * The hops of a tree from its root to its deepest leaf, within hosts and between them. On one
 * host, on one rank per host, and for the rooted trees (which ignore hosts), the double binary
 * tree over all ranks: at most ceil(log2(n + 1)) deep, its top levels crossing hosts (ranks
 * numbered host by host); the re-rooted second tree of broadcast and reduce one more. An
 * all-reduce on several hosts of several ranks: a chain through each host's ranks, a binary
 * tree over the hosts.
 */
static void tree_hops(const struct ctx *c, int rooted, int *in_p, int *out_p)
{
    if (rooted || c->h == 1 || c->h == c->n) {
        int depth = ceil_log2(c->n + 1) + (rooted && c->B > c->chunk ? 1 : 0);
        int out = c->h > 1 ? ceil_log2(c->h) : 0;
        out = out < depth ? out : depth;
        *in_p = depth - out;
        *out_p = out;
        return;
    }
    *in_p = c->L - 1;
    *out_p = ceil_log2(c->h);
}

/*
 * The trees carry the data whole over one tree when it fits a chunk (coll/trees.c), else in
 * halves over the two complementary trees, on each channel. Tree all-reduce as NCCL builds it:
 * reduced up and broadcast down, pipelined; an interior rank receives two children's chunks and
 * sends one up, then receives one and sends two down. A rank of the chain sends B up and B down
 * in all; a host interior in one tree and a leaf in the other sends 2B across (two hosts: B; one
 * tree: 3B from an interior host).
 */
static struct cost tree_allreduce(const struct ctx *c)
{
    int one = c->B <= c->chunk, hin, hout;
    tree_hops(c, 0, &hin, &hout);
    struct cost k = one ? path_cost(c, 2 * hin, 2 * hout, c->B, 1, 3, 3)
                        : path_cost(c, 2 * hin, 2 * hout, c->B / 2 / c->C, 2 * c->C, 2, 2);
    double intra = c->L > 1 ? xfer_us(2 * c->B, c->in.gbps) : 0;
    double across = c->h > 2 ? (one ? 3 : 2) * c->B : c->B;
    k.bw = fmax(intra, nic_us(c, across, one ? 1 : 2 * c->C)) / TREE_EFFICIENCY;
    return k;
}

/*
 * Broadcast and reduce are modelled as they run back to back: the root of a broadcast (a rank
 * of a reduce below the root) moves on once its sends are posted, so a call's pipeline fill
 * overlaps the calls after it, and what each call costs is its hops' latency and its busiest
 * rank's work. Measured on the VM (4 ranks over TCP, 512 KiB and 1 MiB), chunks small enough
 * to fill a single call's pipeline sooner made the calls 1.2-1.5x slower back to back.
 */

/* Broadcast or reduce along the trees: an interior rank receives (sends) one chunk and sends
 * (receives) two; an interior host sends (or receives) two copies across. */
static struct cost tree_rooted(const struct ctx *c)
{
    int one = c->B <= c->chunk, hin, hout;
    tree_hops(c, 1, &hin, &hout);
    struct cost k = one ? path_cost(c, hin, hout, c->B, 1, 2, 1)
                        : path_cost(c, hin, hout, c->B / 2 / c->C, 2 * c->C, 2, 1);
    double intra = c->L > 1 ? xfer_us(c->B, c->in.gbps) : 0;
    k.bw = fmax(intra, nic_us(c, c->h > 2 ? 2 * c->B : c->B, one ? 1 : 2 * c->C)) / TREE_EFFICIENCY;
    k.fill = 0;
    return k;
}

/* Broadcast or reduce along one pipelined chain through every rank (the catalog's "ring"). */
static struct cost chain_rooted(const struct ctx *c)
{
    struct cost k = path_cost(c, c->n - c->h, c->h - 1, c->B / c->C, c->C, 1, 1);
    double intra = c->L > 1 ? xfer_us(c->B, c->in.gbps) : 0;
    k.bw = fmax(intra, nic_us(c, c->B, c->C));
    k.fill = 0;
    return k;
}

/*
 * One step of a butterfly (recursive doubling / halving, Bruck): every rank exchanges `bytes`
 * with the rank `dist` away. Host by host numbering puts the partner on another host once dist
 * reaches L; then all L ranks of a host go through its NICs at once.
 */
static void butterfly_step(const struct ctx *c, int dist, double bytes, struct cost *k)
{
    int across = c->h > 1 && dist >= c->L;
    const struct tutti_link *l = across ? &c->out : &c->in;
    /* tutti's rd and rabenseifner run each round in lock step, one chunk out and one in at a
     * time (no FIFO can then fill up on both sides): every chunk pays the hop latency. */
    double chunks = fmax(1, ceil_div(bytes / c->C, c->chunk));
    k->lat += l->lat_us * chunks;
    k->bw += across ? nic_us(c, bytes * c->L, c->L * c->C) : xfer_us(bytes, c->in.gbps);
    k->msgs += c->C * (chunks - 1);
    k->gap = fmax(k->gap, l->gap_us);
    k->hops += chunks;
    k->cpu_msgs += 2 * c->C * chunks;
    cpu_of(c, l, k);
}

/*
 * Recursive doubling (whole = 1: every step exchanges all B) or Rabenseifner (whole = 0:
 * reduce-scatter by recursive halving, step i moving B / 2^(i+1), nearest partner first so the
 * big steps stay within a host, then the mirror all-gather). A rank count that is not a power
 * of two folds the extra ranks in first and out last (two more steps of B).
 */
static struct cost butterfly_allreduce(const struct ctx *c, int whole)
{
    struct cost k = {0};
    int p = 1;
    while (p * 2 <= c->n) {
        p *= 2;
    }
    for (int dist = 1; dist < p; dist *= 2) {
        double bytes = whole ? c->B : c->B / (2.0 * dist);
        butterfly_step(c, dist, bytes, &k);
        if (!whole) {
            butterfly_step(c, dist, bytes, &k);
        }
    }
    if (p < c->n) {
        butterfly_step(c, c->L > 1 ? 1 : c->L, c->B, &k);
        butterfly_step(c, c->L > 1 ? 1 : c->L, c->B, &k);
    }
    return k;
}

/* Bruck: ceil(log2 n) steps, step i sends to the rank 2^i before; all-gather moves the blocks
 * gathered so far (min(2^i, n - 2^i) of B / n), all-to-all the blocks whose index has bit i. */
static struct cost bruck(const struct ctx *c, int alltoall)
{
    struct cost k = {0};
    for (int dist = 1; dist < c->n; dist *= 2) {
        double blocks = dist < c->n - dist ? dist : c->n - dist;
        if (alltoall) {
            blocks = 0;
            for (int j = 0; j < c->n; j++) {
                blocks += (j & dist) != 0;
            }
        }
        butterfly_step(c, dist, blocks * c->B / c->n, &k);
    }
    return k;
}

/*
 * One hop to everyone at once (one-shot all-reduce, the direct variants, pairwise all-to-all):
 * each rank posts `per_peer` bytes to each of the n - 1 others, all in flight together.
 */
static struct cost direct_cost(const struct ctx *c, double per_peer)
{
    struct cost k = {0};
    k.lat = step_link(c)->lat_us;
    k.bw = fmax(xfer_us((c->L - 1) * per_peer, c->in.gbps),
                nic_us(c, (double)c->L * (c->n - c->L) * per_peer, c->L * c->C));
    double m = fmax(1, ceil_div(per_peer / c->C, c->chunk)); /* chunks to each peer */
    k.msgs = (c->n - 1.0) * c->C * (m - 1);
    k.gap = step_gap(c);
    k.hops = m;
    k.cpu_msgs = 2 * (c->n - 1.0) * c->C * m;
    cpu_of(c, step_link(c), &k);
    if (c->h > 1) {
        cpu_of(c, &c->in, &k);
    }
    return k;
}

/* The catalog's algorithms as the model sees them. */
enum model {
    AR_RING,
    AR_TREE,
    AR_HIER,
    AR_RD,
    AR_RABENSEIFNER,
    AR_ONESHOT,
    ROOTED_CHAIN,
    ROOTED_TREE,
    ROOTED_DIRECT, /* broadcast, reduce */
    BLOCKS_RING,
    BLOCKS_DIRECT, /* reduce-scatter, all-gather, all-to-all */
    ALLGATHER_BRUCK,
    ALLTOALL_BRUCK,
    BARRIER_RING,
    BARRIER_ONESHOT,
};

static const struct {
    tutti_coll_t coll;
    const char *name;
    enum model model;
} models[] = {
    {TUTTI_COLL_ALLREDUCE, "ring", AR_RING},
    {TUTTI_COLL_ALLREDUCE, "tree", AR_TREE},
    {TUTTI_COLL_ALLREDUCE, "hier", AR_HIER},
    {TUTTI_COLL_ALLREDUCE, "rd", AR_RD},
    {TUTTI_COLL_ALLREDUCE, "rabenseifner", AR_RABENSEIFNER},
    {TUTTI_COLL_ALLREDUCE, "oneshot", AR_ONESHOT},
    {TUTTI_COLL_BROADCAST, "ring", ROOTED_CHAIN},
    {TUTTI_COLL_BROADCAST, "tree", ROOTED_TREE},
    {TUTTI_COLL_BROADCAST, "direct", ROOTED_DIRECT},
    {TUTTI_COLL_REDUCE, "ring", ROOTED_CHAIN},
    {TUTTI_COLL_REDUCE, "tree", ROOTED_TREE},
    {TUTTI_COLL_REDUCE, "direct", ROOTED_DIRECT},
    {TUTTI_COLL_REDUCE_SCATTER, "ring", BLOCKS_RING},
    {TUTTI_COLL_REDUCE_SCATTER, "direct", BLOCKS_DIRECT},
    {TUTTI_COLL_ALLGATHER, "ring", BLOCKS_RING},
    {TUTTI_COLL_ALLGATHER, "direct", BLOCKS_DIRECT},
    {TUTTI_COLL_ALLGATHER, "bruck", ALLGATHER_BRUCK},
    {TUTTI_COLL_ALLTOALL, "pairwise", BLOCKS_DIRECT},
    {TUTTI_COLL_ALLTOALL, "bruck", ALLTOALL_BRUCK},
    {TUTTI_COLL_BARRIER, "ring", BARRIER_RING},
    {TUTTI_COLL_BARRIER, "oneshot", BARRIER_ONESHOT},
};

static double hier_allreduce(const struct ctx *c);

/* Microseconds without the base. */
static double model_us(enum model m, const struct ctx *c)
{
    struct cost k;
    double n = c->n, B = c->B;
    switch (m) {
    case AR_RING:
        k = ring_cost(c, 2 * (c->n - 1), 2 * (n - 1) / n * B);
        break;
    case AR_TREE:
        k = tree_allreduce(c);
        break;
    case AR_HIER:
        return hier_allreduce(c);
    case AR_RD:
    case AR_RABENSEIFNER:
        k = butterfly_allreduce(c, m == AR_RD);
        break;
    case AR_ONESHOT:
        k = direct_cost(c, B);
        break;
    case ROOTED_CHAIN:
        k = chain_rooted(c);
        break;
    case ROOTED_TREE:
        k = tree_rooted(c);
        break;
    case ROOTED_DIRECT: /* one hop, but the root alone sends (or receives) n - 1 copies */
        k = direct_cost(c, B);
        k.bw = fmax(xfer_us((c->L - 1) * B, c->in.gbps), nic_us(c, (n - c->L) * B, c->C));
        k.cpu_msgs /= 2;
        break;
    case BLOCKS_RING:
        k = ring_cost(c, c->n - 1, (n - 1) / n * B);
        break;
    case BLOCKS_DIRECT:
        k = direct_cost(c, B / n);
        break;
    case ALLGATHER_BRUCK:
    case ALLTOALL_BRUCK:
        k = bruck(c, m == ALLTOALL_BRUCK);
        break;
    case BARRIER_RING:
        k = ring_cost(c, 2 * (c->n - 1), 0);
        break;
    default: /* BARRIER_ONESHOT */
        k = direct_cost(c, 0);
        break;
    }
    return cost_us(c, &k);
}

/* The model of (coll, algo) at this point, in microseconds without the base; -1 unknown. */
static double algo_us(tutti_coll_t coll, const char *algo, const struct ctx *c)
{
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        if (models[i].coll == coll && strcmp(models[i].name, algo) == 0) {
            return c->n <= 1 ? 0 : model_us(models[i].model, c);
        }
    }
    return -1;
}

/*
 * Hierarchical all-reduce: ring reduce-scatter within each host, then for each local rank (a
 * rail) an all-reduce of its B / L bytes with the same local rank of every other host (ring or
 * tree, whichever the model finds faster), then ring all-gather within the host. The L rails
 * share the host's NICs. The phases run one after the other.
 */
static double hier_allreduce(const struct ctx *c)
{
    struct ctx in = *c;
    in.n = c->L;
    in.h = 1;
    double local = 0;
    if (c->L > 1) {
        struct cost rs = ring_cost(&in, c->L - 1, (c->L - 1.0) / c->L * c->B);
        local = 2 * cost_us(&in, &rs);
    }
    if (c->h <= 1) {
        return local;
    }
    struct ctx rail = *c;
    rail.n = c->h;
    rail.L = 1;
    rail.B = c->B / c->L;
    if (c->L >= c->nics) {
        rail.nics = 1;
        rail.out.gbps = c->out.gbps * c->nics / c->L;
    } else {
        rail.nics = c->nics / c->L;
    }
    return local + fmin(model_us(AR_RING, &rail), model_us(AR_TREE, &rail));
}

/* What a rank reaches over a link on C channels when `load` ranks share each CPU: the wire,
 * the CPU's share, the channels' streams, whichever is least. */
static double reach_gbps(const struct tutti_link *l, int C, double load)
{
    double g = l->gbps;
    if (l->cpu_gbps > 0) {
        g = fmin(g, l->cpu_gbps / load);
    }
    if (l->chan_gbps > 0) {
        g = fmin(g, C * l->chan_gbps);
    }
    return g;
}

static int sys_ok(const struct tutti_tune_sys *s)
{
    return s != NULL && s->nranks >= 1 && s->nhosts >= 1 && s->nhosts <= s->nranks &&
           s->links.nics >= 1 && s->links.intra.gbps > 0 &&
           (s->nhosts == 1 || s->links.inter.gbps > 0);
}

double tutti__tune_time(tutti_coll_t coll, const char *algo, size_t bytes,
                        const struct tutti_tune_sys *sys, const struct tutti_tune_cfg *cfg)
{
    if (algo == NULL || cfg == NULL || !sys_ok(sys) || cfg->nchannels < 1 ||
        cfg->chunk_bytes == 0 || (unsigned)cfg->proto >= TUTTI_PROTO_COUNT ||
        (sys->links.protos & (1u << cfg->proto)) == 0) {
        return -1;
    }
    struct ctx c = {
        .n = sys->nranks,
        .h = sys->nhosts,
        .L = (sys->nranks + sys->nhosts - 1) / sys->nhosts,
        .B = (double)bytes,
        .chunk = (double)cfg->chunk_bytes,
        .C = cfg->nchannels,
        .nics = sys->links.nics,
        .parallel = sys->links.parallel_channels,
        .in = sys->links.intra,
        .out = sys->links.inter,
    };
    const double lat = protos[cfg->proto].lat, bw = protos[cfg->proto].bw;
    c.crowded = sys->links.cpu_load > 1;
    c.load = c.crowded ? sys->links.cpu_load : 1;
    c.in.lat_us *= lat;
    c.out.lat_us *= lat;
    c.in.gbps = reach_gbps(&c.in, c.C, c.load) * bw;
    c.out.gbps = reach_gbps(&c.out, c.C, c.load) * bw;
    double t = algo_us(coll, algo, &c);
    return t < 0 ? -1 : sys->links.base_us + (cfg->nchannels - 1) * CHANNEL_US + t;
}

#define CHUNK_MIN ((size_t)4 << 10)
#define CHUNK_MAX ((size_t)4 << 20)

double tutti__tune_best(tutti_coll_t coll, const char *algo, size_t bytes,
                        const struct tutti_tune_sys *sys, struct tutti_tune_cfg *cfg_p)
{
    double best = -1;
    struct tutti_tune_cfg bc = {0};
    size_t top = sys != NULL && sys->links.max_chunk > 0 ? sys->links.max_chunk : CHUNK_MAX;
    for (int p = 0; sys != NULL && p < TUTTI_PROTO_COUNT; p++) {
        for (int ch = 1; ch <= sys->links.max_channels; ch *= 2) {
            /* From the slot down: the first of equal times (the larger chunk) stays. */
            for (size_t chunk = top; chunk > 0; chunk = chunk / 2 >= CHUNK_MIN ? chunk / 2 : 0) {
                struct tutti_tune_cfg cfg = {chunk, ch, (tutti_proto_t)p};
                double t = tutti__tune_time(coll, algo, bytes, sys, &cfg);
                if (t >= 0 && (best < 0 || t < best)) {
                    best = t;
                    bc = cfg;
                }
            }
        }
    }
    if (best >= 0 && cfg_p != NULL) {
        *cfg_p = bc;
    }
    return best;
}

int tutti__tune_pick(tutti_coll_t coll, size_t bytes, int nranks, int nhosts,
                     const char *const *candidates, int ncand, const struct tutti_tune_links *links,
                     double *times_us, struct tutti_tune_choice *choice_p)
{
    if (links == NULL || candidates == NULL || ncand < 0) {
        return -1;
    }
    struct tutti_tune_sys sys = {nranks, nhosts, *links};
    struct tutti_tune_choice best = {.index = -1};
    for (int i = 0; i < ncand; i++) {
        struct tutti_tune_cfg cfg;
        double t =
            candidates[i] != NULL ? tutti__tune_best(coll, candidates[i], bytes, &sys, &cfg) : -1;
        if (times_us != NULL) {
            times_us[i] = t;
        }
        if (t >= 0 && (best.index < 0 || t < best.time_us)) {
            best = (struct tutti_tune_choice){i, candidates[i], t, cfg};
        }
    }
    if (best.index >= 0 && choice_p != NULL) {
        *choice_p = best;
    }
    return best.index;
}
