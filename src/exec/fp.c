/*
 * fp.c - owns the fabric's fp (fabric.h): operation fingerprints (fp.h). Sequence numbers given at
 * issue, the 32-byte wire form and its checks (pure functions, fuzzed), and the error that names
 * both calls when the data of one reaches the other.
 *
 * Wire form, four little-endian 64-bit words:
 *   w0 sequence number   w1 count (a blockwise collective's block: the block's count)
 *   w2 bits 0-31: root (rooted collectives; -1 without one) or sender (send/recv and
 *      alltoallv's blocks); bits 32-63: -1 (collectives), receiver (send/recv, alltoallv), or
 *      whose block (the other blockwise collectives' blocks)
 *   w3 byte 0 version, 1 collective (TUTTI_COLL_SEND for send/recv), 2 datatype,
 *      3 op (0xff unless the collective reduces), bytes 4-7 the counts' digest (allgatherv and
 *      reduce_scatterv; zero otherwise)
 */
#include "exec/fp.h"
#include "base/check.h"
#include "exec/fabric.h"
#include "exec/op.h"
#include "tutti/coll.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_OP 0xffu

static int reduces(int coll)
{
    return tutti__coll_reduces((tutti_coll_t)coll);
}

static int rooted(int coll)
{
    return tutti__coll_rooted((tutti_coll_t)coll);
}

/* Collectives whose fingerprint carries the digest of their shared counts. */
static int digested(int coll)
{
    return coll == TUTTI_COLL_ALLGATHERV || coll == TUTTI_COLL_REDUCE_SCATTERV;
}

int tutti__fp_init(struct tutti_fabric *fab)
{
    fab->fp.sent = calloc((size_t)fab->nranks, sizeof(*fab->fp.sent));
    fab->fp.recvd = calloc((size_t)fab->nranks, sizeof(*fab->fp.recvd));
    if (fab->fp.sent == NULL || fab->fp.recvd == NULL) {
        tutti__fp_fini(fab);
        return -1;
    }
    return 0;
}

void tutti__fp_fini(struct tutti_fabric *fab)
{
    free(fab->fp.sent);
    free(fab->fp.recvd);
    fab->fp.sent = fab->fp.recvd = NULL;
}

void tutti__fp_issue(struct tutti_fabric *fab, struct tutti_op_desc *op)
{
    if (op->coll == TUTTI_COLL_SEND && fab->fp.sent != NULL) {
        op->seq = ++fab->fp.sent[op->peer];
    } else if (op->coll == TUTTI_COLL_RECV && fab->fp.recvd != NULL) {
        op->seq = ++fab->fp.recvd[op->peer];
    } else if (op->coll != TUTTI_COLL_SEND && op->coll != TUTTI_COLL_RECV) {
        /* atomic: a program that issues from two threads at once gets mismatches, not UB */
        op->seq = atomic_fetch_add_explicit(&fab->fp.coll, 1, memory_order_relaxed) + 1;
    }
}

void tutti__fp_encode(const struct tutti_fp_desc *d, struct tutti_fp *fp)
{
    int pair = d->coll == TUTTI_COLL_SEND || d->coll == TUTTI_COLL_ALLTOALLV;
    uint32_t a = (uint32_t)(pair ? d->src : d->root);
    uint32_t b = (uint32_t)(pair ? d->dst : d->block);
    uint32_t op = d->op >= 0 ? (uint32_t)d->op : NO_OP;
    fp->w[0] = htole64(d->seq);
    fp->w[1] = htole64(d->count);
    fp->w[2] = htole64((uint64_t)a | (uint64_t)b << 32);
    fp->w[3] =
        htole64((uint64_t)TUTTI_FP_VERSION | (uint64_t)(uint32_t)d->coll << 8 |
                (uint64_t)(uint32_t)d->dt << 16 | (uint64_t)op << 24 | (uint64_t)d->digest << 32);
}

void tutti__fp_make(const struct tutti_op_desc *op, int rank, struct tutti_fp *fp)
{
    struct tutti_fp_desc d = {.seq = op->seq,
                              .count = op->count,
                              .coll = op->coll,
                              .dt = op->dt,
                              .op = -1,
                              .root = -1,
                              .src = -1,
                              .dst = -1,
                              .block = -1,
                              .digest = 0};
    if (op->coll == TUTTI_COLL_SEND || op->coll == TUTTI_COLL_RECV) {
        d.coll = TUTTI_COLL_SEND; /* both ends of one message compute the same bytes */
        d.src = op->coll == TUTTI_COLL_SEND ? rank : op->peer;
        d.dst = op->coll == TUTTI_COLL_SEND ? op->peer : rank;
    } else {
        d.op = reduces(op->coll) ? (int)op->op : -1;
        d.root = rooted(op->coll) ? op->root : -1;
        d.digest = digested(op->coll) && op->v != NULL ? op->v->digest : 0;
    }
    if (op->block && op->coll == TUTTI_COLL_ALLTOALLV) {
        d.src = op->fp_a;
        d.dst = op->fp_b;
    } else if (op->block) {
        d.block = op->fp_b;
    }
    tutti__fp_encode(&d, fp);
}

