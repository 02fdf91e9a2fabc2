/*
 * shm_conn.c - setting up and tearing down shared-memory connections.
 *
 * Both ends of a pair call connect() when a plan first needs the pair. Each end makes the FIFO
 * it receives on (its pages are reserved, so first touched, by the receiver, which places them
 * on the receiver's NUMA node; the name is derived from the salt both know, so the sender needs
 * no exchange), then opens
 * the peer's FIFO once it exists. A FIFO's name is unlinked as soon as its sender has attached,
 * so a crash leaves little behind in /dev/shm.
 */
#include "shm.h"
#include "base/check.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

_Static_assert(TUTTI_SHM_LAYOUT != 1 || TUTTI_SHM_FIFO_MAGIC == 0x33494653u,
               "layout 1 keeps the FIFO magic \"SFI3\" it had before the version was published");

static void fifo_name(const struct shm_ctx *ctx, int src, int dst, int ch, char *buf, size_t len)
{
    tutti__shm_name(ctx, 'f', src, dst, ch, buf, len);
}

static void fifo_geometry(struct shm_fifo *f, struct shm_fifo_hdr *h, size_t map_len,
                          uint32_t nslots, size_t slot_size)
{
    f->hdr = h;
    f->map_len = map_len;
    f->slots = (uint8_t *)h + TUTTI_SHM_FIFO_HDR_BYTES;
    f->nslots = nslots;
    f->stride = TUTTI_SHM_SLOT_HDR + slot_size;
    f->mine = 0;
    f->theirs = 0;
}

static tutti_status_t track_conn(struct shm_ctx *ctx, struct shm_conn *c)
{
    if (ctx->nconns == ctx->conns_cap) {
        int cap = ctx->conns_cap == 0 ? 16 : ctx->conns_cap * 2;
        struct shm_conn **n = realloc(ctx->conns, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return tutti__set_error(ctx->args.err, TUTTI_ERR_NO_MEMORY, "no memory for shm conns");
        }
        ctx->conns = n;
        ctx->conns_cap = cap;
    }
    ctx->conns[ctx->nconns++] = c;
    return TUTTI_OK;
}

/* Make the FIFO this rank receives on from `peer`. */
static tutti_status_t make_recv_fifo(struct shm_ctx *ctx, struct shm_conn *c)
{
    fifo_name(ctx, c->base.peer, ctx->args.rank, c->base.channel, c->recv_name,
              sizeof(c->recv_name));
    size_t len = tutti__shm_fifo_bytes(ctx->nslots, ctx->slot_size);
    tutti_status_t st;
    struct shm_fifo_hdr *h = tutti__shm_map(c->recv_name, len, 1, &st, ctx->args.err);
    if (h == NULL) {
        return st;
    }
    c->recv_linked = 1;
    h->nslots = ctx->nslots;
    h->slot_size = ctx->slot_size;
    fifo_geometry(&c->recv, h, len, ctx->nslots, ctx->slot_size);
    if (tutti__shm_cma_probe(ctx, c->base.peer)) {
        c->place = calloc(ctx->nslots, sizeof(*c->place));
        h->cma = c->place != NULL; /* without its table, frames stay in slots */
    }
    atomic_store_explicit(&h->magic, TUTTI_SHM_FIFO_MAGIC, memory_order_release);
    return TUTTI_OK;
}

/* Open the FIFO the peer made for us; TUTTI_IN_PROGRESS while it does not exist yet. */
static tutti_status_t open_send_fifo(struct shm_ctx *ctx, struct shm_conn *c)
{
    char name[64];
    fifo_name(ctx, ctx->args.rank, c->base.peer, c->base.channel, name, sizeof(name));
    size_t len = tutti__shm_fifo_bytes(ctx->nslots, ctx->slot_size);
    tutti_status_t st;
    /* The header first: its geometry must match ours before we map (and touch) our length. */
    struct shm_fifo_hdr *h = tutti__shm_map(name, TUTTI_SHM_FIFO_HDR_BYTES, 0, &st, ctx->args.err);
    if (h == NULL) {
        return st;
    }
    int ready = atomic_load_explicit(&h->magic, memory_order_acquire) == TUTTI_SHM_FIFO_MAGIC;
    uint32_t nslots = h->nslots;
    size_t slot_size = (size_t)h->slot_size;
    int cma = h->cma != 0;
    munmap(h, TUTTI_SHM_FIFO_HDR_BYTES);
    if (!ready) {
        return TUTTI_IN_PROGRESS;
    }
    if (nslots != ctx->nslots || slot_size != ctx->slot_size) {
        return tutti__set_error(ctx->args.err, TUTTI_ERR_INVALID_USAGE,
                                "rank %d uses %u shm slots of %zu bytes, this rank %u of %zu: set "
                                "TUTTI_SHM_NSLOTS and TUTTI_SHM_SLOT_SIZE alike on every rank",
                                c->base.peer, nslots, slot_size, ctx->nslots, ctx->slot_size);
    }
    h = tutti__shm_map(name, len, 0, &st, ctx->args.err);
    if (h == NULL) {
        /* TUTTI_IN_PROGRESS: the segment was complete a moment ago (its magic is written after
         * it is sized), so it went away between the two opens: its receiver removed it, being
         * closed or failed. Try again; the peer's abort notice, its death or the timeout tells
         * the engine why. (This was reported as an internal error when a peer died while the
         * others connected: seen once in CI, test_stream's dead-peer test.) */
        return st;
    }
    fifo_geometry(&c->send, h, len, ctx->nslots, ctx->slot_size);
    c->send_ref = cma;
    c->base.ref_min = cma ? ctx->cma_min : SIZE_MAX;
    if (cma &&
        !tutti__shm_cma_pays(ctx->ctl->cma_cost, c->peer_ctl->cma_cost, TUTTI_SHM_CMA_LONE_PCT)) {
        c->base.lone_max = ctx->cma_lone; /* sending alone, larger calls through the FIFO */
    }
    atomic_store_explicit(&h->sender_attached, 1, memory_order_release);
    /* Both ends have it mapped: nobody opens it by name again. Unlink the name now rather than
     * when the receiver next looks (tutti__shm_unlink_attached, which then finds it gone), so
     * that a receiver killed before it looks leaves nothing in /dev/shm. */
    shm_unlink(name);
    return TUTTI_OK;
}

