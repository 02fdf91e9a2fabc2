/*
 * test_mismatch.c - calls that differ between ranks, on real processes over shared memory and
 * TCP (issue 18, item 1): every operation's data carries its fingerprint (src/exec/fp.h), so the
 * receiver fails the call with TUTTI_ERR_MISMATCH before it uses the data, the abort notice
 * carries the message to every rank, the communicator stays failed (no later call reads
 * leftover data), and `tutti-info --hang` names both calls.
 *
 * Before fingerprints, the first case returned TUTTI_OK on both ranks with 102 and 101 in the
 * all-reduce's output, and the broadcast side of the second returned TUTTI_OK.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC             1000000000LL
#define TUTTI_TIMEOUT_S 3
#define SLACK_S         10
#define N               1000

enum kind {
    BCAST_FROM_SELF_THEN_ALLREDUCE, /* each rank broadcasts from itself, then all-reduce */
    ALLREDUCE_VS_BCAST_RECEIVER,    /* rank 1 broadcasts from rank 0 while rank 0 all-reduces */
    ALLREDUCE_VS_BCAST_ROOT,        /* rank 1 broadcasts from itself while rank 0 all-reduces */
    DTYPE_OF_THE_SAME_SIZE,         /* rank 1 all-reduces float32 where rank 0 has int32 */
    OTHER_OP,                       /* rank 1 all-reduces with MAX where rank 0 has SUM */
    SENDRECV_COUNT,                 /* a grouped exchange, rank 1 with one element more */
    NKINDS
};

static const char *const kind_names[NKINDS] = {"broadcast from self, then all-reduce",
                                               "all-reduce against a broadcast's receiver",
                                               "all-reduce against a broadcast's root",
                                               "a datatype of the same size",
                                               "another op",
                                               "send/recv counts"};

struct mm_case {
    int tcp;
    enum kind kind;
};

/* The call under test on this rank; its status. */
static tutti_status_t mismatched_call(enum kind k, int r, int32_t *in, int32_t *out,
                                      tutti_comm_t *c)
{
    switch (k) {
    case BCAST_FROM_SELF_THEN_ALLREDUCE:
        return tutti_broadcast(in, out, N, TUTTI_INT32, r, c, NULL);
    case ALLREDUCE_VS_BCAST_RECEIVER:
    case ALLREDUCE_VS_BCAST_ROOT:
        if (r == 0) {
            return tutti_allreduce(in, out, N, TUTTI_INT32, TUTTI_SUM, c, NULL);
        }
        return tutti_broadcast(in, out, N, TUTTI_INT32, k == ALLREDUCE_VS_BCAST_ROOT ? 1 : 0, c,
                               NULL);
    case DTYPE_OF_THE_SAME_SIZE:
        return tutti_allreduce(in, out, N, r == 0 ? TUTTI_INT32 : TUTTI_FLOAT32, TUTTI_SUM, c,
                               NULL);
    case OTHER_OP:
        return tutti_allreduce(in, out, N, TUTTI_INT32, r == 0 ? TUTTI_SUM : TUTTI_MAX, c, NULL);
    default: {
        size_t n = r == 0 ? N : N + 1;
        tutti_status_t st = tutti_group_start();
        tutti_status_t s1 = tutti_send(in, n, TUTTI_INT32, 1 - r, c, NULL);
        tutti_status_t s2 = tutti_recv(out, n, TUTTI_INT32, 1 - r, c, NULL);
        st = tutti_group_end();
        return s1 != TUTTI_OK ? s1 : s2 != TUTTI_OK ? s2 : st;
    }
    }
}

/*
 * Rank r runs the mismatched call. It must fail with TUTTI_ERR_MISMATCH and a message naming
 * the calls, in time; only a rank whose call only sent (a broadcast root) may return TUTTI_OK,
 * and then its next call must fail so. Every later call returns the stored error at once.
 */