/* A rank field: in [0, nranks), or >= 0 when nranks is 0 (unknown). */
static int rank_ok(int32_t r, int nranks)
{
    return r >= 0 && (nranks <= 0 || r < nranks);
}

/* The rank fields a and b of a fingerprint of coll: do they make sense? */
static int ranks_ok(unsigned coll, int32_t a, int32_t b, int nranks)
{
    if (coll == TUTTI_COLL_SEND) {
        return rank_ok(a, nranks) && rank_ok(b, nranks);
    }
    if (coll == TUTTI_COLL_ALLTOALLV) { /* a block (sender, receiver), or the call itself */
        return (a == -1 && b == -1) || (rank_ok(a, nranks) && rank_ok(b, nranks));
    }
    int root_ok = rooted((int)coll) ? rank_ok(a, nranks) : a == -1;
    int block_ok =
        tutti__coll_is_blockwise((tutti_coll_t)coll) ? b == -1 || rank_ok(b, nranks) : b == -1;
    return root_ok && block_ok;
}

int tutti__fp_decode(const struct tutti_fp *fp, int nranks, struct tutti_fp_desc *d, char *why,
                     size_t len)
{
    uint64_t w2 = le64toh(fp->w[2]), w3 = le64toh(fp->w[3]);
    unsigned ver = (unsigned)(w3 & 0xff), coll = (unsigned)(w3 >> 8 & 0xff);
    unsigned dt = (unsigned)(w3 >> 16 & 0xff), op = (unsigned)(w3 >> 24 & 0xff);
    uint32_t digest = (uint32_t)(w3 >> 32);
    int32_t a = (int32_t)(uint32_t)w2, b = (int32_t)(uint32_t)(w2 >> 32);
    const char *bad = NULL;
    if (ver != TUTTI_FP_VERSION) {
        bad = "version";
    } else if (coll >= TUTTI_COLL_COUNT || coll == TUTTI_COLL_RECV) {
        bad = "collective";
    } else if (digest != 0 && !digested((int)coll)) {
        bad = "reserved bytes";
    } else if (dt >= TUTTI_NUM_DATATYPES) {
        bad = "datatype";
    } else if (reduces((int)coll) ? op > (unsigned)TUTTI_OP_PREMUL : op != NO_OP) {
        bad = "op";
    } else if (!ranks_ok(coll, a, b, nranks)) {
        bad = "rank";
    }
    if (bad != NULL) {
        snprintf(why, len, "bad %s in fingerprint %016llx %016llx %016llx %016llx", bad,
                 (unsigned long long)le64toh(fp->w[0]), (unsigned long long)le64toh(fp->w[1]),
                 (unsigned long long)w2, (unsigned long long)w3);
        return -1;
    }
    int pair = coll == TUTTI_COLL_SEND || coll == TUTTI_COLL_ALLTOALLV;
    *d = (struct tutti_fp_desc){.seq = le64toh(fp->w[0]),
                                .count = le64toh(fp->w[1]),
                                .coll = (int)coll,
                                .dt = (int)dt,
                                .op = reduces((int)coll) ? (int)op : -1,
                                .root = pair ? -1 : a,
                                .src = pair ? a : -1,
                                .dst = pair ? b : -1,
                                .block = pair ? -1 : b,
                                .digest = digest};
    return 0;
}

/* The name of op as a fingerprint has it: a pre-multiplied sum has no public value. */
static const char *op_str(int op)
{
    return op == TUTTI_OP_PREMUL ? "premul_sum" : tutti_op_name((tutti_op_t)op);
}

/* What follows "N x type" in a description: the peers, the op, the root, the block, the
 * digest, each where the fingerprint has it. */
