/*
 * shm_cma.c - one copy for large shared-memory frames (cross-memory attach, process_vm_readv).
 *
 * Through the FIFO a byte is copied twice: by the sender into the slot, by the receiver out of
 * it. For a frame of at least cma_min bytes whose data stays put until the operation ends (the
 * engine's stable sends), the sender posts the slot's header only, with the data's address in
 * its own memory (ref), and the receiver reads the data from there with one process_vm_readv:
 * into the user's buffer when the engine said where the frame goes (recv_place), else into the
 * slot. The sender's memory stays in use until the receiver releases the frame, so flushed()
 * waits for that, and the engine does not end the operation (or reuse the buffer) before.
 *
 * Whether it is allowed is found once per connection (shm_cma_probe.c), by the receiver when it
 * makes the FIFO:
 * it reads the sender's probe (a value in the sender's control page, at the address that
 * process has it) and compares it with what the page shows. The kernel may refuse (Yama's
 * ptrace_scope, seccomp, another pid namespace, a different user): then the FIFO header says
 * no, and that sender copies every frame into the slot, as without this file.
 *
 * A sender that fails posts its abort notice before its call returns (fail.c), and only then
 * may its caller change the buffer; so a receiver that finds no notice after a read has read
 * the data as it was posted.
 *
 * A read takes the frames after the peeked one too, as far as they are posted by reference
 * and placed (at most PULL_BATCH in all): one system call instead of several (a read of 4 x
 * 128 KiB in one call ran at 11.6-12.1 GB/s on the AMD EPYC VM, four calls at 10.2-10.9).
 */
#include "shm.h"
#include "base/check.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

tutti_status_t tutti__shm_send_post_ref(struct tutti_tconn *conn, const void *buf, size_t bytes,
                                        const struct tutti_fp *fp)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    if (!c->send_ref || bytes < c->ctx->cma_min) {
        /* The peer cannot read us, or the frame is too small to pay for a system call. */
        memcpy(tutti__shm_slot(&c->send, c->send.mine) + TUTTI_SHM_SLOT_HDR + c->send.off, buf,
               bytes);
        return tutti__shm_post(c, bytes, fp, 0);
    }
    TUTTI_CHECK(tutti__shm_post(c, bytes, fp, (uint64_t)(uintptr_t)buf));
    c->ref_head = c->send.mine;
    return TUTTI_OK;
}

tutti_status_t tutti__shm_flushed(struct tutti_tconn *conn, int *done_p)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    struct shm_fifo *f = &c->send;
    if (c->ref_head > f->theirs) {
        f->theirs = atomic_load_explicit(&f->hdr->tail, memory_order_acquire);
    }
    *done_p = c->ref_head <= f->theirs; /* data in slots is the peer's once posted */
    return TUTTI_OK;
}

tutti_status_t tutti__shm_recv_place(struct tutti_tconn *conn, uint32_t ahead, void *dst,
                                     size_t cap, const struct tutti_fp *want)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    if (c->place == NULL) {
        return TUTTI_OK; /* every frame from this peer is in its slot */
    }
    if (ahead >= c->recv.nslots) {
        return TUTTI_IN_PROGRESS;
    }
    uint64_t seq = c->recv.mine + ahead;
    if (seq < c->pulled) {
        return TUTTI_OK; /* read already: it stays where it went */
    }
    c->place[seq % c->recv.nslots] = (struct shm_place){seq, dst, cap, *want, NULL};
    return TUTTI_OK;
}

/* Frames one read takes at most. */
#define PULL_BATCH 4

/* process_vm_readv until the n pairs (equal lengths) are in; -1 with errno on failure. */
static int read_all(pid_t pid, struct iovec *local, struct iovec *remote, int n)
{
    while (n > 0) {
        ssize_t got = process_vm_readv(pid, local, (unsigned long)n, remote, (unsigned long)n, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            errno = got == 0 ? EFAULT : errno;
            return -1;
        }
        size_t g = (size_t)got;
        for (; n > 0 && g >= local->iov_len; n--) {
            g -= local->iov_len;
            local++;
            remote++;
        }
        if (n > 0) { /* a partial read: the rest of this pair, then the others */
            local->iov_base = (char *)local->iov_base + g;
            local->iov_len -= g;
            remote->iov_base = (char *)remote->iov_base + g;
            remote->iov_len -= g;
        }
    }
    return 0;
}

