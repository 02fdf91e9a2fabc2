/*
 * test_vmismatch.c - gather, scatter and the variable-size collectives whose counts disagree
 * between ranks, on 3 real processes over shared memory and TCP: a count one rank sends that its
 * peer does not expect (larger, smaller, data where the peer expects an empty block and the
 * reverse), and vectors every rank must pass alike that differ on one rank. Each piece of data
 * carries its block's count as the sender sees it (and the digest of a shared vector), so the
 * rank that receives it fails with TUTTI_ERR_MISMATCH naming both views, long before
 * TUTTI_TIMEOUT, and every other rank fails too at its call or its next one; no rank waits for
 * its timeout.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NR        3
#define TIMEOUT_S 5 /* TUTTI_TIMEOUT: a mismatch must be reported well before it */
#define CAP       64
#define SEC       1000000000LL

enum kind {
    A2AV_MORE,         /* rank 2 sends rank 0 six elements, rank 0 expects five */
    A2AV_DATA_VS_NONE, /* rank 1 sends rank 0 three, rank 0 expects an empty block */
    A2AV_NONE_VS_DATA, /* rank 1 sends rank 0 nothing, rank 0 expects four */
    ALLGATHERV_VECTOR, /* rank 2's recvcounts differ in rank 0's entry */
    GATHERV_COUNT,     /* the root (0) expects four from rank 1, which sends three */
    SCATTERV_COUNT,    /* rank 2 expects seven, the root (0) sends six */
    RSV_VECTOR,        /* rank 1's recvcounts differ in rank 2's entry */
    NKINDS
};

static const char *const names[NKINDS] = {"alltoallv, a larger block",
                                          "alltoallv, data where none is expected",
                                          "alltoallv, none where data is expected",
                                          "allgatherv, another vector on one rank",
                                          "gatherv, a smaller block",
                                          "scatterv, another receive count",
                                          "reduce_scatterv, another vector on one rank"};

/* What the rank that sees the mismatch must name: both counts of the block. */
static const char *const views[NKINDS][2] = {
    {"alltoallv #1 (6 x int32, rank 2 -> rank 0)", "alltoallv #1 (5 x int32, rank 2 -> rank 0)"},
    {"alltoallv #1 (3 x int32, rank 1 -> rank 0)", "alltoallv #1 (0 x int32, rank 1 -> rank 0)"},
    {"alltoallv #1 (0 x int32, rank 1 -> rank 0)", "alltoallv #1 (4 x int32, rank 1 -> rank 0)"},
    {"allgatherv #1 (block of rank ", "counts digest"},
    {"gatherv #1 (block of rank 1: 3 x int32, root 0)",
     "gatherv #1 (block of rank 1: 4 x int32, root 0)"},
    {"scatterv #1 (block of rank 2: 6 x int32, root 0)",
     "scatterv #1 (block of rank 2: 7 x int32, root 0)"},
    {"reduce_scatterv #1 (block of rank ", "counts digest"},
};

/*
 * Every rank fails, at its call or its next one: with TUTTI_ERR_MISMATCH (it received a bad
 * block, or the notice of a rank that did), or over TCP with TUTTI_ERR_REMOTE where it saw a
 * failed peer go away before any notice came (docs/design/failure.md). At least
 * one rank must report TUTTI_ERR_MISMATCH naming both views; the ranks meet in shared memory to
 * check that.
 */
/* The ranks the bad block of a case is between (bit = rank). A rank outside them may be
 * waiting to connect to a rank that failed (TCP), and then fails with TUTTI_ERR_TIMEOUT after
 * TUTTI_TIMEOUT: a failed rank tells only the peers it has connections to (issue 36, item 4). */
static const unsigned involved[NKINDS] = {0x5, 0x3, 0x3, 0x7, 0x3, 0x5, 0x7};

struct meet {
    _Atomic int done;
    _Atomic int named; /* ranks whose message named both views */
};

struct vm_case {
    int tcp;
    enum kind kind;
};

/* Rank r's mismatched call: 4 elements per block but where the case says otherwise. */
static tutti_status_t call(enum kind k, int r, int32_t *in, int32_t *out, tutti_comm_t *c)
{
    size_t sc[NR], rc[NR], sd[NR], rd[NR];
    for (int j = 0; j < NR; j++) {
        sc[j] = rc[j] = 4;
        sd[j] = rd[j] = (size_t)j * 16;
    }
    switch (k) {
    case A2AV_MORE:
        sc[0] = r == 2 ? 6 : 4;
        rc[2] = r == 0 ? 5 : 4;
        break;
    case A2AV_DATA_VS_NONE:
        sc[0] = r == 1 ? 3 : 4;
        rc[1] = r == 0 ? 0 : 4;
        break;
    case A2AV_NONE_VS_DATA:
        sc[0] = r == 1 ? 0 : 4;
        break;
    default:
        break;
    }
    switch (k) {
    case ALLGATHERV_VECTOR:
        rc[0] = r == 2 ? 5 : 4;
        return tutti_allgatherv(in, 4, out, rc, rd, TUTTI_INT32, c, NULL);
    case GATHERV_COUNT:
        rc[1] = 4;
        return tutti_gatherv(in, r == 1 ? 3 : 4, out, rc, rd, TUTTI_INT32, 0, c, NULL);
    case SCATTERV_COUNT:
        sc[2] = 6;
        return tutti_scatterv(in, sc, sd, out, r == 2 ? 7 : (r == 0 ? 4 : 4), TUTTI_INT32, 0, c,
                              NULL);
    case RSV_VECTOR:
        rc[2] = r == 1 ? 3 : 4;
        return tutti_reduce_scatterv(in, out, rc, TUTTI_INT32, TUTTI_SUM, c, NULL);
    default:
        return tutti_alltoallv(in, sc, sd, out, rc, rd, TUTTI_INT32, c, NULL);
    }
}