static void extra_str(const struct tutti_fp_desc *d, int compact, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + o, len - o, __VA_ARGS__);                                          \
        o += w_ > 0 && (size_t)w_ < len - o ? (size_t)w_ : 0;                                      \
    } while (0)
    if (d->src >= 0) {
        PUT(compact ? ":%d->%d" : ", rank %d -> rank %d", d->src, d->dst);
    }
    if (d->op >= 0) {
        PUT(compact ? ":%s" : ", %s", op_str(d->op));
    }
    if (d->root >= 0) {
        PUT(compact ? ":root=%d" : ", root %d", d->root);
    }
    if (d->digest != 0) {
        PUT(compact ? ":counts=%08x" : ", counts digest %08x", d->digest);
    }
#undef PUT
}

void tutti__fp_str(const struct tutti_fp_desc *d, int compact, char *buf, size_t len)
{
    /* a send and its receive share one fingerprint: name the message, not one end */
    const char *name = d->coll == TUTTI_COLL_SEND ? (compact ? "sendrecv" : "send/recv")
                                                  : tutti__coll_name((tutti_coll_t)d->coll);
    const char *dt = tutti_datatype_name((tutti_datatype_t)d->dt);
    char extra[96], block[40] = "";
    extra_str(d, compact, extra, sizeof(extra));
    if (d->block >= 0) {
        snprintf(block, sizeof(block), compact ? "blk%d=" : "block of rank %d: ", d->block);
    }
    if (compact) {
        snprintf(buf, len, "%s#%llu:%s%llux%s%s", name, (unsigned long long)d->seq, block,
                 (unsigned long long)d->count, dt, extra);
    } else {
        snprintf(buf, len, "%s #%llu (%s%llu x %s%s)", name, (unsigned long long)d->seq, block,
                 (unsigned long long)d->count, dt, extra);
    }
}

void tutti__fp_remember(struct tutti_fabric *fab, const struct tutti_fp *fp)
{
    uint64_t seq = le64toh(fp->w[0]);
    tutti__fp_copy(&fab->fp.hist[seq % TUTTI_FP_HISTORY], fp);
}

/* "; rank 0's call #1 was broadcast #1 (...)" when this rank remembers its collective #seq. */
static void own_call(const struct tutti_fabric *fab, uint64_t seq, char *buf, size_t len)
{
    struct tutti_fp_desc d;
    char why[8], s[160];
    const struct tutti_fp *h = &fab->fp.hist[seq % TUTTI_FP_HISTORY];
    buf[0] = '\0';
    if (tutti__fp_decode(h, fab->nranks, &d, why, sizeof(why)) == 0 && d.seq == seq &&
        d.coll != TUTTI_COLL_SEND) {
        tutti__fp_str(&d, 0, s, sizeof(s));
        snprintf(buf, len, "; rank %d's collective #%llu was %s", fab->rank,
                 (unsigned long long)seq, s);
    }
}

tutti_status_t tutti__fp_mismatch(struct tutti_fabric *fab, int peer, const struct tutti_fp *got,
                                  const struct tutti_fp *want)
{
    char who[128], why[160];
    struct tutti_fp_desc g, w;
    tutti__tpeer_name(fab->net.targs.peers, peer, who, sizeof(who));
    if (tutti__fp_decode(got, fab->nranks, &g, why, sizeof(why)) != 0) {
        return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_REMOTE,
                                "protocol error: data from %s: %s", who, why);
    }
    (void)tutti__fp_decode(want, fab->nranks, &w, why, sizeof(why)); /* made here: valid */
    char gs[160], ws[160], gc[128], wc[128], more[224] = "";
    tutti__fp_str(&g, 0, gs, sizeof(gs));
    tutti__fp_str(&w, 0, ws, sizeof(ws));
    tutti__fp_str(&g, 1, gc, sizeof(gc));
    tutti__fp_str(&w, 1, wc, sizeof(wc));
    /* Data of an earlier call of the same kind was never received: the calls numbered g.seq
     * differed (the sender only sent, so it could not tell). */
    int leftover = (g.coll == TUTTI_COLL_SEND) == (w.coll == TUTTI_COLL_SEND) && g.seq < w.seq;
    if (leftover && g.coll != TUTTI_COLL_SEND) {
        own_call(fab, g.seq, more, sizeof(more));
    }
    tutti_warn("tutti: mismatch rank=%d nranks=%d comm=%016llx peer=%d mine=%s theirs=%s "
               "leftover=%d",
               fab->rank, fab->nranks, (unsigned long long)fab->comm_id, peer, wc, gc, leftover);
    return tutti__set_error(tutti__fabric_err(fab), TUTTI_ERR_MISMATCH,
                            "mismatched calls: %sdata of %s from %s reached %s on rank %d%s",
                            leftover ? "leftover " : "", gs, who, ws, fab->rank, more);
}
