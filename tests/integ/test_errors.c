/*
 * test_errors.c - wrong use of the API on real ranks: every bad argument of every public function
 * returns its status with a message naming the argument (and leaves the communicator usable);
 * broken unique ids; ranks that disagree on nranks or on counts get errors, not corrupted memory.
 *
 * Failures of peers (killed, stopped, aborted ranks, strangers on the ports) are in
 * test_faults.c.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SEC             1000000000LL
#define TUTTI_TIMEOUT_S 3
#define SLACK_S         10 /* CI machines are slow and shared: failures may take this much longer */

/* A call must fail with `want`, and the thread's last error must contain `text`. */
#define EXPECT_ERR(call, want, text)                                                               \
    do {                                                                                           \
        tutti_status_t st_ = (call);                                                               \
        const char *m_ = tutti_last_error(NULL);                                                   \
        if (st_ != (want) || !integ_contains(m_, text)) {                                          \
            bad |= integ_fail("%s returned %s (\"%s\"), expected %s naming \"%s\"", #call,         \
                              tutti_status_name(st_), m_, tutti_status_name(want), text);          \
        }                                                                                          \
    } while (0)

#define INVAL TUTTI_ERR_INVALID_ARG

static void env_for_errors(int tcp)
{
    integ_setenv("TUTTI_TRANSPORT", tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "3s");
}

/* ---------------------------------------------------------------- bad arguments */

static int bad_comm_args(tutti_comm_t *c)
{
    int bad = 0, r;
    tutti_comm_t *nc = NULL;
    tutti_status_t ast;
    EXPECT_ERR(tutti_get_unique_id(NULL), INVAL, "id_p");
    EXPECT_ERR(tutti_comm_init_env(NULL), INVAL, "comm_p");
    EXPECT_ERR(tutti_comm_destroy(NULL), INVAL, "comm");
    EXPECT_ERR(tutti_comm_abort(NULL), INVAL, "comm");
    EXPECT_ERR(tutti_comm_rank(NULL, &r), INVAL, "comm");
    EXPECT_ERR(tutti_comm_rank(c, NULL), INVAL, "rank_p");
    EXPECT_ERR(tutti_comm_size(NULL, &r), INVAL, "comm");
    EXPECT_ERR(tutti_comm_size(c, NULL), INVAL, "size_p");
    EXPECT_ERR(tutti_comm_get_async_error(NULL, &ast), INVAL, "comm");
    EXPECT_ERR(tutti_comm_get_async_error(c, NULL), INVAL, "st_p");
    EXPECT_ERR(tutti_comm_split(NULL, 0, 0, &nc), INVAL, "comm");
    EXPECT_ERR(tutti_comm_split(c, 0, 0, NULL), INVAL, "newcomm_p");
    EXPECT_ERR(tutti_comm_split(c, -2, 0, &nc), INVAL, "color -2");
    EXPECT_ERR(tutti_test(NULL, &r), INVAL, "req");
    EXPECT_ERR(tutti_wait(NULL), INVAL, "req");
    EXPECT_ERR(tutti_request_free(NULL), INVAL, "req");
    EXPECT_ERR(tutti_group_end(), TUTTI_ERR_INVALID_USAGE, "without a matching tutti_group_start");
    ICHECK(tutti_last_error(c) != NULL && tutti_last_error(NULL) != NULL, "last error is NULL");
    return bad;
}

