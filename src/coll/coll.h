/*
 * coll.h - schedule builders, one algorithm per file (src/coll/<coll>_<algo>.c), and the
 * catalog that says which applies (algos.c). Each builder appends lanes and steps for one rank
 * to an empty plan and returns 0, or -1 when out of memory.
 */
#ifndef TUTTI_COLL_H_INTERNAL
#define TUTTI_COLL_H_INTERNAL

#include "exec/plan.h"
#include "topology/layout.h"
#include "topology/tree.h"
#include "transports/transport.h"
#include "tutti/coll.h"
#include "tutti/comm.h"

typedef int (*tutti_build_fn)(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                              struct tutti_plan *plan);

/* How the peers an algorithm connects grow with the ranks n: a fixed few (ring: 2, double
 * binary tree: up to 6), 2 log2 n (Bruck, recursive doubling), or all n - 1 (one-hop). Each
 * peer costs a connection per channel; TUTTI_MEM_BUDGET bounds the last two kinds. */
enum tutti_fan { TUTTI_FAN_FIXED = 0, TUTTI_FAN_LOG, TUTTI_FAN_ALL };

struct tutti_algo {
    tutti_coll_t coll;
    const char *name; /* what TUTTI_ALGO accepts */
    const char *desc;
    int (*applies)(const struct tutti_op_desc *op, const struct tutti_plan_params *pp);
    tutti_build_fn build;
    int manual; /* never chosen automatically, only forced through TUTTI_ALGO */
    enum tutti_fan fan;
};

/** Peers algorithm a connects on nranks ranks: for the LOG and ALL kinds; 0 for FIXED. */
int tutti__algo_peers(const struct tutti_algo *a, int nranks);

/**
 * Does a's connection memory, peers x nchannels x pp->conn_bytes, fit pp->mem_budget? FIXED
 * kinds always do (init refuses a budget below a ring's), as does a budget of 0.
 */
int tutti__algo_fits(const struct tutti_algo *a, const struct tutti_plan_params *pp, int nchannels);

/** Catalog entries for a collective; *n_p gets the count. */
const struct tutti_algo *tutti__algos(tutti_coll_t coll, int *n_p);

/**
 * Build the plan of `op` for this rank (catalog in coll/algos.c picks the algorithm).
 * @return 0; -1 when out of memory; -2 when the algorithm forced by pp->forced does not apply;
 * -3 when no algorithm that applies fits pp->mem_budget (alltoall, whose every algorithm's
 * peers grow with n, on a small budget).
 */
int tutti__plan_build(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan);

/** A number no other plan build of the process had (struct tutti_plan's gen). */
uint64_t tutti__plan_next_gen(void);

/** Whether a and b plan alike (what a cached plan is keyed on): 1 or 0. */
int tutti__plan_same_op(const struct tutti_op_desc *a, const struct tutti_op_desc *b);
int tutti__plan_same_params(const struct tutti_plan_params *a, const struct tutti_plan_params *b);

/**
 * As tutti__plan_build, but keeps the plan as it is when it was last built, complete, from the
 * same op and params (a loop calling the same collective on the same buffers plans once).
 */
int tutti__plan_build_cached(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan);

/**
 * Parse TUTTI_ALGO ("allreduce:ring,broadcast:direct") into forced[coll] (a catalog index, or
 * -1 where nothing is forced). Returns 0, or -1 with a message naming the bad entry and the
 * valid names in err.
 */
int tutti__algo_parse(const char *spec, int forced[TUTTI_COLL_COUNT], char *err, size_t errlen);

/**
 * The catalog index the automatic choice (model or static rule, as pp->tuner says) takes; if
 * run_p is not NULL it gets the parameters the plan is built with (pp, with the model's chunk
 * and channels).
 */
int tutti__algo_choose(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan_params *run_p);

/** The static rule's catalog index: direct up to pp->direct_max on <= 16 ranks, else general. */
int tutti__algo_static(const struct tutti_op_desc *op, const struct tutti_plan_params *pp);

/**
 * The channels the static rule gives a collective of pp->nchannels at most: one more only for
 * at least half a chunk per rank on it. Pure.
 */
int tutti__algo_static_channels(const struct tutti_op_desc *op, const struct tutti_plan_params *pp);

/*
 * The model's answers on one communicator: its inputs other than (collective, count, element
 * size) are the communicator's and never change, so an answer once found is reused. Without
 * it, every call after one of another collective (the communicator keeps one plan) would pay
 * the search again: 0.5-3.4 us, more than a small call over shared memory takes.
 */
