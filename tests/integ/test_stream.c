/*
 * test_stream.c - collectives on device buffers and streams (src/gpu/stream.c), run on the
 * emulated GPU of emu_dev.h: device memory the CPU cannot touch, streams as threads. Every
 * collective with device buffers, in and out of place, in pieces; the call returns before the
 * stream runs it; issue order with host calls; a group is one batch; graph capture and mixed
 * groups refused; a dead peer fails the call without hanging the stream; abort and destroy
 * release the streams and the pinned memory. What this cannot show: the CUDA module's own
 * stream operations (kernels/cuda/stream_ops.cu), which need a GPU.
 */
#include "emu_dev.h"
#include "harness.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYNC_MS 20000

static int32_t val(int rank, size_t i)
{
    return (int32_t)((rank + 1) * 1000 + (int)(i % 997));
}

/* Device buffers of n int32 (in) and m int32 (out), in filled with val(rank, i), out with -1. */
struct bufs {
    int32_t *in, *out;         /* device */
    int32_t *hin, *hout, *exp; /* host */
    size_t n, m;
};

static void bufs_make(struct bufs *b, int rank, size_t n, size_t m)
{
    b->n = n;
    b->m = m;
    b->in = emu_dev_malloc(n * 4);
    b->out = emu_dev_malloc(m * 4);
    b->hin = malloc(n * 4 + 4);
    b->hout = malloc(m * 4 + 4);
    b->exp = malloc(m * 4 + 4);
    for (size_t i = 0; i < n; i++) {
        b->hin[i] = val(rank, i);
    }
    memset(b->hout, 0xff, m * 4);
    emu_dev_upload(b->in, b->hin, n * 4);
    emu_dev_upload(b->out, b->hout, m * 4);
}

static void bufs_free(struct bufs *b)
{
    emu_dev_free(b->in);
    emu_dev_free(b->out);
    free(b->hin);
    free(b->hout);
    free(b->exp);
}

/* Compare what is on the device at dev (m int32) with b->exp. */
static int check_dev(const char *what, const int32_t *dev, struct bufs *b, size_t m)
{
    emu_dev_download(b->hout, dev, m * 4);
    for (size_t i = 0; i < m; i++) {
        if (b->hout[i] != b->exp[i]) {
            return integ_fail("%s: element %zu of %zu is %d, expected %d", what, i, m, b->hout[i],
                              b->exp[i]);
        }
    }
    return 0;
}

enum { C_ALLREDUCE, C_BROADCAST, C_REDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_ALLTOALL, C_RING, C_N };
static const char *const cname[C_N] = {"allreduce", "broadcast", "reduce",   "reduce_scatter",
                                       "allgather", "alltoall",  "send/recv"};

