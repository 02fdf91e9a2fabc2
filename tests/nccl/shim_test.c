/*
 * shim_test.c - a program written against NVIDIA's own nccl.h (compiled with
 * -I/usr/local/cuda/include) and linked to tutti's libnccl.so.2 by path and rpath, as a
 * program built for NCCL would be run on tutti. It first proves that the libnccl.so.2 it got is
 * the shim (dladdr of ncclAllReduce names the file given on the command line), then runs every
 * host-side behaviour on host buffers over N forked ranks: each collective, all datatypes x
 * all operators of all-reduce (PreMulSum included), groups, split, shrink, abort from another
 * thread (also racing a thread's held calls: shim_hold.c), the asynchronous error after a peer
 * dies, nonblocking init, several ranks in one process, finalize, revoke, memory and
 * registration, the device API's host calls and the refusals. Results are checked exactly.
 *
 *   shim_test SHIM_PATH [NRANKS]
 *
 * Prints "name ok|failed" per check, then a Criterion-style Synthesis line that
 * scripts/test-summary.py counts; exits 1 if any check failed.
 */
#include <nccl.h>

#include "shim_check.h"
#include "shim_hold.h"
#include "shim_ranks.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int nranks = 3;

#define NCCLOK(call) NCCLOK_ON(NULL, call)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- element encoding: exact small values in every NCCL datatype ---- */

