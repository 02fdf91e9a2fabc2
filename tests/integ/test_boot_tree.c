/*
 * test_boot_tree.c - the bootstrap over a tree between the ranks (src/comm/boot_tree.c), on real
 * processes, with TUTTI_BOOT_TREE forcing it at 13 ranks (three levels: rank 0, eight children,
 * four of which have a child of their own). Records and statuses arrive whole and in rank
 * order; a failed rank is named by the worst-status sync as by the root's; and the failures the
 * tree itself must catch reach every rank well within TUTTI_TIMEOUT, naming the culprit: an
 * inner rank that dies, a leaf that stops, a rank that makes a different call. (A rank may
 * learn of the failure in the call before the one where it happened: errors spread through the
 * root at once, data hop by hop.)
 *
 * The ranks drive the bootstrap directly (comm/bootstrap.h; the tests link the library
 * statically); a whole communicator over the tree is test_boot_tree's first test.
 */
#include "comm/bootstrap.h"
#include "comm/init.h"
#include "base/env.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NRANKS    13
#define INNER     2 /* a child of rank 0 with a child of its own (rank 3) */
#define LEAF      3
#define REC_BYTES 100

static void force_tree(const char *timeout)
{
    integ_setenv("TUTTI_BOOT_TREE", "2");
    integ_setenv("TUTTI_TIMEOUT", timeout);
}

static int comm_over_tree(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int64_t x = ctx->rank + 1, y = 0;
    ICHECK_OKC(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL), comm);
    ICHECK(y == (int64_t)NRANKS * (NRANKS + 1) / 2, "sum %lld", (long long)y);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

Test(boot_tree, a_communicator_forms_over_the_tree_and_reduces, .timeout = 90)
{
    force_tree("30s");
    integ_run_ranks(NRANKS, comm_over_tree, NULL, 0);
}

/* What each rank does after its first all-gather and sync (the test's arg). */
enum act { ACT_NONE, ACT_DIE, ACT_STOP, ACT_WRONG_CALL };

static int open_boot(const struct integ_ctx *ctx, struct tutti_boot **b)
{
    struct tutti_uid u;
    ICHECK_OK(tutti__uid_decode(ctx->id, &u));
    ICHECK_OK(tutti__boot_client_open(&u.boot, ctx->rank, ctx->nranks, tutti__env()->TIMEOUT,
                                      TUTTI_BOOT_ROOT_UP, b));
    return 0;
}

static void record_of(int rank, uint8_t rec[REC_BYTES])
{
    for (int i = 0; i < REC_BYTES; i++) {
        rec[i] = (uint8_t)(rank * 31 + i);
    }
}

static int exchange(const struct integ_ctx *ctx)
{
    struct tutti_boot *b;
    if (open_boot(ctx, &b) != 0) {
        return 1;
    }
    uint8_t mine[REC_BYTES], all[NRANKS * REC_BYTES], want[REC_BYTES];
    record_of(ctx->rank, mine);
    ICHECK_OK(b->ops->allgather(b, mine, all, sizeof(mine)));
    for (int r = 0; r < ctx->nranks; r++) {
        record_of(r, want);
        ICHECK(memcmp(all + r * REC_BYTES, want, REC_BYTES) == 0, "rank %d's record differs", r);
    }
    /* Ranks 9 and 4 fail alike, in different subtrees, and rank 6 with a lesser status (less
     * negative): the worst status is agreed, and the lower of the ranks that reported it. */
    tutti_status_t mine_st = ctx->rank == 9   ? TUTTI_ERR_REMOTE
                             : ctx->rank == 4 ? TUTTI_ERR_REMOTE
                             : ctx->rank == 6 ? TUTTI_ERR_NO_MEMORY
                                              : TUTTI_OK;
    tutti_status_t agreed;
    int culprit = -2;
    ICHECK_OK(b->ops->sync(b, mine_st, &agreed, &culprit));
    ICHECK(agreed == TUTTI_ERR_REMOTE && culprit == 4, "agreed %s, culprit %d",
           tutti_status_name(agreed), culprit);
    ICHECK_OK(b->ops->sync(b, TUTTI_OK, &agreed, &culprit));
    ICHECK(agreed == TUTTI_OK && culprit == -1, "agreed %s, culprit %d", tutti_status_name(agreed),
           culprit);
    b->ops->close(b, 1);
    return 0;
}

