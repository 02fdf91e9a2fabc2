/*
 * shm_data.c - the shared-memory FIFO operations: single producer, single consumer rings of
 * fixed-size slots with a header per slot (length, fingerprint, and the post's number, written
 * last). The receiver polls the next slot's header, which it has to read anyway, so a message
 * costs one cache line from sender to receiver (a separate head counter made it two); the sender
 * caches the receiver's tail and reads it only when its cached view says "full". After
 * publishing, a side rings
 * the peer's doorbell only if the peer announced that it is going to sleep. A slot may carry the
 * address of its data in the sender instead of the data (shm_cma.c).
 *
 * A frame of at most half a slot (and at least TUTTI_SHM_ROTATE bytes) starts at an offset that
 * moves along its slot from one lap of the FIFO to the next, so the FIFO's frames cycle through
 * all of its memory rather than the first part of each slot over and over.
 */
#include "shm.h"
#include "base/check.h"
#include "base/util.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void tutti__shm_ring(struct shm_ctl *ctl)
{
    atomic_fetch_add_explicit((_Atomic uint32_t *)&ctl->doorbell.seq, 1, memory_order_seq_cst);
    syscall(SYS_futex, &ctl->doorbell.seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Wake the peer if it sleeps. The fence orders our counter store before the flag load; the
 * sleeper stores its flag, fences, then re-checks the counters (engine.c), so one side sees
 * the other. */
static inline void wake_if_sleeping(struct shm_ctl *ctl)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (__atomic_load_n(&ctl->doorbell.sleeping, __ATOMIC_RELAXED) != 0) {
        tutti__shm_ring(ctl);
    }
}

/* Where in the payload of the slot the sender acquires next a frame of `want` bytes starts. */
static size_t rotate_off(const struct shm_ctx *ctx, const struct shm_fifo *f, size_t want)
{
    size_t cap = f->stride - TUTTI_SHM_SLOT_HDR;
    if (ctx->rotate_min == 0 || want < ctx->rotate_min || want > cap / 2) {
        return 0;
    }
    size_t step = tutti__align_up(want, 4096);
    size_t places = cap / step; /* at least 1; off + want <= places * step <= cap */
    return (size_t)((f->mine / f->nslots) % places) * step;
}

tutti_status_t tutti__shm_send_acquire(struct tutti_tconn *conn, void **buf_p, size_t *cap_p)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    struct shm_fifo *f = &c->send;
    if (f->hdr == NULL) {
        tutti_status_t st = tutti__shm_open_send(c);
        if (st != TUTTI_OK) {
            return st;
        }
    }
    if (f->mine - f->theirs >= f->nslots) {
        f->theirs = atomic_load_explicit(&f->hdr->tail, memory_order_acquire);
        if (f->mine - f->theirs >= f->nslots) {
            return TUTTI_IN_PROGRESS;
        }
    }
    f->off = rotate_off(c->ctx, f, conn->next_bytes);
    *buf_p = tutti__shm_slot(f, f->mine) + TUTTI_SHM_SLOT_HDR + f->off;
    *cap_p = f->stride - TUTTI_SHM_SLOT_HDR - f->off;
    return TUTTI_OK;
}

tutti_status_t tutti__shm_post(struct shm_conn *c, size_t bytes, const struct tutti_fp *fp,
                               uint64_t ref)
{
    struct shm_fifo *f = &c->send;
    struct shm_slot_hdr *h = (struct shm_slot_hdr *)(void *)tutti__shm_slot(f, f->mine);
    h->len = bytes;
    h->ref = ref;
    h->off = f->off;
    if (fp != NULL) {
        h->fp = *fp;
    } else {
        memset(&h->fp, 0, sizeof(h->fp));
    }
    f->mine++;
    atomic_store_explicit(&h->seq, f->mine, memory_order_release);
    wake_if_sleeping(c->peer_ctl);
    return TUTTI_OK;
}

tutti_status_t tutti__shm_send_post(struct tutti_tconn *conn, size_t bytes,
                                    const struct tutti_fp *fp)
{
    return tutti__shm_post((struct shm_conn *)conn, bytes, fp, 0);
}

tutti_status_t tutti__shm_recv_peek(struct tutti_tconn *conn, const void **buf_p, size_t *len_p,
                                    const struct tutti_fp **fp_p)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    struct shm_fifo *f = &c->recv;
    uint8_t *slot = tutti__shm_slot(f, f->mine);
    struct shm_slot_hdr *h = (struct shm_slot_hdr *)(void *)slot;
    if (atomic_load_explicit(&h->seq, memory_order_acquire) != f->mine + 1) {
        /* Closed (this FIFO, or the peer's whole communicator if it never attached here) and
         * still empty once the close is seen: nothing more will come. */
        if (atomic_load(&f->hdr->sender_closed) == 0 && atomic_load(&c->peer_ctl->closed) == 0) {
            return TUTTI_IN_PROGRESS;
        }
        if (atomic_load_explicit(&h->seq, memory_order_acquire) != f->mine + 1) {
            return tutti__shm_peer_gone(c->ctx, conn->peer);
        }
    }
    uint64_t len = *(const volatile uint64_t *)&h->len;
    uint64_t off = *(const volatile uint64_t *)&h->off;
    uint64_t cap = f->stride - TUTTI_SHM_SLOT_HDR;
    if (off > cap || len > cap - off) {
        return tutti__set_error(c->ctx->args.err, TUTTI_ERR_REMOTE,
                                "rank %d wrote a shm frame of %llu bytes at offset %llu of a "
                                "%llu-byte slot",
                                conn->peer, (unsigned long long)len, (unsigned long long)off,
                                (unsigned long long)cap);
    }
    *len_p = (size_t)len;
    uint8_t *data = slot + TUTTI_SHM_SLOT_HDR + off;
    if (*(const volatile uint64_t *)&h->ref != 0) {
        TUTTI_CHECK(tutti__shm_pull(c, h, data, (size_t)len, buf_p));
    } else {
        *buf_p = data;
    }
    if (fp_p != NULL) {
        *fp_p = &h->fp; /* the sender does not touch the slot again before our release */
    }
    return TUTTI_OK;
}

tutti_status_t tutti__shm_peek_fp(struct tutti_tconn *conn, const struct tutti_fp **fp_p)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    struct shm_fifo *f = &c->recv;
    struct shm_slot_hdr *h = (struct shm_slot_hdr *)(void *)tutti__shm_slot(f, f->mine);
    if (atomic_load_explicit(&h->seq, memory_order_acquire) != f->mine + 1) {
        return TUTTI_IN_PROGRESS;
    }
    *fp_p = &h->fp; /* posted: the sender does not touch the slot again before our release */
    return TUTTI_OK;
}

tutti_status_t tutti__shm_recv_release(struct tutti_tconn *conn)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    struct shm_fifo *f = &c->recv;
    f->mine++;
    atomic_store_explicit(&f->hdr->tail, f->mine, memory_order_release);
    wake_if_sleeping(c->peer_ctl);
    return TUTTI_OK;
}
