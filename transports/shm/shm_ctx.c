/*
 * shm_ctx.c - the shared-memory transport's per-communicator context: this rank's control
 * page (doorbell, abort board) and its local peers' in the control directory (shm_dir.c,
 * shm_watch.c), and the transport's ops table. Segments left by
 * processes that ended are shm_stale.c's.
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

tutti_status_t tutti__shm_reserve(int fd, size_t off, size_t len, const char *name,
                                  struct tutti_errbuf *eb)
{
    /* Reserved now, so that a full /dev/shm is this error and never a SIGBUS later. */
    int err = posix_fallocate(fd, (off_t)off, (off_t)len);
    if (err == 0) {
        return TUTTI_OK;
    }
    struct statvfs vs;
    unsigned long long avail = 0, size = 0;
    if (statvfs("/dev/shm", &vs) == 0) {
        avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
        size = (unsigned long long)vs.f_blocks * vs.f_frsize;
    }
    return tutti__set_error(
        eb, TUTTI_ERR_SYSTEM,
        "reserving %zu bytes of shared memory for %s: %s; /dev/shm has %llu of %llu bytes "
        "free (df /dev/shm; in a container, give it more: docker run --shm-size, or a "
        "larger tmpfs), or lower TUTTI_MEM_BUDGET / TUTTI_SHM_NSLOTS",
        len, name, strerror(err), avail, size);
}

tutti_status_t tutti__shm_fd_ours(int fd, const char *name, struct tutti_errbuf *eb)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        return tutti__set_error(eb, TUTTI_ERR_SYSTEM, "fstat %s: %s", name, strerror(errno));
    }
    if (sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
        return tutti__set_error(eb, TUTTI_ERR_SYSTEM,
                                "%s belongs to uid %u with mode %o, not to this user (uid %u) "
                                "with mode 600: another user made this name; it is not used",
                                name, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777),
                                (unsigned)geteuid());
    }
    return TUTTI_OK;
}

void *tutti__shm_map(const char *name, size_t len, int create, tutti_status_t *st_p,
                     struct tutti_errbuf *eb)
{
    int fd = shm_open(name, create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
    if (fd < 0 && create && errno == EEXIST) {
        if (tutti__shm_reclaim(name, eb) != 0) {
            *st_p = TUTTI_ERR_SYSTEM; /* in use by a live process: recorded, naming it */
            return NULL;
        }
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) {
        int err = errno;
        *st_p = (!create && err == ENOENT) ? TUTTI_IN_PROGRESS : TUTTI_ERR_SYSTEM;
        if (*st_p != TUTTI_IN_PROGRESS) {
            tutti__set_error(eb, TUTTI_ERR_SYSTEM, "shm_open %s: %s", name, strerror(err));
        }
        return NULL;
    }
    if (create) {
        *st_p = tutti__shm_reserve(fd, 0, len, name, eb);
        if (*st_p != TUTTI_OK) {
            close(fd);
            shm_unlink(name);
            return NULL;
        }
    } else {
        /* A segment opened, not made: the peer's, unless another user made the name first
         * (issue 36: a FIFO planted 0666 by another user received a rank's first frame). */
        if ((*st_p = tutti__shm_fd_ours(fd, name, eb)) != TUTTI_OK) {
            close(fd);
            return NULL;
        }
        struct stat sb;
        if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < len) {
            close(fd);
            *st_p = TUTTI_IN_PROGRESS; /* the owner has not sized it yet */
            return NULL;
        }
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (create) {
            shm_unlink(name);
        }
        *st_p = tutti__set_error(eb, TUTTI_ERR_SYSTEM, "mmap %s (%zu bytes): %s", name, len,
                                 strerror(err));
        return NULL;
    }
    if (create) {
        /* First of all, so that a maker killed from now on leaves a segment known as its. */
        struct shm_owner *own = p;
        tutti__proc_self(&own->id);
        atomic_store_explicit(&own->tag, TUTTI_SHM_OWNER_TAG, memory_order_release);
    }
    *st_p = TUTTI_OK;
    return p;
}

static tutti_status_t shm_init(const struct tutti_tctx_args *args, void **tctx_p, void *blob)
{
    struct shm_ctx *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return tutti__set_error(args->err, TUTTI_ERR_NO_MEMORY, "no memory for the shm context");
    }
    ctx->args = *args;
    tutti__shm_sweep(); /* names left by jobs whose ranks were killed */
    snprintf(ctx->prefix, sizeof(ctx->prefix), "/tutti-%016" PRIx64, args->comm_id);
    ctx->slot_size = tutti__align_up(TUTTI_MAX(args->env->SHM_SLOT_SIZE, (size_t)64), 64);
    long nslots = args->env->SHM_NSLOTS;
    ctx->nslots = (uint32_t)(nslots < 2 ? 2 : (nslots > 1024 ? 1024 : nslots));
    ctx->cma_min = tutti__shm_cma_min(args->env);
    ctx->cma_max = args->env->SHM_CMA_MAX;
    if (tutti__shm_draw_salt(ctx->mine, args->err) != TUTTI_OK) {
        free(ctx);
        return TUTTI_ERR_SYSTEM;
    }
    memcpy(blob, ctx->mine, sizeof(ctx->mine)); /* for the all-gather: names its segments */
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

/*
 * An abort notice a peer posted on this rank's board: TUTTI_ERR_REMOTE naming the peer, or
 * TUTTI_OK when there is none. The peer's own status (TIMEOUT, ABORTED...) is its business: here
 * it is a peer that reported a failure, which tutti/coll.h calls REMOTE (as TCP's notices are);
 * only calls that differ between ranks stay MISMATCH everywhere (tutti__notice_status).
 */
tutti_status_t tutti__shm_board_notice(struct shm_ctx *ctx)
{
    if (atomic_load_explicit(&ctx->ctl->abort_flag, memory_order_acquire) != 2) {
        return TUTTI_OK;
    }
    const struct tutti_abort_info *ai = &ctx->ctl->abort_info;
    char reason[sizeof(ai->reason) + 1];
    memcpy(reason, ai->reason, sizeof(ai->reason));
    reason[sizeof(ai->reason)] = '\0';
    tutti_status_t st = tutti__notice_status(ai);
    if (ai->culprit >= 0 && ai->culprit != ai->origin) {
        return tutti__set_error(ctx->args.err, st, "rank %d reports that rank %d failed: %s",
                                ai->origin, ai->culprit, reason);
    }
    return tutti__set_error(ctx->args.err, st, "rank %d reports: %s", ai->origin, reason);
}

tutti_status_t tutti__shm_peer_gone(struct shm_ctx *ctx, int rank)
{
    /* A peer that failed posts its notice before it closes or exits: the notice says why. */
    tutti_status_t st = tutti__shm_board_notice(ctx);
    if (st != TUTTI_OK) {
        return st;
    }
    const struct shm_peer *p = &ctx->peers[rank];
    char who[128];
    tutti__tpeer_name(ctx->args.peers, rank, who, sizeof(who));
    if (atomic_load(&p->ctl->closed)) {
        return tutti__set_error(ctx->args.err, TUTTI_ERR_REMOTE,
                                "%s destroyed its communicator while this rank still needed it",
                                who);
    }
    return tutti__set_error(ctx->args.err, TUTTI_ERR_REMOTE, "%s died (its process ended)", who);
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
