/*
 * shim_stream_test.c - the shim's stream path, as a GPU program meets it, where no GPU is: a
 * program written against NVIDIA's nccl.h, linked to libnccl-emu.so (the shim with the
 * emulated GPU of tests/integ/emu_dev.c inside: device memory the CPU cannot touch, streams as
 * threads). On N forked ranks, each collective on device buffers and a stream: the call
 * returns, the stream is synchronized, the results are downloaded and checked exactly; grouped
 * send/recv and gather/scatter on one stream (tutti's gather and scatter); ncclMemAlloc
 * giving device memory; ncclCommSuspend releasing the pinned staging, which the next stream
 * call makes again; PreMulSum on device buffers, its scalar on the host (read at creation) or
 * in device memory (read when the call runs).
 *
 *   shim_stream_test NRANKS
 */
#include <nccl.h>

#include "shim_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The emulator's entry points in libnccl-emu.so (tests/nccl/emu_hook.c). */
void ncclTestEmuInstall(void);
void *ncclTestEmuMalloc(size_t bytes);
void ncclTestEmuFree(void *dev);
void ncclTestEmuUpload(void *dev, const void *host, size_t bytes);
void ncclTestEmuDownload(void *host, const void *dev, size_t bytes);
void *ncclTestEmuStreamCreate(void);
int ncclTestEmuStreamSync(void *s, int timeout_ms);
void ncclTestEmuStreamDestroy(void *s);

/* NCCL 2.32's suspend and memory statistics, which CUDA's 2.28 nccl.h does not declare. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommMemStats(ncclComm_t comm, int stat, uint64_t *value);
enum { STAT_SUSPEND = 0, STAT_SUSPENDED = 1, SUSPEND_MEM = 1 };

/* The rank this process runs, for shim_check.h's messages. */
static int g_rank = -1;
#define NCCLOK(call) NCCLOK_ON(comm, call)
#define SYNC(s)      CHECK(ncclTestEmuStreamSync((s), 30000) == 0, "stream sync timed out")

/* A host array of n int32 uploaded to new device memory. */
static int32_t *dev_of(const int32_t *host, size_t n)
{
    int32_t *d = ncclTestEmuMalloc(n * sizeof(int32_t) + 4);
    ncclTestEmuUpload(d, host, n * sizeof(int32_t));
    return d;
}