static const size_t type_size[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static const char *type_name[ncclNumTypes] = {"int8",   "uint8",    "int32", "uint32",
                                              "int64",  "uint64",   "half",  "float",
                                              "double", "bfloat16", "e4m3",  "e5m2"};
static const char *op_name[ncclNumOps] = {"sum", "prod", "max", "min", "avg"};

/* A small non-negative integer as a float format with `mbits` mantissa bits and bias `bias`
 * (exact: the tests only use representable values). */
static uint32_t fenc(double v, int mbits, int bias)
{
    if (v == 0) {
        return 0;
    }
    int e = (int)floor(log2(v));
    double frac = v / ldexp(1.0, e) - 1.0;
    return ((uint32_t)(e + bias) << mbits) | (uint32_t)llround(frac * ldexp(1.0, mbits));
}

static void put(void *buf, size_t i, ncclDataType_t t, double v)
{
    unsigned char *p = (unsigned char *)buf + i * type_size[t];
    switch (t) {
    case ncclInt8:
        *(int8_t *)p = (int8_t)v;
        break;
    case ncclUint8:
        *(uint8_t *)p = (uint8_t)v;
        break;
    case ncclInt32:
        *(int32_t *)p = (int32_t)v;
        break;
    case ncclUint32:
        *(uint32_t *)p = (uint32_t)v;
        break;
    case ncclInt64:
        *(int64_t *)p = (int64_t)v;
        break;
    case ncclUint64:
        *(uint64_t *)p = (uint64_t)v;
        break;
    case ncclFloat16:
        *(uint16_t *)p = (uint16_t)fenc(v, 10, 15);
        break;
    case ncclFloat32:
        *(float *)p = (float)v;
        break;
    case ncclFloat64:
        *(double *)p = v;
        break;
    case ncclBfloat16:
        *(uint16_t *)p = (uint16_t)fenc(v, 7, 127);
        break;
    case ncclFloat8e4m3:
        *p = (uint8_t)fenc(v, 3, 7);
        break;
    case ncclFloat8e5m2:
        *p = (uint8_t)fenc(v, 2, 15);
        break;
    default:
        break;
    }
}

/* Input of rank r at i for an operator: small integers whose every partial result (in any
 * reduction order) is exact in all types. AVG: k*(2r+1), summing to k*n^2 (so the average
 * k*n is exact); FP8's partial sums of that are not all exact, so there it is rank-free. */
static double input(int r, size_t i, ncclDataType_t t, int op)
{
    if (op == ncclAvg) {
        double k = 1 + (double)(i % 2);
        return (t == ncclFloat8e4m3 || t == ncclFloat8e5m2) ? k : k * (2 * r + 1);
    }
    return 1 + (double)((r + i) % 2);
}

static double expect(size_t i, ncclDataType_t t, int op, int n)
{
    double acc = input(0, i, t, op);
    for (int r = 1; r < n; r++) {
        double x = input(r, i, t, op);
        acc = op == ncclProd  ? acc * x
              : op == ncclMax ? fmax(acc, x)
              : op == ncclMin ? fmin(acc, x)
                              : acc + x;
    }
    return op == ncclAvg ? acc / n : acc;
}

/* ---- the checks ---- */

/* Every datatype x every built-in operator, out of place and in place. */
static int t_allreduce(ncclComm_t comm, int rank, int n)
{
    const size_t count = 1037;
    for (int t = 0; t < ncclNumTypes; t++) {
        for (int op = 0; op < ncclNumOps; op++) {
            size_t bytes = count * type_size[t];
            unsigned char *in = malloc(bytes), *out = malloc(bytes), *want = malloc(bytes);
            for (size_t i = 0; i < count; i++) {
                put(in, i, t, input(rank, i, t, op));
                put(want, i, t, expect(i, t, op, n));
            }
            NCCLOK(ncclAllReduce(in, out, count, t, op, comm, NULL));
            CHECK(memcmp(out, want, bytes) == 0, "allreduce %s %s", type_name[t], op_name[op]);
            NCCLOK(ncclAllReduce(in, in, count, t, op, comm, NULL)); /* in place */
            CHECK(memcmp(in, want, bytes) == 0, "in-place allreduce %s %s", type_name[t],
                  op_name[op]);
            free(in);
            free(out);
            free(want);
        }
    }
    return 0;
}

/* PreMulSum: sum over ranks of (rank + 1) * x, scalar on the host read at creation or at
 * every call, for float and int32; all-reduce, reduce and reduce-scatter; misuse refused. */
static int t_premulsum(ncclComm_t comm, int rank, int n)
{
    enum { COUNT = 300 };
    float fin[COUNT * 8], fout[COUNT * 8];
    int32_t iin[COUNT], iout[COUNT];
    float fscalar = (float)(rank + 1);
    int32_t iscalar = 0;
    ncclRedOp_t fop, iop;
    CHECK(n <= 8, "n %d", n);
    for (int i = 0; i < COUNT * n; i++) {
        fin[i] = (float)(1 + (rank + i) % 2);
    }
    for (int i = 0; i < COUNT; i++) {
        iin[i] = 1 + (rank + i) % 2;
    }
    NCCLOK(ncclRedOpCreatePreMulSum(&fop, &fscalar, ncclFloat32, ncclScalarHostImmediate, comm));
    fscalar = 1000; /* read at creation: no effect */
    NCCLOK(ncclRedOpCreatePreMulSum(&iop, &iscalar, ncclInt32, ncclScalarDevice, comm));
    iscalar = rank + 1; /* ncclScalarDevice: read when the collective runs */
    CHECK(fop >= ncclNumOps && iop >= ncclNumOps && fop != iop, "ops %d %d", fop, iop);
    NCCLOK(ncclAllReduce(fin, fout, COUNT, ncclFloat32, fop, comm, NULL));
    NCCLOK(ncclAllReduce(iin, iout, COUNT, ncclInt32, iop, comm, NULL));
    for (int i = 0; i < COUNT; i++) {
        double want = 0;
        for (int r = 0; r < n; r++) {
            want += (r + 1) * (1 + (r + i) % 2);
        }
        CHECK(fout[i] == (float)want && iout[i] == (int32_t)want, "premulsum[%d] %g %d want %g", i,
              fout[i], iout[i], want);
    }
    NCCLOK(ncclReduce(fin, fout, COUNT, ncclFloat32, fop, n - 1, comm, NULL));
    if (rank == n - 1) {
        for (int i = 0; i < COUNT; i++) {
            double want = 0;
            for (int r = 0; r < n; r++) {
                want += (r + 1) * (1 + (r + i) % 2);
            }
            CHECK(fout[i] == (float)want, "premulsum reduce[%d] %g want %g", i, fout[i], want);
        }
    }
    /* reduce-scatter in place: recvbuff is this rank's block of sendbuff */
    NCCLOK(ncclReduceScatter(fin, fin + rank * COUNT, COUNT, ncclFloat32, fop, comm, NULL));
    for (int i = 0; i < COUNT; i++) {
        size_t g = (size_t)rank * COUNT + (size_t)i;
        double want = 0;
        for (int r = 0; r < n; r++) {
            want += (r + 1) * (1 + (r + g) % 2);
        }
        CHECK(fin[g] == (float)want, "premulsum reduce-scatter[%d] %g want %g", i, fin[g], want);
    }
    /* an operator is bound to its datatype, and dies with ncclRedOpDestroy */
    CHECK(ncclAllReduce(iin, iout, COUNT, ncclFloat32, iop, comm, NULL) == ncclInvalidArgument,
          "datatype mismatch accepted");
    CHECK(strstr(ncclGetLastError(comm), "made for int32") != NULL, "message: %s",
          ncclGetLastError(comm));
    NCCLOK(ncclRedOpDestroy(fop, comm));
    NCCLOK(ncclRedOpDestroy(iop, comm));
    CHECK(ncclRedOpDestroy(fop, comm) == ncclInvalidArgument, "double destroy accepted");
    CHECK(ncclAllReduce(fin, fout, COUNT, ncclFloat32, fop, comm, NULL) == ncclInvalidArgument,
          "destroyed op accepted");
    /* a stream where no GPU runtime is loaded: refused as any call is, saying why */
    NCCLOK(ncclRedOpCreatePreMulSum(&fop, &fscalar, ncclFloat32, ncclScalarHostImmediate, comm));
    CHECK(ncclAllReduce(fin, fout, COUNT, ncclFloat32, fop, comm, (cudaStream_t)0x1) ==
              ncclInvalidUsage,
          "premulsum on a stream accepted without CUDA");
    CHECK(strstr(ncclGetLastError(comm), "stream") != NULL, "message: %s", ncclGetLastError(comm));
    NCCLOK(ncclRedOpDestroy(fop, comm));
    return 0;
}

/* Broadcast, bcast, reduce, all-gather, reduce-scatter, all-to-all, gather, scatter. */
static int t_collectives(ncclComm_t comm, int rank, int n)
{
    enum { C = 517 };
    int32_t *a = malloc(sizeof(int32_t) * C * n), *b = malloc(sizeof(int32_t) * C * n);
    int32_t *r2 = malloc(sizeof(int32_t) * C * n);
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < C; i++) {
            a[i] = rank == root ? 7 * i + root : -1;
            b[i] = -2;
        }
        NCCLOK(ncclBroadcast(a, b, C, ncclInt32, root, comm, NULL));
        NCCLOK(ncclBcast(a, C, ncclInt32, root, comm, NULL));
        for (int i = 0; i < C; i++) {
            CHECK(b[i] == 7 * i + root && a[i] == 7 * i + root, "broadcast root %d [%d] %d %d",
                  root, i, b[i], a[i]);
        }
        for (int i = 0; i < C; i++) {
            a[i] = rank * 1000 + i;
            b[i] = -3;
        }
        NCCLOK(ncclReduce(a, b, C, ncclInt32, ncclSum, root, comm, NULL));
        for (int i = 0; rank == root && i < C; i++) {
            CHECK(b[i] == 1000 * n * (n - 1) / 2 + n * i, "reduce root %d [%d] %d", root, i, b[i]);
        }
        /* gather: block r of the root's buffer from rank r; then scatter it back doubled */
        for (int i = 0; i < C * n; i++) {
            b[i] = -4;
        }
        NCCLOK(ncclGather(a, b, C, ncclInt32, root, comm, NULL));
        for (int i = 0; rank == root && i < C * n; i++) {
            CHECK(b[i] == (i / C) * 1000 + i % C, "gather root %d [%d] %d", root, i, b[i]);
            b[i] *= 2;
        }
        NCCLOK(ncclScatter(b, r2, C, ncclInt32, root, comm, NULL));
        for (int i = 0; i < C; i++) {
            CHECK(r2[i] == 2 * (rank * 1000 + i), "scatter root %d [%d] %d", root, i, r2[i]);
        }
        /* in place: the root's own block already sits where it belongs */
        for (int i = 0; i < C; i++) {
            b[root * C + i] = rank * 1000 + i;
        }
        NCCLOK(ncclGather(rank == root ? b + root * C : a, b, C, ncclInt32, root, comm, NULL));
        for (int i = 0; rank == root && i < C * n; i++) {
            CHECK(b[i] == (i / C) * 1000 + i % C, "in-place gather root %d [%d] %d", root, i, b[i]);
        }
    }
    /* all-gather, out of place and in place */
    for (int i = 0; i < C; i++) {
        a[i] = rank * 1000 + i;
    }
    NCCLOK(ncclAllGather(a, b, C, ncclInt32, comm, NULL));
    memcpy(r2 + rank * C, a, sizeof(int32_t) * C);
    NCCLOK(ncclAllGather(r2 + rank * C, r2, C, ncclInt32, comm, NULL));
    for (int i = 0; i < C * n; i++) {
        CHECK(b[i] == (i / C) * 1000 + i % C && r2[i] == b[i], "allgather [%d] %d %d", i, b[i],
              r2[i]);
    }
    /* reduce-scatter: block r summed over ranks lands on rank r; in place too */
    for (int i = 0; i < C * n; i++) {
        a[i] = rank + i;
        r2[i] = rank + i;
    }
    NCCLOK(ncclReduceScatter(a, b, C, ncclInt32, ncclSum, comm, NULL));
    NCCLOK(ncclReduceScatter(r2, r2 + rank * C, C, ncclInt32, ncclSum, comm, NULL));
    for (int i = 0; i < C; i++) {
        int g = rank * C + i;
        CHECK(b[i] == n * (n - 1) / 2 + n * g && r2[g] == b[i], "reduce-scatter [%d] %d %d", i,
              b[i], r2[g]);
    }
    /* all-to-all: block j of rank r's input goes to rank j's block r */
    for (int i = 0; i < C * n; i++) {
        a[i] = rank * 100000 + i;
    }
    NCCLOK(ncclAlltoAll(a, b, C, ncclInt32, comm, NULL));
    for (int i = 0; i < C * n; i++) {
        int src = i / C;
        CHECK(b[i] == src * 100000 + rank * C + i % C, "alltoall [%d] %d", i, b[i]);
    }
    free(a);
    free(b);
    free(r2);
    return 0;
}

