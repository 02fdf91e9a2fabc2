/*
 * test_api.c - the API around the collectives, on forked ranks: communicator split (colors, keys,
 * NOCOLOR, collectives on the children), groups (send/recv pairs, several operations, self-sends,
 * one thread driving two communicators of one job), the asynchronous forms (test, wait, free,
 * many in flight, order with blocking calls, freeing before completion), asynchronous errors,
 * rank/size queries, last-error messages and tutti_comm_init_rank_params.
 *
 * Most tests run over shared memory; those whose code paths differ per transport (split, groups,
 * async) also run over TCP.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000000LL

struct transport {
    int tcp;
};

static struct transport transports[] = {{0}, {1}};

/* The parameters of a test that runs over shared memory and over TCP. */
#define OVER_BOTH_TRANSPORTS(suite, name)                                                          \
    ParameterizedTestParameters(suite, name)                                                       \
    {                                                                                              \
        return cr_make_param_array(struct transport, transports, 2);                               \
    }

/* A test of nranks ranks running fn, once over shared memory and once over TCP. */
#define RANKS_OVER_BOTH_TRANSPORTS(suite, name, nranks, fn)                                        \
    OVER_BOTH_TRANSPORTS(suite, name)                                                              \
    ParameterizedTest(struct transport *t, suite, name, .timeout = 60)                             \
    {                                                                                              \
        run_ranks(t->tcp, nranks, fn, NULL, 0);                                                    \
    }