#define TUTTI_TUNE_MEMO 16
struct tutti_tune_memo {
    struct {
        int coll;     /* tutti_coll_t + 1; 0: empty */
        size_t count; /* elements */
        size_t es;    /* bytes per element */
        int algo;     /* catalog index */
        size_t chunk_elems;
        int nchannels;
        double time_us;
    } e[TUTTI_TUNE_MEMO];
    unsigned next; /* the entry replaced next when none matches */
};

/**
 * The cost model's choice (coll/tuned.c): the catalog index of the applicable algorithm it
 * predicts to be fastest for op, the static rule's unless another is clearly faster, with the
 * chunk (at most pp->chunk_elems) and channel count (at most pp->nchannels) it predicts best
 * for it in *run_p (pp otherwise) and its predicted time in *time_us_p (either may be NULL).
 * -1 when the model knows none of them (send, recv): the static rule then decides. Every rank
 * gets the same answer from the same inputs; pp->memo, if not NULL, keeps the answers.
 */
int tutti__algo_tuned(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan_params *run_p, double *time_us_p);

/** Names of the algorithms that apply to op ("ring, oneshot"), for error messages. */
void tutti__algo_applicable(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            char *buf, size_t len);

int tutti__allreduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__broadcast_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__reduce_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan);
int tutti__reduce_scatter_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                               struct tutti_plan *plan);
int tutti__allgather_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__alltoall_pairwise(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan);
int tutti__p2p_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan);
int tutti__barrier_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                        struct tutti_plan *plan);
int tutti__barrier_oneshot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan);
int tutti__allreduce_oneshot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan);
int tutti__broadcast_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            struct tutti_plan *plan);
int tutti__reduce_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan);
int tutti__reduce_scatter_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                                 struct tutti_plan *plan);
int tutti__allgather_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                            struct tutti_plan *plan);

