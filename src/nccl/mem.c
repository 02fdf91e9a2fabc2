/*
 * mem.c - ncclMemAlloc/ncclMemFree and buffer registration. Memory comes from the GPU runtime
 * when the process has one (device memory of the current device, through tutti's GPU module),
 * else it is tutti_mem_alloc's host memory (tutti/mem.h), which local peers can map; every block
 * is remembered, so ncclMemFree refuses a pointer it did not hand out. ncclCommRegister and
 * ncclCommWindowRegister record and check the buffer, register it with tutti_comm_register (over
 * RDMA verbs sends from it then need no copy; elsewhere nothing is pinned) and hand back a
 * handle the deregistration must match. A window is also a tutti window, registered by every
 * rank together as in NCCL: all-reduces on host windows of ncclMemAlloc memory then read and
 * write the peers' buffers in place; its deregistration is local. Windows are
 * also listed for the whole process, so that the device API's window calls, which take no
 * communicator, find theirs (shim_window_enter). What those calls can answer is answered: the
 * buffer a window was registered with (ncclWinGetUserPtr) and this rank's own address of it
 * (an LSA rank of 0, a peer that is this rank: tutti gives kernels no access to other ranks'
 * memory, so its LSA team is this rank alone); the rest is refused in unsupported.c.
 */
#include "shim.h"
#include "gpu/devops.h"
#include "nccl_device_host.h"

#include <stdlib.h>
#include <string.h>

struct block {
    struct block *next;
    void *ptr;
    size_t size;
    int device; /* 1: from the GPU runtime's dev_alloc; 0: host memory */
};

/*
 * Every block ncclMemAlloc handed out and not yet freed, with the lock that guards the list.
 * Process-wide on purpose: memory belongs to the process, not to a communicator (NCCL's
 * functions take none), and any thread may free what another allocated.
 */
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks;

/*
 * Every window registered and not yet deregistered, with the lock that guards the list.
 * Process-wide on purpose: the device API's window functions take a window and no
 * communicator, so a window must be found (and a stale one refused) without one. The order of
 * locks is windows_lock, then the communicators' list (shim_enter_any), then a communicator's.
 */
static pthread_mutex_t windows_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_reg *windows;

#define NO_PEERS                                                                                   \
    "tutti gives kernels no access to other ranks' memory: its LSA team is this rank alone"

static void window_list(struct shim_reg *reg)
{
    pthread_mutex_lock(&windows_lock);
    reg->next_win = windows;
    windows = reg;
    pthread_mutex_unlock(&windows_lock);
}

static void window_unlist(struct shim_reg *reg)
{
    pthread_mutex_lock(&windows_lock);
    for (struct shim_reg **pp = &windows; *pp != NULL; pp = &(*pp)->next_win) {
        if (*pp == reg) {
            *pp = reg->next_win;
            break;
        }
    }
    pthread_mutex_unlock(&windows_lock);
}

ncclResult_t shim_window_enter(ncclWindow_t win, const char *what, struct ncclComm **c_p,
                               const struct shim_reg **reg_p)
{
    struct shim_reg *found = NULL;
    ncclResult_t r = ncclInvalidArgument;
    pthread_mutex_lock(&windows_lock);
    for (struct shim_reg *w = windows; w != NULL && found == NULL; w = w->next_win) {
        found = (void *)w == (void *)win ? w : NULL;
    }
    if (found != NULL) { /* its communicator is not freed while the window is listed */
        r = shim_enter_any(found->comm, what, c_p);
    }
    pthread_mutex_unlock(&windows_lock);
    if (found == NULL) {
        return shim_error(NULL, ncclInvalidArgument,
                          "%s: window %p is not a registered window (deregistered, or not made "
                          "by ncclCommWindowRegister)",
                          what, (void *)win);
    }
    if (r == ncclSuccess) {
        *reg_p = found;
    }
    return r;
}

void shim_regs_free(struct ncclComm *c)
{
    while (c->regs != NULL) {
        struct shim_reg *r = c->regs;
        c->regs = r->next;
        if (r->window) {
            window_unlist(r);
        }
        free(r);
    }
}