static void use_transport(int tcp, const char *timeout)
{
    integ_setenv("TUTTI_TRANSPORT", tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", timeout);
}

/* Run nranks ranks of fn with a fresh id over the transport. */
static void run_ranks(int tcp, int nranks, integ_rank_fn fn, void *arg, size_t shared)
{
    use_transport(tcp, "30s");
    integ_run_ranks(nranks, fn, arg, shared);
}

/* Poll a request until it completes or `ns` passed; returns its status, or 1 on expiry. */
static int test_until_done(tutti_request_t *req, int64_t ns, tutti_status_t *st_p)
{
    int64_t end = integ_now_ns() + ns;
    for (;;) {
        int done = 0;
        tutti_status_t st = tutti_test(req, &done);
        if (done) {
            *st_p = st;
            return 0;
        }
        if (integ_now_ns() > end) {
            return 1;
        }
        struct timespec ts = {0, 100 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* ---------------------------------------------------------------- split */

/*
 * 6 ranks, color = rank % 3 except rank 4 (NOCOLOR), key = -rank except that ranks 2 and 5 tie:
 * colors 0 {0, 3}: keys 0, -3 -> order 3, 0;  1 {1}: alone (4 is NOCOLOR);
 * 2 {2, 5}: keys equal -> parent order 2, 5.
 */
static int split_color(int r)
{
    return r == 4 ? TUTTI_SPLIT_NOCOLOR : r % 3;
}

static int split_key(int r)
{
    return (r == 2 || r == 5) ? 7 : -r;
}

static int split_rank(const struct integ_ctx *ctx)
{
    static const int members[3][2] = {{3, 0}, {1, -1}, {2, 5}};
    static const int sizes[3] = {2, 1, 2};
    tutti_comm_t *comm = NULL, *child = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int color = split_color(ctx->rank);
    ICHECK_OK(tutti_comm_split(comm, color, split_key(ctx->rank), &child));
    if (color == TUTTI_SPLIT_NOCOLOR) {
        ICHECK(child == NULL, "NOCOLOR must give a NULL communicator");
    } else {
        int crank = -1, csize = -1;
        ICHECK(child != NULL, "color %d gave a NULL communicator", color);
        ICHECK_OK(tutti_comm_rank(child, &crank));
        ICHECK_OK(tutti_comm_size(child, &csize));
        ICHECK(csize == sizes[color], "color %d: child size %d, expected %d", color, csize,
               sizes[color]);
        ICHECK(members[color][crank] == ctx->rank,
               "color %d: child rank %d, expected parent rank "
               "%d there",
               color, crank, members[color][crank]);
        /* The child's members, in child-rank order, as the child's all-gather sees them. */
        int32_t me = ctx->rank, all[2] = {-1, -1};
        ICHECK_OK(tutti_allgather(&me, all, 1, TUTTI_INT32, child, NULL));
        for (int i = 0; i < csize; i++) {
            ICHECK(all[i] == members[color][i],
                   "color %d: child rank %d is parent rank %d, "
                   "expected %d",
                   color, i, all[i], members[color][i]);
        }
        int64_t sum = 0, mine = 1000 + ctx->rank;
        ICHECK_OK(tutti_allreduce(&mine, &sum, 1, TUTTI_INT64, TUTTI_SUM, child, NULL));
        int64_t want = 0;
        for (int i = 0; i < csize; i++) {
            want += 1000 + members[color][i];
        }
        ICHECK(sum == want, "allreduce on the child gave %lld, expected %lld", (long long)sum,
               (long long)want);
    }
    /* The parent still works, and the children live on independently of it. */
    int64_t one = 1, n = 0;
    ICHECK_OK(tutti_allreduce(&one, &n, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK(n == ctx->nranks, "parent allreduce after the split gave %lld", (long long)n);
    /* A second split of the same parent: everyone in one color, reversed by key. */
    tutti_comm_t *rev = NULL;
    ICHECK_OK(tutti_comm_split(comm, 0, ctx->nranks - ctx->rank, &rev));
    int rrank = -1;
    ICHECK_OK(tutti_comm_rank(rev, &rrank));
    ICHECK(rrank == ctx->nranks - 1 - ctx->rank, "reversed split: rank %d", rrank);
    ICHECK_OK(tutti_barrier(rev, NULL));
    ICHECK_OK(tutti_comm_destroy(rev));
    if (child != NULL) {
        ICHECK_OK(tutti_barrier(child, NULL));
        ICHECK_OK(tutti_comm_destroy(child));
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

RANKS_OVER_BOTH_TRANSPORTS(split, colors_keys_nocolor_and_collectives, 6, split_rank)

/* ---------------------------------------------------------------- groups */

/* Value of element i that rank `from` sends to rank `to` in message m. */
static int32_t p2p_val(int from, int to, int m, size_t i)
{
    return (int32_t)(from * 1000003 + to * 7919 + m * 104729 + (int32_t)i);
}

/*
 * In one group, every rank sends two messages of different sizes to every rank, itself included,
 * and receives them all; then a group with collectives and point-to-point mixed.
 */
static int group_rank(const struct integ_ctx *ctx)
{
    static const size_t sizes[2] = {5, 70001}; /* the second spans many slots */
    int n = ctx->nranks, r = ctx->rank;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int32_t *sendb[INTEG_MAX_RANKS][2], *recvb[INTEG_MAX_RANKS][2];
    ICHECK_OK(tutti_group_start());
    for (int p = 0; p < n; p++) {
        for (int m = 0; m < 2; m++) {
            sendb[p][m] = malloc(sizes[m] * 4);
            recvb[p][m] = calloc(sizes[m], 4);
            ICHECK(sendb[p][m] != NULL && recvb[p][m] != NULL, "out of memory");
            for (size_t i = 0; i < sizes[m]; i++) {
                sendb[p][m][i] = p2p_val(r, p, m, i);
            }
            /* Receives first for some peers: order inside a group must not matter. */
            if ((p + r) & 1) {
                ICHECK_OK(tutti_recv(recvb[p][m], sizes[m], TUTTI_INT32, p, comm, NULL));
                ICHECK_OK(tutti_send(sendb[p][m], sizes[m], TUTTI_INT32, p, comm, NULL));
            } else {
                ICHECK_OK(tutti_send(sendb[p][m], sizes[m], TUTTI_INT32, p, comm, NULL));
                ICHECK_OK(tutti_recv(recvb[p][m], sizes[m], TUTTI_INT32, p, comm, NULL));
            }
        }
    }
    ICHECK_OK(tutti_group_end());
    for (int p = 0; p < n; p++) {
        for (int m = 0; m < 2; m++) {
            for (size_t i = 0; i < sizes[m]; i++) {
                ICHECK(recvb[p][m][i] == p2p_val(p, r, m, i),
                       "group p2p: message %d from rank %d, element %zu: got %d, expected %d", m, p,
                       i, recvb[p][m][i], p2p_val(p, r, m, i));
            }
            free(sendb[p][m]);
            free(recvb[p][m]);
        }
    }
    /* Nested groups, collectives and point-to-point together: only the outer end runs them. */
    int64_t one = 1, sum = 0, bval = r == 1 % n ? 4242 : -1;
    int32_t tok = 100 + r, got = -1;
    ICHECK_OK(tutti_group_start());
    ICHECK_OK(tutti_allreduce(&one, &sum, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK_OK(tutti_group_start());
    ICHECK_OK(tutti_broadcast(&bval, &bval, 1, TUTTI_INT64, 1 % n, comm, NULL));
    ICHECK_OK(tutti_send(&tok, 1, TUTTI_INT32, (r + 1) % n, comm, NULL));
    ICHECK_OK(tutti_recv(&got, 1, TUTTI_INT32, (r + n - 1) % n, comm, NULL));
    ICHECK_OK(tutti_group_end());
    ICHECK(sum == 0 && got == -1, "an inner tutti_group_end ran the group early");
    ICHECK_OK(tutti_group_end());
    ICHECK(sum == n, "allreduce in a group gave %lld", (long long)sum);
    ICHECK(bval == 4242, "broadcast in a group gave %lld", (long long)bval);
    ICHECK(got == 100 + (r + n - 1) % n, "ring token in a group: got %d", got);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

OVER_BOTH_TRANSPORTS(group, sendrecv_pairs_self_and_collectives)

ParameterizedTest(struct transport *t, group, sendrecv_pairs_self_and_collectives, .timeout = 60)
{
    run_ranks(t->tcp, 4, group_rank, NULL, 0);
    run_ranks(t->tcp, 1, group_rank, NULL, 0);
}

/*
 * A plain send pairs with a grouped receive, and a grouped send with a plain receive, on 2
 * channels: both ends must split each message over the channels alike (odd counts that do not
 * split evenly in elements and in bytes, one under a chunk, one over several).
 */
static int mixed_p2p_rank(const struct integ_ctx *ctx)
{
    static const size_t sizes[3] = {3, 70001, 100003};
    int r = ctx->rank, peer = 1 - ctx->rank;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    for (int m = 0; m < 3; m++) {
        size_t n = sizes[m];
        int32_t *buf = malloc(n * 4);
        ICHECK(buf != NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            buf[i] = r == 0 ? p2p_val(0, 1, m, i) : -1;
        }
        int grouped = (r == 1) == (m != 1); /* the receiver groups messages 0 and 2 */
        if (grouped) {
            ICHECK_OK(tutti_group_start());
        }
        if (r == 0) {
            ICHECK_OK(tutti_send(buf, n, TUTTI_INT32, peer, comm, NULL));
        } else {
            ICHECK_OK(tutti_recv(buf, n, TUTTI_INT32, peer, comm, NULL));
        }
        if (grouped) {
            ICHECK_OK(tutti_group_end());
        }
        for (size_t i = 0; r == 1 && i < n; i++) {
            ICHECK(buf[i] == p2p_val(0, 1, m, i), "message %d of %zu elements, element %zu: got %d",
                   m, n, i, buf[i]);
        }
        free(buf);
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

OVER_BOTH_TRANSPORTS(group, a_plain_send_pairs_with_a_grouped_receive)

ParameterizedTest(struct transport *t, group, a_plain_send_pairs_with_a_grouped_receive,
                  .timeout = 60)
{
    integ_setenv("TUTTI_NCHANNELS", "2");
    run_ranks(t->tcp, 2, mixed_p2p_rank, NULL, 0);
}

/*
 * One thread drives two communicators of one job inside a group, with a dependency across them:
 * rank 0 sends on A and receives on B, rank 1 sends on B and receives on A, each message larger
 * than all the FIFOs of its connection. Running A to completion before starting B (or the
 * reverse) would leave both ranks blocked on full FIFOs: the group must run both together.
 */
#define BIG_MSG (8u << 20)

struct two_ids {
    tutti_unique_id_t b; /* a second id, for a second comm of the same job */
};

/* Run nranks ranks of fn with two fresh ids: the harness's, and ids.b (fn's arg). */
static void run_two_ids(int tcp, int nranks, integ_rank_fn fn)
{
    static struct two_ids ids;
    use_transport(tcp, "30s"); /* before the first tutti call of this process */
    cr_assert_eq(tutti_get_unique_id(&ids.b), TUTTI_OK, "%s", tutti_last_error(NULL));
    integ_run_ranks(nranks, fn, &ids, 0);
}

static int two_comms_rank(const struct integ_ctx *ctx)
{
    const struct two_ids *ids = ctx->arg;
    tutti_comm_t *a = NULL, *b = NULL;
    int r = ctx->rank, peer = 1 - r;
    if (integ_comm_init(ctx, NULL, &a) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_init_rank(&b, 2, &ids->b, r));
    uint8_t *out = malloc(BIG_MSG), *in = malloc(BIG_MSG);
    ICHECK(out != NULL && in != NULL, "out of memory");
    memset(out, 0x10 + r, BIG_MSG);
    memset(in, 0, BIG_MSG);
    int64_t x = r + 1, sa = 0, sb = 0;
    ICHECK_OK(tutti_group_start());
    if (r == 0) {
        ICHECK_OK(tutti_send(out, BIG_MSG, TUTTI_UINT8, peer, a, NULL));
        ICHECK_OK(tutti_recv(in, BIG_MSG, TUTTI_UINT8, peer, b, NULL));
    } else {
        ICHECK_OK(tutti_send(out, BIG_MSG, TUTTI_UINT8, peer, b, NULL));
        ICHECK_OK(tutti_recv(in, BIG_MSG, TUTTI_UINT8, peer, a, NULL));
    }
    ICHECK_OK(tutti_allreduce(&x, &sa, 1, TUTTI_INT64, TUTTI_SUM, a, NULL));
    ICHECK_OK(tutti_allreduce(&x, &sb, 1, TUTTI_INT64, TUTTI_MAX, b, NULL));
    ICHECK_OK(tutti_group_end());
    for (size_t i = 0; i < BIG_MSG; i++) {
        ICHECK(in[i] == 0x10 + peer, "byte %zu from rank %d: 0x%02x", i, peer, in[i]);
    }
    ICHECK(sa == 3 && sb == 2, "allreduces in the group gave %lld and %lld", (long long)sa,
           (long long)sb);
    free(out);
    free(in);
    ICHECK_OK(tutti_comm_destroy(b));
    ICHECK_OK(tutti_comm_destroy(a));
    return 0;
}

OVER_BOTH_TRANSPORTS(group, one_thread_drives_two_comms_of_one_job)

ParameterizedTest(struct transport *t, group, one_thread_drives_two_comms_of_one_job, .timeout = 60)
{
    run_two_ids(t->tcp, 2, two_comms_rank);
}

/* ---------------------------------------------------------------- asynchronous forms */

#define NASYNC 48

/* Every asynchronous collective once, completed with test (polling) or wait. */
static int async_each_rank(const struct integ_ctx *ctx)
{
    int n = ctx->nranks, r = ctx->rank;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    enum { CNT = 3001 };
    int64_t *a = malloc(CNT * 8 * (size_t)n), *b = malloc(CNT * 8 * (size_t)n);
    ICHECK(a != NULL && b != NULL, "out of memory");
    tutti_request_t *req = NULL;
    tutti_status_t st;

    for (size_t i = 0; i < CNT; i++) {
        a[i] = (int64_t)i * (r + 1);
    }
    ICHECK_OK(tutti_iallreduce(a, b, CNT, TUTTI_INT64, TUTTI_SUM, comm, &req));
    ICHECK(test_until_done(req, 20 * SEC, &st) == 0, "iallreduce did not complete in 20 s");
    ICHECK_OK(st);
    ICHECK_OK(tutti_request_free(req));
    for (size_t i = 0; i < CNT; i++) {
        ICHECK(b[i] == (int64_t)i * n * (n + 1) / 2, "iallreduce element %zu: %lld", i,
               (long long)b[i]);
    }

    for (size_t i = 0; i < CNT; i++) {
        a[i] = r == n - 1 ? -(int64_t)i : 0;
    }
    ICHECK_OK(tutti_ibroadcast(a, a, CNT, TUTTI_INT64, n - 1, comm, &req));
    ICHECK_OKC(tutti_wait(req), comm);
    ICHECK_OK(tutti_request_free(req));
    for (size_t i = 0; i < CNT; i++) {
        ICHECK(a[i] == -(int64_t)i, "ibroadcast element %zu: %lld", i, (long long)a[i]);
    }

    for (size_t i = 0; i < CNT; i++) {
        a[i] = r;
    }
    memset(b, 0, CNT * 8);
    ICHECK_OK(tutti_ireduce(a, b, CNT, TUTTI_INT64, TUTTI_MAX, 0, comm, &req));
    ICHECK_OKC(tutti_wait(req), comm);
    /* Waiting twice, and testing after the wait, give the same result. */
    ICHECK_OKC(tutti_wait(req), comm);
    int done = 0;
    ICHECK_OK(tutti_test(req, &done));
    ICHECK(done == 1, "tutti_test after tutti_wait says not done");
    ICHECK_OK(tutti_request_free(req));
    ICHECK(r != 0 || (b[0] == n - 1 && b[CNT - 1] == n - 1), "ireduce gave %lld", (long long)b[0]);

    for (size_t i = 0; i < CNT * (size_t)n; i++) {
        a[i] = (int64_t)i;
    }
    ICHECK_OK(tutti_ireduce_scatter(a, b, CNT, TUTTI_INT64, TUTTI_SUM, comm, &req));
    ICHECK_OKC(tutti_wait(req), comm);
    ICHECK_OK(tutti_request_free(req));
    for (size_t i = 0; i < CNT; i++) {
        ICHECK(b[i] == (int64_t)(r * CNT + i) * n, "ireduce_scatter element %zu: %lld", i,
               (long long)b[i]);
    }

    for (size_t i = 0; i < CNT; i++) {
        a[i] = r * 100000 + (int64_t)i;
    }
    ICHECK_OK(tutti_iallgather(a, b, CNT, TUTTI_INT64, comm, &req));
    ICHECK_OKC(tutti_wait(req), comm);
    ICHECK_OK(tutti_request_free(req));
    for (size_t i = 0; i < CNT * (size_t)n; i++) {
        ICHECK(b[i] == (int64_t)(i / CNT) * 100000 + (int64_t)(i % CNT),
               "iallgather element %zu: %lld", i, (long long)b[i]);
    }

    for (size_t i = 0; i < CNT * (size_t)n; i++) {
        a[i] = r * 1000000 + (int64_t)i; /* block j goes to rank j */
    }
    ICHECK_OK(tutti_ialltoall(a, b, CNT, TUTTI_INT64, comm, &req));
    ICHECK_OKC(tutti_wait(req), comm);
    ICHECK_OK(tutti_request_free(req));
    for (size_t i = 0; i < CNT * (size_t)n; i++) {
        int64_t from = (int64_t)(i / CNT), k = (int64_t)(i % CNT);
        ICHECK(b[i] == from * 1000000 + r * CNT + k, "ialltoall element %zu: %lld", i,
               (long long)b[i]);
    }

    /* isend/irecv around a ring. Requests of a comm run in issue order, so the (small) send is
     * posted first: a receive first on every rank would wait for sends queued behind it. */
    tutti_request_t *rs = NULL, *rr = NULL;
    int32_t tok = 7 * r, got = -1;
    if (n > 1) {
        ICHECK_OK(tutti_isend(&tok, 1, TUTTI_INT32, (r + 1) % n, comm, &rs));
        ICHECK_OK(tutti_irecv(&got, 1, TUTTI_INT32, (r + n - 1) % n, comm, &rr));
        ICHECK_OKC(tutti_wait(rr), comm);
        ICHECK_OKC(tutti_wait(rs), comm);
        ICHECK_OK(tutti_request_free(rr));
        ICHECK_OK(tutti_request_free(rs));
        ICHECK(got == 7 * ((r + n - 1) % n), "irecv got %d", got);
    }

    ICHECK_OK(tutti_ibarrier(comm, &req));
    ICHECK_OKC(tutti_wait(req), comm);
    ICHECK_OK(tutti_request_free(req));
    free(a);
    free(b);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

RANKS_OVER_BOTH_TRANSPORTS(async, every_collective_test_wait_free, 3, async_each_rank)

/*
 * Many requests in flight, completed in reverse order; a chain of in-place all-reduces on one
 * buffer, whose result shows the order they ran in; blocking calls queue behind asynchronous
 * ones; a request freed before completion still runs (a blocking call after it proves it).
 */
static int async_order_rank(const struct integ_ctx *ctx)
{
    int n = ctx->nranks, r = ctx->rank;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    enum { CNT = 20000 };
    static int64_t bufs[NASYNC][CNT];
    tutti_request_t *reqs[NASYNC];
    for (int k = 0; k < NASYNC; k++) {
        for (size_t i = 0; i < CNT; i++) {
            bufs[k][i] = k * (r + 1) + (int64_t)i;
        }
        ICHECK_OK(tutti_iallreduce(bufs[k], bufs[k], CNT, TUTTI_INT64, TUTTI_SUM, comm, &reqs[k]));
    }
    for (int k = NASYNC - 1; k >= 0; k--) {
        ICHECK_OKC(tutti_wait(reqs[k]), comm);
        ICHECK_OK(tutti_request_free(reqs[k]));
    }
    for (int k = 0; k < NASYNC; k++) {
        for (size_t i = 0; i < CNT; i++) {
            int64_t want = (int64_t)k * n * (n + 1) / 2 + (int64_t)i * n;
            ICHECK(bufs[k][i] == want, "request %d element %zu: %lld, expected %lld", k, i,
                   (long long)bufs[k][i], (long long)want);
        }
    }
    /* Order: x = r + 1; async x = x + (sum) twice, then blocking x = max, then async x = sum. */
    int64_t x = r + 1;
    tutti_request_t *q1 = NULL, *q2 = NULL, *q3 = NULL;
    ICHECK_OK(tutti_iallreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, &q1));
    ICHECK_OK(tutti_iallreduce(&x, &x, 1, TUTTI_INT64, TUTTI_PROD, comm, &q2));
    ICHECK_OK(tutti_request_free(q2)); /* before completion: it must still run, in its turn */
    ICHECK_OK(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_MAX, comm, NULL));
    int64_t s = (int64_t)n * (n + 1) / 2, p = 1;
    for (int i = 0; i < n; i++) {
        p *= s;
    }
    ICHECK(x == p, "sum, prod then max in issue order should give %lld, got %lld", (long long)p,
           (long long)x);
    ICHECK_OKC(tutti_wait(q1), comm);
    ICHECK_OK(tutti_request_free(q1));
    ICHECK_OK(tutti_iallreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, &q3));
    ICHECK_OK(tutti_request_free(q3));
    ICHECK_OK(tutti_barrier(comm, NULL)); /* runs after q3, so q3 is done when it returns */
    ICHECK(x == p * n, "freed request: x is %lld, expected %lld", (long long)x, (long long)(p * n));
    tutti_status_t ast = TUTTI_ERR_INTERNAL;
    ICHECK_OK(tutti_comm_get_async_error(comm, &ast));
    ICHECK(ast == TUTTI_OK, "healthy comm reports async error %s", tutti_status_name(ast));
    /* Destroy with requests still queued: they finish first. */
    for (int k = 0; k < 8; k++) {
        ICHECK_OK(tutti_iallreduce(bufs[k], bufs[k], CNT, TUTTI_INT64, TUTTI_MIN, comm, &reqs[k]));
        ICHECK_OK(tutti_request_free(reqs[k]));
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

RANKS_OVER_BOTH_TRANSPORTS(async, many_in_flight_in_issue_order, 4, async_order_rank)

/* Several threads may wait on one request. */
static void *waiter(void *arg)
{
    return (void *)(intptr_t)tutti_wait(arg);
}

static int async_threads_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    static int32_t buf[1 << 20];
    for (size_t i = 0; i < 1 << 20; i++) {
        buf[i] = 1;
    }
    tutti_request_t *req = NULL;
    ICHECK_OK(tutti_iallreduce(buf, buf, 1 << 20, TUTTI_INT32, TUTTI_SUM, comm, &req));
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        ICHECK(pthread_create(&th[i], NULL, waiter, req) == 0, "pthread_create");
    }
    for (int i = 0; i < 3; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        ICHECK((tutti_status_t)(intptr_t)ret == TUTTI_OK, "thread %d: wait gave %s", i,
               tutti_status_name((tutti_status_t)(intptr_t)ret));
    }
    ICHECK_OK(tutti_request_free(req));
    ICHECK(buf[0] == ctx->nranks && buf[(1 << 20) - 1] == ctx->nranks, "result %d", buf[0]);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

Test(async, several_threads_wait_on_one_request, .timeout = 60)
{
    run_ranks(0, 3, async_threads_rank, NULL, 0);
}

/* ---------------------------------------------------------------- queries and params */

static int queries_rank(const struct integ_ctx *ctx)
{
    tutti_comm_params_t p = {
        .field_mask = TUTTI_COMM_PARAM_TIMEOUT | TUTTI_COMM_PARAM_NCHANNELS,
        .timeout_ms = 20000,
        .nchannels = 3,
    };
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, &p, &comm) != 0) {
        return 1;
    }
    int rank = -1, size = -1;
    ICHECK_OK(tutti_comm_rank(comm, &rank));
    ICHECK_OK(tutti_comm_size(comm, &size));
    ICHECK(rank == ctx->rank && size == ctx->nranks, "rank/size %d/%d", rank, size);
    /* Three channels split every message three ways: results must not change. */
    enum { CNT = 300007 };
    static int32_t in[CNT], out[CNT];
    for (size_t i = 0; i < CNT; i++) {
        in[i] = (int32_t)i ^ rank;
    }
    ICHECK_OK(tutti_allreduce(in, out, CNT, TUTTI_INT32, TUTTI_MAX, comm, NULL));
    for (size_t i = 0; i < CNT; i++) {
        int32_t want = 0;
        for (int q = 0; q < size; q++) {
            want = ((int32_t)i ^ q) > want ? ((int32_t)i ^ q) : want;
        }
        ICHECK(out[i] == want, "3 channels: element %zu: %d, expected %d", i, out[i], want);
    }
    ICHECK_OK(tutti_broadcast(in, out, CNT, TUTTI_INT32, size - 1, comm, NULL));
    for (size_t i = 0; i < CNT; i++) {
        ICHECK(out[i] == ((int32_t)i ^ (size - 1)), "3 channels: broadcast element %zu", i);
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

RANKS_OVER_BOTH_TRANSPORTS(comm, params_rank_size_and_channels, 3, queries_rank)

/*
 * params->timeout_ms overrides TUTTI_TIMEOUT (30 s here): rank 1 never joins the all-reduce, so
 * rank 0 must fail with TIMEOUT after about 1.5 s, naming rank 1.
 */
static int params_timeout_rank(const struct integ_ctx *ctx)
{
    _Atomic int *done = ctx->shared;
    tutti_comm_params_t p = {.field_mask = TUTTI_COMM_PARAM_TIMEOUT, .timeout_ms = 1500};
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, &p, &comm) != 0) {
        return 1;
    }
    if (ctx->rank == 1) {
        int64_t end = integ_now_ns() + 40 * SEC;
        while (!atomic_load(done) && integ_now_ns() < end) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        tutti_comm_abort(comm);
        return 0;
    }
    int64_t x = 1, t0 = integ_now_ns();
    tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(comm);
    atomic_store(done, 1);
    ICHECK(st == TUTTI_ERR_TIMEOUT, "allreduce without rank 1 returned %s: %s",
           tutti_status_name(st), msg);
    ICHECK(secs >= 1.4 && secs < 10, "timed out after %.2f s with timeout_ms 1500", secs);
    ICHECK(integ_contains(msg, "rank 1 "), "the timeout message does not name rank 1: %s", msg);
    tutti_status_t ast = TUTTI_OK;
    ICHECK_OK(tutti_comm_get_async_error(comm, &ast));
    ICHECK(ast == TUTTI_ERR_TIMEOUT, "get_async_error after the timeout: %s",
           tutti_status_name(ast));
    ICHECK(tutti_comm_destroy(comm) == TUTTI_ERR_TIMEOUT, "destroy of a failed comm must "
                                                          "return its error");
    return 0;
}

Test(comm, params_timeout_overrides_env, .timeout = 60)
{
    use_transport(0, "30s");
    integ_run_ranks(2, params_timeout_rank, NULL, sizeof(_Atomic int));
}

/*
 * An asynchronous operation nobody waits for fails (rank 1 exits in the middle of it): the
 * failure shows through tutti_comm_get_async_error.
 */
static int async_error_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    if (ctx->rank == 1) {
        _exit(0); /* leaves without a word: its peers must notice */
    }
    static int64_t big[1 << 20];
    tutti_request_t *req = NULL;
    ICHECK_OK(tutti_iallreduce(big, big, 1 << 20, TUTTI_INT64, TUTTI_SUM, comm, &req));
    ICHECK_OK(tutti_request_free(req));
    tutti_status_t ast = TUTTI_OK;
    int64_t end = integ_now_ns() + 20 * SEC;
    while (ast == TUTTI_OK && integ_now_ns() < end) {
        ICHECK_OK(tutti_comm_get_async_error(comm, &ast));
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    const char *msg = tutti_last_error(comm);
    ICHECK(ast == TUTTI_ERR_REMOTE, "get_async_error: %s (%s)", tutti_status_name(ast), msg);
    ICHECK(integ_contains(msg, "rank 1 "), "message does not name rank 1: %s", msg);
    /* The failed comm refuses new work with its stored error. */
    int64_t x = 0;
    tutti_status_t st = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    ICHECK(st == TUTTI_ERR_REMOTE, "allreduce on a failed comm returned %s", tutti_status_name(st));
    ICHECK(tutti_comm_destroy(comm) == TUTTI_ERR_REMOTE, "destroy must return the error");
    return 0;
}

RANKS_OVER_BOTH_TRANSPORTS(comm, async_error_of_an_unwaited_request, 2, async_error_rank)

/* ---------------------------------------------------------------- last error */

static void *fail_in_thread(void *arg)
{
    (void)arg;
    /* A fresh thread has no error; a failure there does not touch other threads' messages. */
    int clean = tutti_last_error(NULL)[0] == '\0';
    tutti_status_t st = tutti_comm_rank(NULL, NULL);
    int named = integ_contains(tutti_last_error(NULL), "comm");
    return (void *)(intptr_t)(clean && st == TUTTI_ERR_INVALID_ARG && named);
}

static int last_error_rank(const struct integ_ctx *ctx)
{
    struct two_ids *ids = ctx->arg;
    tutti_comm_t *a = NULL, *b = NULL;
    if (integ_comm_init(ctx, NULL, &a) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_init_rank(&b, ctx->nranks, &ids->b, ctx->rank));
    ICHECK(tutti_last_error(a) != NULL && tutti_last_error(a)[0] == '\0',
           "a new comm has last error '%s'", tutti_last_error(a));
    int64_t x = 0;
    tutti_status_t st = tutti_broadcast(&x, &x, 1, TUTTI_INT64, 99, a, NULL);
    ICHECK(st == TUTTI_ERR_INVALID_ARG, "bad root: %s", tutti_status_name(st));
    ICHECK(integ_contains(tutti_last_error(a), "root 99"), "comm a: '%s'", tutti_last_error(a));
    ICHECK(integ_contains(tutti_last_error(NULL), "root 99"), "thread: '%s'",
           tutti_last_error(NULL));
    ICHECK(tutti_last_error(b)[0] == '\0', "comm b got comm a's error: '%s'", tutti_last_error(b));
    pthread_t th;
    void *ok = NULL;
    ICHECK(pthread_create(&th, NULL, fail_in_thread, NULL) == 0, "pthread_create");
    pthread_join(th, &ok);
    ICHECK(ok != NULL, "another thread saw a stale or missing last error");
    ICHECK(integ_contains(tutti_last_error(NULL), "root 99"),
           "this thread's last error changed because of another thread: '%s'",
           tutti_last_error(NULL));
    /* A validation error does not fail the communicator. */
    ICHECK_OK(tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, a, NULL));
    ICHECK_OK(tutti_comm_destroy(b));
    ICHECK_OK(tutti_comm_destroy(a));
    return 0;
}

Test(last_error, per_comm_and_per_thread, .timeout = 60)
{
    run_two_ids(0, 2, last_error_rank);
}

/* Distinct communicators may be driven from distinct threads at the same time. */
struct thread_job {
    tutti_comm_t *comm;
    int nranks;
    int bad;
};

static void *drive(void *arg)
{
    struct thread_job *j = arg;
    static _Thread_local int64_t buf[50000];
    for (int it = 0; it < 20 && !j->bad; it++) {
        for (size_t i = 0; i < 50000; i++) {
            buf[i] = it;
        }
        if (tutti_allreduce(buf, buf, 50000, TUTTI_INT64, TUTTI_SUM, j->comm, NULL) != TUTTI_OK ||
            buf[49999] != (int64_t)it * j->nranks) {
            j->bad = integ_fail("thread allreduce %d: %s", it, tutti_last_error(j->comm));
        }
    }
    return NULL;
}

static int two_threads_rank(const struct integ_ctx *ctx)
{
    struct two_ids *ids = ctx->arg;
    struct thread_job j[2] = {{NULL, ctx->nranks, 0}, {NULL, ctx->nranks, 0}};
    if (integ_comm_init(ctx, NULL, &j[0].comm) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_init_rank(&j[1].comm, ctx->nranks, &ids->b, ctx->rank));
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        ICHECK(pthread_create(&th[i], NULL, drive, &j[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
    }
    ICHECK(!j[0].bad && !j[1].bad, "a thread failed (see above)");
    ICHECK_OK(tutti_comm_destroy(j[0].comm));
    ICHECK_OK(tutti_comm_destroy(j[1].comm));
    return 0;
}

OVER_BOTH_TRANSPORTS(comm, two_threads_two_comms)

ParameterizedTest(struct transport *t, comm, two_threads_two_comms, .timeout = 60)
{
    run_two_ids(t->tcp, 3, two_threads_rank);
}
