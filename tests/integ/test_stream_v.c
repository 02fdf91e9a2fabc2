/*
 * test_stream_v.c - gather, scatter, the variable-size collectives and the pre-multiplied sum on
 * device buffers and streams (src/gpu/stream.c), on the emulated GPU of emu_dev.h: the blocks
 * land where their displacements say and the gaps between them keep what the device buffer had
 * (the staging copies them in before copying the range out), an in-place form works on device
 * memory, a pre-multiplied sum reads its scalar from device memory when the call runs (not when
 * it is issued), and one rank takes the general path (its "copy" has displacements to honour).
 */
#include "emu_dev.h"
#include "harness.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNC_MS 20000
#define MAXR    4
#define GAPV    (-99)

static int32_t val(int rank, size_t i)
{
    return (int32_t)((rank + 1) * 1000 + (int)(i % 997));
}

/* A device buffer of n int32 holding host[]; the caller frees both. */
static int32_t *dev_of(const int32_t *host, size_t n)
{
    int32_t *d = emu_dev_malloc(n * 4 + 4);
    emu_dev_upload(d, host, n * 4);
    return d;
}

static int expect_dev(const char *what, const int32_t *dev, const int32_t *want, size_t n)
{
    int32_t *got = malloc(n * 4 + 4);
    emu_dev_download(got, dev, n * 4);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            int rc = integ_fail("%s: element %zu of %zu is %d, expected %d", what, i, n, got[i],
                                want[i]);
            free(got);
            return rc;
        }
    }
    free(got);
    return 0;
}

/* alltoallv: rank r sends rank j (r + j) % 3 + 1 elements; blocks sit 2 apart (gaps). */
static int alltoallv_case(tutti_comm_t *comm, emu_stream_t *s, int r, int n)
{
    size_t sc[MAXR], sd[MAXR], rc[MAXR], rd[MAXR], sl = 0, rl = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = (size_t)(r + j) % 3 + 1;
        rc[j] = (size_t)(j + r) % 3 + 1;
        sd[j] = sl;
        rd[j] = rl + 2; /* a gap of two before each receive block */
        sl += sc[j];
        rl += rc[j] + 2;
    }
    int32_t hs[64], hr[64], want[64];
    for (size_t i = 0; i < sl; i++) {
        hs[i] = val(r, i);
    }
    for (size_t i = 0; i < rl; i++) {
        hr[i] = want[i] = GAPV;
    }
    for (int j = 0; j < n; j++) {
        size_t jd = 0; /* j's displacement of its block for r */
        for (int q = 0; q < r; q++) {
            jd += (size_t)(j + q) % 3 + 1;
        }
        for (size_t i = 0; i < rc[j]; i++) {
            want[rd[j] + i] = val(j, jd + i);
        }
    }
    int32_t *ds = dev_of(hs, sl), *dr = dev_of(hr, rl);
    ICHECK_OKC(tutti_alltoallv(ds, sc, sd, dr, rc, rd, TUTTI_INT32, comm, s), comm);
    memset(sc, 0xff, sizeof(sc)); /* the stream's batch keeps its own copy */
    memset(rd, 0xff, sizeof(rd));
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "alltoallv: the stream did not finish");
    int bad = expect_dev("alltoallv on device buffers (gaps kept)", dr, want, rl);
    emu_dev_free(ds);
    emu_dev_free(dr);
    return bad;
}

