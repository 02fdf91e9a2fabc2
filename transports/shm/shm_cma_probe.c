/*
 * shm_cma_probe.c - whether this rank may read a local peer's memory (process_vm_readv): each
 * rank writes a value at a known address of its control page, and a peer that reads the same
 * value from that address through the kernel may use one copy (shm_cma.c) where the two ranks'
 * costs of that copy, also in their pages, say it pays (shm_cma_pick.c's rule, the one
 * other part of the transport it calls).
 */
#include "shm.h"
#include "base/log.h"

#include <errno.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

void tutti__shm_cma_publish(struct shm_ctl *me, uint32_t cost)
{
    me->cma_cost = cost;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* Not a secret: only a value that another process is unlikely to hold at that address. */
    uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                 (uint64_t)(uintptr_t)me;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    me->cma_nonce = x | 1; /* never 0: a page that was not written reads 0 */
    me->cma_addr = (uint64_t)(uintptr_t)&me->cma_nonce;
}

int tutti__shm_cma_probe(const struct shm_ctx *ctx, int peer)
{
    const struct shm_ctl *ctl = ctx->peers[peer].ctl;
    if (ctx->cma_min == SIZE_MAX || ctl == NULL || ctl->cma_nonce == 0) {
        return 0;
    }
    uint64_t seen = 0;
    struct iovec local = {.iov_base = &seen, .iov_len = sizeof(seen)};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)ctl->cma_addr, .iov_len = sizeof(seen)};
    ssize_t n = process_vm_readv((pid_t)ctl->pid, &local, 1, &remote, 1, 0);
    int ok = n == (ssize_t)sizeof(seen) && seen == ctl->cma_nonce;
    int pays = tutti__shm_cma_pays(ctx->ctl->cma_cost, ctl->cma_cost, TUTTI_SHM_CMA_PAIR_PCT);
    tutti_debug(TUTTI_SUBSYS_SHM, "one copy from rank %d (pid %u): %s%s (costs %u and %u)", peer,
                ctl->pid, ok && pays ? "yes" : "no, frames are copied through the FIFO",
                n < 0 ? (errno == EPERM ? " (process_vm_readv not permitted)"
                                        : " (process_vm_readv failed)")
                      : (ok && !pays ? " (the kernel's copy does not pay here)" : ""),
                ctx->ctl->cma_cost, ctl->cma_cost);
    return ok && pays;
}
