/*
 * shm_dir.c - the control directory: one segment per communicator and host that holds every
 * local rank's control page (doorbell, abort board, operation counters), instead of one segment
 * per rank that every local peer maps. A rank maps the directory once, so the set-up costs each
 * rank one mapping and its end one unmapping, whatever the number of local ranks (512 ranks
 * mapping 511 segments each made 261,632 mappings, and their unmapping's TLB shootdowns took a
 * sixth of the machine's time).
 *
 * Layout: page 0 is the header (its maker, for the stale-segment judge, shm_stale.c); rank r's
 * page is page r + 1. The file is sized for every rank of the communicator and stays sparse:
 * only the local ranks' pages are reserved (posix_fallocate, so that a full /dev/shm is an error
 * at set-up and never a SIGBUS later) and touched. Every local rank opens it, the first one
 * creating it; each writes its own page before the set-up's sync, and reads its peers' after it;
 * the name goes once every local rank has mapped it (attach phase 1), so a killed job leaves
 * nothing behind once its set-up is done.
 */
#include "shm.h"
#include "check.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE TUTTI_SHM_CTL_BYTES

static void dir_name(const struct shm_ctx *ctx, char *buf, size_t len)
{
    snprintf(buf, len, "%s-d", ctx->prefix);
}

struct shm_ctl *tutti__shm_dir_page(const struct shm_ctx *ctx, int rank)
{
    return (struct shm_ctl *)((uint8_t *)ctx->dir + (size_t)(rank + 1) * PAGE);
}

/* Open (or create, then as its maker record this process in the header) the directory. */
static int dir_open(const char *name, int *made_p)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    *made_p = fd >= 0;
    if (fd < 0 && errno == EEXIST) {
        fd = shm_open(name, O_RDWR, 0600);
    }
    return fd;
}

/* My page, before anyone reads it: a live rank of another job with my rank there is a clash
 * (two jobs with one communicator id); a page left by an ended process is mine to reuse. */
static tutti_status_t own_page(struct shm_ctx *ctx, const char *name)
{
    struct shm_ctl *me = tutti__shm_dir_page(ctx, ctx->args.rank);
    if (atomic_load(&me->own.tag) == TUTTI_SHM_OWNER_TAG && tutti__proc_alive(&me->own.id) != 0 &&
        me->own.id.pid != (uint32_t)getpid()) {
        return tutti__set_error(ctx->args.comm, TUTTI_ERR_SYSTEM,
                                "%s: rank %d's control page belongs to pid %u, which is running "
                                "(another job with the same communicator id? give each its own "
                                "TUTTI_ROOT or launcher job id)",
                                name, ctx->args.rank, me->own.id.pid);
    }
    memset(me, 0, PAGE);
    tutti__proc_self(&me->own.id);
    atomic_store_explicit(&me->own.tag, TUTTI_SHM_OWNER_TAG, memory_order_release);
    me->pid = (uint32_t)getpid();
    me->rank = ctx->args.rank;
    tutti__shm_cma_publish(me);
    atomic_store_explicit(&me->magic, TUTTI_SHM_CTL_MAGIC, memory_order_release);
    ctx->ctl = me;
    return TUTTI_OK;
}

tutti_status_t tutti__shm_dir_open(struct shm_ctx *ctx)
{
    char name[64];
    dir_name(ctx, name, sizeof(name));
    size_t len = (size_t)(ctx->args.nranks + 1) * PAGE;
    int made = 0, fd = dir_open(name, &made);
    if (fd < 0) {
        return tutti__set_error(ctx->args.comm, TUTTI_ERR_SYSTEM, "shm_open %s: %s", name,
                                strerror(errno));
    }
    struct stat sb;
    /* made by another rank of the job, or by another user who took the name first: then it is
     * not used (issue 36: a directory planted 0666 exposed every rank's control page) */
    tutti_status_t st = made ? TUTTI_OK : tutti__shm_fd_ours(fd, name, ctx->args.comm);
    if (st == TUTTI_OK &&
        (fstat(fd, &sb) != 0 || ((size_t)sb.st_size < len && ftruncate(fd, (off_t)len) != 0))) {
        st = tutti__set_error(ctx->args.comm, TUTTI_ERR_SYSTEM, "sizing %s to %zu bytes: %s", name,
                              len, strerror(errno));
    }
    if (st == TUTTI_OK) {
        st =
            tutti__shm_reserve(fd, (size_t)(ctx->args.rank + 1) * PAGE, PAGE, name, ctx->args.comm);
    }
    void *p = MAP_FAILED;
    if (st == TUTTI_OK &&
        (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        st = tutti__set_error(ctx->args.comm, TUTTI_ERR_SYSTEM, "mmap %s (%zu bytes): %s", name,
                              len, strerror(errno));
    }
    close(fd);
    if (st != TUTTI_OK) {
        if (made) {
            shm_unlink(name);
        }
        return st;
    }
    ctx->dir = p;
    ctx->dir_len = len;
    ctx->dir_linked = 1;
    if (made) { /* for the stale-segment judge: the maker, as tutti__shm_map's segments */
        struct shm_owner *own = p;
        tutti__proc_self(&own->id);
        atomic_store_explicit(&own->tag, TUTTI_SHM_OWNER_TAG, memory_order_release);
    }
    st = own_page(ctx, name);
    if (st != TUTTI_OK) {
        ctx->dir_linked = 0; /* the name is the live holder's: unmap only */
        tutti__shm_dir_close(ctx);
    }
    return st;
}

int tutti__shm_dir_missing(const struct shm_ctx *ctx)
{
    long sys = sysconf(_SC_PAGESIZE); /* mincore's unit: a control page, or several */
    size_t npages = sys > 0 ? (ctx->dir_len + (size_t)sys - 1) / (size_t)sys : 0;
    unsigned char *vec = npages > 0 ? malloc(npages) : NULL;
    if (vec == NULL || mincore(ctx->dir, ctx->dir_len, vec) != 0) {
        free(vec);
        return -2;
    }
    int missing = -1;
    for (int r = 0; r < ctx->args.nranks && missing < 0; r++) {
        size_t off = (size_t)(r + 1) * PAGE;
        if (ctx->peers[r].ctl != NULL && (vec[off / (size_t)sys] & 1) == 0) {
            missing = r;
        }
    }
    free(vec);
    return missing;
}

void tutti__shm_dir_unlink(struct shm_ctx *ctx)
{
    if (ctx->dir_linked) {
        char name[64];
        dir_name(ctx, name, sizeof(name));
        (void)shm_unlink(name); /* every local rank does: the first one removes it */
        ctx->dir_linked = 0;
    }
}

void tutti__shm_dir_close(struct shm_ctx *ctx)
{
    tutti__shm_dir_unlink(ctx);
    if (ctx->dir != NULL) {
        munmap(ctx->dir, ctx->dir_len);
        ctx->dir = NULL;
        ctx->ctl = NULL;
    }
}