/* allgatherv in place: rank j's block (j + 2 elements) at 3 * j + j * j, gaps between. */
static int allgatherv_case(tutti_comm_t *comm, emu_stream_t *s, int r, int n)
{
    size_t rc[MAXR], rd[MAXR], rl = 0;
    for (int j = 0; j < n; j++) {
        rc[j] = (size_t)j + 2;
        rd[j] = rl + 1;
        rl += rc[j] + 1;
    }
    int32_t h[64], want[64];
    for (size_t i = 0; i < rl; i++) {
        h[i] = want[i] = GAPV;
    }
    for (int j = 0; j < n; j++) {
        for (size_t i = 0; i < rc[j]; i++) {
            want[rd[j] + i] = val(j, i);
            if (j == r) {
                h[rd[j] + i] = val(r, i);
            }
        }
    }
    int32_t *d = dev_of(h, rl);
    ICHECK_OKC(tutti_allgatherv(d + rd[r], rc[r], d, rc, rd, TUTTI_INT32, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "allgatherv: the stream did not finish");
    int bad = expect_dev("allgatherv in place on device memory", d, want, rl);
    emu_dev_free(d);
    return bad;
}

/* reduce_scatterv with a pre-multiplied sum whose scalar (rank + 2) is in device memory and is
 * written on the stream after the call is issued: the call must read the new value. */
static int premul_case(tutti_comm_t *comm, emu_stream_t *s, int r, int n)
{
    size_t rc[MAXR], total = 0, off = 0;
    for (int j = 0; j < n; j++) {
        rc[j] = (size_t)j + 3;
        off += j < r ? rc[j] : 0;
        total += rc[j];
    }
    int32_t h[64], want[64], stale = 1000, scalar = r + 2;
    for (size_t i = 0; i < total; i++) {
        h[i] = val(r, i);
    }
    for (size_t i = 0; i < rc[r]; i++) {
        want[i] = 0;
        for (int q = 0; q < n; q++) {
            want[i] += (q + 2) * val(q, off + i);
        }
    }
    int32_t *ds = dev_of(h, total), *dr = dev_of(h, rc[r]), *dsc = dev_of(&stale, 1);
    tutti_op_t op;
    ICHECK_OKC(tutti_op_create_premul_sum(dsc, TUTTI_INT32, TUTTI_SCALAR_DEVICE, comm, &op), comm);
    emu_stream_hold(s); /* the call's work waits behind this until the scalar is right */
    ICHECK_OKC(tutti_reduce_scatterv(ds, dr, rc, TUTTI_INT32, op, comm, s), comm);
    emu_dev_upload(dsc, &scalar, 4);
    emu_stream_release(s);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "reduce_scatterv: the stream did not finish");
    ICHECK_OKC(tutti_op_destroy(op, comm), comm);
    int bad = expect_dev("reduce_scatterv premul_sum (device scalar)", dr, want, rc[r]);
    emu_dev_free(ds);
    emu_dev_free(dr);
    emu_dev_free(dsc);
    return bad;
}

/* gatherv to the last rank and scatter from rank 0, device buffers. */
static int rooted_case(tutti_comm_t *comm, emu_stream_t *s, int r, int n)
{
    size_t rc[MAXR], rd[MAXR], rl = 0;
    int root = n - 1;
    for (int j = 0; j < n; j++) {
        rc[j] = (size_t)(2 * j + 1);
        rd[j] = rl + 3;
        rl += rc[j] + 3;
    }
    int32_t hs[64], hr[64], want[64];
    for (size_t i = 0; i < 64; i++) {
        hs[i] = val(r, i);
        hr[i] = want[i] = GAPV;
    }
    for (int j = 0; j < n && r == root; j++) {
        for (size_t i = 0; i < rc[j]; i++) {
            want[rd[j] + i] = val(j, i);
        }
    }
    int32_t *ds = dev_of(hs, 64), *dr = dev_of(hr, 64);
    ICHECK_OKC(tutti_gatherv(ds, rc[r], dr, rc, rd, TUTTI_INT32, root, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "gatherv: the stream did not finish");
    int bad = expect_dev("gatherv on device buffers", dr, want, r == root ? rl : 8);
    for (size_t i = 0; i < 5; i++) {
        want[i] = val(0, (size_t)r * 5 + i);
    }
    ICHECK_OKC(tutti_scatter(ds, dr, 5, TUTTI_INT32, 0, comm, s), comm);
    ICHECK(emu_stream_sync(s, SYNC_MS) == 0, "scatter: the stream did not finish");
    bad |= expect_dev("scatter on device buffers", dr, want, 5);
    emu_dev_free(ds);
    emu_dev_free(dr);
    return bad;
}

static int blockwise_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    emu_dev_install();
    emu_stream_t *s = emu_stream_create();
    ICHECK(integ_comm_init(ctx, NULL, &comm) == 0, "init");
    int r = ctx->rank, n = ctx->nranks, bad = 0;
    bad |= alltoallv_case(comm, s, r, n);
    bad |= allgatherv_case(comm, s, r, n);
    bad |= premul_case(comm, s, r, n);
    bad |= rooted_case(comm, s, r, n);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    ICHECK(emu_pinned_live() == 0, "%ld pinned blocks left after destroy", emu_pinned_live());
    emu_stream_destroy(s);
    return bad;
}

Test(stream_v, blockwise_collectives_on_device_buffers_keep_the_gaps, .timeout = 120)
{
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_run_ranks(3, blockwise_rank, NULL, 0);
}

Test(stream_v, one_rank_honours_displacements_and_scales, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_run_ranks(1, blockwise_rank, NULL, 0);
}