/* One collective on device buffers on stream s, in place or not; checked after a sync. */
static int one_case(tutti_comm_t *comm, emu_stream_t *s, int c, size_t n, int inplace)
{
    int r, p;
    tutti_comm_rank(comm, &r);
    tutti_comm_size(comm, &p);
    size_t np = n * (size_t)p;
    struct bufs b;
    size_t in_n = (c == C_REDUCE_SCATTER || c == C_ALLTOALL) ? np : n;
    size_t out_n = (c == C_ALLGATHER || c == C_ALLTOALL) ? np : n;
    bufs_make(&b, r, in_n, out_n);
    const void *send = b.in;
    void *recv = b.out;
    int root = p - 1;
    if (inplace && (c == C_ALLREDUCE || c == C_ALLTOALL)) {
        emu_dev_upload(b.out, b.hin, in_n * 4);
        send = recv;
    } else if (inplace && c == C_REDUCE_SCATTER) {
        send = b.in;
        recv = b.in + (size_t)r * n;
    } else if (inplace && c == C_ALLGATHER) {
        emu_dev_upload(b.out + (size_t)r * n, b.hin, n * 4);
        send = b.out + (size_t)r * n;
    }
    for (size_t i = 0; i < out_n; i++) {
        int64_t sum = 0;
        for (int q = 0; q < p; q++) {
            sum += val(q, c == C_REDUCE_SCATTER ? (size_t)r * n + i : i);
        }
        switch (c) {
        case C_ALLREDUCE:
        case C_REDUCE_SCATTER:
            b.exp[i] = (int32_t)sum;
            break;
        case C_REDUCE:
            b.exp[i] = r == root ? (int32_t)sum : -1;
            break;
        case C_BROADCAST:
            b.exp[i] = val(root, i);
            break;
        case C_ALLGATHER:
            b.exp[i] = val((int)(i / (n ? n : 1)), i % (n ? n : 1));
            break;
        case C_ALLTOALL:
            b.exp[i] = val((int)(i / n), (size_t)r * n + i % n);
            break;
        case C_RING:
            b.exp[i] = val((r + p - 1) % p, i);
            break;
        }
    }
    tutti_status_t st = TUTTI_OK;
    switch (c) {
    case C_ALLREDUCE:
        st = tutti_allreduce(send, recv, n, TUTTI_INT32, TUTTI_SUM, comm, s);
        break;
    case C_BROADCAST:
        st = tutti_broadcast(send, recv, n, TUTTI_INT32, root, comm, s);
        break;
    case C_REDUCE:
        st = tutti_reduce(send, recv, n, TUTTI_INT32, TUTTI_SUM, root, comm, s);
        break;
    case C_REDUCE_SCATTER:
        st = tutti_reduce_scatter(send, recv, n, TUTTI_INT32, TUTTI_SUM, comm, s);
        break;
    case C_ALLGATHER:
        st = tutti_allgather(send, recv, n, TUTTI_INT32, comm, s);
        break;
    case C_ALLTOALL:
        st = tutti_alltoall(send, recv, n, TUTTI_INT32, comm, s);
        break;
    case C_RING:
        tutti_group_start();
        st = tutti_send(send, n, TUTTI_INT32, (r + 1) % p, comm, s);
        if (st == TUTTI_OK) {
            st = tutti_recv(recv, n, TUTTI_INT32, (r + p - 1) % p, comm, s);
        }
        tutti_status_t e = tutti_group_end();
        st = st != TUTTI_OK ? st : e;
        break;
    }
    int bad = 0;
    if (st != TUTTI_OK) {
        bad = integ_fail("%s of %zu%s: %s: %s", cname[c], n, inplace ? " in place" : "",
                         tutti_status_name(st), tutti_last_error(comm));
    } else if (emu_stream_sync(s, SYNC_MS) != 0) {
        bad = integ_fail("%s of %zu: the stream did not finish", cname[c], n);
    } else {
        char what[96];
        snprintf(what, sizeof(what), "%s of %zu%s", cname[c], n, inplace ? " in place" : "");
        bad = check_dev(what, recv, &b, out_n);
    }
    bufs_free(&b);
    return bad;
}

