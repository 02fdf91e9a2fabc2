/*
 * test_carried_p2p.c - carried messages (issue 38, src/win/win_box.c): on a communicator whose
 * ranks share a host, a send of at most 4 KiB travels in the sender's control page. Hundreds of
 * groups in a row at 2, 3 and 4 ranks, four messages per pair and group (more than the two
 * boxes hold) of carried and ordinary sizes mixed, and blocking sends and receives outside
 * groups, deliver every byte in order, also in a group over two communicators whose receives
 * each wait for the other communicator's send; a send and a receive whose sizes differ fail both
 * ranks with TUTTI_ERR_MISMATCH, also when one size is carried and the other is not (a message that
 * never comes: test_carried.c's timeouts).
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS   200
#define PER_PAIR 4     /* messages each way between two ranks in a group */
#define BIG      16384 /* elements of an ordinary message */

/* Elements of message j from rank s to rank d in round it: mostly carried (1 to 1024 int32,
 * up to 4 KiB), now and then just past that, or large. */
static size_t count_of(int it, int s, int d, int j)
{
    uint32_t h = (uint32_t)it * 2654435761u ^ (uint32_t)(s * 31 + d) * 40503u ^ (uint32_t)j * 97u;
    switch (h % 8) {
    case 0:
        return 1025 + h / 8 % 64; /* just past the box */
    case 1:
        return h / 8 % 3 == 0 ? BIG : 1024;
    case 2:
        return 1 + h / 8 % 6; /* at most 24 B: in the stamp's cache line */
    default:
        return 1 + h / 8 % 1024;
    }
}

static int32_t val(int it, int s, int j, size_t i)
{
    return (int32_t)((uint32_t)it * 7919u ^ (uint32_t)s * 104729u ^ (uint32_t)j * 1299709u ^
                     (uint32_t)i);
}

/* One group: PER_PAIR messages to and from every other rank. */
static int group_round(tutti_comm_t *c, int it, int n, int me, int32_t **out, int32_t **in)
{
    ICHECK_OK(tutti_group_start());
    for (int p = 0; p < n; p++) {
        for (int j = 0; j < PER_PAIR && p != me; j++) {
            int32_t *o = out[p * PER_PAIR + j];
            size_t k = count_of(it, me, p, j);
            for (size_t i = 0; i < k; i++) {
                o[i] = val(it, me, j, i);
            }
            ICHECK_OK(tutti_send(o, k, TUTTI_INT32, p, c, NULL));
            ICHECK_OK(
                tutti_recv(in[p * PER_PAIR + j], count_of(it, p, me, j), TUTTI_INT32, p, c, NULL));
        }
    }
    ICHECK_OK(tutti_group_end());
    for (int p = 0; p < n; p++) {
        for (int j = 0; j < PER_PAIR && p != me; j++) {
            size_t k = count_of(it, p, me, j);
            for (size_t i = 0; i < k; i++) {
                ICHECK(in[p * PER_PAIR + j][i] == val(it, p, j, i),
                       "round %d: message %d from rank %d (%zu elements): [%zu] = %d, not %d", it,
                       j, p, k, i, in[p * PER_PAIR + j][i], val(it, p, j, i));
            }
        }
    }
    return 0;
}

/* Blocking calls: ranks 2q and 2q + 1 exchange two carried messages each way, the even one
 * sending first. */
static int blocking_round(tutti_comm_t *c, int it, int n, int me)
{
    int peer = me ^ 1;
    if (peer >= n) {
        return 0;
    }
    int32_t o[2][64], got[2][64];
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < 64; i++) {
            o[j][i] = val(it, me, j, (size_t)i);
        }
    }
    for (int step = 0; step < 2; step++) {
        if ((step == 0) == (me % 2 == 0)) {
            ICHECK_OK(tutti_send(o[0], 64, TUTTI_INT32, peer, c, NULL));
            ICHECK_OK(tutti_send(o[1], 17, TUTTI_INT32, peer, c, NULL));
        } else {
            ICHECK_OK(tutti_recv(got[0], 64, TUTTI_INT32, peer, c, NULL));
            ICHECK_OK(tutti_recv(got[1], 17, TUTTI_INT32, peer, c, NULL));
        }
    }
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < (j == 0 ? 64 : 17); i++) {
            ICHECK(got[j][i] == val(it, peer, j, (size_t)i), "round %d: blocking message %d [%d]",
                   it, j, i);
        }
    }
    return 0;
}