/* Send/recv in groups: a ring shift both ways at once, and a send to itself. */
static int t_sendrecv(ncclComm_t comm, int rank, int n)
{
    enum { C = 4099 };
    static double out[C], left[C], right[C], self[C];
    int l = (rank + n - 1) % n, r = (rank + 1) % n;
    for (int i = 0; i < C; i++) {
        out[i] = rank + i * 0.5;
    }
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(out, C, ncclFloat64, r, comm, NULL));
    NCCLOK(ncclSend(out, C, ncclFloat64, l, comm, NULL));
    NCCLOK(ncclRecv(left, C, ncclFloat64, l, comm, NULL));
    NCCLOK(ncclRecv(right, C, ncclFloat64, r, comm, NULL));
    NCCLOK(ncclSend(out, C, ncclFloat64, rank, comm, NULL));
    NCCLOK(ncclRecv(self, C, ncclFloat64, rank, comm, NULL));
    NCCLOK(ncclGroupEnd());
    for (int i = 0; i < C; i++) {
        CHECK(left[i] == l + i * 0.5 && right[i] == r + i * 0.5 && self[i] == out[i],
              "sendrecv [%d] %g %g %g", i, left[i], right[i], self[i]);
    }
    CHECK(ncclGroupEnd() == ncclInvalidUsage, "unmatched ncclGroupEnd accepted");
    return 0;
}