/* one_case for the first ncolls collectives x counts x (out of place, in place where defined). */
static int every_case(tutti_comm_t *comm, emu_stream_t *s, int ncolls, const size_t *counts,
                      size_t ncounts)
{
    for (int c = 0; c < ncolls; c++) {
        int has = c == C_ALLREDUCE || c == C_REDUCE_SCATTER || c == C_ALLGATHER || c == C_ALLTOALL;
        for (size_t k = 0; k < ncounts; k++) {
            for (int inplace = 0; inplace <= has; inplace++) {
                if (one_case(comm, s, c, counts[k], inplace) != 0) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* b->exp = the all-reduce (sum) over nranks ranks of val(rank + shift, i). */
static void expect_sums(struct bufs *b, int nranks, int shift, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        b->exp[i] = 0;
        for (int q = 0; q < nranks; q++) {
            b->exp[i] += val(q + shift, i);
        }
    }
}

static int setup(const struct integ_ctx *ctx, tutti_comm_t **comm, emu_stream_t **s)
{
    emu_dev_install();
    *s = emu_stream_create();
    return integ_comm_init(ctx, NULL, comm);
}

static int every_collective_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    /* TUTTI_STAGE_CHUNK is 64k here: 100000 int32 is 7 pieces for the cuttable ones */
    const size_t counts[] = {0, 1, 1031, 100000};
    if (every_case(comm, s, C_N, counts, 4) != 0) {
        return 1;
    }
    long reduces = emu_reduces();
    int ipc = *(const int *)ctx->arg;
    ICHECK(ipc ? reduces > 0 : reduces == 0, "%ld reductions on the stream with TUTTI_IPC=%d",
           reduces, ipc);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    ICHECK(emu_pinned_live() == 0, "%ld pinned blocks left after destroy", emu_pinned_live());
    emu_stream_destroy(s);
    return 0;
}

/* All-reduce through CUDA IPC (64 KiB pieces, two-shot from 4 KiB), the rest staged. */
Test(stream, every_collective_on_device_buffers, .timeout = 120)
{
    static int ipc = 1;
    integ_setenv("TUTTI_STAGE_CHUNK", "64k");
    integ_setenv("TUTTI_IPC_CHUNK", "64k");
    integ_setenv("TUTTI_IPC_TWOSHOT_MIN", "4k");
    integ_run_ranks(3, every_collective_rank, &ipc, 0);
}

/* Everything staged, all-reduce included. */
Test(stream, every_collective_on_device_buffers_staged, .timeout = 120)
{
    static int ipc = 0;
    integ_setenv("TUTTI_STAGE_CHUNK", "64k");
    integ_setenv("TUTTI_IPC", "0");
    integ_run_ranks(3, every_collective_rank, &ipc, 0);
}

/* One rank: every collective, and a grouped send to and receive from oneself, is a copy on the
 * stream, with no staging and no host function. */
static int one_rank_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    long funcs = emu_host_funcs();
    const size_t counts[] = {0, 1, 100000};
    if (every_case(comm, s, C_N, counts, 3) != 0) { /* C_RING: a send to and receive from self */
        return 1;
    }
    ICHECK(emu_pinned_live() == 0, "%ld pinned blocks: a call of one rank was staged",
           emu_pinned_live());
    ICHECK(emu_host_funcs() == funcs, "%ld host functions ran for calls of one rank",
           emu_host_funcs() - funcs);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    emu_stream_destroy(s);
    return 0;
}

Test(stream, one_rank_calls_are_copies_on_the_stream, .timeout = 60)
{
    integ_setenv("TUTTI_STAGE_CHUNK", "64k");
    integ_run_ranks(1, one_rank_rank, NULL, 0);
}

/* The call returns while its stream is held; the results arrive once the stream runs. */
static int returns_at_once_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    struct bufs b;
    bufs_make(&b, ctx->rank, 4096, 4096);
    emu_stream_hold(s);
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 4096, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    usleep(100 * 1000);
    emu_dev_download(b.hout, b.out, 4096 * 4);
    ICHECK(b.hout[0] == -1 && b.hout[4095] == -1, "recvbuf changed before the stream ran");
    emu_stream_release(s);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
    expect_sums(&b, ctx->nranks, 0, 4096);
    ICHECK(check_dev("allreduce after the hold", b.out, &b, 4096) == 0, "wrong result");
    bufs_free(&b);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, the_call_returns_before_the_stream_runs_it, .timeout = 60)
{
    integ_run_ranks(2, returns_at_once_rank, NULL, 0);
}

/* A host call after a stream call runs after it (issue order), on every rank. */
static int order_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    struct bufs b;
    bufs_make(&b, ctx->rank, 1000, 1000);
    int32_t h[1000], hr[1000];
    for (int i = 0; i < 1000; i++) {
        h[i] = 5 * (ctx->rank + 1);
    }
    if (ctx->rank == 0) {
        usleep(50 * 1000); /* rank 0's stream comes late: the host call must wait for it */
    }
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 1000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    ICHECK_OKC(tutti_allreduce(h, hr, 1000, TUTTI_INT32, TUTTI_SUM, comm, NULL), comm);
    int want = 5 * ctx->nranks * (ctx->nranks + 1) / 2;
    ICHECK(hr[0] == want && hr[999] == want, "host allreduce gave %d, expected %d", hr[0], want);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
    expect_sums(&b, ctx->nranks, 0, 1000);
    ICHECK(check_dev("stream allreduce", b.out, &b, 1000) == 0, "wrong result");
    bufs_free(&b);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, host_calls_after_stream_calls_keep_issue_order, .timeout = 60)
{
    integ_run_ranks(3, order_rank, NULL, 0);
}