int tutti__allreduce_tree(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__broadcast_tree(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__reduce_tree(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan);
int tutti__allreduce_rd(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                        struct tutti_plan *plan);
int tutti__allreduce_rabenseifner(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp, struct tutti_plan *plan);
/**
 * One loop of a ring all-reduce over n ring positions (this rank at r) of the len elements at
 * base: reduce-scatter reading `src` (SEND, or RECV holding partial results), all-gather into
 * RECV, each block at most a chunk. first_flags: flags of the first send of src.
 */
int tutti__ring_allreduce_loop(struct tutti_plan *plan, int n, int r, uint32_t src, size_t base,
                               size_t len, int first_flags);
int tutti__allreduce_hier(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
/** Hierarchical all-reduce needs a layout of >= 2 hosts with the same number (>= 2) on each. */
int tutti__allreduce_hier_applies(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp);
int tutti__allgather_bruck(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan);
int tutti__alltoall_bruck(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);

/* ---- helpers shared by builders (algos.c) ---- */

/** Is element `off` of buffer a the same address as element `boff` of buffer b? */
int tutti__coll_same_place(const struct tutti_plan *plan, uint32_t a, size_t off, uint32_t b,
                           size_t boff);

/**
 * Channel ch's share of a transfer of `total` elements: split evenly over one channel per chunk
 * (of `chunk` elements), at most nchannels, so that a message of less than a chunk goes whole
 * on channel 0 rather than as slivers on every channel (each one a frame, and a system call on
 * TCP). Both ends compute the same split from the same element count: a send or receive inside
 * a group splits as one outside it does. *len_p 0: none.
 */
void tutti__coll_channel_share(size_t total, size_t chunk, int nchannels, int ch, size_t *off_p,
                               size_t *len_p);

/**
 * Open the lane of channel ch over its share of `total` elements (tutti__coll_channel_share).
 * Returns 1 with the share in *off_p / *len_p, 0 when the share is empty (no lane), -1 when
 * out of memory.
 */
int tutti__coll_open_lane(struct tutti_plan *plan, size_t total, const struct tutti_plan_params *pp,
                          int ch, int send_peer, int recv_peer, size_t *off_p, size_t *len_p);

/**
 * The skeleton every ring builder shares (steps.c): `total` elements split over the channels,
 * each channel's share a lane that sends to `next` and receives from `prev` (-1: none); with
 * one rank, alone(plan, off, len, arg) for the whole share (NULL: nothing); else chunk(plan, off,
 * len, arg) for each piece of at most `stride` elements, off counted in the whole (the share's
 * start plus the piece's place in it).
 */
struct tutti_ring_walk {
    size_t total, stride;
    int next, prev;
    int (*chunk)(struct tutti_plan *plan, size_t off, size_t len, const void *arg);
    int (*alone)(struct tutti_plan *plan, size_t off, size_t len, const void *arg);
    const void *arg;
};

/** A walk of `total` elements around the whole ring in pieces of pp->chunk_elems: each rank
 * sends to the next rank in ring order and receives from the one before it (none when alone). */
struct tutti_ring_walk
tutti__ring_around(const struct tutti_plan_params *pp, size_t total,
                   int (*chunk)(struct tutti_plan *, size_t, size_t, const void *),
                   int (*alone)(struct tutti_plan *, size_t, size_t, const void *),
                   const void *arg);

/** `alone` for a builder whose one rank copies its input to its output in place. */
int tutti__ring_copy_alone(struct tutti_plan *plan, size_t off, size_t len, const void *arg);

/** Walk the ring's lanes and chunks (struct tutti_ring_walk). 0, or -1 on failure. */
int tutti__ring_walk(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                     const struct tutti_ring_walk *w);

/* ---- the ring the ring algorithms follow: the layout's locality ring, else rank order ---- */

/** This rank's position on the ring. */
static inline int tutti__ring_pos(const struct tutti_plan_params *pp, int rank)
{
    return pp->layout != NULL ? pp->layout->ring_pos[rank] : rank;
}

/** The rank at position pos (taken modulo nranks) of the ring. */
static inline int tutti__ring_rank(const struct tutti_plan_params *pp, int pos)
{
    pos = tutti__mod(pos, pp->nranks);
    return pp->layout != NULL ? pp->layout->ring[pos] : pos;
}

/** Does this rank reach `peer` over shared memory? No where the plan does not know. */
static inline int tutti__coll_by_shm(const struct tutti_plan_params *pp, int peer)
{
    return pp->peer_transport != NULL && pp->peer_transport[peer] == TUTTI_TRANSPORT_SHM;
}

/** Elements of the next chunk when `left` remain. */
static inline size_t tutti__chunk(size_t left, const struct tutti_plan_params *pp)
{
    return left < pp->chunk_elems ? left : pp->chunk_elems;
}

/**
 * Append COPY steps moving count elements from (src_buf, src_off) to (dst_buf, dst_off) to the
 * last lane, unless source and destination are the same place (in-place use).
 */
int tutti__coll_copy(struct tutti_plan *plan, uint32_t src_buf, size_t src_off, uint32_t dst_buf,
                     size_t dst_off, size_t count);

/**
 * Send `count` elements of src (stable: the caller's input) and also copy them to dst in the
 * same pass, unless dst is the same place (in place): one read of the input instead of two.
 */
int tutti__coll_send_copy(struct tutti_plan *plan, uint32_t src_buf, size_t src_off,
                          uint32_t dst_buf, size_t dst_off, size_t count);

/* ---- direct (flat) algorithms for small messages (direct.c) ---- */

/**
 * Keep this rank's own contribution where the schedule will not overwrite it: when
 * `overwritten` (in place, and receives land on it before it is reduced), copy it into the
 * plan's scratch memory. Returns the buffer index to read it from, or UINT32_MAX on failure.
 */
uint32_t tutti__direct_keep_own(struct tutti_plan *plan, uint32_t own_buf, size_t own_off,
                                size_t count, int overwritten);

/** SEND `count` elements of buffer `buf` to every other rank (at off(peer) if off != NULL). */
int tutti__direct_send_all(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                           uint32_t buf, size_t (*off)(int peer, const void *ctx), const void *ctx,
                           size_t count);

/**
 * Reduce every rank's contribution into (dst_buf, dst_off) in rank order: this rank's from
 * (own_buf, own_off), the others received one by one. The last step divides for AVG.
 */
int tutti__direct_reduce_chain(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                               uint32_t own_buf, size_t own_off, uint32_t dst_buf, size_t dst_off,
                               size_t count);

/* ---- double binary trees (trees.c) ---- */

/**
 * This rank's node in tree t (0 or 1) of the double binary tree (topology/tree.h). root < 0:
 * the trees as they are (all-reduce). root >= 0: relabelled so that both trees start at root;
 * tree 1 is re-rooted there (root gets tree 1's old root as its only child). Unrooted on a
 * layout of several hosts (with more ranks than hosts): the per-host trees of
 * tutti__dtree_hosts_node. Rooted trees ignore hosts. Returns 0, or -1 when out of memory.
 */
int tutti__coll_tree(const struct tutti_plan_params *pp, int root, int t,
                     struct tutti_tree_node *node_p);

/** One part of the data and the tree that carries it. */
struct tutti_tree_part {
    int channel;                 /* 2c + t: tree t of channel pair c */
    size_t off, len;             /* elements */
    struct tutti_tree_node node; /* this rank in that tree */
};

typedef int (*tutti_tree_part_fn)(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp, struct tutti_plan *plan,
                                  const struct tutti_tree_part *part);

/**
 * How many parts the tree algorithms cut op's data into: 1 (all of it over tree 0 on channel 0)
 * when it fits one chunk, else 2 * min(nchannels, 8), one per (tree, channel).
 */
int tutti__coll_tree_parts(const struct tutti_op_desc *op, const struct tutti_plan_params *pp);

/**
 * Cut op->count elements into tutti__coll_tree_parts() parts (part i over tree i % 2 on channel
 * i) and call fn for each non-empty one. On one rank: a lane that copies the input to the output
 * instead.
 * Returns 0, or -1 when fn or a step fails.
 */
int tutti__coll_tree_walk(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan, int root, tutti_tree_part_fn fn);

/**
 * A chunk coming down a tree to a rank below the root: received from the parent into the
 * output (elements off..off+len), forwarded to each child from there (the final result: sent by
 * reference where the transport can).
 */
int tutti__coll_tree_down(struct tutti_plan *plan, const struct tutti_tree_node *nd, size_t off,
                          size_t len);

/* ---- recursive doubling with the non-power-of-two fold (pow2.c) ---- */

/**
 * Where a rank stands when n is not a power of two: the first 2 * (n - p) ranks pair up
 * (2i, 2i+1), the even one hands its data to the odd one and waits for the result; the others
 * take part as virtual ranks 0..p-1 (p: the largest power of two <= n).
 */
struct tutti_fold {
    int p;       /* ranks taking part */
    int vrank;   /* this rank's virtual rank, or -1 when it sits out */
    int partner; /* the sitting-out rank's partner (odd), the partner's extra rank (even), or -1 */
};

void tutti__fold(int n, int rank, struct tutti_fold *f_p);

/** The real rank of virtual rank v. */
int tutti__fold_real(int n, int v);

/**
 * Fold in: the sitting-out rank sends its input [base, base+len) to its partner, which reduces it
 * into its output. *acc_p gets the buffer that holds this rank's data afterwards (SEND, or RECV
 * once folded). Fold out: the partner sends the result back. Both do nothing for ranks without
 * a partner. Return 0, or -1 when out of memory.
 */
int tutti__pow2_fold_in(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                        const struct tutti_fold *f, size_t base, size_t len, uint32_t *acc_p);
int tutti__pow2_fold_out(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                         const struct tutti_fold *f, size_t base, size_t len);

/** One round: send a range to one rank, receive (and maybe reduce) another from one rank. */
struct tutti_exchange {
    int send_peer, recv_peer;
    uint32_t send_buf;
    size_t send_off, send_len;
    int send_flags;    /* TUTTI_STEP_STABLE when what is sent stays unchanged */
    int reduce;        /* 1: RECV_REDUCE_COPY of acc_buf into recv_buf; 0: RECV */
    uint32_t acc_buf;  /* this rank's data, reduced with what arrives */
    uint32_t recv_buf; /* where it lands (acc_buf and recv_buf at the same offsets) */
    size_t recv_off, recv_len;
    int recv_flags; /* TUTTI_STEP_FINAL, TUTTI_STEP_SWAP */
};

/**
 * Append the round's steps, chunk by chunk, one out and one in: every rank doing the same never
 * has more than one chunk in flight toward a peer, so any FIFO depth will do (the partner's
 * sends must be cut like this rank's receives). Returns 0, or -1 when out of memory.
 */
int tutti__coll_exchange(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                         const struct tutti_exchange *x);

typedef int (*tutti_pow2_lane_fn)(const struct tutti_plan_params *pp, struct tutti_plan *plan,
                                  const struct tutti_fold *f, size_t base, size_t len);

/**
 * An all-reduce over powers of two: on one rank a copy; else the data split over channels, and
 * `lane` fills the lane of each channel with this rank's steps for elements [base, base+len).
 */
int tutti__pow2_build(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                      struct tutti_plan *plan, tutti_pow2_lane_fn lane);

/**
 * Start a Bruck algorithm's plan: one lane on channel 0. On one rank or for no data, a copy of
 * own_len elements of the input to own_off of the output, and 0. Otherwise scratch memory of
 * scratch_elems elements as buffer *tmp_p, and 1. -1 when out of memory.
 */
int tutti__bruck_start(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan, size_t own_off, size_t own_len,
                       size_t scratch_elems, uint32_t *tmp_p);

/**
 * Is `src` of (src_buf, off) safe to send by reference: the caller's input, never written during
 * the operation (not the output's place)?
 */
int tutti__coll_input_stable(const struct tutti_plan *plan, uint32_t src_buf, size_t off);

/**
 * Build one plan for a run of point-to-point operations of one group (all on one
 * communicator): every send to a peer, in call order, goes through one lane per channel, and
 * likewise every receive; sends to self are matched with receives from self in order and become
 * local copies. Sizes are in bytes (the plan's datatype is uint8).
 * @return 0; -1 when out of memory; -2 when self-sends and self-receives do not pair up.
 */
int tutti__p2p_group_build(const struct tutti_op_desc *const *ops, int n,
                           const struct tutti_plan_params *pp, struct tutti_plan *plan);
/* ---- gather, scatter and the variable-size collectives ---- */

int tutti__alltoallv_pairwise(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                              struct tutti_plan *plan);
int tutti__allgatherv_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan);
int tutti__allgatherv_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                             struct tutti_plan *plan);
int tutti__gather_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan);
int tutti__scatter_direct(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan);
int tutti__reduce_scatterv_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                                struct tutti_plan *plan);
int tutti__reduce_scatterv_direct(const struct tutti_op_desc *op,
                                  const struct tutti_plan_params *pp, struct tutti_plan *plan);