Test(boot_tree, records_and_the_worst_status_reach_every_rank, .timeout = 60)
{
    force_tree("30s");
    struct integ_opts o = {.nranks = NRANKS, .deadline_s = 40, .make_id = 1};
    integ_run(&o, exchange);
}

struct fail_case {
    enum act act;
    int who;
    const char *want;      /* in every other rank's error */
    tutti_status_t status; /* every other rank's */
    double within_s;
};

static int failing(const struct integ_ctx *ctx)
{
    const struct fail_case *fc = ctx->arg;
    struct tutti_boot *b;
    if (open_boot(ctx, &b) != 0) {
        return 1;
    }
    uint8_t mine[REC_BYTES], all[NRANKS * REC_BYTES];
    record_of(ctx->rank, mine);
    int64_t t0 = integ_now_ns();
    /* The failure reaches every rank through the root at once, while the first all-gather's
     * result still travels down the tree: a rank may learn of it in that call already. */
    tutti_status_t st = b->ops->allgather(b, mine, all, sizeof(mine));
    if (st == TUTTI_OK && ctx->rank == fc->who && fc->act == ACT_DIE) {
        _exit(7);
    }
    if (st == TUTTI_OK && ctx->rank == fc->who && fc->act == ACT_STOP) {
        raise(SIGSTOP);
        _exit(7);
    }
    tutti_status_t agreed;
    int culprit;
    if (st == TUTTI_OK && ctx->rank == fc->who && fc->act == ACT_WRONG_CALL) {
        st = b->ops->allgather(b, mine, all, sizeof(mine));
    } else if (st == TUTTI_OK) {
        st = b->ops->sync(b, TUTTI_OK, &agreed, &culprit);
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(NULL);
    b->ops->close(b, 0);
    if (ctx->rank == fc->who) {
        ICHECK(st != TUTTI_OK, "the culprit's own call succeeded");
        return 0;
    }
    ICHECK(st == fc->status, "got %s, want %s: %s", tutti_status_name(st),
           tutti_status_name(fc->status), msg);
    ICHECK(strstr(msg, fc->want) != NULL, "the error does not say '%s': %s", fc->want, msg);
    ICHECK(secs < fc->within_s, "the error came after %.1f s: %s", secs, msg);
    return 0;
}

static void run_failing(struct fail_case *fc)
{
    struct integ_opts o = {.nranks = NRANKS, .deadline_s = 40, .make_id = 1, .arg = fc};
    struct integ_job *job = integ_start(&o, failing);
    if (fc->act == ACT_STOP) {
        usleep(12 * 1000000); /* past every rank's timeout (3 s + the tree's grace) */
        integ_signal(job, fc->who, SIGKILL);
    }
    integ_finish(job, NULL, 1u << fc->who);
}

Test(boot_tree, an_inner_rank_that_dies_is_named_to_every_rank_at_once, .timeout = 60)
{
    force_tree("30s");
    struct fail_case fc = {ACT_DIE, INNER, "rank 2", TUTTI_ERR_REMOTE, 8.0};
    run_failing(&fc);
}

Test(boot_tree, a_stopped_leaf_is_named_after_the_timeout_by_every_rank, .timeout = 60)
{
    force_tree("3s");
    struct fail_case fc = {ACT_STOP, LEAF, "for rank 3", TUTTI_ERR_TIMEOUT, 8.0};
    run_failing(&fc);
}

Test(boot_tree, a_rank_that_makes_another_call_is_named_as_a_disagreement, .timeout = 60)
{
    force_tree("30s");
    struct fail_case fc = {ACT_WRONG_CALL, 7, "disagree", TUTTI_ERR_INVALID_USAGE, 8.0};
    run_failing(&fc);
}
