/*
 * win_map.c - the mappings behind a communicator's windows (win.h): this rank's control page,
 * the peers' control pages and buffers opened through /proc/<pid>/fd and proved by their
 * cookies, and undoing all of it.
 */
#include "win/win.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct tutti_winset *tutti__winset_new(int rank, int nranks)
{
    struct tutti_winset *ws = calloc(1, sizeof(*ws));
    if (ws == NULL) {
        return NULL;
    }
    ws->rank = rank;
    ws->nranks = nranks;
    size_t page = tutti__mem_header();         /* the cookie page, then the slot */
    int pairs = nranks <= TUTTI_WIN_CTL_RANKS; /* carried messages: a record per peer */
    size_t slot = sizeof(struct tutti_win_slot) +
                  (pairs ? (size_t)nranks * sizeof(struct tutti_win_pair) : 0);
    ws->ctl_len = page + (slot + page - 1) / page * page;
    ws->slots = calloc((size_t)nranks, sizeof(*ws->slots));
    ws->pids = calloc((size_t)nranks, sizeof(*ws->pids));
    ws->peer_seen = calloc((size_t)nranks, sizeof(*ws->peer_seen));
    uint64_t *counts = pairs ? calloc(5 * (size_t)nranks, sizeof(*counts)) : NULL;
    void *m = NULL;
    ws->ctl_fd = -1;
    if (ws->slots != NULL && ws->pids != NULL && ws->peer_seen != NULL &&
        (counts != NULL || !pairs)) {
        ws->ctl_fd = tutti__mem_file(ws->ctl_len, &m, ws->ctl_cookie);
    }
    if (ws->ctl_fd < 0) {
        free(ws->slots);
        free(ws->pids);
        free(ws->peer_seen);
        free(counts);
        free(ws);
        return NULL;
    }
    if (counts != NULL) {
        ws->pair_out = counts;
        ws->pair_in = counts + nranks;
        ws->run_out = counts + 2 * (size_t)nranks;
        ws->run_in = counts + 3 * (size_t)nranks;
        ws->pair_room = counts + 4 * (size_t)nranks;
    }
    ws->ctl = (struct tutti_win_slot *)((uint8_t *)m + tutti__mem_header());
    ws->slots[rank] = ws->ctl;
    return ws;
}

struct tutti_window *tutti__window_new(int nranks)
{
    struct tutti_window *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->base = calloc((size_t)nranks, sizeof(*w->base));
    w->blen = calloc((size_t)nranks, sizeof(*w->blen));
    w->map = calloc((size_t)nranks, sizeof(*w->map));
    w->maplen = calloc((size_t)nranks, sizeof(*w->maplen));
    if (w->base == NULL || w->blen == NULL || w->map == NULL || w->maplen == NULL) {
        tutti__window_free(w);
        return NULL;
    }
    return w;
}

void tutti__win_unmap(struct tutti_window *w)
{
    int n = w->set != NULL ? w->set->nranks : 0;
    for (int r = 0; r < n; r++) {
        if (w->map[r] != NULL) {
            munmap(w->map[r], w->maplen[r]);
            w->map[r] = NULL;
        }
        if (r != w->set->rank) {
            w->base[r] = NULL;
            w->blen[r] = 0;
        }
    }
    w->shared = 0;
}

void tutti__window_free(struct tutti_window *w)
{
    if (w == NULL) {
        return;
    }
    if (w->set != NULL && w->map != NULL) {
        tutti__win_unmap(w);
    }
    if (w->block != NULL) {
        tutti__mem_hold(w->block, -1);
    }
    free(w->base);
    free(w->blen);
    free(w->map);
    free(w->maplen);
    free(w);
}

void tutti__winset_unmap_ctl(struct tutti_winset *ws)
{
    for (int r = 0; r < ws->nranks; r++) {
        if (r != ws->rank && ws->slots[r] != NULL) {
            munmap((uint8_t *)ws->slots[r] - tutti__mem_header(), ws->ctl_len);
            ws->slots[r] = NULL;
        }
    }
    ws->ready = 0;
}