/* Where frame seq (header h, len bytes) was placed, if it may go there; else NULL. The caller's
 * memory takes only the frame of the call it expects (issue 36: a mismatched broadcast wrote
 * 32,768 elements of the receive buffer before MISMATCH): another call's goes into the slot,
 * where the executor's check finds it. */
static void *placed(const struct shm_conn *c, uint64_t seq, const struct shm_slot_hdr *h,
                    size_t len)
{
    const struct shm_place *pl = &c->place[seq % c->recv.nslots];
    struct tutti_fp got;
    memcpy(&got, (const void *)&h->fp, sizeof(got));
    return pl->seq == seq && pl->dst != NULL && pl->cap >= len &&
                   memcmp(&got, &pl->want, sizeof(got)) == 0
               ? pl->dst
               : NULL;
}

/* Add to the read the frames after the peeked one that are posted by reference and placed;
 * returns the pairs in all. */
static int pull_ahead(struct shm_conn *c, struct iovec *local, struct iovec *remote)
{
    struct shm_fifo *f = &c->recv;
    int n = 1;
    for (; n < PULL_BATCH && n < (int)f->nslots; n++) {
        uint64_t seq = f->mine + (uint64_t)n;
        const struct shm_slot_hdr *h = (const void *)tutti__shm_slot(f, seq);
        if (atomic_load_explicit(&h->seq, memory_order_acquire) != seq + 1) {
            break; /* not posted yet */
        }
        uint64_t ref = *(const volatile uint64_t *)&h->ref;
        size_t len = (size_t) * (const volatile uint64_t *)&h->len;
        void *dst = placed(c, seq, h, len);
        if (ref == 0 || dst == NULL || len == 0) {
            break;
        }
        local[n] = (struct iovec){.iov_base = dst, .iov_len = len};
        remote[n] = (struct iovec){.iov_base = (void *)(uintptr_t)ref, .iov_len = len};
    }
    return n;
}

tutti_status_t tutti__shm_pull(struct shm_conn *c, const struct shm_slot_hdr *h, void *slot,
                               size_t len, const void **buf_p)
{
    struct shm_fifo *f = &c->recv;
    if (f->mine < c->pulled) {
        /* peeked again (the step waited for its send slot), or read with an earlier frame */
        *buf_p = c->place[f->mine % f->nslots].at;
        return TUTTI_OK;
    }
    if (c->place == NULL) {
        return tutti__set_error(c->ctx->args.err, TUTTI_ERR_REMOTE,
                                "rank %d sent a shm frame by reference, which this rank did not "
                                "allow on that connection",
                                c->base.peer);
    }
    void *dst = placed(c, f->mine, h, len);
    uint64_t ref = *(const volatile uint64_t *)&h->ref;
    struct iovec local[PULL_BATCH], remote[PULL_BATCH];
    local[0] = (struct iovec){.iov_base = dst != NULL ? dst : slot, .iov_len = len};
    remote[0] = (struct iovec){.iov_base = (void *)(uintptr_t)ref, .iov_len = len};
    int n = dst != NULL && len > 0 ? pull_ahead(c, local, remote) : 1;
    void *at[PULL_BATCH];
    for (int k = 0; k < n; k++) {
        at[k] = local[k].iov_base;
    }
    if (read_all((pid_t)c->peer_ctl->pid, local, remote, n) != 0) {
        int err = errno;
        tutti_status_t st = tutti__shm_board_notice(c->ctx);
        if (st != TUTTI_OK) {
            return st;
        }
        if (err == ESRCH) {
            return tutti__shm_peer_gone(c->ctx, c->base.peer);
        }
        return tutti__set_error(c->ctx->args.err, TUTTI_ERR_SYSTEM,
                                "reading %d frame(s) from rank %d's memory, the first of %zu "
                                "bytes at 0x%" PRIx64 " (process_vm_readv): %s",
                                n, c->base.peer, len, ref, strerror(err));
    }
    /* The sender's caller may change the buffer only after its notice is posted (see above). */
    atomic_thread_fence(memory_order_seq_cst);
    TUTTI_CHECK(tutti__shm_board_notice(c->ctx));
    for (int k = 0; k < n; k++) { /* read again only through `at` (seq < pulled) */
        c->place[(f->mine + (uint64_t)k) % f->nslots].at = at[k];
    }
    c->pulled = f->mine + (uint64_t)n;
    *buf_p = at[0];
    return TUTTI_OK;
}
