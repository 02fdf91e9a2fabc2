/*
 * shm_cma_pick.c - whether a pair of local ranks sends large frames by reference at all
 * (TUTTI_SHM_CMA): always, never, or (2, the default) where the kernel's one copy pays here.
 *
 * A frame by reference costs the receiver one process_vm_readv; through the FIFO it costs a
 * memcpy on each side. Which is faster depends on the machine: on an Intel VM the kernel's copy
 * made send/recv 1.3-1.9 times as fast (2026-11-27-shm-cma.md); on the AMD EPYC VM of
 * 2026-11-30 it copied at 11-14 GB/s where memcpy ran at 45-57 (3.5-4.5 times as long), and the
 * FIFO (its slots streamed where the cores share no cache, exec/fill.c) was faster at every
 * size; on the same kind of VM on 2026-12-01 it took 1.9-2.2 times a memcpy, and by reference
 * send/recv was 1.1-1.8 times and all-to-all 1.2-1.4 times as fast as through the FIFO
 * (2026-12-01-shm-cma-pair.md). So each process times both once, on PICK_BYTES read from its
 * own memory, best of PICK_ROUNDS, and publishes the ratio (its cost) in its control page; a
 * receiver takes frames by reference from a sender when the two costs average at most
 * TUTTI_SHM_CMA_PAIR_PCT, the same answer for both directions of a pair (each process deciding
 * on its own cost alone split pairs near the line: one direction by reference, the other not).
 *
 * That holds where both ranks send and receive: through the FIFO each then makes two memcpys
 * per frame exchanged, by reference one kernel copy. A rank that only sends in a call (a
 * broadcast's root) leaves every copy by reference to its receiver, where the FIFO splits them
 * one each; so unless the kernel's copy costs at most a memcpy (TUTTI_SHM_CMA_LONE_PCT) such a
 * rank puts every frame of a large call into the FIFO (TUTTI_SHM_CMA_LONE, tutti_tconn.lone_max):
 * on the VM of 2026-12-01 a 2-rank broadcast of 1-4 MiB took 1.2-1.4 times as long by reference
 * (with every third frame in the FIFO, TUTTI_SHM_CMA_SHARE) as through the FIFO, while at
 * 256 KiB it took 0.8 times as long (2026-12-01-lone-sender.md); at 512 KiB by reference with
 * no frame in the FIFO 0.85 times (2026-12-02-lone-share.md), and such a rank shares no frame
 * where this limit applies.
 */
#include "shm.h"
#include "base/env.h"
#include "base/log.h"
#include "base/util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PICK_BYTES  (256 * 1024)
#define PICK_ROUNDS 5

static pthread_once_t picked = PTHREAD_ONCE_INIT;
static uint32_t cost_pct = TUTTI_SHM_CMA_REFUSED;

/* The best of PICK_ROUNDS times of a memcpy and of a process_vm_readv of n bytes; -1 where the
 * kernel refuses the read. */
static int time_both(uint8_t *src, uint8_t *dst, size_t n, int64_t *copy_ns, int64_t *read_ns)
{
    struct iovec local = {dst, n}, remote = {src, n};
    *copy_ns = *read_ns = INT64_MAX;
    for (int i = 0; i < PICK_ROUNDS; i++) {
        int64_t t0 = tutti__now_ns();
        memcpy(dst, src, n);
        int64_t t1 = tutti__now_ns();
        if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)n) {
            return -1;
        }
        int64_t t2 = tutti__now_ns();
        *copy_ns = t1 - t0 < *copy_ns ? t1 - t0 : *copy_ns;
        *read_ns = t2 - t1 < *read_ns ? t2 - t1 : *read_ns;
        dst[i] ^= src[i]; /* keep the copies from being optimised away */
    }
    return 0;
}

static void pick(void)
{
    uint8_t *src = malloc(2 * PICK_BYTES);
    if (src == NULL) {
        return;
    }
    memset(src, 0x5a, 2 * PICK_BYTES);
    int64_t copy_ns, read_ns;
    int ok = time_both(src, src + PICK_BYTES, PICK_BYTES, &copy_ns, &read_ns) == 0;
    free(src);
    if (!ok) {
        tutti_debug(TUTTI_SUBSYS_SHM,
                    "process_vm_readv refused here: large frames through the FIFO");
        return;
    }
    int64_t pct = copy_ns > 0 ? read_ns * 100 / copy_ns : 1;
    cost_pct = (uint32_t)TUTTI_MIN(TUTTI_MAX(pct, (int64_t)1), (int64_t)TUTTI_SHM_CMA_REFUSED - 1);
    tutti_debug(TUTTI_SUBSYS_SHM,
                "%d KiB: memcpy %.1f GB/s, process_vm_readv %.1f GB/s: one kernel copy costs "
                "%.2f memcpys",
                PICK_BYTES / 1024, (double)PICK_BYTES / (double)copy_ns,
                (double)PICK_BYTES / (double)read_ns, cost_pct / 100.0);
}

uint32_t tutti__shm_cma_cost(const struct tutti_env *env)
{
    if (env->SHM_CMA == 0) {
        return TUTTI_SHM_CMA_REFUSED;
    }
    if (env->SHM_CMA == 1) {
        return 0;
    }
    pthread_once(&picked, pick);
    return cost_pct;
}

int tutti__shm_cma_pays(uint32_t mine, uint32_t peers, uint32_t limit_pct)
{
    if (mine == TUTTI_SHM_CMA_REFUSED || peers == TUTTI_SHM_CMA_REFUSED) {
        return 0;
    }
    if (mine == 0 || peers == 0) {
        return 1; /* TUTTI_SHM_CMA=1 on one side: whatever the copies cost */
    }
    return (uint64_t)mine + peers <= 2u * (uint64_t)limit_pct;
}

size_t tutti__shm_cma_min(const struct tutti_env *env)
{
    return tutti__shm_cma_cost(env) != TUTTI_SHM_CMA_REFUSED ? env->SHM_CMA_MIN : SIZE_MAX;
}