/* Split by parity (rank 0 joins none), keys reversing the order; then a collective. */
static int t_split(ncclComm_t comm, int rank, int n)
{
    ncclComm_t sub = NULL;
    int color = rank == 0 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    NCCLOK(ncclCommSplit(comm, color, -rank, &sub, NULL));
    if (rank == 0) {
        CHECK(sub == NULL, "NOCOLOR gave a communicator");
        return 0;
    }
    int members = 0, my = 0, cnt = 0, urank = -1;
    for (int q = 1; q < n; q++) {
        if (q % 2 == color) {
            members++;
            my += q > rank; /* higher old ranks come first (key -rank) */
        }
    }
    NCCLOK(ncclCommCount(sub, &cnt));
    NCCLOK(ncclCommUserRank(sub, &urank));
    CHECK(cnt == members && urank == my, "split: %d of %d, want %d of %d", urank, cnt, my, members);
    int32_t v = rank, sum = 0;
    NCCLOK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, sub, NULL));
    int want = 0;
    for (int q = 1; q < n; q++) {
        want += q % 2 == color ? q : 0;
    }
    CHECK(sum == want, "split allreduce %d want %d", sum, want);
    NCCLOK(ncclCommDestroy(sub));
    return 0;
}

struct abort_arg {
    ncclComm_t comm;
    double delay;
};

static void *abort_later(void *p)
{
    struct abort_arg *a = p;
    usleep((useconds_t)(a->delay * 1e6));
    ncclCommAbort(a->comm);
    return NULL;
}

/* Abort from another thread unblocks a collective that can never complete (its peers never
 * call it): the call fails at once, long before any timeout; the handle is dead afterwards. */