static int run_rank(int rank, int n, ncclUniqueId id)
{
    ncclComm_t comm = NULL;
    const size_t C = (1u << 20) + 3; /* more than one 4 MiB staging piece of int32 */
    int32_t *h = malloc(C * n * sizeof(int32_t)), *out = malloc(C * n * sizeof(int32_t));
    void *s;

    g_rank = rank;
    ncclTestEmuInstall();
    NCCLOK(ncclCommInitRank(&comm, n, id, rank));
    s = ncclTestEmuStreamCreate();

    /* all-reduce, out of place and in place, SUM and AVG */
    for (size_t i = 0; i < C; i++) {
        h[i] = (int32_t)(rank + i % 7) * (2 * rank + 1);
    }
    int32_t *din = dev_of(h, C), *dout = ncclTestEmuMalloc(C * n * sizeof(int32_t));
    NCCLOK(ncclAllReduce(din, dout, C, ncclInt32, ncclSum, comm, s));
    NCCLOK(ncclAllReduce(din, din, C, ncclInt32, ncclMax, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, dout, C * sizeof(int32_t));
    for (size_t i = 0; i < C; i++) {
        int64_t want = 0;
        for (int r = 0; r < n; r++) {
            want += (int64_t)(r + i % 7) * (2 * r + 1);
        }
        CHECK(out[i] == want, "allreduce[%zu] %d want %lld", i, out[i], (long long)want);
    }
    ncclTestEmuDownload(out, din, C * sizeof(int32_t));
    CHECK(out[5] == (int32_t)(n - 1 + 5) * (2 * n - 1), "in-place max %d", out[5]);

    /* broadcast from the last rank, reduce to rank 0, all-gather, reduce-scatter, all-to-all */
    for (size_t i = 0; i < C * n; i++) {
        h[i] = (int32_t)(i * 3 + rank);
    }
    ncclTestEmuUpload(din, h, C * sizeof(int32_t));
    NCCLOK(ncclBroadcast(din, dout, C, ncclInt32, n - 1, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, dout, C * sizeof(int32_t));
    CHECK(out[0] == n - 1 && out[C - 1] == (int32_t)((C - 1) * 3 + n - 1), "bcast %d", out[0]);
    NCCLOK(ncclReduce(din, dout, C, ncclInt32, ncclSum, 0, comm, s));
    SYNC(s);
    if (rank == 0) {
        ncclTestEmuDownload(out, dout, C * sizeof(int32_t));
        CHECK(out[10] == 30 * n + n * (n - 1) / 2, "reduce %d", out[10]);
    }
    const size_t B = 1000;
    int32_t *dbig = dev_of(h, B * n);
    NCCLOK(ncclAllGather(din, dout, B, ncclInt32, comm, s));
    NCCLOK(ncclReduceScatter(dbig, din, B, ncclInt32, ncclSum, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, dout, B * n * sizeof(int32_t));
    for (size_t i = 0; i < B * n; i++) {
        CHECK(out[i] == (int32_t)((i % B) * 3 + i / B), "allgather[%zu] %d", i, out[i]);
    }
    ncclTestEmuDownload(out, din, B * sizeof(int32_t));
    for (size_t i = 0; i < B; i++) {
        size_t g = rank * B + i;
        CHECK(out[i] == (int32_t)(n * g * 3 + n * (n - 1) / 2), "reduce-scatter[%zu] %d", i,
              out[i]);
    }
    NCCLOK(ncclAlltoAll(dbig, dout, B, ncclInt32, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, dout, B * n * sizeof(int32_t));
    for (size_t i = 0; i < B * n; i++) {
        size_t src = i / B;
        CHECK(out[i] == (int32_t)((rank * B + i % B) * 3 + src), "alltoall[%zu] %d", i, out[i]);
    }

    /* grouped ring send/recv on the stream, then gather and scatter */
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(dbig, B, ncclInt32, right, comm, s));
    NCCLOK(ncclRecv(dout, B, ncclInt32, left, comm, s));
    NCCLOK(ncclGroupEnd());
    SYNC(s);
    ncclTestEmuDownload(out, dout, B * sizeof(int32_t));
    CHECK(out[7] == 21 + left, "ring recv %d", out[7]);
    NCCLOK(ncclGather(dbig, dout, B, ncclInt32, 1, comm, s));
    SYNC(s);
    if (rank == 1) {
        ncclTestEmuDownload(out, dout, B * n * sizeof(int32_t));
        for (size_t i = 0; i < B * n; i++) {
            CHECK(out[i] == (int32_t)((i % B) * 3 + i / B), "gather[%zu] %d", i, out[i]);
        }
    }
    NCCLOK(ncclScatter(dout, din, B, ncclInt32, 1, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, din, B * sizeof(int32_t));
    CHECK(out[9] == 27 + rank, "scatter %d", out[9]);

    /* ncclMemAlloc gives device memory here, which the collectives take */
    int32_t *m = NULL;
    NCCLOK(ncclMemAlloc((void **)&m, 64 * sizeof(int32_t)));
    for (int i = 0; i < 64; i++) {
        h[i] = rank;
    }
    ncclTestEmuUpload(m, h, 64 * sizeof(int32_t));
    NCCLOK(ncclAllReduce(m, m, 64, ncclInt32, ncclSum, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, m, 64 * sizeof(int32_t));
    CHECK(out[63] == n * (n - 1) / 2, "ncclMemAlloc allreduce %d", out[63]);
    NCCLOK(ncclMemFree(m));

    /* suspend releases the stream path's pinned staging; the next call makes it again */
    uint64_t held = 0, suspended = 0;
    NCCLOK(ncclCommMemStats(comm, STAT_SUSPEND, &held));
    CHECK(held > (uint64_t)4 << 20, "suspendable bytes %llu: the staging is not counted",
          (unsigned long long)held);
    NCCLOK(ncclCommSuspend(comm, SUSPEND_MEM));
    NCCLOK(ncclCommMemStats(comm, STAT_SUSPEND, &held));
    NCCLOK(ncclCommMemStats(comm, STAT_SUSPENDED, &suspended));
    CHECK(held == 0 && suspended == 1, "after suspend: %llu bytes, suspended %llu",
          (unsigned long long)held, (unsigned long long)suspended);
    NCCLOK(ncclCommResume(comm));
    ncclTestEmuUpload(din, h, C * sizeof(int32_t));
    NCCLOK(ncclAllReduce(din, dout, C, ncclInt32, ncclMax, comm, s));
    SYNC(s);
    ncclTestEmuDownload(out, dout, C * sizeof(int32_t));
    CHECK(out[C - 1] == (int32_t)((C - 1) * 3 + n - 1), "all-reduce after resume %d", out[C - 1]);

    /* PreMulSum on device buffers: sum over ranks of (rank + 1) * x with the scalar read at
     * creation, then of (rank + 2) * x with the scalar in device memory, read when it runs */
    ncclRedOp_t op, dop;
    int32_t k = rank + 1, kd = rank + 2;
    int32_t *dk = dev_of(&kd, 1);
    for (int i = 0; i < 64; i++) {
        h[i] = 1 + i % 3;
    }
    ncclTestEmuUpload(din, h, 64 * sizeof(int32_t));
    NCCLOK(ncclRedOpCreatePreMulSum(&op, &k, ncclInt32, ncclScalarHostImmediate, comm));
    NCCLOK(ncclRedOpCreatePreMulSum(&dop, dk, ncclInt32, ncclScalarDevice, comm));
    NCCLOK(ncclAllReduce(din, dout, 64, ncclInt32, op, comm, s));
    NCCLOK(ncclAllReduce(din, din, 64, ncclInt32, dop, comm, s)); /* in place */
    SYNC(s);
    ncclTestEmuDownload(out, dout, 64 * sizeof(int32_t));
    ncclTestEmuDownload(h + 64, din, 64 * sizeof(int32_t));
    for (int i = 0; i < 64; i++) {
        int32_t x = 1 + i % 3, w1 = x * n * (n + 1) / 2, w2 = x * (n * (n + 1) / 2 + n);
        CHECK(out[i] == w1 && h[64 + i] == w2, "premulsum[%d] %d %d want %d %d", i, out[i],
              h[64 + i], w1, w2);
    }
    NCCLOK(ncclRedOpDestroy(op, comm));
    NCCLOK(ncclRedOpDestroy(dop, comm));
    ncclTestEmuFree(dk);

    ncclResult_t async = ncclInProgress;
    NCCLOK(ncclCommGetAsyncError(comm, &async));
    CHECK(async == ncclSuccess, "asynchronous error %d: %s", (int)async, ncclGetLastError(comm));

    ncclTestEmuFree(din);
    ncclTestEmuFree(dout);
    ncclTestEmuFree(dbig);
    NCCLOK(ncclCommDestroy(comm));
    ncclTestEmuStreamDestroy(s);
    free(h);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3, bad = 0;
    ncclUniqueId id;
    if (n < 2 || n > 8 || ncclGetUniqueId(&id) != ncclSuccess) {
        fprintf(stderr, "usage: %s NRANKS (2..8)\n", argv[0]);
        return 2;
    }
    pid_t pids[8];
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(120);
            _exit(run_rank(r, n, id));
        }
    }
    for (int r = 0; r < n; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rank %d ended with status 0x%x\n", r, st);
            bad = 1;
        }
    }
    printf("stream_path_collectives %s\n", bad ? "failed" : "ok");
    printf("Synthesis: Tested: 1 | Passing: %d | Failing: %d | Crashing: 0\n", !bad, bad);
    return bad;
}
