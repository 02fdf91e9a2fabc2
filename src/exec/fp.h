/*
 * fp.h - operation fingerprints: every slot of data a rank sends carries the fingerprint of the
 * call it belongs to, and the receiver compares it with its own call's before it uses the data.
 *
 * A fingerprint is (sequence number, collective, datatype, op, root, count) for a collective and
 * (sequence number, datatype, count, sender, receiver) for a send or receive, so both ends of a
 * matching pair compute the same 32 bytes and the check is a compare of four words. Gather,
 * scatter and the variable-size collectives fingerprint each block: its count as the rank that
 * sends it sees it and as the rank that receives it expects it, and whose block it is (sender
 * and receiver for alltoallv), plus a digest of the counts every rank passes alike (allgatherv,
 * reduce_scatterv): ranks whose counts differ fail on the first piece of data between them.
 * Sequence numbers are given when a call is issued (tutti__fp_issue, on the caller's thread, in
 * issue order): collectives count per communicator (every rank makes every collective), sends and
 * receives per peer and direction (the k-th send to rank q pairs with q's k-th receive from
 * this rank), since only the two ends of a message make a point-to-point call.
 *
 * Transports carry the fingerprint as metadata beside the payload (the shm slot header, TCP's
 * frame header, a verbs trailer), never inside it: TCP sends from and receives into user
 * buffers, verbs sends from registered user memory, without a slot copy.
 */
#ifndef TUTTI_FP_H
#define TUTTI_FP_H

#include "exec/plan.h"
#include "transports/transport.h"
#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_fabric;

/** Fingerprint format version (its first byte on the wire). */
#define TUTTI_FP_VERSION 1u

/** How many of its latest collectives a communicator remembers, to name them in errors. */
#define TUTTI_FP_HISTORY 8

/* fp.c: a communicator's sequence numbers and recent collectives. */
struct tutti_comm_fp {
    _Atomic uint64_t coll; /* collectives issued */
    uint64_t *sent;        /* [nranks]: sends issued to each peer */
    uint64_t *recvd;       /* [nranks]: receives issued from each peer */
    /* the fingerprints of the latest collectives run (under the turn), by seq mod HISTORY */
    struct tutti_fp hist[TUTTI_FP_HISTORY];
};

/** A fingerprint decoded. */
struct tutti_fp_desc {
    uint64_t seq;
    uint64_t count;
    int coll;        /* tutti_coll_t; TUTTI_COLL_SEND stands for both ends of a message */
    int dt;          /* tutti_datatype_t */
    int op;          /* tutti_op_t (or TUTTI_OP_PREMUL) for reductions, else -1 */
    int root;        /* rooted collectives, else -1 */
    int src, dst;    /* send/recv and alltoallv's blocks: sender and receiver, else -1 */
    int block;       /* the other blocks of the blockwise collectives: whose block, else -1 */
    uint32_t digest; /* allgatherv and reduce_scatterv: the digest of their counts, else 0 */
};

/** Allocate fab->fp's per-peer counters (nranks each). Returns 0, or -1 when out of memory. */
int tutti__fp_init(struct tutti_fabric *fab);

/** Free them. */
void tutti__fp_fini(struct tutti_fabric *fab);

/**
 * Give an operation its sequence number (op->seq) as it is issued: the next collective number,
 * or for a send (receive) the next number of its peer and direction. One thread issues a
 * communicator's calls at a time (issue order is what ranks must agree on).
 */
void tutti__fp_issue(struct tutti_fabric *fab, struct tutti_op_desc *op);

/** The fingerprint of op (with its seq) as issued by `rank`. Pure. */
void tutti__fp_make(const struct tutti_op_desc *op, int rank, struct tutti_fp *fp);

/**
 * *dst = *src a word at a time, as tutti__fp_encode stores them. The loads are volatile so that
 * each has the size and place of one store: a load of words stored moments ago is then served
 * from the store buffer, where a struct copy's 16-byte load of two 8-byte stores would wait for
 * every older store to commit, a note's store to a line a peer holds among them (a cache miss).
 */
static inline void tutti__fp_copy(struct tutti_fp *dst, const struct tutti_fp *src)
{
    const volatile uint64_t *w = src->w;
    for (int i = 0; i < 4; i++) {
        dst->w[i] = w[i];
    }
}

/** Whether two fingerprints are the same. */
static inline int tutti__fp_eq(const struct tutti_fp *a, const struct tutti_fp *b)
{
    return ((a->w[0] ^ b->w[0]) | (a->w[1] ^ b->w[1]) | (a->w[2] ^ b->w[2]) |
            (a->w[3] ^ b->w[3])) == 0;
}

/** The wire form of a decoded fingerprint (tutti__fp_decode's inverse). Pure. */
void tutti__fp_encode(const struct tutti_fp_desc *d, struct tutti_fp *fp);

/**
 * Decode and check a fingerprint that came from a peer (nranks: ranks must be below it; 0
 * checks only that they are >= -1). Returns 0 with *d filled, or -1 with the reason in why.
 * Pure (fuzzed: tests/fuzz/fuzz_fp.c).
 */
int tutti__fp_decode(const struct tutti_fp *fp, int nranks, struct tutti_fp_desc *d, char *why,
                     size_t len);

/**
 * Describe a call: "allreduce #2 (1000 x int32, sum)", "broadcast #1 (8 x float32, root 1)",
 * "send/recv #3 (10 x int8, rank 1 -> rank 0)" (the message, which both ends describe
 * alike); compact (for log records, no spaces): "allreduce#2:1000xint32:sum",
 * "broadcast#1:8xfloat32:root=1", "sendrecv#3:10xint8:1->0".
 */
void tutti__fp_str(const struct tutti_fp_desc *d, int compact, char *buf, size_t len);

/**
 * Record what a call about to run on comm is (its collective history), under the turn.
 */
void tutti__fp_remember(struct tutti_fabric *fab, const struct tutti_fp *fp);

/**
 * Data from `peer` carried `got` where this rank's call expected `want`: record the error
 * naming both ranks and both calls (TUTTI_ERR_MISMATCH; TUTTI_ERR_REMOTE when `got` does not
 * parse: a protocol error), log a `tutti: mismatch` record for `tutti-info --hang`, and return
 * the status. The caller fails the operation, which fails the communicator.
 */
tutti_status_t tutti__fp_mismatch(struct tutti_fabric *fab, int peer, const struct tutti_fp *got,
                                  const struct tutti_fp *want);

#endif /* TUTTI_FP_H */