static int t_abort(ncclComm_t comm, int rank, int n)
{
    (void)n;
    pthread_t t;
    /* the others abort well after rank 0 (also under sanitizers), so rank 0 sees its own */
    struct abort_arg a = {comm, rank == 0 ? 0.3 : 3.0};
    float x[64] = {0};
    /* one call together first: rank 0's next call enters by its hold (no reference) */
    NCCLOK(ncclAllReduce(x, x, 64, ncclFloat32, ncclSum, comm, NULL));
    pthread_create(&t, NULL, abort_later, &a);
    if (rank == 0) {
        double t0 = now_s();
        ncclResult_t res = ncclAllReduce(x, x, 64, ncclFloat32, ncclSum, comm, NULL);
        double dt = now_s() - t0;
        CHECK(res == ncclInvalidUsage, "aborted allreduce returned %d", (int)res);
        CHECK(dt > 0.25 && dt < 5, "aborted allreduce took %.2f s", dt);
    }
    pthread_join(t, NULL);
    g_comm_gone = 1;
    CHECK(ncclAllReduce(x, x, 64, ncclFloat32, ncclSum, comm, NULL) == ncclInvalidArgument,
          "an aborted comm was accepted");
    CHECK(strstr(ncclGetLastError(comm), "not a live communicator") != NULL, "message: %s",
          ncclGetLastError(comm));
    return 0;
}

/* A rank dies; the others' next all-reduce fails with ncclRemoteError, the asynchronous error
 * says so too and the message names the dead rank; then they abort. */
static int t_peer_death(ncclComm_t comm, int rank, int n)
{
    int32_t v = 1, s = 0;
    NCCLOK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, NULL));
    CHECK(s == n, "sum %d", s);
    if (rank == n - 1) {
        _exit(0); /* dies without a word, holding its communicator */
    }
    ncclResult_t asyncErr = ncclInProgress;
    NCCLOK(ncclCommGetAsyncError(comm, &asyncErr));
    CHECK(asyncErr == ncclSuccess, "healthy comm reports %d", (int)asyncErr);
    double t0 = now_s();
    ncclResult_t res = ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, NULL);
    CHECK(res == ncclRemoteError, "allreduce with a dead peer returned %d", (int)res);
    CHECK(now_s() - t0 < 20, "took %.1f s to notice", now_s() - t0);
    NCCLOK(ncclCommGetAsyncError(comm, &asyncErr));
    CHECK(asyncErr == ncclRemoteError, "async error %d", (int)asyncErr);
    char want[32];
    snprintf(want, sizeof(want), "rank %d", n - 1);
    CHECK(strstr(ncclGetLastError(comm), want) != NULL, "message does not name %s: %s", want,
          ncclGetLastError(comm));
    NCCLOK(ncclCommAbort(comm));
    g_comm_gone = 1;
    return 0;
}

/* ---- checks that make their own communicators ---- */

static int t_nonblocking_init(ncclComm_t unused, int rank, int n)
{
    (void)unused;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm = NULL;
    cfg.blocking = 0;
    cfg.commName = "nonblocking";
    ncclResult_t res = ncclCommInitRankConfig(&comm, n, g_shared_id, rank, &cfg);
    CHECK(res == ncclInProgress || res == ncclSuccess, "init returned %d", (int)res);
    ncclResult_t state = ncclInProgress;
    int polls = 0;
    do {
        NCCLOK(ncclCommGetAsyncError(comm, &state));
        polls++;
        if (state == ncclInProgress) {
            usleep(1000);
        }
    } while (state == ncclInProgress);
    CHECK(state == ncclSuccess, "init ended with %d: %s", (int)state, ncclGetLastError(comm));
    int64_t v = rank, s = -1;
    NCCLOK(ncclAllReduce(&v, &s, 1, ncclInt64, ncclSum, comm, NULL));
    CHECK(s == (int64_t)n * (n - 1) / 2, "sum %lld", (long long)s);
    /* finalize flushes and frees; the queries still answer; then destroy */
    NCCLOK(ncclCommFinalize(comm));
    int cnt = 0;
    NCCLOK(ncclCommCount(comm, &cnt));
    CHECK(cnt == n, "count after finalize %d", cnt);
    CHECK(ncclAllReduce(&v, &s, 1, ncclInt64, ncclSum, comm, NULL) == ncclInvalidUsage,
          "allreduce after finalize accepted");
    NCCLOK(ncclCommDestroy(comm));
    return 0;
}