static int mismatch_rank(const struct integ_ctx *ctx)
{
    const struct mm_case *m = ctx->arg;
    int r = ctx->rank;
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int32_t in[N + 1], out[N + 1];
    for (int i = 0; i <= N; i++) {
        in[i] = 1;
        out[i] = -7;
    }
    int64_t t0 = integ_now_ns();
    tutti_status_t st = mismatched_call(m->kind, r, in, out, c);
    int only_sent =
        m->kind == BCAST_FROM_SELF_THEN_ALLREDUCE || (m->kind == ALLREDUCE_VS_BCAST_ROOT && r == 1);
    ICHECK(st == TUTTI_ERR_MISMATCH || (st == TUTTI_OK && only_sent),
           "%s: rank %d's call returned %s: %s", kind_names[m->kind], r, tutti_status_name(st),
           tutti_last_error(c));
    if (st == TUTTI_OK) { /* it only sent: the next call finds out */
        st = tutti_allreduce(in, out, N, TUTTI_INT32, TUTTI_SUM, c, NULL);
        for (int i = 0; i < N; i++) {
            ICHECK(out[i] == -7 || st != TUTTI_OK, "rank %d: element %d is %d without an error", r,
                   i, out[i]);
        }
        ICHECK(st == TUTTI_ERR_MISMATCH, "%s: rank %d's next call returned %s: %s",
               kind_names[m->kind], r, tutti_status_name(st), tutti_last_error(c));
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    ICHECK(secs < TUTTI_TIMEOUT_S + SLACK_S, "the error took %.1f s", secs);
    const char *msg = tutti_last_error(c);
    ICHECK(integ_contains(msg, "mismatched calls"), "rank %d: %s", r, msg);
    if (m->kind == BCAST_FROM_SELF_THEN_ALLREDUCE) {
        ICHECK(integ_contains(msg, "leftover data of broadcast #1 (1000 x int32, root "),
               "rank %d: %s", r, msg);
        ICHECK(integ_contains(msg, "allreduce #2 (1000 x int32, sum)"), "rank %d: %s", r, msg);
    }
    if (m->kind == DTYPE_OF_THE_SAME_SIZE) {
        ICHECK(integ_contains(msg, "float32") && integ_contains(msg, "int32"), "%s", msg);
    }
    /* The communicator stays failed: no later call reads what is left in the FIFOs. */
    tutti_status_t later = tutti_allreduce(in, out, 1, TUTTI_INT32, TUTTI_SUM, c, NULL);
    ICHECK(later == TUTTI_ERR_MISMATCH, "a later call returned %s", tutti_status_name(later));
    tutti_comm_destroy(c);
    return 0;
}

static struct mm_case cases[2 * NKINDS];

ParameterizedTestParameters(mismatch, fails_every_rank_and_names_both_calls)
{
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < NKINDS; k++) {
            cases[t * NKINDS + k] = (struct mm_case){t, (enum kind)k};
        }
    }
    return cr_make_param_array(struct mm_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct mm_case *m, mismatch, fails_every_rank_and_names_both_calls, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", m->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "3s");
    integ_run_ranks(2, mismatch_rank, m, 0);
}

Test(mismatch, tutti_info_hang_names_both_calls, .timeout = 60)
{
    char dir[] = "/tmp/tutti-mismatch-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp");
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "%s/rank-%%p.log", dir);
    integ_setenv("TUTTI_LOG_FILE", pattern);
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "3s");
    struct mm_case m = {0, BCAST_FROM_SELF_THEN_ALLREDUCE};
    integ_run_ranks(2, mismatch_rank, &m, 0);
    const char *report = integ_hang_report(dir);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert(strstr(report, "mismatched calls: rank ") != NULL &&
                  strstr(report, "'s allreduce#2:1000xint32:sum received leftover data of rank ") !=
                      NULL &&
                  strstr(report, "'s broadcast#1:1000xint32:root=") != NULL,
              "tutti-info --hang does not name both calls:\n%s", report);
    cr_assert(strstr(report, "ERR_MISMATCH") != NULL, "%s", report);
}

/*
 * Issue 36 item 3: the data of a mismatched call must not land before its fingerprint is
 * checked. A broadcast of 1M elements whose root sends int32 where rank 1 expects float32 (the
 * same bytes): over TCP the payload went straight into the receive buffer (433,372 elements
 * overwritten before TUTTI_ERR_MISMATCH), over shared memory's single copy 32,768. Rank 1's
 * buffer, filled with a pattern, must come back whole; the root may return TUTTI_OK (it only
 * sent), and its next call fails.
 */
#define BIG (1 << 20)

