/*
 * ib_mr.c - memory registration for the verbs transport: the FIFOs of each connection, and the
 * user memory a program registered with tutti_comm_register (the registration cache).
 *
 * Why user memory is registered only when the program asks: a registration pins the physical
 * pages behind a range of addresses at the time of the call. If the program frees that memory
 * and later gets new memory at the same addresses, a cache keyed by address would send the old
 * pages: wrong data, silently. Libraries that cache registrations on their own (UCX, Open MPI)
 * must intercept munmap, brk and madvise to see that happen; NCCL, like tutti, copies host
 * data into its registered FIFOs unless the program registers its buffers itself
 * (ncclCommRegister). So sends from registered ranges go straight from user memory
 * (send_post_ref), and everything else is copied into the send slot, which a reduction writes
 * anyway. Device memory (GPUDirect RDMA through ibv_reg_dmabuf_mr) would be registered here
 * too; today device buffers are staged through pinned host memory before they reach a
 * transport (src/gpu/stream.c).
 */
#include "ib.h"
#include "base/check.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Registered user memory, one node per tutti_comm_register call that reached this context. */
struct ib_reg {
    struct ib_reg *next;
    const uint8_t *buf;
    size_t len;
    struct ibv_mr *mr;
};

/* Process-wide counts, for tests: live registrations (none may leak; every registration
 * belongs to a context) and writes sent straight from registered user memory. */
static _Atomic long live_mrs;
static _Atomic long zero_copy_writes;

void tutti__ib_count_zero_copy(void)
{
    atomic_fetch_add_explicit(&zero_copy_writes, 1, memory_order_relaxed);
}

long tutti__ib_zero_copy_writes(void)
{
    return atomic_load(&zero_copy_writes);
}

struct ibv_mr *tutti__ib_reg(struct ib_ctx *ctx, void *buf, size_t len, int remote_write)
{
    int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
    struct ibv_mr *mr = ibv_reg_mr(ctx->dev.pd, buf, len, access);
    if (mr != NULL) {
        atomic_fetch_add(&live_mrs, 1);
    }
    return mr;
}

void tutti__ib_dereg(struct ibv_mr *mr)
{
    if (mr != NULL && ibv_dereg_mr(mr) == 0) {
        atomic_fetch_sub(&live_mrs, 1);
    }
}

long tutti__ib_live_mrs(void)
{
    return atomic_load(&live_mrs);
}

struct ibv_mr *tutti__ib_reg_find(const struct ib_ctx *ctx, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    for (const struct ib_reg *r = ctx->regs; r != NULL; r = r->next) {
        if (p >= r->buf && len <= r->len && (size_t)(p - r->buf) <= r->len - len) {
            return r->mr;
        }
    }
    return NULL;
}

void tutti__ib_footprint(void *tctx, struct tutti_footprint *fp)
{
    const struct ib_ctx *ctx = tctx;
    for (const struct ib_conn *c = ctx->list; c != NULL; c = c->next) {
        fp->registered +=
            (c->smr != NULL ? c->smr->length : 0) + (c->rmr != NULL ? c->rmr->length : 0);
    }
    for (const struct ib_reg *r = ctx->regs; r != NULL; r = r->next) {
        fp->registered += r->mr != NULL ? r->mr->length : 0;
    }
}

/* reg_mem op: register user memory for sends without a copy. */
tutti_status_t tutti__ib_reg_mem(void *tctx, void *buf, size_t len, void **handle_p)
{
    struct ib_ctx *ctx = tctx;
    if (!tutti__ib_needed(ctx)) {
        return TUTTI_ERR_UNSUPPORTED; /* no peer is reached over verbs: nothing to do */
    }
    TUTTI_CHECK(tutti__ib_ctx_open(ctx));
    struct ib_reg *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return tutti__set_error(ctx->args->err, TUTTI_ERR_NO_MEMORY, "ib: no memory");
    }
    r->mr = tutti__ib_reg(ctx, buf, len, 0);
    if (r->mr == NULL) {
        int err = errno;
        free(r);
        return tutti__set_error(ctx->args->err, TUTTI_ERR_SYSTEM,
                                "%s:%d: cannot register %zu bytes at %p: %s (is the locked-memory "
                                "limit, ulimit -l, large enough?)",
                                ctx->port.dev, ctx->port.port, len, buf, strerror(err));
    }
    r->buf = buf;
    r->len = len;
    r->next = ctx->regs;
    ctx->regs = r;
    *handle_p = r;
    return TUTTI_OK;
}

/* dereg_mem op. */
tutti_status_t tutti__ib_dereg_mem(void *tctx, void *handle)
{
    struct ib_ctx *ctx = tctx;
    for (struct ib_reg **pp = &ctx->regs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == handle) {
            struct ib_reg *r = *pp;
            *pp = r->next;
            tutti__ib_dereg(r->mr);
            free(r);
            return TUTTI_OK;
        }
    }
    return tutti__set_error(ctx->args->err, TUTTI_ERR_INVALID_ARG,
                            "ib: no registration %p in this communicator", handle);
}

void tutti__ib_reg_free_all(struct ib_ctx *ctx)
{
    while (ctx->regs != NULL) {
        struct ib_reg *r = ctx->regs;
        ctx->regs = r->next;
        tutti__ib_dereg(r->mr);
        free(r);
    }
}