/* Shrink: every rank but the last builds a communicator without it. Scalable init first. */
static int t_shrink(ncclComm_t unused, int rank, int n)
{
    (void)unused;
    ncclComm_t comm = NULL, small = NULL;
    NCCLOK(ncclCommInitRankScalable(&comm, n, rank, 1, &g_shared_id, NULL));
    if (rank == n - 1) {
        NCCLOK(ncclCommDestroy(comm));
        return 0;
    }
    int excl = n - 1, cnt = 0;
    NCCLOK(ncclCommShrink(comm, &excl, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    NCCLOK(ncclCommCount(small, &cnt));
    CHECK(cnt == n - 1, "shrunk to %d", cnt);
    int32_t v = 1, s = 0;
    NCCLOK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, small, NULL));
    CHECK(s == n - 1, "sum %d", s);
    NCCLOK(ncclCommDestroy(small));
    NCCLOK(ncclCommDestroy(comm));
    return 0;
}

/* Revoke: the communicator stops, reports success (quiescent), refuses collectives. */
static int t_revoke(ncclComm_t comm, int rank, int n)
{
    (void)rank;
    (void)n;
    int32_t v = 1, s = 0;
    CHECK(ncclCommRevoke(comm, 5) == ncclInvalidArgument, "bad revoke flags accepted");
    NCCLOK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    ncclResult_t st = ncclInProgress;
    NCCLOK(ncclCommGetAsyncError(comm, &st));
    CHECK(st == ncclSuccess, "revoked comm state %d", (int)st);
    CHECK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, NULL) != ncclSuccess,
          "allreduce on a revoked comm succeeded");
    return 0;
}

/* Everything else a program meets: version, strings, config and argument refusals, streams
 * without a GPU, memory, registration, the device API's host side, simulated groups. */
static int t_misc(ncclComm_t comm, int rank, int n)
{
    int ver = 0, dev = -1;
    NCCLOK(ncclGetVersion(&ver));
    /* the library is at least the header's version (NCCL's promise), and says 2.32.3 */
    CHECK(ver >= NCCL_VERSION_CODE && ver == 23203, "version %d, header %d", ver,
          NCCL_VERSION_CODE);
    for (int r = 0; r < ncclNumResults; r++) {
        CHECK(ncclGetErrorString((ncclResult_t)r) != NULL, "no string for %d", r);
    }
    float x[16] = {0};
    CHECK(ncclAllReduce(x, x, 16, (ncclDataType_t)77, ncclSum, comm, NULL) == ncclInvalidArgument,
          "bad datatype accepted");
    CHECK(strstr(ncclGetLastError(comm), "datatype 77") != NULL, "message: %s",
          ncclGetLastError(comm));
    CHECK(ncclAllReduce(x, x, 16, ncclFloat32, (ncclRedOp_t)99, comm, NULL) == ncclInvalidArgument,
          "bad op accepted");
    CHECK(ncclBroadcast(x, x, 16, ncclFloat32, n, comm, NULL) == ncclInvalidArgument,
          "bad root accepted");
    /* a stream where no GPU runtime is loaded: refused, saying why */
    CHECK(ncclAllReduce(x, x, 16, ncclFloat32, ncclSum, comm, (cudaStream_t)0x1) ==
              ncclInvalidUsage,
          "stream accepted without CUDA");
    CHECK(strstr(ncclGetLastError(comm), "CUDA") != NULL, "message: %s", ncclGetLastError(comm));
    CHECK(ncclCommCuDevice(comm, &dev) == ncclInvalidUsage, "a host comm has device %d", dev);
    ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
    ncclComm_t c2 = NULL;
    bad.magic = 0;
    ncclUniqueId junk;
    memset(&junk, 0, sizeof(junk));
    CHECK(ncclCommInitRankConfig(&c2, 2, junk, 0, &bad) == ncclInvalidArgument,
          "uninitialized config accepted");
    CHECK(strstr(ncclGetLastError(NULL), "NCCL_CONFIG_INITIALIZER") != NULL, "message: %s",
          ncclGetLastError(NULL));
    CHECK(ncclCommInitRank(&c2, 2, junk, 5) == ncclInvalidArgument, "rank 5 of 2 accepted");
    /* ncclMemAlloc: host memory here, usable by collectives; freed once */
    float *m = NULL;
    NCCLOK(ncclMemAlloc((void **)&m, 4096 * sizeof(float)));
    CHECK(m != NULL && ((uintptr_t)m % 4096) == 0, "ncclMemAlloc gave %p", (void *)m);
    for (int i = 0; i < 4096; i++) {
        m[i] = (float)rank;
    }
    void *handle = NULL;
    NCCLOK(ncclCommRegister(comm, m, 4096 * sizeof(float), &handle));
    NCCLOK(ncclAllReduce(m, m, 4096, ncclFloat32, ncclSum, comm, NULL));
    CHECK(m[4095] == (float)(n * (n - 1) / 2), "allreduce on ncclMemAlloc memory %g", m[4095]);
    NCCLOK(ncclCommDeregister(comm, handle));
    CHECK(ncclCommDeregister(comm, handle) == ncclInvalidArgument, "double deregister accepted");
    ncclWindow_t win = NULL;
    CHECK(ncclCommWindowRegister(comm, (char *)m + 8, 64, &win, NCCL_WIN_COLL_SYMMETRIC) ==
              ncclInvalidArgument,
          "misaligned symmetric window accepted");
    NCCLOK(ncclCommWindowRegister(comm, m, 4096 * sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC));
    for (int i = 0; i < 4096; i++) { /* on the window: each rank writes its peers' results */
        m[i] = (float)(rank + i % 5);
    }
    NCCLOK(ncclAllReduce(m, m, 4096, ncclFloat32, ncclSum, comm, NULL));
    for (int i = 0; i < 4096; i++) {
        CHECK(m[i] == (float)(n * (n - 1) / 2 + n * (i % 5)), "allreduce on a window: [%d] = %g", i,
              m[i]);
    }
    CHECK(ncclMemFree(m) == ncclInvalidUsage, "ncclMemFree of a block in a window accepted");
    NCCLOK(ncclCommWindowDeregister(comm, win));
    NCCLOK(ncclMemFree(m));
    CHECK(ncclMemFree(m) == ncclInvalidArgument, "double ncclMemFree accepted");
    /* simulated group: priced by tutti's model, not run (the next real call still matches) */
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclAllReduce(x, x, 16, ncclFloat32, ncclSum, comm, NULL));
    NCCLOK(ncclGroupSimulateEnd(&sim));
    CHECK(sim.estimatedTime > 0, "estimated time %g", sim.estimatedTime);
    for (int i = 0; i < 16; i++) {
        x[i] = 1;
    }
    NCCLOK(ncclAllReduce(x, x, 16, ncclFloat32, ncclSum, comm, NULL));
    CHECK(x[0] == (float)n, "allreduce after a simulated group %g", x[0]);
    return 0;
}

