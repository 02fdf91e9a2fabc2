/*
 * plan.h - schedules as data.
 *
 * A plan is what one rank does for one operation: a set of lanes that run concurrently, each a
 * sequence of steps on one channel. A step names the peer it sends to and the peer it receives
 * from (a lane's current peers, set when the lane is opened and changed with
 * tutti__plan_set_peers, are copied into each step added). Each step moves at most one slot: the
 * builders cut data into chunks of at most chunk_elems elements, and the engine maps every SEND
 * to one posted slot and every RECV to one received slot. Builders are pure functions of
 * (operation, rank, nranks, channels, chunk size); unit tests run every rank's plan in one process.
 */
#ifndef TUTTI_PLAN_H
#define TUTTI_PLAN_H

#include "base/coll_id.h"
#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

/**
 * Which buffer a step reads or writes: an index into plan->bufs. Collectives use the first
 * three; a group's merged point-to-point plan adds one buffer per operation.
 */
typedef enum {
    TUTTI_BUF_NONE = 0,
    TUTTI_BUF_SEND = 1,
    TUTTI_BUF_RECV = 2,
} tutti_buf_t;

typedef enum {
    TUTTI_STEP_SEND,                  /* src -> send slot */
    TUTTI_STEP_RECV,                  /* recv slot -> dst */
    TUTTI_STEP_COPY,                  /* src -> dst, local */
    TUTTI_STEP_RECV_REDUCE_SEND,      /* op(recv slot, src) -> send slot */
    TUTTI_STEP_RECV_REDUCE_COPY,      /* op(recv slot, src) -> dst */
    TUTTI_STEP_RECV_REDUCE_COPY_SEND, /* op(recv slot, src) -> dst and send slot */
    TUTTI_STEP_RECV_COPY_SEND,        /* recv slot -> dst and send slot */
    TUTTI_STEP_REDUCE,                /* op(dst, src) -> dst, local */
    TUTTI_STEP_COPY_SEND,             /* src -> dst and send slot (one read of src) */
    TUTTI_STEP_KIND_COUNT
} tutti_step_kind_t;

/** Name of a step kind ("recv-reduce-send"), for logs and timeout reports. */
const char *tutti__step_name(tutti_step_kind_t kind);

/*
 * Reductions compute op(a, b) with a = the received slot (or dst for REDUCE) and b = src; `swap`
 * makes it op(b, a). Schedules that combine partial results in a fixed order on every rank use
 * it to keep results bitwise identical.
 */
struct tutti_step {
    uint8_t kind;     /* tutti_step_kind_t */
    uint8_t final;    /* the reduction that completes an element: AVG divides here */
    uint8_t swap;     /* reduce as op(src, received) instead of op(received, src) */
    uint8_t stable;   /* what this step sends stays unchanged until the operation ends */
    uint32_t src_buf; /* index into plan->bufs */
    uint32_t dst_buf;
    int32_t send_peer; /* rank, or -1 */
    int32_t recv_peer; /* rank, or -1 */
    uint32_t call;     /* the call it belongs to: index into plan->calls (a group's merged
                          plan), else 0 (the plan's op); its data carries that call's
                          fingerprint */
    size_t src_off;    /* in elements */
    size_t dst_off;    /* in elements */
    size_t count;      /* elements, <= chunk_elems; > 0 but for TUTTI_STEP_TOKEN's frames */
};

struct tutti_lane {
    int send_peer; /* peers copied into the steps added next, or -1 */
    int recv_peer;
    int channel;
    int after_all; /* starts only once every other lane has finished */
    size_t nsteps;
    struct tutti_step *steps; /* points into the plan's step pool */
};

/*
 * The counts and displacements (in elements, nranks entries each) of a variable-size
 * collective, as the user passed them; NULL where the call has none (a root's arrays on other
 * ranks). alltoallv: all four; allgatherv: rcounts, rdispls; gatherv: rcounts, rdispls at the
 * root; scatterv: scounts, sdispls at the root; reduce_scatterv: rcounts.
 */
struct tutti_vcounts {
    const size_t *scounts, *sdispls;
    const size_t *rcounts, *rdispls;
    /* allgatherv and reduce_scatterv: a digest of rcounts, which every rank must pass alike
     * (each piece of data carries it, fp.h); 0 otherwise. Set at validation. */
    uint32_t digest;
};