/* Three all-reduces in a group: one batch (two host functions); apart: three (six). */
static int group_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    struct bufs b[3];
    for (int k = 0; k < 3; k++) {
        bufs_make(&b[k], ctx->rank + k, 777, 777);
        expect_sums(&b[k], ctx->nranks, k, 777);
    }
    for (int grouped = 1; grouped >= 0; grouped--) {
        long before = emu_host_funcs();
        if (grouped) {
            ICHECK_OKC(tutti_group_start(), comm);
        }
        for (int k = 0; k < 3; k++) {
            ICHECK_OKC(tutti_allreduce(b[k].in, b[k].out, 777, TUTTI_INT32, TUTTI_SUM, comm, s),
                       comm);
        }
        if (grouped) {
            ICHECK_OKC(tutti_group_end(), comm);
        }
        long used = emu_host_funcs() - before;
        ICHECK(used == (grouped ? 2 : 6), "%s: %ld host functions on the stream, expected %d",
               grouped ? "grouped" : "apart", used, grouped ? 2 : 6);
        ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
        for (int k = 0; k < 3; k++) {
            ICHECK(check_dev(grouped ? "grouped allreduce" : "allreduce", b[k].out, &b[k], 777) ==
                       0,
                   "wrong result");
        }
    }
    for (int k = 0; k < 3; k++) {
        bufs_free(&b[k]);
    }
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, a_group_is_one_batch_on_the_stream, .timeout = 60)
{
    integ_setenv("TUTTI_IPC", "0"); /* apart, the all-reduces would not be staged */
    integ_run_ranks(2, group_rank, NULL, 0);
}

/* Refusals, each before anything is queued: the communicator stays usable. */
static int refusals_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    struct bufs b;
    bufs_make(&b, ctx->rank, 64, 64);
    int32_t host[64] = {0};

    emu_stream_set_capturing(s, 1);
    tutti_status_t st = tutti_allreduce(b.in, b.out, 64, TUTTI_INT32, TUTTI_SUM, comm, s);
    ICHECK(st == TUTTI_ERR_UNSUPPORTED && strstr(tutti_last_error(NULL), "graph") != NULL,
           "capture: %s: %s", tutti_status_name(st), tutti_last_error(NULL));
    emu_stream_set_capturing(s, 0);

    tutti_request_t *req = NULL;
    st = tutti_iallreduce(b.in, b.out, 64, TUTTI_INT32, TUTTI_SUM, comm, &req);
    ICHECK(st == TUTTI_ERR_UNSUPPORTED && strstr(tutti_last_error(NULL), "stream form") != NULL,
           "iallreduce on device buffers: %s: %s", tutti_status_name(st), tutti_last_error(NULL));

    tutti_group_start();
    (void)tutti_allreduce(b.in, b.out, 64, TUTTI_INT32, TUTTI_SUM, comm, s);
    (void)tutti_allreduce(host, host, 64, TUTTI_INT32, TUTTI_SUM, comm, NULL);
    st = tutti_group_end();
    ICHECK(st == TUTTI_ERR_UNSUPPORTED && strstr(tutti_last_error(NULL), "one stream") != NULL,
           "mixed group: %s: %s", tutti_status_name(st), tutti_last_error(NULL));

    /* still usable, in both forms */
    ICHECK_OKC(tutti_allreduce(host, host, 64, TUTTI_INT32, TUTTI_SUM, comm, NULL), comm);
    ICHECK(one_case(comm, s, C_ALLREDUCE, 64, 0) == 0, "allreduce after the refusals");
    bufs_free(&b);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, capture_async_and_mixed_groups_are_refused_clearly, .timeout = 60)
{
    integ_run_ranks(2, refusals_rank, NULL, 0);
}