/*
 * The send direction: open the FIFO the peer made for us. Called at connect time and again by
 * send_acquire until it succeeds, because a connection is usable as soon as its receive FIFO
 * exists: a peer that only sends to us may finish and close before we ever send to it, and then
 * we must not fail for lack of a direction we never use.
 */
tutti_status_t tutti__shm_open_send(struct shm_conn *c)
{
    tutti_status_t st = open_send_fifo(c->ctx, c);
    if (st == TUTTI_IN_PROGRESS && atomic_load(&c->peer_ctl->closed)) {
        return tutti__shm_peer_gone(c->ctx, c->base.peer);
    }
    return st;
}

tutti_status_t tutti__shm_connect(void *tctx, int peer, int channel, struct tutti_tconn **conn_p)
{
    struct shm_ctx *ctx = tctx;
    TUTTI_CHECK(tutti__shm_watch(ctx, peer)); /* its page checked, its process watched */
    struct shm_conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return tutti__set_error(ctx->args.err, TUTTI_ERR_NO_MEMORY, "no memory for a conn");
    }
    c->base.ops = ctx->ops;
    c->base.peer = peer;
    c->base.channel = channel;
    c->base.slot_size = ctx->slot_size;
    c->base.ref_max = ctx->cma_max;
    c->base.share_every = ctx->cma_share;
    c->base.fill = (struct tutti_fill_clock){
        .mode = ctx->fill, .stream = ctx->fill == TUTTI_FILL_STREAMED, .warm = ctx->nslots};
    c->ctx = ctx;
    c->peer_ctl = ctx->peers[peer].ctl;
    tutti_status_t st = make_recv_fifo(ctx, c);
    if (st == TUTTI_OK) {
        st = track_conn(ctx, c);
    }
    if (st == TUTTI_OK) {
        /* Not tutti__shm_open_send: a peer that only sends to us may already have posted into
         * the FIFO just made, finished and closed; its data is still to be received, and only
         * a send would need the direction a closed peer no longer offers. */
        st = open_send_fifo(ctx, c);
    }
    if (st != TUTTI_OK && st != TUTTI_IN_PROGRESS) {
        tutti__shm_close(&c->base);
        return st;
    }
    /* A peer waiting to send to us may sleep: its FIFO exists now. */
    tutti__shm_ring(c->peer_ctl);
    tutti_debug(TUTTI_SUBSYS_SHM, "connected to rank %d channel %d%s", peer, channel,
                c->send.hdr == NULL ? " (its FIFO to be opened on first send)" : "");
    *conn_p = &c->base;
    return TUTTI_OK;
}

/* Unlink the names of FIFOs whose sender has attached: nobody needs to open them again. */
void tutti__shm_unlink_attached(struct shm_ctx *ctx)
{
    for (int i = 0; i < ctx->nconns; i++) {
        struct shm_conn *c = ctx->conns[i];
        if (c->recv_linked && atomic_load(&c->recv.hdr->sender_attached)) {
            shm_unlink(c->recv_name);
            c->recv_linked = 0;
        }
    }
}

tutti_status_t tutti__shm_close(struct tutti_tconn *conn)
{
    struct shm_conn *c = (struct shm_conn *)conn;
    struct shm_ctx *ctx = c->ctx;
    for (int i = 0; i < ctx->nconns; i++) {
        if (ctx->conns[i] == c) {
            ctx->conns[i] = ctx->conns[--ctx->nconns];
            break;
        }
    }
    if (c->send.hdr != NULL) {
        /* Tell a receiver still waiting on us that nothing more will come. */
        atomic_store_explicit(&c->send.hdr->sender_closed, 1, memory_order_release);
        if (c->peer_ctl != NULL) {
            tutti__shm_ring(c->peer_ctl);
        }
        munmap(c->send.hdr, c->send.map_len);
    }
    if (c->recv_linked) {
        shm_unlink(c->recv_name);
    }
    if (c->recv.hdr != NULL) {
        munmap(c->recv.hdr, c->recv.map_len);
    }
    free(c->place);
    free(c);
    return TUTTI_OK;
}