/** The description of one operation, as the user called it (validated). */
struct tutti_op_desc {
    tutti_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* allreduce/bcast/reduce/send/recv: count; reduce-scatter: recvcount;
                     allgather: sendcount; alltoall, gather, scatter: per-rank count;
                     allgatherv, gatherv: sendcount; scatterv: recvcount; alltoallv and
                     reduce_scatterv: 0 (their counts are in v) */
    tutti_datatype_t dt;
    tutti_op_t op; /* a tutti_op_t, or TUTTI_OP_PREMUL (coll_id.h) once validated */
    int root;      /* broadcast/reduce/gather(v)/scatter(v); -1 otherwise */
    int peer;      /* send/recv; -1 otherwise */
    uint64_t seq;  /* fingerprint sequence number, given at issue (fp.h); not part of the
                      plan: a plan built for one call serves the next with the same fields */
    const struct tutti_vcounts *v; /* the variable-size collectives; NULL otherwise */
    /* A block call of a blockwise plan (plan->calls: one per block, each step's data carries
     * its block's fingerprint): block 1, count the block's elements as this rank sees them, and
     * the fingerprint's two rank fields (fp.h): alltoallv sender and receiver; gather(v) and
     * scatter(v) root and the rank whose block it is; allgatherv and reduce_scatterv -1 and the
     * block's rank. block 0 for a call as the user made it. */
    int block;
    int fp_a, fp_b;
    /* TUTTI_OP_PREMUL: the scalar, one element of dt, by value (scalar), or where the call reads
     * it when it runs (scalar_ptr, host memory, when not NULL). Not part of the plan either. */
    uint64_t scalar;
    const void *scalar_ptr;
};

/** What builders need to know about the communicator. */
struct tutti_layout;
struct tutti_tune_memo;
struct tutti_plan_params {
    int rank;
    int nranks;
    int nchannels;      /* >= 1 */
    size_t chunk_elems; /* >= 1: elements per step at most */
    size_t direct_max;  /* bytes up to which the direct (one-hop) algorithms are chosen */
    size_t mem_budget;  /* connection memory per rank the automatic choice keeps to (0: any) */
    size_t conn_bytes;  /* memory of one connection of one channel */
    int budget_strict;  /* the budget was set (TUTTI_MEM_BUDGET): a call nothing fits fails;
                           else it takes the algorithm with the fewest peers */
    int forced;         /* catalog index forced by TUTTI_ALGO for this collective, or -1 */
    int tuner;          /* TUTTI_TUNER=model: the cost model chooses the algorithm, and the
                           chunk and channels up to chunk_elems and nchannels (else the static
                           rule, on these) */
    int nhosts;         /* hosts the ranks are on (the model's input) */
    double cpu_load;    /* ranks per CPU on the most crowded machine (the model's input) */
    /* where the ranks sit (hosts, the locality ring), or NULL: rank order on one host */
    const struct tutti_layout *layout;
    int intra_tcp; /* ranks of one host talk over TCP (TUTTI_TRANSPORT=tcp), not shm */
    /* per rank: the transport that reaches it (transports/transport.h's ids), as the fabric
     * chose it; NULL where no fabric is behind the plan (tools, unit tests) */
    const uint8_t *peer_transport;
    /* the model's answers so far on this communicator (coll/tuned.c), or NULL; written under
     * the communicator's turn */
    struct tutti_tune_memo *memo;
};

struct tutti_plan {
    struct tutti_op_desc op;
    int nlanes;
    struct tutti_lane *lanes;
    size_t nsteps; /* total over lanes */
    int divisor;   /* AVG: nranks; 1 otherwise */
    /* A rank that only sends: how many blocks as large as what it sends its receiver takes in
     * the call (a gather's root takes every rank's: nranks); 1 otherwise. The executor sizes
     * its frames' sharing by it (exec.c, size_call). */
    int recv_load;
    const char *algo;   /* name of the algorithm that built it */
    size_t chunk_elems; /* ... with this chunk */
    int nchannels;      /* ... and at most this many channels */
    char **bufs;        /* [TUTTI_BUF_NONE] NULL, [TUTTI_BUF_SEND], [TUTTI_BUF_RECV], ... */
    uint32_t nbufs;
    char *scratch; /* memory the plan owns (staging of overlapping group receives) */
    size_t scratch_cap;
    /*
     * A plan in two phases (alltoallv's Bruck variant): once this plan has run, `then` builds
     * the next one into the same plan from what this one left in `aux` (its own memory, which
     * a rebuild keeps), after `then_check` found it consistent (0; else -1 with the reason, a
     * mismatch of the ranks' calls). NULL for every other plan. Set by the builder.
     */
    int (*then)(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                struct tutti_plan *plan);
    int (*then_check)(const struct tutti_plan *plan, const struct tutti_op_desc *op,
                      const struct tutti_plan_params *pp, char *why, size_t len);
    char *aux;
    size_t aux_cap;
    /* the calls of a group's merged plan (each step's `call` indexes them; 0 calls: every
     * step is the plan's op), and the index new steps get */
    struct tutti_op_desc *calls;
    uint32_t ncalls, calls_cap;
    uint32_t cur_call;
    /* storage, reused between calls when the plan lives in a communicator */
    uint64_t gen;     /* a number no other build had: execs key caches on it */
    int reusable;     /* built from built_op and built_pp, and complete */
    int reusable_p2p; /* a group's sends and receives, built from calls and built_pp, complete */
    struct tutti_op_desc built_op;
    struct tutti_vcounts *built_v; /* a blockwise built_op's counts, copied (op.h) */
    struct tutti_plan_params built_pp;
    uint32_t bufs_cap;
    struct tutti_step *pool;
    size_t pool_cap;
    int lanes_cap;
};