/* Device data in float: the stream path gives the bits of the host path. */
static int bits_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    enum { N = 50000 };
    float *h = malloc(N * sizeof(float)), *hr = malloc(N * sizeof(float)),
          *dr = malloc(N * sizeof(float));
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(ctx->rank + 1);
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        h[i] = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5) * 1e3f;
    }
    float *din = emu_dev_malloc(N * sizeof(float)), *dout = emu_dev_malloc(N * sizeof(float));
    emu_dev_upload(din, h, N * sizeof(float));
    ICHECK_OKC(tutti_allreduce(h, hr, N, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL), comm);
    ICHECK_OKC(tutti_allreduce(din, dout, N, TUTTI_FLOAT32, TUTTI_SUM, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
    emu_dev_download(dr, dout, N * sizeof(float));
    ICHECK(memcmp(hr, dr, N * sizeof(float)) == 0, "device results differ from host results");
    emu_dev_free(din);
    emu_dev_free(dout);
    free(h);
    free(hr);
    free(dr);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, float_results_equal_the_host_path_bit_for_bit, .timeout = 60)
{
    integ_setenv("TUTTI_IPC", "0");
    integ_run_ranks(4, bits_rank, NULL, 0);
}

/* Rank r's float input for the IPC tests. */
static void ipc_input(float *h, size_t n, int rank)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        h[i] = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5) * 1e3f;
    }
}

/* Through CUDA IPC every rank folds the inputs in rank order: the bits of that fold, on every
 * rank, for SUM and AVG, in several pieces and in place. */
static int ipc_bits_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    enum { N = 40000 };
    float *h = malloc(N * sizeof(float)), *want = malloc(N * sizeof(float)),
          *got = malloc(N * sizeof(float));
    float *din = emu_dev_malloc(N * sizeof(float)), *dout = emu_dev_malloc(N * sizeof(float));
    for (int k = 0; k < 2; k++) {
        tutti_op_t op = k == 0 ? TUTTI_SUM : TUTTI_AVG;
        for (int q = 0; q < ctx->nranks; q++) {
            ipc_input(q == 0 ? want : h, N, q);
            for (int i = 0; i < N && q > 0; i++) {
                want[i] += h[i];
            }
        }
        for (int i = 0; i < N && op == TUTTI_AVG; i++) {
            want[i] /= (float)ctx->nranks;
        }
        ipc_input(h, N, ctx->rank);
        emu_dev_upload(din, h, N * sizeof(float));
        emu_dev_upload(dout, h, N * sizeof(float));
        ICHECK_OKC(tutti_allreduce(din, dout, N, TUTTI_FLOAT32, op, comm, s), comm);
        ICHECK_OKC(tutti_allreduce(dout, dout, N, TUTTI_FLOAT32, TUTTI_MAX, comm, s), comm);
        ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
        emu_dev_download(got, dout, N * sizeof(float));
        ICHECK(memcmp(got, want, N * sizeof(float)) == 0, "%s: not the rank-order fold's bits",
               k == 0 ? "sum" : "avg");
    }
    ICHECK(emu_reduces() > 0, "the all-reduces did not go through CUDA IPC");
    emu_dev_free(din);
    emu_dev_free(dout);
    free(h);
    free(want);
    free(got);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, ipc_allreduce_gives_the_rank_order_fold_on_every_rank, .timeout = 60)
{
    integ_setenv("TUTTI_IPC_CHUNK", "32k"); /* one-shot pieces */
    integ_run_ranks(4, ipc_bits_rank, NULL, 0);
}

Test(stream, ipc_two_shot_allreduce_gives_the_rank_order_fold_on_every_rank, .timeout = 60)
{
    integ_setenv("TUTTI_IPC_CHUNK", "32k");
    integ_setenv("TUTTI_IPC_TWOSHOT_MIN", "1k"); /* every piece two-shot, uneven slices */
    integ_run_ranks(3, ipc_bits_rank, NULL, 0);
}

/* Set up a rank for the IPC failure tests: a communicator, a stream, buffers of 1000 int32
 * and one all-reduce through CUDA IPC completed (the path is set up). */
static int ipc_first_call(const struct integ_ctx *ctx, tutti_comm_t **comm, emu_stream_t **s,
                          struct bufs *b)
{
    ICHECK(setup(ctx, comm, s) == 0, "init");
    bufs_make(b, ctx->rank, 1000, 1000);
    ICHECK_OKC(tutti_allreduce(b->in, b->out, 1000, TUTTI_INT32, TUTTI_SUM, *comm, *s), *comm);
    ICHECK(emu_stream_sync(*s, SYNC_MS) == 0, "the stream did not finish");
    return 0;
}

/* Through CUDA IPC, a peer that dies between two all-reduces: the watchdog fails the
 * communicator on the others and their streams go on. */