static int vm_rank(const struct integ_ctx *ctx)
{
    const struct vm_case *m = ctx->arg;
    int r = ctx->rank;
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int32_t in[CAP], out[CAP];
    for (int i = 0; i < CAP; i++) {
        in[i] = 1;
        out[i] = -7;
    }
    int64_t t0 = integ_now_ns();
    tutti_status_t st = call(m->kind, r, in, out, c);
    struct meet *meet = ctx->shared;
    /* Over TCP a rank still waiting for the connection of a rank that failed first may learn
     * of it only from TUTTI_TIMEOUT (the gap docs/design/failure.md names): seen once in CI under
     * ASan, reduce_scatterv, rank 2 waiting for rank 1's channel 0. */
    int unconnected =
        m->tcp && st == TUTTI_ERR_TIMEOUT && strstr(tutti_last_error(c), "did not connect") != NULL;
    int bystander = (!((involved[m->kind] >> r) & 1) && st == TUTTI_ERR_TIMEOUT) || unconnected;
    ICHECK(st == TUTTI_ERR_MISMATCH || st == TUTTI_OK || st == TUTTI_ERR_REMOTE || bystander,
           "%s: rank %d's call returned %s: %s", names[m->kind], r, tutti_status_name(st),
           tutti_last_error(c));
    if (st == TUTTI_OK) { /* its own blocks matched: the failure reaches its next call */
        st = tutti_allreduce(in, out, 1, TUTTI_INT32, TUTTI_SUM, c, NULL);
        ICHECK(st == TUTTI_ERR_MISMATCH || st == TUTTI_ERR_REMOTE,
               "%s: rank %d's next call returned %s: %s", names[m->kind], r, tutti_status_name(st),
               tutti_last_error(c));
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    ICHECK(bystander || secs < TIMEOUT_S - 2, "%s: the error took %.1f s", names[m->kind], secs);
    const char *msg = tutti_last_error(c);
    ICHECK(st != TUTTI_ERR_MISMATCH || strstr(msg, "mismatched calls") != NULL, "rank %d: %s", r,
           msg);
    if (strstr(msg, views[m->kind][0]) != NULL && strstr(msg, views[m->kind][1]) != NULL) {
        atomic_fetch_add(&meet->named, 1);
    }
    tutti_comm_destroy(c);
    atomic_fetch_add(&meet->done, 1);
    while (atomic_load(&meet->done) < NR && integ_now_ns() - t0 < (int64_t)3 * TIMEOUT_S * SEC) {
        usleep(1000);
    }
    ICHECK(r != 0 || atomic_load(&meet->named) > 0,
           "%s: no rank's message named both views (rank 0's: %s)", names[m->kind], msg);
    return 0;
}

static struct vm_case cases[2 * NKINDS];

ParameterizedTestParameters(vmismatch, fails_every_rank_naming_both_counts)
{
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < NKINDS; k++) {
            cases[t * NKINDS + k] = (struct vm_case){t, (enum kind)k};
        }
    }
    return cr_make_param_array(struct vm_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct vm_case *m, vmismatch, fails_every_rank_naming_both_counts, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", m->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "5s");
    integ_run_ranks(NR, vm_rank, m, sizeof(struct meet));
}

/* Forced to alltoallv's Bruck variant, every rank has the whole count matrix before any data
 * moves: the rank whose receive count differs from what its peer sends says so, naming both. */
static int bruck_rank(const struct integ_ctx *ctx)
{
    int r = ctx->rank;
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int32_t in[CAP], out[CAP];
    tutti_status_t st = call(A2AV_MORE, r, in, out, c);
    if (st == TUTTI_OK) {
        st = tutti_allreduce(in, out, 1, TUTTI_INT32, TUTTI_SUM, c, NULL);
    }
    ICHECK(st == TUTTI_ERR_MISMATCH || st == TUTTI_ERR_REMOTE, "rank %d: %s: %s", r,
           tutti_status_name(st), tutti_last_error(c));
    const char *msg = tutti_last_error(c);
    ICHECK(r != 0 || strstr(msg, "(bruck) rank 2 sends rank 0 6 x int32, where rank 0 expects "
                                 "5") != NULL,
           "rank 0: %s", msg);
    tutti_comm_destroy(c);
    return 0;
}

Test(vmismatch, bruck_names_both_counts_before_data_moves, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "5s");
    integ_setenv("TUTTI_ALGO", "alltoallv:bruck");
    integ_run_ranks(NR, bruck_rank, NULL, 0);
}
