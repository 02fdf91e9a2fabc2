/*
 * api232_comm.c - NCCL 2.32's communicator calls on the shim, on forked ranks: ncclCommGrow
 * (existing ranks and new processes that get the root's id through a pipe, then a collective
 * on the grown communicator; one id at a time, each used once), ncclCommSuspend/Resume (calls
 * refused while suspended, collectives and groups exact after resume), ncclCommMemStats,
 * ncclTimeout from a collective whose peers never come, and ncclConfig_t's fields (the
 * warnings and channels are checked from the log by run_api232_config.sh).
 */
#include "api232.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Sum of every rank's (rank + 1) over comm of n ranks: the check of a communicator. */
static int sum_check(ncclComm_t comm, int rank, int n)
{
    int64_t v = rank + 1, s = 0;
    NCCLOK(ncclAllReduce(&v, &s, 1, ncclInt64, ncclSum, comm, NULL));
    CHECK(s == (int64_t)n * (n + 1) / 2, "sum over %d ranks %lld", n, (long long)s);
    return 0;
}

/* An existing rank of the grow: the root makes the id and hands it to the new ranks. */
static int grow_old(ncclComm_t comm, int rank, int nold, int nnew, int wfd)
{
    int n = nold + nnew, cnt = 0, me = -1;
    ncclUniqueId gid, again;
    ncclComm_t big = NULL;
    CHECK(sum_check(comm, rank, nold) == 0, "before the grow");
    REFUSED(comm, ncclCommGrow(comm, nold, NULL, -1, &big, NULL), ncclInvalidArgument,
            "does not grow");
    REFUSED(comm, ncclCommGrow(comm, n, NULL, rank, &big, NULL), ncclInvalidArgument, "pass -1");
    if (rank == 0) {
        NCCLOK(ncclCommGetUniqueId(comm, &gid));
        REFUSED(comm, ncclCommGetUniqueId(comm, &again), ncclInvalidUsage, "one id at a time");
        for (int i = 0; i < nnew; i++) {
            CHECK(write(wfd, &gid, sizeof(gid)) == (ssize_t)sizeof(gid), "pipe");
        }
    }
    NCCLOK(ncclCommGrow(comm, n, rank == 0 ? &gid : NULL, -1, &big, NULL));
    NCCLOK(ncclCommCount(big, &cnt));
    NCCLOK(ncclCommUserRank(big, &me));
    CHECK(cnt == n && me == rank, "grown: rank %d of %d", me, cnt);
    CHECK(sum_check(big, rank, n) == 0, "on the grown communicator");
    if (rank == 0) { /* used: refused at the root */
        REFUSED(comm, ncclCommGrow(comm, n, &gid, -1, &big, NULL), ncclInvalidUsage,
                "used already");
    }
    CHECK(sum_check(comm, rank, nold) == 0, "the old communicator after the grow");
    NCCLOK(ncclCommDestroy(big));
    return 0;
}

/* A new rank: the id from the pipe, its assigned rank. */
static int grow_new(int rank, int n, int rfd)
{
    ncclComm_t comm = NULL, big = NULL;
    ncclUniqueId gid;
    CHECK(read(rfd, &gid, sizeof(gid)) == (ssize_t)sizeof(gid), "no id from the root");
    REFUSED(NULL, ncclCommGrow(NULL, n, NULL, rank, &big, NULL), ncclInvalidArgument, "uniqueId");
    NCCLOK(ncclCommGrow(NULL, n, &gid, rank, &big, NULL));
    CHECK(sum_check(big, rank, n) == 0, "on the grown communicator (new rank)");
    NCCLOK(ncclCommDestroy(big));
    return 0;
}

