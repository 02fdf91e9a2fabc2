/*
 * shm_ctx.c - the shared-memory transport's per-communicator context: this rank's control
 * page (doorbell, abort board) and its local peers' in the control directory (shm_dir.c,
 * shm_watch.c), and the transport's ops table, the top of the transport: the other files do not
 * call back into it. Segments are made by shm_seg.c; segments left by processes that ended are
 * shm_stale.c's.
 */
#include "shm.h"
#include "base/check.h"
#include "base/env.h"
#include "base/global.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(struct shm_ctl) <= TUTTI_SHM_CTL_BYTES, "a control page fits one page");

static tutti_status_t shm_init(const struct tutti_tctx_args *args, void **tctx_p, void *blob)
{
    struct shm_ctx *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "no memory for the shm context");
    }
    ctx->args = *args;
    ctx->ops = &tutti__shm_ops;
    tutti__shm_sweep(); /* names left by jobs whose ranks were killed */
    snprintf(ctx->prefix, sizeof(ctx->prefix), "/tutti-%016" PRIx64, args->comm_id);
    ctx->slot_size = tutti__align_up(TUTTI_MAX(args->env->SHM_SLOT_SIZE, (size_t)64), 64);
    long nslots = args->env->SHM_NSLOTS;
    ctx->nslots = (uint32_t)(nslots < 2 ? 2 : (nslots > 1024 ? 1024 : nslots));
    ctx->cma_min = tutti__shm_cma_min(args->env);
    ctx->cma_max = args->env->SHM_CMA_MAX;
    ctx->cma_share = (uint32_t)args->env->SHM_CMA_SHARE;
    ctx->cma_lone = args->env->SHM_CMA_LONE;
    ctx->fill = (uint32_t)args->env->SHM_FILL;
    ctx->rotate_min = args->env->SHM_ROTATE;
    if (tutti__shm_draw_salt(ctx->mine, args->err) != TUTTI_OK) {
        free(ctx);
        return TUTTI_ERR_SYSTEM;
    }
    tutti__shm_publish(ctx, blob); /* for the all-gather: names its segments, says their layout */
    *tctx_p = ctx;
    return TUTTI_OK;
}

/* Shared memory is an optimisation: a directory that cannot be made or opened makes the caller
 * fall back to TCP on every rank (UNSUPPORTED), saying why. */
static tutti_status_t dir_open(struct shm_ctx *ctx, int make)
{
    tutti_status_t st = tutti__shm_dir_open(ctx, make);
    if (st != TUTTI_OK && st != TUTTI_ERR_UNSUPPORTED) {
        tutti_info(TUTTI_SUBSYS_SHM, "shared memory unavailable: %s", tutti__tls.last_error);
        st = TUTTI_ERR_UNSUPPORTED;
    }
    return st;
}

/*
 * Phase 0: the host's first rank makes the directory, under a name keyed by its salt. Phase 1
 * (after a sync): the other local ranks open it; every rank knows its local peers. Phase 2 (after
 * the next sync): every local rank has mapped the directory; its name can go.
 */
static tutti_status_t shm_attach(void *tctx, int phase)
{
    struct shm_ctx *ctx = tctx;
    const struct tutti_tctx_args *a = &ctx->args;
    int first = a->peers[a->rank].host == a->rank;
    if (phase == 0) {
        TUTTI_CHECK(tutti__shm_check_layouts(ctx));
        memcpy(ctx->salt, a->peers[a->peers[a->rank].host].blob[TUTTI_TRANSPORT_SHM],
               sizeof(ctx->salt));
        return first ? dir_open(ctx, 1) : TUTTI_OK;
    }
    if (phase == 1) {
        TUTTI_CHECK(first ? TUTTI_OK : dir_open(ctx, 0));
        return tutti__shm_attach_peers(ctx);
    }
    tutti__shm_dir_unlink(ctx);
    return TUTTI_OK;
}

static tutti_status_t shm_fini(void *tctx)
{
    struct shm_ctx *ctx = tctx;
    if (ctx == NULL) {
        return TUTTI_OK;
    }
    if (ctx->ctl != NULL) {
        atomic_store(&ctx->ctl->closed, 1);
    }
    while (ctx->nconns > 0) {
        tutti__shm_close(&ctx->conns[0]->base); /* connections never completed */
    }
    if (ctx->peers != NULL) {
        tutti__shm_unwatch_all(ctx);
    }
    tutti__shm_dir_close(ctx); /* one unmapping for every local rank's page */
    free(ctx->peers);
    free(ctx->conns);
    free(ctx);
    return TUTTI_OK;
}