static int ipc_dead_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    struct bufs b;
    if (ipc_first_call(ctx, &comm, &s, &b) != 0) {
        return 1;
    }
    if (ctx->rank == ctx->nranks - 1) {
        _exit(0);
    }
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 1000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream hung after the peer died");
    tutti_status_t async = TUTTI_OK;
    ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
    ICHECK(async == TUTTI_ERR_REMOTE, "asynchronous error %s after the peer died: %s",
           tutti_status_name(async), tutti_last_error(comm));
    ICHECK(strstr(tutti_last_error(comm), "died") != NULL, "message: %s", tutti_last_error(comm));
    bufs_free(&b);
    (void)tutti_comm_destroy(comm);
    return 0;
}

Test(stream, ipc_dead_peer_fails_the_call_and_the_stream_goes_on, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "2s");
    integ_run_ranks(3, ipc_dead_rank, NULL, 0);
}

/* Through CUDA IPC, the last rank all-reduces 999 elements where the others have 1000: the
 * gate compares the ranks' fingerprints before anyone reads a peer's scratch, the watchdog
 * fails every rank with TUTTI_ERR_MISMATCH naming both calls (well before TUTTI_TIMEOUT, so
 * not as a peer that did not arrive) and the streams go on. */
static int ipc_mismatch_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    struct bufs b;
    if (ipc_first_call(ctx, &comm, &s, &b) != 0) {
        return 1;
    }
    size_t n = ctx->rank == ctx->nranks - 1 ? 999 : 1000;
    int64_t t0 = integ_now_ns();
    ICHECK_OKC(tutti_allreduce(b.in, b.out, n, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream hung on mismatched calls");
    tutti_status_t async = TUTTI_OK;
    for (int i = 0; i < 500 && async == TUTTI_OK; i++) { /* a watchdog poll is 20 ms */
        ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
        usleep(10000);
    }
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(comm);
    ICHECK(async == TUTTI_ERR_MISMATCH, "asynchronous error %s: %s", tutti_status_name(async), msg);
    ICHECK(secs < 5, "the mismatch took %.1f s (TUTTI_TIMEOUT is 10 s)", secs);
    ICHECK(strstr(msg, "mismatched calls") != NULL && strstr(msg, "allreduce #") != NULL &&
               strstr(msg, "(999 x int32, sum)") != NULL &&
               strstr(msg, "(1000 x int32, sum)") != NULL,
           "message: %s", msg);
    bufs_free(&b);
    (void)tutti_comm_destroy(comm);
    return 0;
}

Test(stream, ipc_mismatched_calls_fail_every_rank, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "10s");
    integ_run_ranks(3, ipc_mismatch_rank, NULL, 0);
}

/* Bug: the IPC watchdog measured a peer's lateness from the clock's zero (boot), so a peer
 * whose stream had not yet arrived at the first piece when this rank's had was "late" by the
 * uptime: a false timeout that failed the communicator and released every stream with the
 * result unfinished (the NCCL shim's stream test met it under load). Here the last rank's
 * stream is held 300 ms at the first all-reduce: the others must wait for it and succeed. */
static int ipc_late_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    struct bufs b;
    bufs_make(&b, ctx->rank, 1000, 1000);
    int late = ctx->rank == ctx->nranks - 1;
    if (late) {
        emu_stream_hold(s);
    }
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 1000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    if (late) {
        usleep(300 * 1000);
        emu_stream_release(s);
    }
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
    tutti_status_t async = TUTTI_OK;
    ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
    ICHECK(async == TUTTI_OK, "a peer 300 ms late failed the communicator: %s",
           tutti_last_error(comm));
    emu_dev_download(b.hout, b.out, 1000 * 4);
    for (size_t i = 0; i < 1000; i++) {
        int64_t want = 0;
        for (int q = 0; q < ctx->nranks; q++) {
            want += val(q, i);
        }
        ICHECK(b.hout[i] == (int32_t)want, "[%zu] %d, want %lld", i, b.hout[i], (long long)want);
    }
    bufs_free(&b);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(stream, ipc_watchdog_waits_for_a_peer_whose_stream_arrives_late, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "10s");
    integ_run_ranks(3, ipc_late_rank, NULL, 0);
}