/**
 * alltoallv's Bruck variant (manual: forced with TUTTI_ALGO=alltoallv:bruck), in two phases:
 * this plan all-gathers every rank's sendcounts (Bruck's all-gather, ceil(log2 n) rounds) into
 * plan->aux and sets plan->then, which then builds the data's plan from the whole count
 * matrix: Bruck's rounds with the blocks of each round packed into one frame, where every
 * round's frame fits one slot on every rank (a choice every rank makes alike from the matrix),
 * else the pairwise exchange.
 */
int tutti__alltoallv_bruck(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan);

/**
 * Build the next phase of a plan whose plan->then is set (coll/algos.c): checks what the first
 * phase left (plan->then_check), then rebuilds plan with then(). Returns 0; -1 when out of
 * memory; -4 when the check failed, with the reason in why.
 */
int tutti__plan_continue(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                         struct tutti_plan *plan, char *why, size_t len);

/* ---- their blocks (blocks.c) ---- */

/**
 * Add the block calls of a blockwise op to plan->calls: call j is block j (whose rank it is,
 * its count as this rank sees it), and for alltoallv call j sends to rank j and call n + j
 * receives from rank j. Returns 0, or -1 when out of memory.
 */
int tutti__blk_calls(struct tutti_plan *plan, const struct tutti_op_desc *op,
                     const struct tutti_plan_params *pp);

