/*
 * shm_watch.c - the local peers a rank knows and the ones it watches. At attach a rank notes
 * where every local peer's control page is in the directory, without touching the pages:
 * reading 511 peers' pages and opening 511 pidfds on each of 512 ranks was 261,632 page faults
 * and pidfds, and made attach take 2 s of each rank's set-up.
 *
 * A rank watches, through a pidfd (kill(pid, 0) where pidfd_open is missing), only the local
 * peers it connects to: its page is read and checked then. A peer that dies is seen by the
 * ranks connected to it; they post an abort notice on every local rank's board (shm_abort), so
 * every rank of the host still learns of it. Any rank that waits on the dead one waits, hop by
 * hop, on a rank that is connected to it and checks it.
 */
#include "shm.h"
#include "base/check.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static int same_host(const struct tutti_tctx_args *a, int peer)
{
    return a->peers[peer].host == a->peers[a->rank].host;
}

/* Is rank r's page a control page that rank r wrote? It reads the page. */
static int page_is_its(const struct shm_ctl *ctl, int r)
{
    return atomic_load(&ctl->magic) == TUTTI_SHM_CTL_MAGIC && ctl->rank == r;
}

tutti_status_t tutti__shm_attach_peers(struct shm_ctx *ctx)
{
    const struct tutti_tctx_args *a = &ctx->args;
    ctx->peers = calloc((size_t)a->nranks, sizeof(*ctx->peers));
    if (ctx->peers == NULL) {
        return tutti__set_error(a->err, TUTTI_ERR_NO_MEMORY, "no memory for shm peers");
    }
    for (int r = 0; r < a->nranks; r++) {
        struct shm_peer *p = &ctx->peers[r];
        p->rank = r;
        p->pidfd = -1;
        if (same_host(a, r)) {
            ctx->nlocal++;
            p->ctl = tutti__shm_dir_page(ctx, r);
        }
    }
    ctx->watch = calloc((size_t)ctx->nlocal, sizeof(*ctx->watch));
    if (ctx->watch == NULL) {
        return tutti__set_error(a->err, TUTTI_ERR_NO_MEMORY, "no memory for shm peers");
    }
    return TUTTI_OK;
}

tutti_status_t tutti__shm_watch(struct shm_ctx *ctx, int rank)
{
    struct shm_peer *p = &ctx->peers[rank];
    if (p->watched) {
        return TUTTI_OK;
    }
    if (!page_is_its(p->ctl, rank)) {
        return tutti__set_error(ctx->args.err, TUTTI_ERR_SYSTEM,
                                "rank %d's control page in %s-d is not its own (magic %#x, rank "
                                "%d): another job with this communicator id?",
                                rank, ctx->prefix, (unsigned)atomic_load(&p->ctl->magic),
                                p->ctl->rank);
    }
    p->pid = p->ctl->pid;
    p->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)p->pid, 0);
    p->watched = 1;
    int n = atomic_load_explicit(&ctx->nwatch, memory_order_relaxed);
    ctx->watch[n] = rank; /* checks on other threads read it after the count */
    atomic_store_explicit(&ctx->nwatch, n + 1, memory_order_release);
    return TUTTI_OK;
}

void tutti__shm_unwatch_all(struct shm_ctx *ctx)
{
    for (int i = 0; i < atomic_load(&ctx->nwatch); i++) {
        struct shm_peer *p = &ctx->peers[ctx->watch[i]];
        if (p->pidfd >= 0) {
            close(p->pidfd);
            p->pidfd = -1;
        }
        p->watched = 0;
    }
    atomic_store(&ctx->nwatch, 0);
    free(ctx->watch);
    ctx->watch = NULL;
}

/* Has this local peer's process ended? (No pidfd: kill(pid, 0).) */
static int process_ended(const struct shm_peer *p)
{
    return kill((pid_t)p->pid, 0) != 0 && errno == ESRCH;
}

/*
 * At most SHM_CHECK_BATCH watched peers a call, in one poll() of their pidfds (readable at
 * exit, zombies included), so that a check costs one system call however many peers a rank
 * watches (every waiting rank checks each millisecond it is awake). A dead peer is still seen
 * within nwatch / SHM_CHECK_BATCH checks.
 */
#define SHM_CHECK_BATCH 16

int tutti__shm_first_ended(struct shm_ctx *ctx)
{
    struct pollfd pfd[SHM_CHECK_BATCH];
    int who[SHM_CHECK_BATCH], n = 0, dead = -1;
    int nwatch = atomic_load_explicit(&ctx->nwatch, memory_order_acquire);
    if (nwatch == 0) {
        return -1;
    }
    int i = atomic_load_explicit(&ctx->check_next, memory_order_relaxed) % nwatch;
    for (int seen = 0; seen < nwatch && n < SHM_CHECK_BATCH && dead < 0; seen++) {
        int r = ctx->watch[i];
        const struct shm_peer *p = &ctx->peers[r];
        if (!atomic_load(&p->ctl->closed)) {
            if (p->pidfd >= 0) {
                pfd[n] = (struct pollfd){.fd = p->pidfd, .events = POLLIN};
                who[n++] = r;
            } else if (process_ended(p)) {
                dead = r;
            }
        }
        i = (i + 1) % nwatch;
    }
    atomic_store_explicit(&ctx->check_next, i, memory_order_relaxed);
    if (dead < 0 && n > 0 && poll(pfd, (nfds_t)n, 0) > 0) {
        for (int k = 0; k < n && dead < 0; k++) {
            dead = pfd[k].revents != 0 ? who[k] : -1;
        }
    }
    return dead;
}