static int exact_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int n = ctx->nranks, me = ctx->rank, slots = n * PER_PAIR;
    int32_t *out[4 * PER_PAIR], *in[4 * PER_PAIR];
    for (int i = 0; i < slots; i++) {
        out[i] = calloc(BIG, sizeof(int32_t));
        in[i] = calloc(BIG, sizeof(int32_t));
        ICHECK(out[i] != NULL && in[i] != NULL, "no memory");
    }
    for (int it = 0; it < ROUNDS; it++) {
        if (group_round(c, it, n, me, out, in) != 0 ||
            (it % 10 == 0 && blocking_round(c, it, n, me) != 0)) {
            return 1;
        }
        if (it % 25 == 0) { /* a collective between, carried too */
            ICHECK_OK(tutti_barrier(c, NULL));
        }
    }
    for (int i = 0; i < slots; i++) {
        free(out[i]);
        free(in[i]);
    }
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

ParameterizedTestParameters(carried_p2p, messages_arrive_exact_and_in_order)
{
    static int rank_counts[] = {2, 3, 4};
    return cr_make_param_array(int, rank_counts, sizeof(rank_counts) / sizeof(rank_counts[0]));
}

ParameterizedTest(int *n, carried_p2p, messages_arrive_exact_and_in_order, .timeout = 180)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_run_ranks(*n, exact_rank, NULL, 0);
}

/* One group over two communicators: rank 0 receives on the first and sends on the second, rank
 * 1 receives on the second and sends on the first. Neither receive may hold up the other
 * communicator's send. */
static int two_comms_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *a = NULL, *b = NULL;
    if (integ_comm_init(ctx, NULL, &a) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_split(a, 0, ctx->rank, &b));
    int me = ctx->rank;
    for (int it = 0; it < 100; it++) {
        int32_t o[8], got[8] = {0};
        for (int i = 0; i < 8; i++) {
            o[i] = val(it, me, 0, (size_t)i);
        }
        ICHECK_OK(tutti_group_start());
        ICHECK_OK(tutti_recv(got, 8, TUTTI_INT32, 1 - me, me == 0 ? a : b, NULL));
        ICHECK_OK(tutti_send(o, 8, TUTTI_INT32, 1 - me, me == 0 ? b : a, NULL));
        ICHECK_OK(tutti_group_end());
        for (int i = 0; i < 8; i++) {
            ICHECK(got[i] == val(it, 1 - me, 0, (size_t)i), "round %d: [%d] = %d", it, i, got[i]);
        }
    }
    ICHECK_OK(tutti_comm_destroy(b));
    ICHECK_OK(tutti_comm_destroy(a));
    return 0;
}

Test(carried_p2p, a_group_over_two_communicators_moves_both, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "20s");
    integ_run_ranks(2, two_comms_rank, NULL, 0);
}

/* Counts of a grouped exchange that differ: rank 0's and rank 1's. */
static const size_t counts[][2] = {
    {4, 8},       /* both carried */
    {1000, 1100}, /* 4000 B carried against 4400 B ordinary */
    {1100, 1000}, /* the other way round */
};

static int mismatch_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    const size_t *k = counts[*(const int *)ctx->arg];
    int me = ctx->rank;
    static int32_t buf[2][1100];
    ICHECK_OK(tutti_barrier(c, NULL));
    int64_t t0 = integ_now_ns();
    ICHECK_OK(tutti_group_start());
    tutti_status_t s1 = tutti_send(buf[0], k[me], TUTTI_INT32, 1 - me, c, NULL);
    tutti_status_t s2 = tutti_recv(buf[1], k[me], TUTTI_INT32, 1 - me, c, NULL);
    tutti_status_t st = tutti_group_end();
    double s = (double)(integ_now_ns() - t0) / 1e9;
    const char *m = tutti_last_error(NULL);
    ICHECK(s1 == TUTTI_OK && s2 == TUTTI_OK, "recording the calls: %s, %s", tutti_status_name(s1),
           tutti_status_name(s2));
    /* each rank expects its own count where the other sends its own */
    ICHECK(st == TUTTI_ERR_MISMATCH && integ_contains(m, "mismatched calls"),
           "rank %d: %zu against %zu elements returned %s (\"%s\")", me, k[me], k[1 - me],
           tutti_status_name(st), m);
    ICHECK(s < 5.0, "rank %d: the group's end took %.1f s (TUTTI_TIMEOUT 30 s)", me, s);
    tutti_status_t later = tutti_barrier(c, NULL);
    ICHECK(later == TUTTI_ERR_MISMATCH, "a later call returned %s", tutti_status_name(later));
    (void)tutti_comm_destroy(c);
    return 0;
}

ParameterizedTestParameters(carried_p2p, differing_sizes_fail_both_ranks)
{
    static int cases[] = {0, 1, 2};
    return cr_make_param_array(int, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(int *k, carried_p2p, differing_sizes_fail_both_ranks, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_run_ranks(2, mismatch_rank, k, 0);
}