/* The host entry points of the device API (NVIDIA declares them in a C++ header). */
typedef struct {
    int nRanks, rank, stride;
} team_t;
extern team_t ncclTeamWorld(ncclComm_t);
extern team_t ncclTeamLsa(ncclComm_t);
extern int ncclTeamRankToWorld(ncclComm_t, team_t, int);
extern int ncclLLA2ACalcSlots(int, int);
extern ncclResult_t ncclDevCommCreate(ncclComm_t, const void *, void *);

static int t_device_api(ncclComm_t comm, int rank, int n)
{
    team_t w = ncclTeamWorld(comm), l = ncclTeamLsa(comm);
    CHECK(w.nRanks == n && w.rank == rank && w.stride == 1, "world %d %d %d", w.nRanks, w.rank,
          w.stride);
    CHECK(l.nRanks == 1 && l.rank == 0, "lsa %d %d", l.nRanks, l.rank);
    CHECK(ncclTeamRankToWorld(comm, w, n - 1) == n - 1, "rank to world");
    CHECK(ncclLLA2ACalcSlots(32, 16) == 64, "LL slots %d", ncclLLA2ACalcSlots(32, 16));
    char devcomm[256];
    CHECK(ncclDevCommCreate(comm, NULL, devcomm) == ncclInvalidUsage, "device comm made");
    CHECK(strstr(ncclGetLastError(comm), "device-side") != NULL, "message: %s",
          ncclGetLastError(comm));
    return 0;
}

/* Several ranks in this one process: ncclCommInitAll, then a group driving all of them. */
static int t_init_all(ncclComm_t unused, int rank, int one)
{
    int n = nranks;
    (void)unused;
    (void)one;
    if (rank != 0) {
        return 0;
    }
    ncclComm_t comms[8];
    int32_t in[8][100], out[8][100];
    NCCLOK(ncclCommInitAll(comms, n, NULL));
    for (int r = 0; r < n; r++) {
        int ur = -1;
        NCCLOK(ncclCommUserRank(comms[r], &ur));
        CHECK(ur == r, "comm %d has rank %d", r, ur);
        for (int i = 0; i < 100; i++) {
            in[r][i] = r * i;
        }
    }
    NCCLOK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
        NCCLOK(ncclAllReduce(in[r], out[r], 100, ncclInt32, ncclMax, comms[r], NULL));
    }
    NCCLOK(ncclGroupEnd());
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < 100; i++) {
            CHECK(out[r][i] == (n - 1) * i, "init-all max [%d][%d] %d", r, i, out[r][i]);
        }
        NCCLOK(ncclCommDestroy(comms[r]));
    }
    return 0;
}