/* Every collective with each bad argument it can get (a 1-rank comm: validation is local). */
static int bad_coll_args(tutti_comm_t *c)
{
    int bad = 0, stream = 0;
    int64_t b[64] = {0};
    int64_t *s = b, *rv = b + 32;
    const size_t huge = SIZE_MAX / 8 + 1; /* count * 8 bytes overflows */
    const tutti_datatype_t baddt = (tutti_datatype_t)99;
    const tutti_op_t badop = (tutti_op_t)-1;
    const tutti_datatype_t i64 = TUTTI_INT64;
    tutti_request_t *req = NULL;

    EXPECT_ERR(tutti_allreduce(s, rv, 4, i64, TUTTI_SUM, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_allreduce(NULL, rv, 4, i64, TUTTI_SUM, c, NULL), INVAL, "sendbuf is NULL");
    EXPECT_ERR(tutti_allreduce(s, NULL, 4, i64, TUTTI_SUM, c, NULL), INVAL, "recvbuf is NULL");
    EXPECT_ERR(tutti_allreduce(s, rv, 4, baddt, TUTTI_SUM, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_allreduce(s, rv, 4, i64, badop, c, NULL), INVAL, "op -1");
    EXPECT_ERR(tutti_allreduce(s, s + 1, 4, i64, TUTTI_SUM, c, NULL), INVAL, "overlap");
    EXPECT_ERR(tutti_allreduce(s, rv, huge, i64, TUTTI_SUM, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_allreduce(s, rv, 4, i64, TUTTI_SUM, c, &stream), TUTTI_ERR_UNSUPPORTED,
               "stream");

    EXPECT_ERR(tutti_broadcast(s, rv, 4, i64, 0, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_broadcast(NULL, rv, 4, i64, 0, c, NULL), INVAL, "sendbuf is NULL");
    EXPECT_ERR(tutti_broadcast(s, NULL, 4, i64, 0, c, NULL), INVAL, "recvbuf is NULL");
    EXPECT_ERR(tutti_broadcast(s, rv, 4, baddt, 0, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_broadcast(s, rv, 4, i64, 1, c, NULL), INVAL, "root 1");
    EXPECT_ERR(tutti_broadcast(s, rv, 4, i64, -1, c, NULL), INVAL, "root -1");
    EXPECT_ERR(tutti_broadcast(s, s + 2, 4, i64, 0, c, NULL), INVAL, "overlap");
    EXPECT_ERR(tutti_broadcast(s, rv, huge, i64, 0, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_broadcast(s, rv, 4, i64, 0, c, &stream), TUTTI_ERR_UNSUPPORTED, "stream");

    EXPECT_ERR(tutti_reduce(s, rv, 4, i64, TUTTI_SUM, 0, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_reduce(NULL, rv, 4, i64, TUTTI_SUM, 0, c, NULL), INVAL, "sendbuf is NULL");
    EXPECT_ERR(tutti_reduce(s, NULL, 4, i64, TUTTI_SUM, 0, c, NULL), INVAL, "recvbuf is NULL");
    EXPECT_ERR(tutti_reduce(s, rv, 4, baddt, TUTTI_SUM, 0, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_reduce(s, rv, 4, i64, (tutti_op_t)TUTTI_NUM_OPS, 0, c, NULL), INVAL, "op 8");
    EXPECT_ERR(tutti_reduce(s, rv, 4, i64, TUTTI_SUM, 7, c, NULL), INVAL, "root 7");
    EXPECT_ERR(tutti_reduce(s, s + 3, 4, i64, TUTTI_SUM, 0, c, NULL), INVAL, "overlap");
    EXPECT_ERR(tutti_reduce(s, rv, huge, i64, TUTTI_SUM, 0, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_reduce(s, rv, 4, i64, TUTTI_SUM, 0, c, &stream), TUTTI_ERR_UNSUPPORTED,
               "stream");

    EXPECT_ERR(tutti_reduce_scatter(s, rv, 4, i64, TUTTI_SUM, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_reduce_scatter(NULL, rv, 4, i64, TUTTI_SUM, c, NULL), INVAL, "sendbuf");
    EXPECT_ERR(tutti_reduce_scatter(s, NULL, 4, i64, TUTTI_SUM, c, NULL), INVAL, "recvbuf");
    EXPECT_ERR(tutti_reduce_scatter(s, rv, 4, baddt, TUTTI_SUM, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_reduce_scatter(s, rv, 4, i64, badop, c, NULL), INVAL, "op -1");
    EXPECT_ERR(tutti_reduce_scatter(s, s + 1, 4, i64, TUTTI_SUM, c, NULL), INVAL, "overlap");
    EXPECT_ERR(tutti_reduce_scatter(s, rv, huge, i64, TUTTI_SUM, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_reduce_scatter(s, rv, 4, i64, TUTTI_SUM, c, &stream), TUTTI_ERR_UNSUPPORTED,
               "stream");

    EXPECT_ERR(tutti_allgather(s, rv, 4, i64, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_allgather(NULL, rv, 4, i64, c, NULL), INVAL, "sendbuf is NULL");
    EXPECT_ERR(tutti_allgather(s, NULL, 4, i64, c, NULL), INVAL, "recvbuf is NULL");
    EXPECT_ERR(tutti_allgather(s, rv, 4, baddt, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_allgather(s + 1, s, 4, i64, c, NULL), INVAL, "overlap");
    EXPECT_ERR(tutti_allgather(s, rv, huge, i64, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_allgather(s, rv, 4, i64, c, &stream), TUTTI_ERR_UNSUPPORTED, "stream");

    EXPECT_ERR(tutti_alltoall(s, rv, 4, i64, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_alltoall(NULL, rv, 4, i64, c, NULL), INVAL, "sendbuf is NULL");
    EXPECT_ERR(tutti_alltoall(s, NULL, 4, i64, c, NULL), INVAL, "recvbuf is NULL");
    EXPECT_ERR(tutti_alltoall(s, rv, 4, baddt, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_alltoall(s, s + 1, 4, i64, c, NULL), INVAL, "overlap"); /* in place: s, s */
    EXPECT_ERR(tutti_alltoall(s, rv, huge, i64, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_alltoall(s, rv, 4, i64, c, &stream), TUTTI_ERR_UNSUPPORTED, "stream");

    EXPECT_ERR(tutti_send(s, 4, i64, 0, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_send(NULL, 4, i64, 0, c, NULL), INVAL, "buf is NULL");
    EXPECT_ERR(tutti_send(s, 4, baddt, 0, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_send(s, 4, i64, 1, c, NULL), INVAL, "peer 1");
    EXPECT_ERR(tutti_send(s, 4, i64, -1, c, NULL), INVAL, "peer -1");
    EXPECT_ERR(tutti_send(s, huge, i64, 0, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_send(s, 4, i64, 0, c, &stream), TUTTI_ERR_UNSUPPORTED, "stream");
    EXPECT_ERR(tutti_send(s, 4, i64, 0, c, NULL), TUTTI_ERR_INVALID_USAGE, "itself");
    EXPECT_ERR(tutti_recv(rv, 4, i64, 0, NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_recv(NULL, 4, i64, 0, c, NULL), INVAL, "buf is NULL");
    EXPECT_ERR(tutti_recv(rv, 4, baddt, 0, c, NULL), INVAL, "datatype 99");
    EXPECT_ERR(tutti_recv(rv, 4, i64, 2, c, NULL), INVAL, "peer 2");
    EXPECT_ERR(tutti_recv(rv, huge, i64, 0, c, NULL), INVAL, "overflows");
    EXPECT_ERR(tutti_recv(rv, 4, i64, 0, c, &stream), TUTTI_ERR_UNSUPPORTED, "stream");
    EXPECT_ERR(tutti_recv(rv, 4, i64, 0, c, NULL), TUTTI_ERR_INVALID_USAGE, "itself");

    EXPECT_ERR(tutti_barrier(NULL, NULL), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_barrier(c, &stream), TUTTI_ERR_UNSUPPORTED, "stream");

    /* The asynchronous forms validate alike, and need somewhere to put the request. */
    EXPECT_ERR(tutti_iallreduce(s, rv, 4, i64, TUTTI_SUM, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_iallreduce(s, rv, 4, baddt, TUTTI_SUM, c, &req), INVAL, "datatype 99");
    EXPECT_ERR(tutti_ibroadcast(s, rv, 4, i64, 0, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_ibroadcast(s, rv, 4, i64, 3, c, &req), INVAL, "root 3");
    EXPECT_ERR(tutti_ireduce(s, rv, 4, i64, TUTTI_SUM, 0, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_ireduce(s, rv, 4, i64, badop, 0, c, &req), INVAL, "op -1");
    EXPECT_ERR(tutti_ireduce_scatter(s, rv, 4, i64, TUTTI_SUM, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_ireduce_scatter(s, s + 2, 4, i64, TUTTI_SUM, c, &req), INVAL, "overlap");
    EXPECT_ERR(tutti_iallgather(s, rv, 4, i64, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_iallgather(s, rv, 4, i64, NULL, &req), INVAL, "comm is NULL");
    EXPECT_ERR(tutti_ialltoall(s, rv, 4, i64, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_ialltoall(s, NULL, 4, i64, c, &req), INVAL, "recvbuf is NULL");
    EXPECT_ERR(tutti_isend(s, 4, i64, 0, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_isend(s, 4, i64, 5, c, &req), INVAL, "peer 5");
    EXPECT_ERR(tutti_irecv(rv, 4, i64, 0, c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_irecv(NULL, 4, i64, 0, c, &req), INVAL, "buf is NULL");
    EXPECT_ERR(tutti_ibarrier(c, NULL), INVAL, "req_p");
    EXPECT_ERR(tutti_ibarrier(NULL, &req), INVAL, "comm is NULL");
    ICHECK(req == NULL, "a failed asynchronous call set *req_p");

    /* Inside a group: asynchronous calls are refused; bad arguments are refused at once. */
    ICHECK_OK(tutti_group_start());
    EXPECT_ERR(tutti_iallreduce(s, rv, 4, i64, TUTTI_SUM, c, &req), TUTTI_ERR_INVALID_USAGE,
               "inside a group");
    EXPECT_ERR(tutti_allreduce(s, rv, 4, baddt, TUTTI_SUM, c, NULL), INVAL, "datatype 99");
    ICHECK_OK(tutti_group_end());
    /* A self-send and a self-receive that do not pair up. */
    ICHECK_OK(tutti_group_start());
    ICHECK_OK(tutti_send(s, 4, i64, 0, c, NULL));
    ICHECK_OK(tutti_recv(rv, 5, i64, 0, c, NULL));
    EXPECT_ERR(tutti_group_end(), TUTTI_ERR_INVALID_USAGE, "do not pair up");
    return bad;
}

/* Count 0 needs no buffers. */
static int zero_counts(tutti_comm_t *c)
{
    ICHECK_OK(tutti_allreduce(NULL, NULL, 0, TUTTI_FLOAT32, TUTTI_SUM, c, NULL));
    ICHECK_OK(tutti_broadcast(NULL, NULL, 0, TUTTI_FLOAT32, 0, c, NULL));
    ICHECK_OK(tutti_reduce(NULL, NULL, 0, TUTTI_FLOAT32, TUTTI_MAX, 0, c, NULL));
    ICHECK_OK(tutti_reduce_scatter(NULL, NULL, 0, TUTTI_UINT8, TUTTI_SUM, c, NULL));
    ICHECK_OK(tutti_allgather(NULL, NULL, 0, TUTTI_UINT8, c, NULL));
    ICHECK_OK(tutti_alltoall(NULL, NULL, 0, TUTTI_UINT8, c, NULL));
    return 0;
}

static int bad_args_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int bad = bad_comm_args(c) | bad_coll_args(c) | zero_counts(c);
    /* None of this failed the communicator. */
    tutti_status_t ast = TUTTI_ERR_INTERNAL;
    ICHECK_OK(tutti_comm_get_async_error(c, &ast));
    ICHECK(ast == TUTTI_OK, "validation errors failed the comm: %s", tutti_status_name(ast));
    int64_t x = 5, y = 0;
    ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, c, NULL));
    ICHECK(y == 5, "allreduce after the errors gave %lld", (long long)y);
    ICHECK_OK(tutti_comm_destroy(c));
    return bad;
}

Test(errors, bad_arguments_of_every_function, .timeout = 60)
{
    env_for_errors(0);
    integ_run_ranks(1, bad_args_rank, NULL, 0);
}

/* Overlaps that depend on the rank: at rank 1 of 2 the in-place offsets are not 0. */
static int overlap_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    int bad = 0;
    int32_t b[64] = {0};
    if (ctx->rank == 1) {
        /* reduce-scatter in place is recvbuf == sendbuf + rank * count; all-gather in place is
         * sendbuf == recvbuf + rank * count. The rank-0 forms overlap at rank 1. */
        EXPECT_ERR(tutti_reduce_scatter(b, b, 8, TUTTI_INT32, TUTTI_SUM, c, NULL), INVAL,
                   "overlap");
        EXPECT_ERR(tutti_allgather(b, b, 8, TUTTI_INT32, c, NULL), INVAL, "overlap");
        EXPECT_ERR(tutti_reduce_scatter(b, b + 4, 8, TUTTI_INT32, TUTTI_SUM, c, NULL), INVAL,
                   "overlap");
        /* A send to itself outside a group, with a real peer around. */
        EXPECT_ERR(tutti_send(b, 1, TUTTI_INT32, 1, c, NULL), TUTTI_ERR_INVALID_USAGE, "itself");
    }
    /* The in-place forms themselves are accepted (and correct). */
    for (int i = 0; i < 16; i++) {
        b[i] = ctx->rank * 100 + i;
    }
    ICHECK_OK(tutti_reduce_scatter(b, b + 8 * ctx->rank, 8, TUTTI_INT32, TUTTI_SUM, c, NULL));
    for (int i = 0; i < 8; i++) {
        int want = 100 + 2 * (8 * ctx->rank + i);
        ICHECK(b[8 * ctx->rank + i] == want, "in-place reduce_scatter [%d]: %d, expected %d", i,
               b[8 * ctx->rank + i], want);
    }
    ICHECK_OK(tutti_comm_destroy(c));
    return bad;
}

Test(errors, overlaps_that_depend_on_the_rank, .timeout = 60)
{
    env_for_errors(0);
    integ_run_ranks(2, overlap_rank, NULL, 0);
}

/* ---------------------------------------------------------------- broken unique ids */

static int bad_init_args_rank(const struct integ_ctx *ctx)
{
    int bad = 0;
    tutti_comm_t *c = NULL;
    tutti_unique_id_t id = *ctx->id;
    EXPECT_ERR(tutti_comm_init_rank(NULL, 1, &id, 0), INVAL, "comm_p");
    EXPECT_ERR(tutti_comm_init_rank(&c, 1, NULL, 0), INVAL, "id");
    EXPECT_ERR(tutti_comm_init_rank(&c, 0, &id, 0), INVAL, "nranks 0");
    EXPECT_ERR(tutti_comm_init_rank(&c, 2, &id, 2), INVAL, "rank 2");
    EXPECT_ERR(tutti_comm_init_rank(&c, 2, &id, -1), INVAL, "rank -1");
    tutti_comm_params_t p = {.field_mask = 1u << 7};
    EXPECT_ERR(tutti_comm_init_rank_params(&c, 1, &id, 0, &p), INVAL, "field_mask");
    p = (tutti_comm_params_t){.field_mask = TUTTI_COMM_PARAM_TIMEOUT, .timeout_ms = 0};
    EXPECT_ERR(tutti_comm_init_rank_params(&c, 1, &id, 0, &p), INVAL, "timeout_ms 0");
    p = (tutti_comm_params_t){.field_mask = TUTTI_COMM_PARAM_NCHANNELS, .nchannels = 0};
    EXPECT_ERR(tutti_comm_init_rank_params(&c, 1, &id, 0, &p), INVAL, "nchannels 0");
    p.nchannels = TUTTI_MAX_CHANNELS + 1;
    EXPECT_ERR(tutti_comm_init_rank_params(&c, 1, &id, 0, &p), INVAL, "nchannels 17");
    /* The id: magic (bytes 0-3), version (4-7), job id, secret, root address (family at 32). */
    id.internal[1] ^= 0x40;
    EXPECT_ERR(tutti_comm_init_rank(&c, 1, &id, 0), INVAL, "not a tutti unique id");
    id = *ctx->id;
    id.internal[7] ^= 0x02;
    EXPECT_ERR(tutti_comm_init_rank(&c, 1, &id, 0), INVAL, "version");
    id = *ctx->id;
    id.internal[32] = 9;
    EXPECT_ERR(tutti_comm_init_rank(&c, 1, &id, 0), INVAL, "root address");
    memset(&id, 0, sizeof(id));
    EXPECT_ERR(tutti_comm_init_rank(&c, 1, &id, 0), INVAL, "not a tutti unique id");
    ICHECK(c == NULL, "a failed init set *comm_p");
    /* After all of that, the real id still works. */
    ICHECK_OK(tutti_comm_init_rank(&c, 1, ctx->id, 0));
    ICHECK_OK(tutti_comm_destroy(c));
    return bad;
}

Test(errors, bad_init_arguments_and_corrupted_ids, .timeout = 60)
{
    env_for_errors(0);
    integ_run_ranks(1, bad_init_args_rank, NULL, 0);
}

/*
 * A secret that differs by one bit: the root refuses that rank, which gets an error that says so;
 * the other ranks give up in time, told by the root which rank never joined.
 */
static int wrong_secret_rank(const struct integ_ctx *ctx)
{
    tutti_unique_id_t id = *ctx->id;
    if (ctx->rank == 2) {
        id.internal[20] ^= 0x01; /* inside the secret */
    }
    tutti_comm_t *c = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_rank(&c, ctx->nranks, &id, ctx->rank);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(NULL);
    ICHECK(st != TUTTI_OK && c == NULL, "init with %s secret succeeded",
           ctx->rank == 2 ? "a wrong" : "a missing rank and the right");
    ICHECK(secs < TUTTI_TIMEOUT_S + SLACK_S, "init failed only after %.1f s", secs);
    if (ctx->rank == 2) {
        ICHECK(st == TUTTI_ERR_AUTH, "wrong secret: %s (%s)", tutti_status_name(st), msg);
        ICHECK(integ_contains(msg, "secret"), "the message does not mention the secret: %s", msg);
    } else {
        ICHECK(st == TUTTI_ERR_TIMEOUT, "rank without its peer: %s (%s)", tutti_status_name(st),
               msg);
        ICHECK(integ_contains(msg, "2 never joined"), "the message does not name rank 2: %s", msg);
    }
    return 0;
}

Test(errors, wrong_secret_in_the_id_is_refused, .timeout = 60)
{
    env_for_errors(0);
    integ_run_ranks(3, wrong_secret_rank, NULL, 0);
}

static int auth_status_rank(const struct integ_ctx *ctx)
{
    tutti_unique_id_t id = *ctx->id;
    id.internal[20] ^= 0x01;
    tutti_comm_t *c = NULL;
    tutti_status_t st = tutti_comm_init_rank(&c, 1, &id, 0);
    ICHECK(st == TUTTI_ERR_AUTH,
           "init with a wrong secret returned %s, tutti/comm.h promises "
           "TUTTI_ERR_AUTH: %s",
           tutti_status_name(st), tutti_last_error(NULL));
    return 0;
}

Test(errors, wrong_secret_status_is_auth, .timeout = 60)
{
    env_for_errors(0);
    integ_run_ranks(1, auth_status_rank, NULL, 0);
}

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
    ICHECK(integ_contains(msg, "nranks"),
           "rank %d (nranks %d): %s: the message does not say "
           "that nranks differ: %s",
           ctx->rank, nranks, tutti_status_name(st), msg);
    return 0;
}

Test(errors, ranks_disagreeing_on_nranks_all_fail, .timeout = 60)
{
    env_for_errors(0);
    integ_run_ranks(2, nranks_mismatch_rank, NULL, 0);
}

/* ---------------------------------------------------------------- mismatched counts */

enum mismatch { MIS_ALLREDUCE, MIS_BCAST_SHORT, MIS_RECV_SHORT, MIS_RECV_LONG, MIS_COUNT };

struct mismatch_cfg {
    int tcp;
    enum mismatch kind;
};

static struct mismatch_cfg mismatch_cfgs[] = {
    {0, MIS_ALLREDUCE}, {0, MIS_BCAST_SHORT}, {0, MIS_RECV_SHORT}, {0, MIS_RECV_LONG},
    {1, MIS_ALLREDUCE}, {1, MIS_BCAST_SHORT}, {1, MIS_RECV_SHORT}, {1, MIS_RECV_LONG},
};

#define GUARD_WORDS 1024

/*
 * Rank 0 and rank 1 call with different counts (rank 1 gets three times as many elements in
 * the _SHORT cases, a third in _LONG; both in ALLREDUCE). Each rank's buffers sit between guard
 * zones. Every rank must see an error (in the call or in the next all-reduce) in time, and no
 * byte outside the buffers may change.
 */
static int mismatch_rank(const struct integ_ctx *ctx)
{
    const struct mismatch_cfg *m = ctx->arg;
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    size_t small = 100000, n;
    int r = ctx->rank;
    switch (m->kind) {
    case MIS_ALLREDUCE:
        n = r == 0 ? small : 3 * small;
        break;
    case MIS_RECV_LONG:
        n = r == 0 ? 3 * small : small;
        break;
    default:
        n = r == 0 ? small : 3 * small;
        break;
    }
    size_t words = 2 * GUARD_WORDS + 2 * n;
    uint32_t *mem = malloc(words * 4);
    ICHECK(mem != NULL, "out of memory");
    for (size_t i = 0; i < words; i++) {
        mem[i] = 0xC0DE0000u + (uint32_t)(i & 0xFFFF);
    }
    uint32_t *sb = mem + GUARD_WORDS, *rb = sb + n;
    int64_t t0 = integ_now_ns();
    tutti_status_t st;
    switch (m->kind) {
    case MIS_ALLREDUCE:
        st = tutti_allreduce(sb, rb, n, TUTTI_UINT32, TUTTI_SUM, c, NULL);
        break;
    case MIS_BCAST_SHORT:
        st = tutti_broadcast(sb, rb, n, TUTTI_UINT32, 0, c, NULL);
        break;
    default:
        st = r == 0 ? tutti_send(sb, n, TUTTI_UINT32, 1, c, NULL)
                    : tutti_recv(rb, n, TUTTI_UINT32, 0, c, NULL);
        break;
    }
    tutti_status_t st2 = TUTTI_OK;
    if (st == TUTTI_OK) {
        /* This rank's part went through; the comm must fail on the next collective. */
        int64_t x = 1;
        st2 = tutti_allreduce(&x, &x, 1, TUTTI_INT64, TUTTI_SUM, c, NULL);
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    ICHECK(st != TUTTI_OK || st2 != TUTTI_OK, "rank %d: mismatched counts went unnoticed", r);
    ICHECK(secs < 2 * TUTTI_TIMEOUT_S + SLACK_S, "the error took %.1f s", secs);
    for (size_t i = 0; i < words; i++) {
        int guard = i < GUARD_WORDS || i >= GUARD_WORDS + 2 * n;
        int outside_recv = i < GUARD_WORDS + n || guard; /* only rb may be written */
        ICHECK(!outside_recv || mem[i] == 0xC0DE0000u + (uint32_t)(i & 0xFFFF),
               "word %ld relative to sendbuf was overwritten", (long)i - (long)GUARD_WORDS);
    }
    free(mem);
    tutti_comm_destroy(c);
    return 0;
}

ParameterizedTestParameters(errors, mismatched_counts_fail_without_corruption)
{
    return cr_make_param_array(struct mismatch_cfg, mismatch_cfgs,
                               sizeof(mismatch_cfgs) / sizeof(mismatch_cfgs[0]));
}

ParameterizedTest(struct mismatch_cfg *m, errors, mismatched_counts_fail_without_corruption,
                  .timeout = 60)
{
    env_for_errors(m->tcp);
    integ_run_ranks(2, mismatch_rank, m, 0);
}
