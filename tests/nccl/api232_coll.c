/*
 * api232_coll.c - the collectives of NCCL 2.32 on the shim, host buffers: every nccl*Config
 * form with NULL, with NCCL_COLLCONFIG_INITIALIZER and with fields tutti only names, the
 * refusals of a config not set up by the initializer and of a forced algorithm selection,
 * PreMulSum through the config forms; gather, scatter and all-to-all (tutti's own collectives)
 * from every root, in place and out of place, and with no elements.
 */
#include "api232.h"

#include <stdint.h>
#include <stdlib.h>

/* Every config form once, results checked: rank r contributes r + 1 (+ i). */
static int config_forms(ncclComm_t comm, int rank, int n, const ncclCollConfig_t *cfg)
{
    enum { C = 33 };
    int32_t a[C * 8], b[C * 8];
    int root = n - 1;
    for (int i = 0; i < C * n; i++) {
        a[i] = rank + 1 + i;
    }
    NCCLOK(ncclAllReduceConfig(a, b, C, ncclInt32, ncclSum, comm, NULL, cfg));
    CHECK(b[C - 1] == n * (n + 1) / 2 + n * (C - 1), "allreduce %d", b[C - 1]);
    NCCLOK(ncclReduceConfig(a, b, C, ncclInt32, ncclMax, root, comm, NULL, cfg));
    CHECK(rank != root || b[0] == n, "reduce %d", b[0]);
    NCCLOK(ncclBroadcastConfig(a, b, C, ncclInt32, root, comm, NULL, cfg));
    CHECK(b[3] == n + 3, "broadcast %d", b[3]);
    NCCLOK(ncclAllGatherConfig(a, b, C, ncclInt32, comm, NULL, cfg));
    CHECK(b[C * (n - 1)] == n, "allgather %d", b[C * (n - 1)]);
    NCCLOK(ncclReduceScatterConfig(a, b, C, ncclInt32, ncclSum, comm, NULL, cfg));
    CHECK(b[0] == n * (n + 1) / 2 + n * rank * C, "reduce-scatter %d", b[0]);
    NCCLOK(ncclAlltoAllConfig(a, b, C, ncclInt32, comm, NULL, cfg));
    CHECK(b[C * (n - 1)] == n + rank * C, "alltoall %d", b[C * (n - 1)]);
    NCCLOK(ncclGatherConfig(a, b, C, ncclInt32, root, comm, NULL, cfg));
    CHECK(rank != root || b[C * (n - 1) + 1] == n + 1, "gather %d", b[C * (n - 1) + 1]);
    NCCLOK(ncclScatterConfig(a, b, C, ncclInt32, 0, comm, NULL, cfg));
    CHECK(b[0] == 1 + rank * C, "scatter %d", b[0]);
    return 0;
}