void tutti__winset_free(struct tutti_winset *ws)
{
    if (ws == NULL) {
        return;
    }
    while (ws->wins != NULL) {
        struct tutti_window *w = ws->wins;
        ws->wins = w->next;
        tutti__window_free(w);
    }
    tutti__winset_unmap_ctl(ws);
    munmap((uint8_t *)ws->ctl - tutti__mem_header(), ws->ctl_len);
    close(ws->ctl_fd);
    free(ws->slots);
    free(ws->pids);
    free(ws->peer_seen);
    free(ws->scratch);
    free(ws->pair_out); /* the other counts' storage too */
    free(ws);
}

void tutti__win_rec(const struct tutti_winset *ws, const void *buf, size_t len,
                    struct tutti_win_rec *rec, void **block_p)
{
    struct tutti_mem_ref ref;
    memset(rec, 0, sizeof(*rec));
    rec->pid = (int32_t)getpid();
    rec->fd = -1;
    rec->len = len;
    rec->ctl_fd = ws->ctl_fd;
    rec->ctl_len = ws->ctl_len;
    memcpy(rec->ctl_cookie, ws->ctl_cookie, TUTTI_MEM_COOKIE_BYTES);
    *block_p = NULL;
    if (tutti__mem_lookup(buf, len, &ref) == 0) {
        rec->fd = ref.fd;
        rec->maplen = ref.maplen;
        rec->offset = ref.offset;
        memcpy(rec->cookie, ref.cookie, TUTTI_MEM_COOKIE_BYTES);
        *block_p = ref.block;
    }
}

/* Map `len` bytes of process pid's fd, a regular file of exactly that length that starts with
 * cookie: the mapping, or NULL. Opened without blocking and without taking a terminal: the fd
 * number came from a peer and names whatever that pid holds here. */
static void *map_peer(int32_t pid, int32_t fd, size_t len, const uint8_t *cookie)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
    int f = open(path, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) {
        return NULL;
    }
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(f, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == (uint64_t)len &&
        len >= TUTTI_MEM_COOKIE_BYTES) {
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    }
    close(f);
    if (m == MAP_FAILED) {
        return NULL;
    }
    if (memcmp(m, cookie, TUTTI_MEM_COOKIE_BYTES) != 0) {
        munmap(m, len);
        return NULL;
    }
    return m;
}

int tutti__win_map(struct tutti_winset *ws, struct tutti_window *w,
                   const struct tutti_win_rec *recs)
{
    int ctl_ok = 1, buf_ok = recs[ws->rank].fd >= 0;
    for (int r = 0; r < ws->nranks; r++) {
        const struct tutti_win_rec *p = &recs[r];
        ws->pids[r] = p->pid;
        if (r == ws->rank) {
            continue;
        }
        if (ws->slots[r] == NULL && ctl_ok) {
            uint8_t *m = p->ctl_len == ws->ctl_len
                             ? map_peer(p->pid, p->ctl_fd, ws->ctl_len, p->ctl_cookie)
                             : NULL;
            ctl_ok = m != NULL;
            ws->slots[r] = m != NULL ? (struct tutti_win_slot *)(m + tutti__mem_header()) : NULL;
        }
        if (!buf_ok) {
            continue;
        }
        uint8_t *m = NULL;
        if (p->fd >= 0 && p->offset >= tutti__mem_header() && p->offset <= p->maplen &&
            p->len <= p->maplen - p->offset) {
            m = map_peer(p->pid, p->fd, p->maplen, p->cookie);
        }
        buf_ok = m != NULL;
        w->map[r] = m;
        w->maplen[r] = p->maplen;
        w->base[r] = m != NULL ? m + p->offset : NULL;
        w->blen[r] = p->len;
    }
    return (ctl_ok ? 1 : 0) | (buf_ok ? 2 : 0);
}
