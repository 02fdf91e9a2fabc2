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
 * at set-up and never a SIGBUS later) and touched. The host's first rank makes it at attach phase
 * 0 under a name no other user can know (shm_name.c); the other local ranks open it at phase 1,
 * after the set-up's sync, each writing its own page before the next sync, which every rank
 * passes before reading a peer's page; the name goes at phase 2, once every local rank has mapped
 * it, so a killed job leaves nothing behind once its set-up is done. A rank that does not find
 * it is in another /dev/shm (a container): the communicator then uses TCP on every rank.
 */
#include "shm.h"
#include "base/check.h"
#include "base/util.h"

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
    tutti__shm_name(ctx, 'd', 0, 0, 0, buf, len);
}

struct shm_ctl *tutti__shm_dir_page(const struct shm_ctx *ctx, int rank)
{
    return (struct shm_ctl *)((uint8_t *)ctx->dir + (size_t)(rank + 1) * PAGE);
}

/* My page, before anyone reads it. */
static void own_page(struct shm_ctx *ctx)
{
    struct shm_ctl *me = tutti__shm_dir_page(ctx, ctx->args.rank);
    memset(me, 0, PAGE);
    tutti__proc_self(&me->own.id);
    atomic_store_explicit(&me->own.tag, TUTTI_SHM_OWNER_TAG, memory_order_release);
    me->pid = (uint32_t)getpid();
    me->rank = ctx->args.rank;
    tutti__shm_cma_publish(me, tutti__shm_cma_cost(ctx->args.env));
    atomic_store_explicit(&me->magic, TUTTI_SHM_CTL_MAGIC, memory_order_release);
    ctx->ctl = me;
}

tutti_status_t tutti__shm_dir_open(struct shm_ctx *ctx, int make)
{
    char name[64];
    dir_name(ctx, name, sizeof(name));
    size_t len = (size_t)(ctx->args.nranks + 1) * PAGE;
    int made = make;
    int fd = shm_open(name, make ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
    if (fd < 0 && !make && errno == ENOENT) {
        tutti_info(TUTTI_SUBSYS_SHM,
                   "the control directory %s made by rank %d is not in this /dev/shm: shared "
                   "memory not shared",
                   name, ctx->args.peers[ctx->args.rank].host);
        return TUTTI_ERR_UNSUPPORTED;
    }
    if (fd < 0) {
        return tutti__set_error(ctx->args.err, TUTTI_ERR_SYSTEM, "shm_open %s: %s", name,
                                strerror(errno));
    }
    struct stat sb;
    /* Made by the host's first rank, under a name only the job knows; checked all the same
     * (issue 36: a directory planted 0666 exposed every rank's control page). */
    tutti_status_t st = made ? TUTTI_OK : tutti__shm_fd_ours(fd, name, ctx->args.err);
    if (st == TUTTI_OK && made && ftruncate(fd, (off_t)len) != 0) {
        st = tutti__set_error(ctx->args.err, TUTTI_ERR_SYSTEM, "sizing %s to %zu bytes: %s", name,
                              len, strerror(errno));
    }
    if (st == TUTTI_OK && (fstat(fd, &sb) != 0 || (size_t)sb.st_size < len)) {
        st = tutti__set_error(ctx->args.err, TUTTI_ERR_SYSTEM,
                              "%s has %lld bytes, not the %zu of %d ranks", name,
                              (long long)sb.st_size, len, ctx->args.nranks);
    }
    if (st == TUTTI_OK) {
        st = tutti__shm_reserve(fd, (size_t)(ctx->args.rank + 1) * PAGE, PAGE, name, ctx->args.err);
    }
    void *p = MAP_FAILED;
    if (st == TUTTI_OK &&
        (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        st = tutti__set_error(ctx->args.err, TUTTI_ERR_SYSTEM, "mmap %s (%zu bytes): %s", name, len,
                              strerror(errno));
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
    own_page(ctx);
    return TUTTI_OK;
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
