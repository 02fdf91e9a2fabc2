/*
 * shm_cma_pick.c - whether this process sends large frames by reference at all
 * (TUTTI_SHM_CMA): always, never, or (2, the default) where the kernel's one copy pays here.
 *
 * A frame by reference costs the receiver one process_vm_readv; through the FIFO it costs a
 * memcpy on each side. Which is faster depends on the machine: on an Intel VM the kernel's copy
 * made send/recv 1.3-1.9 times as fast (2026-11-27-shm-cma.md); on the AMD EPYC VM of
 * 2026-11-30 it copied at 11-14 GB/s where memcpy ran at 45-57, and the FIFO (its slots
 * streamed where the cores share no cache, exec/fill.c) was faster at every size. So the
 * process times both once, on PICK_BYTES read from its own memory, best of PICK_ROUNDS: a
 * reference where one kernel copy takes at most twice a memcpy. Each sender decides for
 * itself; a receiver takes either form.
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
static int kernel_pays;

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
    kernel_pays = ok && read_ns <= 2 * copy_ns;
    free(src);
    if (ok) {
        tutti_debug(TUTTI_SUBSYS_SHM,
                    "%d KiB: memcpy %.1f GB/s, process_vm_readv %.1f GB/s: large frames %s",
                    PICK_BYTES / 1024, (double)PICK_BYTES / (double)copy_ns,
                    (double)PICK_BYTES / (double)read_ns,
                    kernel_pays ? "by reference" : "through the FIFO");
    } else {
        tutti_debug(TUTTI_SUBSYS_SHM,
                    "process_vm_readv refused here: large frames through the FIFO");
    }
}

int tutti__shm_cma_pays(void)
{
    pthread_once(&picked, pick);
    return kernel_pays;
}

size_t tutti__shm_cma_min(const struct tutti_env *env)
{
    int on = env->SHM_CMA == 1 || (env->SHM_CMA == 2 && tutti__shm_cma_pays());
    return on ? env->SHM_CMA_MIN : SIZE_MAX;
}