NCCL_API(ncclResult_t, MemAlloc, void **ptr, size_t size)
{
    const struct tutti_devops *dev = tutti__devops();
    struct block *b;

    if (ptr == NULL || size == 0) {
        return shim_error(NULL, ncclInvalidArgument, "ncclMemAlloc: %s",
                          ptr == NULL ? "ptr is NULL" : "size is 0");
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return shim_error(NULL, ncclSystemError, "ncclMemAlloc: no memory");
    }
    b->size = size;
    if (dev != NULL && dev->dev_alloc != NULL) {
        int err = dev->dev_alloc(&b->ptr, size);
        if (err != 0) {
            free(b);
            return shim_error(NULL, ncclUnhandledCudaError,
                              "ncclMemAlloc: %zu bytes of device memory: %s", size,
                              dev->error_string(err));
        }
        b->device = 1;
    } else if (tutti_mem_alloc(&b->ptr, size) != TUTTI_OK) {
        free(b);
        return shim_error(NULL, ncclSystemError, "ncclMemAlloc: %zu bytes: %s", size,
                          tutti_last_error(NULL));
    }
    pthread_mutex_lock(&blocks_lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&blocks_lock);
    *ptr = b->ptr;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, MemFree, void *ptr)
{
    struct block **pp, *b = NULL;

    if (ptr == NULL) {
        return ncclSuccess;
    }
    pthread_mutex_lock(&blocks_lock);
    for (pp = &blocks; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->ptr == ptr) {
            b = *pp;
            *pp = b->next;
            break;
        }
    }
    pthread_mutex_unlock(&blocks_lock);
    if (b == NULL) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclMemFree: %p was not allocated by ncclMemAlloc (or freed twice)",
                          ptr);
    }
    int err = 0;
    const struct tutti_devops *dev = b->device ? tutti__devops() : NULL;
    if (b->device) {
        err = dev != NULL ? dev->dev_free(ptr) : -1;
    } else if (tutti_mem_free(ptr) != TUTTI_OK) { /* still in a window: keep it listed */
        pthread_mutex_lock(&blocks_lock);
        b->next = blocks;
        blocks = b;
        pthread_mutex_unlock(&blocks_lock);
        return shim_error(NULL, ncclInvalidUsage, "ncclMemFree: %s", tutti_last_error(NULL));
    }
    free(b);
    if (err != 0) {
        return shim_error(NULL, ncclUnhandledCudaError, "ncclMemFree: %p: %s", ptr,
                          dev != NULL ? dev->error_string(err) : "no GPU runtime to free it");
    }
    return ncclSuccess;
}

static ncclResult_t reg_add(ncclComm_t comm, void *buf, size_t size, int window, int flags,
                            const char *what, struct shim_reg **reg_p)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    struct shim_reg *reg = NULL;
    if (buf == NULL || size == 0) {
        r = shim_error(c, ncclInvalidArgument, "%s: %s", what,
                       buf == NULL ? "buff is NULL" : "size is 0");
    } else if (window && (flags & ~(NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING |
                                    NCCL_WIN_GIN_ONLY | NCCL_WIN_CFT_COUNTED)) != 0) {
        r = shim_error(c, ncclInvalidArgument, "%s: unknown winFlags 0x%x", what, flags);
    } else if (window && (flags & NCCL_WIN_COLL_SYMMETRIC) &&
               (uintptr_t)buf % NCCL_WIN_REQUIRED_ALIGNMENT != 0) {
        r = shim_error(c, ncclInvalidArgument,
                       "%s: a symmetric window must be aligned to %d bytes (buff %p)", what,
                       NCCL_WIN_REQUIRED_ALIGNMENT, buf);
    } else if ((reg = calloc(1, sizeof(*reg))) == NULL) {
        r = shim_error(c, ncclSystemError, "%s: no memory", what);
    } else if (c->tc != NULL && tutti_comm_register(c->tc, buf, size, &reg->th) != TUTTI_OK) {
        r = shim_error(c, ncclSystemError, "%s: %s", what, tutti_last_error(c->tc));
        free(reg);
        reg = NULL;
    } else if (window && c->tc != NULL &&
               tutti_comm_window_register(c->tc, buf, size, &reg->tw) != TUTTI_OK) {
        r = shim_error(c, ncclSystemError, "%s: %s", what, tutti_last_error(c->tc));
        (void)tutti_comm_deregister(c->tc, reg->th);
        free(reg);
        reg = NULL;
    } else {
        reg->buf = buf;
        reg->size = size;
        reg->window = window;
        reg->flags = flags;
        reg->rank = c->rank;
        reg->comm = c;
        pthread_mutex_lock(&c->lock);
        reg->next = c->regs;
        c->regs = reg;
        pthread_mutex_unlock(&c->lock);
        if (window) {
            window_list(reg);
        }
        *reg_p = reg;
    }
    shim_leave(c);
    return r;
}

