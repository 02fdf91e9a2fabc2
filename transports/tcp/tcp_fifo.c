/*
 * tcp_fifo.c - a TCP connection's birth and end: one allocation holding both FIFOs, the
 * encoded send headers, the received lengths and fingerprints, the placements and the
 * by-reference payloads (tcp.h), its place in the context's list, and its close.
 */
#include "tcp.h"
#include "base/check.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

tutti_status_t tutti__tcp_conn_new(struct tcp_ctx *ctx, int kind, int peer, int channel,
                                   const int *fds, int nsocks, struct tcp_conn **conn_p)
{
    int side = kind == TCP_KIND_SIDE;
    size_t ss = side ? TCP_SIDE_SLOT_SIZE : ctx->slot_size;
    size_t ns = side ? TCP_SIDE_NSLOTS : (size_t)ctx->nslots;
    size_t fifo = tutti__align_up(ns * ss, 4096);
    size_t total = 2 * fifo + ns * sizeof(struct tcp_place) + ns * sizeof(struct tutti_fp) +
                   ns * (TCP_HDR_BYTES + 2 * sizeof(uint32_t)) + ns * sizeof(void *) +
                   (size_t)nsocks * TCP_STAGE_BYTES;
    struct tcp_conn *c = calloc(1, sizeof(*c) + (size_t)nsocks * sizeof(struct tcp_sock));
    void *mem = NULL;
    if (c == NULL || posix_memalign(&mem, 4096, total) != 0) {
        free(c);
        return tutti__set_error(ctx->args->err, TUTTI_ERR_NO_MEMORY,
                                "cannot allocate %zu bytes of tcp buffers for rank %d", total,
                                peer);
    }
    c->base.ops = &tutti__tcp_ops;
    c->base.peer = peer;
    c->base.channel = channel;
    c->base.slot_size = ss;
    c->ctx = ctx;
    c->kind = kind;
    c->nsocks = nsocks;
    c->nslots = (int)ns;
    c->mem = mem;
    c->sbuf = c->mem;
    c->rbuf = c->mem + fifo;
    c->place = (struct tcp_place *)(void *)(c->mem + 2 * fifo);
    for (size_t i = 0; i < ns; i++) {
        c->place[i] = (struct tcp_place){.seq = UINT64_MAX};
    }
    c->rfp = (struct tutti_fp *)(void *)(c->place + ns);
    c->shdr = (uint8_t(*)[TCP_HDR_BYTES])(void *)(c->rfp + ns);
    c->slen = (uint32_t *)(void *)((uint8_t *)c->shdr + ns * TCP_HDR_BYTES);
    c->rlen = c->slen + ns;
    c->sref = (const uint8_t **)(void *)(c->rlen + ns);
    memset(c->sref, 0, ns * sizeof(*c->sref));
    uint8_t *stage = (uint8_t *)(void *)(c->sref + ns);
    tutti__tpeer_name(ctx->args->peers, peer, c->peer_name, sizeof(c->peer_name));
    for (int i = 0; i < nsocks; i++) {
        c->socks[i].fd = fds[i];
        c->socks[i].snext = (uint64_t)i;
        c->socks[i].rnext = (uint64_t)i;
        c->socks[i].stage = stage + (size_t)i * TCP_STAGE_BYTES;
    }
    c->next = ctx->conns;
    if (ctx->conns != NULL) {
        ctx->conns->prev = c;
    }
    ctx->conns = c;
    ctx->connected[tutti__tcp_pair(ctx, kind, peer, channel)] = 1;
    *conn_p = c;
    return TUTTI_OK;
}

/*
 * Before closing a socket of a failed connection, read away what the peer sent and this rank
 * will not read: Linux answers close() with unread data by a reset, and a reset makes the
 * peer's kernel drop what it had not read yet, this rank's abort notice included (the peer then
 * sees "connection reset" instead of the reason, e.g. a mismatch). Until the peer is quiet for
 * QUIET_MS, it closes, or DRAIN_MS pass.
 */
#define QUIET_MS 20
#define DRAIN_MS 200

static void drain(int fd)
{
    static char sink[65536];
    int64_t deadline = tutti__now_ns() + DRAIN_MS * 1000000ll;
    while (tutti__now_ns() < deadline) {
        ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (n > 0) {
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            return; /* the peer closed too, or the socket failed */
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, QUIET_MS) == 0) {
            return;
        }
    }
}

tutti_status_t tutti__tcp_close(struct tutti_tconn *tc)
{
    struct tcp_conn *c = (struct tcp_conn *)tc;
    struct tcp_ctx *ctx = c->ctx;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        ctx->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    ctx->connected[tutti__tcp_pair(ctx, c->kind, c->base.peer, c->base.channel)] = 0;
    for (int i = 0; i < c->nsocks; i++) {
        if (c->status != TUTTI_OK && !c->socks[i].closed) {
            drain(c->socks[i].fd);
        }
        close(c->socks[i].fd);
    }
    free(c->mem);
    free(c);
    return TUTTI_OK;
}