int api232_grow(int nold, int nnew)
{
    ncclUniqueId id;
    int fds[2];
    pid_t pids[16];
    if (nold + nnew > 16 || pipe(fds) != 0 || ncclGetUniqueId(&id) != ncclSuccess) {
        return 1;
    }
    for (int r = 0; r < nold + nnew; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            ncclComm_t comm = NULL;
            int rc;
            g_rank = r;
            alarm(60);
            if (r >= nold) {
                close(fds[1]);
                _exit(grow_new(r, nold + nnew, fds[0]));
            }
            close(fds[0]);
            if (ncclCommInitRank(&comm, nold, id, r) != ncclSuccess) {
                fprintf(stderr, "rank %d: %s\n", r, ncclGetLastError(NULL));
                _exit(1);
            }
            rc = grow_old(comm, r, nold, nnew, fds[1]);
            _exit(rc != 0 ? rc : ncclCommDestroy(comm) != ncclSuccess);
        }
    }
    close(fds[0]);
    close(fds[1]);
    int bad = 0;
    for (int r = 0; r < nold + nnew; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "grow: rank %d ended with status 0x%x\n", r, st);
            bad = 1;
        }
    }
    return bad;
}

/* A ring exchange in a group: each rank sends `count` values to the right. */
static int ring(ncclComm_t comm, int rank, int n, size_t count)
{
    int32_t *out = malloc(count * sizeof(int32_t)), *in = malloc(count * sizeof(int32_t));
    for (size_t i = 0; i < count; i++) {
        out[i] = rank * 1000 + (int32_t)(i % 1000);
    }
    int left = (rank + n - 1) % n;
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(out, count, ncclInt32, (rank + 1) % n, comm, NULL));
    NCCLOK(ncclRecv(in, count, ncclInt32, left, comm, NULL));
    NCCLOK(ncclGroupEnd());
    CHECK(in[0] == left * 1000 && in[count - 1] == left * 1000 + (int32_t)((count - 1) % 1000),
          "ring from %d: %d", left, in[0]);
    free(out);
    free(in);
    return 0;
}

int t_suspend_resume(ncclComm_t comm, int rank, int n)
{
    uint64_t v = 7;
    int cnt = 0;
    CHECK(sum_check(comm, rank, n) == 0 && ring(comm, rank, n, 100000) == 0, "before");
    REFUSED(NULL, ncclCommSuspend(comm, 0x10), ncclInvalidArgument, "NCCL_SUSPEND_MEM");
    NCCLOK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    int64_t x = 1, y = 0;
    REFUSED(comm, ncclAllReduce(&x, &y, 1, ncclInt64, ncclSum, comm, NULL), ncclInvalidUsage,
            "suspended");
    REFUSED(comm, ncclCommSuspend(comm, 0), ncclInvalidUsage, "suspended");
    REFUSED(comm, ncclCommFinalize(comm), ncclInvalidUsage, "ncclCommResume");
    NCCLOK(ncclCommCount(comm, &cnt)); /* queries still answer */
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
    CHECK(cnt == n && v == 1, "while suspended: count %d, suspended %llu", cnt,
          (unsigned long long)v);
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemSuspend, &v));
    CHECK(v == 0, "suspendable bytes while released: %llu", (unsigned long long)v);
    NCCLOK(ncclCommResume(comm));
    REFUSED(comm, ncclCommResume(comm), ncclInvalidUsage, "not suspended");
    /* what was released is rebuilt: a large all-reduce and a group, exact */
    enum { C = 300000 };
    float *a = malloc(C * sizeof(float));
    for (int i = 0; i < C; i++) {
        a[i] = (float)(rank + i % 5);
    }
    NCCLOK(ncclAllReduce(a, a, C, ncclFloat32, ncclSum, comm, NULL));
    for (int i = 0; i < C; i++) {
        CHECK(a[i] == (float)(n * (n - 1) / 2 + n * (i % 5)), "after resume [%d] %g", i, a[i]);
    }
    free(a);
    CHECK(ring(comm, rank, n, 100000) == 0, "group after resume");
    /* without NCCL_SUSPEND_MEM nothing is released, calls are still refused */
    NCCLOK(ncclCommSuspend(comm, 0));
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v));
    CHECK(v == 0, "suspended without MEM reports %llu", (unsigned long long)v);
    REFUSED(comm, ncclAllReduce(&x, &y, 1, ncclInt64, ncclSum, comm, NULL), ncclInvalidUsage,
            "suspended");
    NCCLOK(ncclCommResume(comm));
    return sum_check(comm, rank, n);
}