/* Grouped ncclCommInitRank of every rank from one thread (how one process drives several
 * GPUs), then a grouped broadcast. */
static int t_group_init(ncclComm_t unused, int rank, int one)
{
    int n = nranks;
    (void)unused;
    (void)one;
    if (rank != 0) {
        return 0;
    }
    ncclUniqueId id;
    ncclComm_t comms[8];
    double v[8];
    NCCLOK(ncclGetUniqueId(&id));
    NCCLOK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
        NCCLOK(ncclCommInitRank(&comms[r], n, id, r));
    }
    CHECK(ncclAllReduce(v, v, 1, ncclFloat64, ncclSum, comms[0], NULL) == ncclInvalidUsage,
          "a collective on a comm still being made in the group was accepted");
    NCCLOK(ncclGroupEnd());
    NCCLOK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
        v[r] = r == 1 ? 42.5 : 0;
        NCCLOK(ncclBroadcast(&v[r], &v[r], 1, ncclFloat64, 1, comms[r], NULL));
    }
    NCCLOK(ncclGroupEnd());
    for (int r = 0; r < n; r++) {
        CHECK(v[r] == 42.5, "grouped bcast to %d: %g", r, v[r]);
        NCCLOK(ncclCommDestroy(comms[r]));
    }
    return 0;
}

/* The libnccl.so.2 this process runs is the shim named on the command line, not NCCL. */
static int check_loaded(const char *want)
{
    Dl_info info;
    char a[PATH_MAX], b[PATH_MAX];
    if (dladdr((void *)ncclAllReduce, &info) == 0 || info.dli_fname == NULL) {
        fprintf(stderr, "dladdr(ncclAllReduce) failed\n");
        return 1;
    }
    if (realpath(info.dli_fname, a) == NULL || realpath(want, b) == NULL || strcmp(a, b) != 0) {
        fprintf(stderr, "ncclAllReduce comes from %s, not the shim %s\n", info.dli_fname, want);
        return 1;
    }
    if (dlsym(RTLD_DEFAULT, "tutti_allreduce") != NULL) {
        fprintf(stderr, "the shim exports tutti's own names\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SHIM_PATH [NRANKS]\n", argv[0]);
        return 2;
    }
    if (argc > 2) {
        nranks = atoi(argv[2]);
    }
    if (nranks < 2 || nranks > 8) {
        fprintf(stderr, "NRANKS must be 2..8\n");
        return 2;
    }
    shim_report("loaded_is_shim", check_loaded(argv[1]));
    shim_report("allreduce_types_ops", shim_run_ranks(nranks, t_allreduce, 0, 60));
    shim_report("premulsum", shim_run_ranks(nranks, t_premulsum, 0, 60));
    shim_report("collectives", shim_run_ranks(nranks, t_collectives, 0, 60));
    shim_report("sendrecv_group", shim_run_ranks(nranks, t_sendrecv, 0, 60));
    shim_report("split", shim_run_ranks(nranks, t_split, 0, 60));
    shim_report("abort_from_thread", shim_run_ranks(nranks, t_abort, 0, 60));
    shim_report("abort_races_held_calls", shim_run_ranks(1, t_abort_races_held_calls, 1, 120));
    shim_report("async_error_peer_death", shim_run_ranks(nranks, t_peer_death, 0, 60));
    shim_report("revoke", shim_run_ranks(nranks, t_revoke, 0, 60));
    shim_report("misc_refusals_memory", shim_run_ranks(nranks, t_misc, 0, 60));
    shim_report("device_api_host", shim_run_ranks(nranks, t_device_api, 0, 60));
    shim_report("nonblocking_init_finalize", shim_run_ranks(nranks, t_nonblocking_init, 1, 60));
    shim_report("scalable_init_shrink", shim_run_ranks(nranks, t_shrink, 1, 60));
    shim_report("init_all_threads", shim_run_ranks(1, t_init_all, 1, 60));
    shim_report("group_init", shim_run_ranks(1, t_group_init, 1, 60));
    return shim_report_end();
}
