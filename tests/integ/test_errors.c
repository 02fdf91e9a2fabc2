/*
 * test_errors.c - wrong use of the API on real ranks: ranks that disagree on nranks get errors
 * that say so.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SEC 1000000000LL
#define TUTTI_TIMEOUT_S 3
#define SLACK_S 10 /* CI machines are slow and shared: failures may take this much longer */

static void env_for_errors(int tcp)
{
    integ_setenv("TUTTI_TRANSPORT", tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "3s");
}

/* ---------------------------------------------------------------- init */

/* Ranks that disagree on nranks: every rank fails, in time, with a message that says so. */
static int nranks_mismatch_rank(const struct integ_ctx *ctx)
{
    int nranks = ctx->rank == 1 ? 3 : 2;
    tutti_comm_t *c = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_rank(&c, nranks, ctx->id, ctx->rank);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(NULL);
    ICHECK(st != TUTTI_OK && c == NULL, "init with nranks %d succeeded", nranks);
    ICHECK(secs < TUTTI_TIMEOUT_S + SLACK_S, "init failed only after %.1f s", secs);
    /* Whichever came second is refused (INVALID_USAGE); the other learns of it (REMOTE). */
    ICHECK(st == TUTTI_ERR_REMOTE || st == TUTTI_ERR_INVALID_USAGE, "init returned %s: %s",
           tutti_status_name(st), msg);
    ICHECK(integ_contains(msg, "nranks"), "rank %d (nranks %d): %s: the message does not say "
           "that nranks differ: %s", ctx->rank, nranks, tutti_status_name(st), msg);
    return 0;
}

Test(errors, ranks_disagreeing_on_nranks_all_fail, .timeout = 60)
{
    env_for_errors(0);
    struct integ_opts o = {.nranks = 2, .deadline_s = 50, .make_id = 1};
    integ_run(&o, nranks_mismatch_rank);
}