/* ---- building (plan.c) ---- */

/**
 * Empty a plan for reuse, keeping its storage; bufs get NONE, SEND and RECV from op.
 * Returns 0, or -1 when out of memory.
 */
int tutti__plan_reset(struct tutti_plan *plan, const struct tutti_op_desc *op);

/** Make plan->aux at least `bytes` long (contents kept). Returns 0, or -1. */
int tutti__plan_aux(struct tutti_plan *plan, size_t bytes);

/** Make plan->scratch at least `bytes` long (contents undefined). Returns 0, or -1. */
int tutti__plan_scratch(struct tutti_plan *plan, size_t bytes);

/** Add a buffer to plan->bufs; returns its index, or -1 when out of memory or past 2^31. */
long tutti__plan_add_buf(struct tutti_plan *plan, void *buf);

/** Free a plan's storage. */
void tutti__plan_free(struct tutti_plan *plan);

/** Add a lane; returns its index, or -1 when out of memory. Steps are appended to the last lane. */
int tutti__plan_add_lane(struct tutti_plan *plan, int send_peer, int recv_peer, int channel);

/** Flags of tutti__plan_add_step. */
enum {
    TUTTI_STEP_FINAL = 1, /* the reduction that completes the element (AVG divides) */
    TUTTI_STEP_SWAP = 2,  /* reduce as op(src, received) */
    /*
     * What the step sends (src for SEND and COPY_SEND, dst for the RECV_*_COPY_SEND kinds) is not
     * written again before the operation ends, so a transport may ship it from there without a copy
     * (TUTTI_TRANSPORT_SEND_REF).
     */
    TUTTI_STEP_STABLE = 4,
    /*
     * Add the step even with count 0: a frame of no data that carries only its call's
     * fingerprint. The blockwise collectives send one for an empty block, so that every pair of
     * ranks exchanges at least one frame and a rank whose counts disagree with its peer's is
     * told so (fp.h) instead of waiting for data that never comes.
     */
    TUTTI_STEP_TOKEN = 8,
};

/**
 * Append a step to the last lane (count 0 is skipped, but for TUTTI_STEP_TOKEN). Returns 0, or -1
 * when out of memory. Lanes must be filled one after the other; tutti__plan_finish() fixes the step
 * pointers. flags: TUTTI_STEP_FINAL, TUTTI_STEP_SWAP, TUTTI_STEP_STABLE, TUTTI_STEP_TOKEN.
 */
int tutti__plan_add_step(struct tutti_plan *plan, tutti_step_kind_t kind, uint32_t src_buf,
                         size_t src_off, uint32_t dst_buf, size_t dst_off, size_t count, int flags);

/** Change the peers of the steps added next to the last lane. */
void tutti__plan_set_peers(struct tutti_plan *plan, int send_peer, int recv_peer);

/**
 * Add a call to a merged plan (plan->calls) and make the steps added next belong to it.
 * Returns 0, or -1 when out of memory.
 */
int tutti__plan_add_call(struct tutti_plan *plan, const struct tutti_op_desc *op);

/** Called by tutti__plan_build (coll/coll.h) once all steps are in: makes lane->steps valid. */
void tutti__plan_finish(struct tutti_plan *plan);

/** Split [0, total) into `parts` near-equal pieces; piece i is [*off_p, *off_p + *len_p). */
static inline void tutti__split_even(size_t total, int parts, int i, size_t *off_p, size_t *len_p)
{
    size_t base = total / (size_t)parts, rem = total % (size_t)parts;
    size_t idx = (size_t)i;
    *off_p = idx * base + (idx < rem ? idx : rem);
    *len_p = base + (idx < rem ? 1 : 0);
}

/** Non-negative modulo for ring arithmetic. */
static inline int tutti__mod(int a, int n)
{
    int r = a % n;
    return r < 0 ? r + n : r;
}

#endif /* TUTTI_PLAN_H */