/* A peer exits: the stream call fails as the communicator's error, and the stream goes on. */
static int dead_peer_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    if (ctx->rank == ctx->nranks - 1) {
        _exit(0); /* gone without a word */
    }
    struct bufs b;
    bufs_make(&b, ctx->rank, 100000, 100000);
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 100000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream hung after the peer died");
    tutti_status_t async = TUTTI_OK;
    ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
    ICHECK(async == TUTTI_ERR_REMOTE || async == TUTTI_ERR_TIMEOUT,
           "asynchronous error %s after the peer died", tutti_status_name(async));
    tutti_status_t st = tutti_allreduce(b.in, b.out, 10, TUTTI_INT32, TUTTI_SUM, comm, s);
    ICHECK(st == async, "the next call returned %s, not the stored %s", tutti_status_name(st),
           tutti_status_name(async));
    bufs_free(&b);
    (void)tutti_comm_destroy(comm);
    ICHECK(emu_pinned_live() == 0, "%ld pinned blocks left after destroy", emu_pinned_live());
    return 0;
}

Test(stream, a_dead_peer_fails_the_call_and_the_stream_goes_on, .timeout = 60)
{
    integ_setenv("TUTTI_IPC", "0");
    integ_setenv("TUTTI_TIMEOUT", "3s");
    integ_run_ranks(3, dead_peer_rank, NULL, 0);
}

/* Abort while the stream holds calls back: abort returns, and the stream then runs through. */
static int abort_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_stream_t *s = NULL;
    ICHECK(setup(ctx, &comm, &s) == 0, "init");
    struct bufs b;
    bufs_make(&b, ctx->rank, 1000, 1000);
    emu_stream_hold(s);
    for (int k = 0; k < 3; k++) {
        ICHECK_OKC(tutti_allreduce(b.in, b.out, 1000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    }
    ICHECK_OKC(tutti_comm_abort(comm), NULL);
    emu_stream_release(s);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream hung after the abort");
    bufs_free(&b);
    return 0;
}

Test(stream, abort_with_calls_held_on_the_stream, .timeout = 60)
{
    integ_run_ranks(2, abort_rank, NULL, 0);
}

/* Bug: the IPC watchdog waited for a peer TUTTI_TIMEOUT long, ignoring the communicator's own
 * params->timeout_ms (which host calls honour). Here TUTTI_TIMEOUT is 60 s and the
 * communicator's timeout 1 s; the last rank's stream stops before the second all-reduce (held
 * 6 s): the others must fail with TUTTI_ERR_TIMEOUT after about 1 s, not wait 60 s. */
static int ipc_comm_timeout_rank(const struct integ_ctx *ctx)
{
    emu_dev_install();
    emu_stream_t *s = emu_stream_create();
    tutti_comm_params_t params = {.field_mask = TUTTI_COMM_PARAM_TIMEOUT, .timeout_ms = 1000};
    tutti_comm_t *comm = NULL;
    ICHECK(integ_comm_init(ctx, &params, &comm) == 0, "init");
    struct bufs b;
    bufs_make(&b, ctx->rank, 1000, 1000);
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 1000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream did not finish");
    int held = ctx->rank == ctx->nranks - 1;
    if (held) {
        emu_stream_hold(s);
    }
    int64_t t0 = integ_now_ns();
    ICHECK_OKC(tutti_allreduce(b.in, b.out, 1000, TUTTI_INT32, TUTTI_SUM, comm, s), comm);
    if (held) {
        usleep(6000 * 1000);
        emu_stream_release(s);
    }
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "the stream hung behind a stopped peer");
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    if (!held) {
        tutti_status_t async = TUTTI_OK;
        ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
        ICHECK(async == TUTTI_ERR_TIMEOUT || async == TUTTI_ERR_REMOTE, "asynchronous error %s: %s",
               tutti_status_name(async), tutti_last_error(comm));
        ICHECK(secs < 5,
               "the stopped peer was found after %.1f s (the communicator's timeout is 1 s)", secs);
    }
    bufs_free(&b);
    (void)tutti_comm_destroy(comm);
    return 0;
}

Test(stream, ipc_watchdog_uses_the_communicators_timeout, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "60s");
    integ_run_ranks(3, ipc_comm_timeout_rank, NULL, 0);
}