int t_coll_config(ncclComm_t comm, int rank, int n)
{
    ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
    CHECK(config_forms(comm, rank, n, NULL) == 0, "with a NULL config");
    CHECK(config_forms(comm, rank, n, &cfg) == 0, "with NCCL_COLLCONFIG_INITIALIZER");
    cfg.maxCTAs = 2; /* named once per communicator (run_api232_config.sh counts the warning) */
    cfg.userProfilerTag = 42;
    CHECK(config_forms(comm, rank, n, &cfg) == 0 && config_forms(comm, rank, n, &cfg) == 0,
          "with fields tutti only names");
    int32_t x = 1, y = 0;
    cfg.algSelection = "ring";
    REFUSED(comm, ncclAllReduceConfig(&x, &y, 1, ncclInt32, ncclSum, comm, NULL, &cfg),
            ncclInvalidUsage, "forceAlgSelection");
    cfg.forceAlgSelection = 0;
    NCCLOK(ncclAllReduceConfig(&x, &y, 1, ncclInt32, ncclSum, comm, NULL, &cfg));
    CHECK(y == n, "with an unforced selection %d", y);
    ncclCollConfig_t bad = NCCL_COLLCONFIG_INITIALIZER;
    bad.magic = 0;
    REFUSED(comm, ncclBroadcastConfig(&x, &y, 1, ncclInt32, 0, comm, NULL, &bad),
            ncclInvalidArgument, "NCCL_COLLCONFIG_INITIALIZER");
    /* PreMulSum through the config forms: sum of (rank + 1) * x */
    ncclRedOp_t op;
    float k = (float)(rank + 1), in[8 * 4], out[8 * 4];
    for (int i = 0; i < 4 * n; i++) {
        in[i] = (float)(1 + i % 3);
    }
    NCCLOK(ncclRedOpCreatePreMulSum(&op, &k, ncclFloat32, ncclScalarDevice, comm));
    NCCLOK(ncclAllReduceConfig(in, out, 4, ncclFloat32, op, comm, NULL, NULL));
    NCCLOK(ncclReduceScatterConfig(in, in + rank * 4, 4, ncclFloat32, op, comm, NULL, NULL));
    for (int i = 0; i < 4; i++) {
        float w = (float)((1 + i % 3) * n * (n + 1) / 2);
        float ws = (float)((1 + (rank * 4 + i) % 3) * n * (n + 1) / 2);
        CHECK(out[i] == w && in[rank * 4 + i] == ws, "premulsum %g %g want %g %g", out[i],
              in[rank * 4 + i], w, ws);
    }
    REFUSED(comm, ncclAllReduce(in, out, 4, ncclInt32, op, comm, NULL), ncclInvalidArgument,
            "made for float32");
    NCCLOK(ncclRedOpDestroy(op, comm));
    REFUSED(comm, ncclRedOpDestroy(op, comm), ncclInvalidArgument, "destroyed");
    return 0;
}

int t_rooted_native(ncclComm_t comm, int rank, int n)
{
    enum { C = 1031 };
    int64_t *a = calloc((size_t)C * n, sizeof(int64_t)),
            *b = calloc((size_t)C * n, sizeof(int64_t));
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < C * n; i++) {
            a[i] = (int64_t)rank * 100000 + i;
            b[i] = -1;
        }
        NCCLOK(ncclGather(a, b, C, ncclInt64, root, comm, NULL));
        for (int i = 0; rank == root && i < C * n; i++) {
            CHECK(b[i] == (int64_t)(i / C) * 100000 + i % C, "gather root %d [%d]", root, i);
        }
        /* in place at the root: its block already sits at recvbuff + root * count */
        NCCLOK(ncclGather(rank == root ? b + root * C : a, b, C, ncclInt64, root, comm, NULL));
        NCCLOK(ncclScatter(a, b, C, ncclInt64, root, comm, NULL));
        for (int i = 0; i < C; i++) {
            CHECK(b[i] == (int64_t)root * 100000 + rank * C + i, "scatter root %d [%d] %lld", root,
                  i, (long long)b[i]);
        }
        /* in place at the root: recvbuff is sendbuff + root * count */
        NCCLOK(ncclScatter(a, rank == root ? a + root * C : b, C, ncclInt64, root, comm, NULL));
        CHECK(b[0] == (int64_t)root * 100000 + rank * C || rank == root, "in-place scatter");
        NCCLOK(ncclGather(a, b, 0, ncclInt64, root, comm, NULL)); /* no elements */
    }
    for (int i = 0; i < C * n; i++) {
        a[i] = (int64_t)rank * 100000 + i;
    }
    NCCLOK(ncclAlltoAll(a, b, C, ncclInt64, comm, NULL));
    for (int i = 0; i < C * n; i++) {
        CHECK(b[i] == (int64_t)(i / C) * 100000 + rank * C + i % C, "alltoall [%d]", i);
    }
    REFUSED(comm, ncclGather(a, b, C, ncclInt64, n, comm, NULL), ncclInvalidArgument, "root");
    free(a);
    free(b);
    return 0;
}