int t_mem_stats(ncclComm_t comm, int rank, int n)
{
    uint64_t s = 0, p = 0, t = 0, d = 9;
    enum { C = 1 << 20 };
    float *a = calloc(C, sizeof(float));
    NCCLOK(ncclAllReduce(a, a, C, ncclFloat32, ncclSum, comm, NULL));
    free(a);
    CHECK(ring(comm, rank, n, 1000) == 0, "group");
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemSuspend, &s));
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemPersist, &p));
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &t));
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &d));
    CHECK(s > 0 && p > 0 && t == s + p && d == 0, "suspend %llu persist %llu total %llu, %llu",
          (unsigned long long)s, (unsigned long long)p, (unsigned long long)t,
          (unsigned long long)d);
    NCCLOK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &t));
    NCCLOK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &d));
    CHECK(t == p && d == 1, "after suspend: total %llu (persist %llu), suspended %llu",
          (unsigned long long)t, (unsigned long long)p, (unsigned long long)d);
    NCCLOK(ncclCommResume(comm));
    REFUSED(NULL, ncclCommMemStats(comm, (ncclCommMemStat_t)9, &t), ncclInvalidArgument,
            "ncclCommMemStat_t");
    REFUSED(NULL, ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL), ncclInvalidArgument, "NULL");
    return sum_check(comm, rank, n);
}

/* Run with TUTTI_TIMEOUT=2s: rank 0's all-reduce waits for ranks that never call it. */
int t_timeout(ncclComm_t comm, int rank, int n)
{
    (void)n;
    if (rank != 0) {
        sleep(6); /* alive, but not calling */
        g_comm_gone = 1;
        ncclCommAbort(comm);
        return 0;
    }
    int64_t x = 1, y = 0;
    ncclResult_t r = ncclAllReduce(&x, &y, 1, ncclInt64, ncclSum, comm, NULL);
    CHECK(r == ncclTimeout, "all-reduce without peers returned %d (%s): %s", (int)r,
          ncclGetErrorString(r), ncclGetLastError(comm));
    CHECK(strstr(ncclGetErrorString(ncclTimeout), "timed out") != NULL, "string '%s'",
          ncclGetErrorString(ncclTimeout));
    ncclResult_t async = ncclSuccess;
    NCCLOK(ncclCommGetAsyncError(comm, &async));
    CHECK(async == ncclTimeout, "asynchronous error %d", (int)async);
    g_comm_gone = 1;
    NCCLOK(ncclCommAbort(comm));
    return 0;
}

/* A communicator made with every kind of config field set; run_api232_config.sh reads the
 * warnings and the channels from the log. */
int t_comm_config(ncclComm_t unused, int rank, int n)
{
    (void)unused;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER, bad = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm = NULL, sub = NULL;
    bad.minCTAs = 5;
    bad.maxCTAs = 4;
    REFUSED(NULL, ncclCommInitRankConfig(&comm, n, g_shared_id, rank, &bad), ncclInvalidArgument,
            "minCTAs 5 and maxCTAs 4");
    cfg.commName = "cfgtest";
    cfg.minCTAs = 3;
    cfg.maxCTAs = 4;
    cfg.netName = "IB";
    cfg.splitShare = 1;
    cfg.graphUsageMode = 0;
    cfg.hostCftMode = ncclHostCftDisable;
    NCCLOK(ncclCommInitRankConfig(&comm, n, g_shared_id, rank, &cfg));
    CHECK(sum_check(comm, rank, n) == 0, "on the configured communicator");
    REFUSED(comm, ncclCommResume(comm), ncclInvalidUsage, "(communicator 'cfgtest')");
    ncclConfig_t child = NCCL_CONFIG_INITIALIZER;
    child.maxCTAs = 1;
    NCCLOK(ncclCommSplit(comm, 0, rank, &sub, &child));
    CHECK(sum_check(sub, rank, n) == 0, "on its split");
    NCCLOK(ncclCommDestroy(sub));
    NCCLOK(ncclCommDestroy(comm));
    return 0;
}