static int untouched_rank(const struct integ_ctx *ctx)
{
    int r = ctx->rank;
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    uint32_t *buf = malloc(BIG * sizeof(uint32_t));
    ICHECK(buf != NULL, "malloc");
    for (int i = 0; i < BIG; i++) {
        buf[i] = r == 0 ? (uint32_t)i : 0x5a5a5a5au;
    }
    tutti_status_t st =
        tutti_broadcast(buf, buf, BIG, r == 0 ? TUTTI_INT32 : TUTTI_FLOAT32, 0, c, NULL);
    if (r == 0 && st == TUTTI_OK) {
        int32_t x = 1;
        st = tutti_allreduce(&x, &x, 1, TUTTI_INT32, TUTTI_SUM, c, NULL);
    }
    ICHECK(st == TUTTI_ERR_MISMATCH, "rank %d returned %s: %s", r, tutti_status_name(st),
           tutti_last_error(c));
    if (r == 1) {
        int changed = 0;
        for (int i = 0; i < BIG; i++) {
            changed += buf[i] != 0x5a5a5a5au;
        }
        ICHECK(changed == 0, "%d of %d elements of the receive buffer were written", changed, BIG);
    }
    free(buf);
    tutti_comm_destroy(c);
    return 0;
}

/* 0: shared memory, large frames in one copy; 1: TCP; 2: shared memory through the FIFO only
 * (TUTTI_SHM_CMA=0). Verbs writes only into the receiver's slot ring (no recv_place), from which
 * the engine copies after the check, as from the FIFO. */
ParameterizedTestParameters(mismatch, nothing_lands_before_the_check)
{
    static int way[] = {0, 1, 2};
    return cr_make_param_array(int, way, 3);
}

ParameterizedTest(int *way, mismatch, nothing_lands_before_the_check, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", *way == 1 ? "tcp" : "shm");
    integ_setenv("TUTTI_SHM_CMA", *way == 2 ? "0" : "1");
    integ_setenv("TUTTI_TIMEOUT", "3s");
    integ_run_ranks(2, untouched_rank, NULL, 0);
}

/*
 * Issue 36 item 4: broadcasts with different roots at 4 MB over shared memory ended in
 * TUTTI_ERR_TIMEOUT after TUTTI_TIMEOUT: each rank is a root that only sends, both FIFOs fill,
 * and no step ever reads the other's frames. A waiting rank now looks at the frames that wait
 * for it: one of the same collective with another fingerprint is a mismatch, at once. With
 * TUTTI_TIMEOUT at 60 s, every rank must fail with TUTTI_ERR_MISMATCH well before it (a root
 * whose sends all went, over TCP, in its next call).
 */
static int two_roots_rank(const struct integ_ctx *ctx)
{
    int r = ctx->rank;
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int32_t *buf = calloc(BIG, sizeof(int32_t));
    ICHECK(buf != NULL, "malloc");
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_broadcast(buf, buf, BIG, TUTTI_INT32, r, c, NULL);
    if (st == TUTTI_OK) { /* a root only sends: over TCP the kernel may take it all; the next
                           * call finds the other root's data */
        int32_t x = 1;
        st = tutti_allreduce(&x, &x, 1, TUTTI_INT32, TUTTI_SUM, c, NULL);
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    ICHECK(st == TUTTI_ERR_MISMATCH, "rank %d returned %s after %.1f s: %s", r,
           tutti_status_name(st), secs, tutti_last_error(c));
    ICHECK(secs < 15, "rank %d: the mismatch took %.1f s (TUTTI_TIMEOUT is 60 s)", r, secs);
    ICHECK(integ_contains(tutti_last_error(c), "mismatched calls"), "%s", tutti_last_error(c));
    free(buf);
    tutti_comm_destroy(c);
    return 0;
}

ParameterizedTestParameters(mismatch, different_roots_fail_as_a_mismatch_not_a_timeout)
{
    static int tcp[] = {0, 1};
    return cr_make_param_array(int, tcp, 2);
}

ParameterizedTest(int *tcp, mismatch, different_roots_fail_as_a_mismatch_not_a_timeout,
                  .timeout = 90)
{
    integ_setenv("TUTTI_TRANSPORT", *tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "60s");
    integ_run_ranks(2, two_roots_rank, NULL, 0);
}