static ncclResult_t reg_remove(ncclComm_t comm, const void *handle, int window, const char *what)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter_any(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    struct shim_reg **pp, *found = NULL;
    pthread_mutex_lock(&c->lock);
    for (pp = &c->regs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == handle && (*pp)->window == window) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (found == NULL) {
        r = shim_error(c, ncclInvalidArgument,
                       "%s: %p is not a %s of this communicator (deregistered twice?)", what,
                       handle, window ? "window" : "registration handle");
    } else {
        if (found->window) {
            window_unlist(found);
        }
        if (found->tw != NULL && c->tc != NULL) {
            (void)tutti_comm_window_deregister(c->tc, found->tw);
        }
        if (found->th != NULL && c->tc != NULL) {
            (void)tutti_comm_deregister(c->tc, found->th); /* destroy undoes it otherwise */
        }
    }
    free(found);
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, CommRegister, const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    struct shim_reg *reg;
    if (handle == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommRegister: handle is NULL");
    }
    ncclResult_t r = reg_add(comm, buff, size, 0, 0, "ncclCommRegister", &reg);
    if (r == ncclSuccess) {
        *handle = reg;
    }
    return r;
}

NCCL_API(ncclResult_t, CommDeregister, const ncclComm_t comm, void *handle)
{
    return reg_remove(comm, handle, 0, "ncclCommDeregister");
}

NCCL_API(ncclResult_t, CommWindowRegister, ncclComm_t comm, void *buff, size_t size,
         ncclWindow_t *win, int winFlags)
{
    struct shim_reg *reg;
    if (win == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
    }
    ncclResult_t r = reg_add(comm, buff, size, 1, winFlags, "ncclCommWindowRegister", &reg);
    if (r == ncclSuccess) {
        *win = (ncclWindow_t)reg;
    }
    return r;
}

NCCL_API(ncclResult_t, CommWindowDeregister, ncclComm_t comm, ncclWindow_t win)
{
    return reg_remove(comm, win, 1, "ncclCommWindowDeregister");
}

NCCL_API(ncclResult_t, WinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    struct ncclComm *c;
    const struct shim_reg *reg;
    if (outUserPtr == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
    }
    ncclResult_t r = shim_window_enter(win, "ncclWinGetUserPtr", &c, &reg);
    if (r != ncclSuccess) {
        return r;
    }
    if (c != comm) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclWinGetUserPtr: window %p belongs to communicator %p, not %p",
                       (void *)win, (void *)c, (void *)comm);
    } else {
        *outUserPtr = reg->buf;
    }
    shim_leave(c);
    return r;
}

/* The window's address at offset in this rank's own memory, for a caller that names this rank:
 * LSA rank 0 (self_lsa), or its world rank. */
static ncclResult_t own_address(ncclWindow_t win, size_t offset, int self_lsa, int peer, void **out,
                                const char *what)
{
    struct ncclComm *c;
    const struct shim_reg *reg;
    if (out == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "%s: outPtr is NULL", what);
    }
    ncclResult_t r = shim_window_enter(win, what, &c, &reg);
    if (r != ncclSuccess) {
        return r;
    }
    if (offset >= reg->size) {
        r = shim_error(c, ncclInvalidArgument, "%s: offset %zu is past the window's %zu bytes",
                       what, offset, reg->size);
    } else if (self_lsa ? peer != 0 : peer != reg->rank) {
        r = shim_error(c, ncclInvalidUsage, "%s: %s %d: " NO_PEERS " (%s %d)", what,
                       self_lsa ? "lsaRank" : "peer", peer, self_lsa ? "lsaRank" : "its rank",
                       self_lsa ? 0 : reg->rank);
    } else {
        *out = (char *)reg->buf + offset;
    }
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, GetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank,
         void **outPtr)
{
    return own_address(window, offset, 1, lsaRank, outPtr, "ncclGetLsaDevicePointer");
}

NCCL_API(ncclResult_t, GetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer,
         void **outPtr)
{
    return own_address(window, offset, 0, peer, outPtr, "ncclGetPeerDevicePointer");
}