/* Ranks of one host: every rank mapped the directory that holds its local peers' pages. */
static tutti_status_t shm_can_connect(void *tctx, int a, int b, int *score_p)
{
    const struct shm_ctx *ctx = tctx;
    *score_p = ctx->args.peers[a].host == ctx->args.peers[b].host ? 10 : 0;
    return TUTTI_OK;
}

static tutti_status_t shm_check(void *tctx)
{
    struct shm_ctx *ctx = tctx;
    TUTTI_CHECK(tutti__shm_board_notice(ctx));
    tutti__shm_unlink_attached(ctx);
    int r = tutti__shm_first_ended(ctx);
    if (r >= 0) {
        tutti__shm_forget(ctx, r); /* what it made is nobody's now */
        return tutti__shm_peer_gone(ctx, r);
    }
    return TUTTI_OK;
}

/* footprint op: my control page and the receive FIFOs I made (a send FIFO is its
 * receiver's). */
static void shm_footprint(void *tctx, struct tutti_footprint *fp)
{
    struct shm_ctx *ctx = tctx;
    fp->shared += ctx->ctl != NULL ? TUTTI_SHM_CTL_BYTES : 0; /* my page of the directory */
    for (int i = 0; i < ctx->nconns; i++) {
        fp->shared += ctx->conns[i]->recv.hdr != NULL ? ctx->conns[i]->recv.map_len : 0;
    }
}

/* Post the notice on every local peer's board (the first notice wins) and wake it. */
static tutti_status_t shm_abort(void *tctx, const struct tutti_abort_info *info)
{
    struct shm_ctx *ctx = tctx;
    for (int r = 0; ctx->peers != NULL && r < ctx->args.nranks; r++) {
        struct shm_ctl *ctl = ctx->peers[r].ctl;
        if (r == ctx->args.rank || ctl == NULL) {
            continue;
        }
        uint32_t expect = 0;
        if (atomic_compare_exchange_strong(&ctl->abort_flag, &expect, 1)) {
            ctl->abort_info = *info;
            atomic_store_explicit(&ctl->abort_flag, 2, memory_order_release);
        }
        tutti__shm_ring(ctl);
    }
    return TUTTI_OK;
}

static struct tutti_doorbell *shm_doorbell(void *tctx)
{
    return &((struct shm_ctx *)tctx)->ctl->doorbell;
}

static struct tutti_seq_board *shm_seq_board(void *tctx, int rank)
{
    struct shm_ctx *ctx = tctx;
    if (rank == ctx->args.rank) {
        return &ctx->ctl->seq;
    }
    if (ctx->peers == NULL || rank < 0 || rank >= ctx->args.nranks ||
        ctx->peers[rank].ctl == NULL) {
        return NULL;
    }
    return &ctx->peers[rank].ctl->seq;
}

static tutti_status_t shm_progress(struct tutti_tconn *c, int *moved_p)
{
    (void)c;
    *moved_p = 0;
    return TUTTI_OK;
}

static int shm_pollfds(struct tutti_tconn *c, struct pollfd *fds, int max)
{
    (void)c;
    (void)fds;
    (void)max;
    return 0;
}

const struct tutti_transport_ops tutti__shm_ops = {
    .size = sizeof(struct tutti_transport_ops),
    .id = TUTTI_TRANSPORT_SHM,
    .name = "shm",
    /* Both by one copy (shm_cma.c) where the kernel allows it; else post_ref copies into the
     * slot and recv_place records nothing. */
    .flags = TUTTI_TRANSPORT_SEND_REF | TUTTI_TRANSPORT_RECV_PLACE,
    .init = shm_init,
    .attach = shm_attach,
    .fini = shm_fini,
    .can_connect = shm_can_connect,
    .connect = tutti__shm_connect,
    .check = shm_check,
    .footprint = shm_footprint,
    .abort = shm_abort,
    .doorbell = shm_doorbell,
    .seq_board = shm_seq_board,
    .send_acquire = tutti__shm_send_acquire,
    .send_post = tutti__shm_send_post,
    .send_post_ref = tutti__shm_send_post_ref,
    .recv_peek = tutti__shm_recv_peek,
    .recv_place = tutti__shm_recv_place,
    .peek_fp = tutti__shm_peek_fp,
    .recv_release = tutti__shm_recv_release,
    .progress = shm_progress,
    .flushed = tutti__shm_flushed,
    .pollfds = shm_pollfds,
    .close = tutti__shm_close,
};