/** Make the steps added next carry block j's fingerprint (recv: alltoallv's receive side). */
void tutti__blk_use(struct tutti_plan *plan, const struct tutti_plan_params *pp, int j, int recv);

/**
 * Frames of channel ch's share of a block of count elements: its chunks, or 1 (a token) for an
 * empty block on channel 0. Both ends of a block compute the same from the count.
 */
size_t tutti__blk_chunks(size_t count, const struct tutti_plan_params *pp, int ch);

/** Frame i of that share: 1 with its offset in the block and length (0 for the token), or 0. */
int tutti__blk_chunk(size_t count, const struct tutti_plan_params *pp, int ch, size_t i,
                     size_t *off_p, size_t *len_p);

/**
 * Append channel ch's share of a block to the last lane: SEND steps reading (buf, at + offset),
 * or RECV steps writing there; a token for an empty block on channel 0. Returns 0, or -1.
 */
int tutti__blk_steps(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                     tutti_step_kind_t kind, uint32_t buf, size_t at, size_t count, int ch,
                     int flags);

/**
 * A lane of its own on channel ch for channel ch's share of block j: SEND steps to rank peer
 * reading (buf, at + offset), or RECV steps from it writing there, carrying block j's
 * fingerprint (alltoallv: its send or receive side by kind); no lane when the block has no
 * frame on that channel. Returns 0, or -1 when out of memory.
 */
int tutti__blk_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                    tutti_step_kind_t kind, int peer, int j, uint32_t buf, size_t at, size_t count,
                    int ch, int flags);

/**
 * A lane of its own on channel ch copying its share of this rank's own block (count elements)
 * from the input at src_off to the output at dst_off, unless in place. 0, or -1.
 */
int tutti__blk_copy_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                         size_t src_off, size_t dst_off, size_t count, int ch);

#endif /* TUTTI_COLL_H_INTERNAL */
