/*
 * boot_root.c - the bootstrap root: a thread that serves one communicator's set-up. It accepts
 * connections, authenticates each one (strangers are refused and logged, and the root carries
 * on), learns each rank from the authenticated hello, then answers rounds of requests: when
 * every rank has sent its k-th request it replies to all (an all-gather of records, or the worst
 * status of a sync). A rank that leaves early or never comes makes the root tell every other
 * rank who it was, so nobody waits for nothing. Handshakes in progress are capped
 * (TUTTI_BOOT_MAX_HANDSHAKES): a flood of silent connections costs the root a bounded number of
 * descriptors, and the oldest of them makes room for a newcomer. The thread is gated against
 * fork() (fork_gate.h): it works inside the gate and leaves it only to wait in poll(); a forked
 * child closes the root's sockets, so that only the root itself ever accepts at its port.
 */
#include "bootstrap.h"
#include "boot_wire.h"
#include "check.h"
#include "env.h"
#include "fork_gate.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HANDSHAKE_TIMEOUT_NS (10ll * 1000000000ll)

struct root_client {
    int fd;
    int rank;      /* -1 until authenticated */
    int64_t since; /* when it was accepted */
    uint32_t pid;
    char addr[80];
    struct tutti_hs hs;
    uint8_t hdr_raw[BOOT_HDR_BYTES]; /* request header being read */
    struct boot_hdr hdr;             /* ... and decoded */
    size_t hdr_done;
    uint8_t *payload;
    size_t pay_done;
    int ready; /* a whole request is in */
};

struct root {
    int lfd;
    uint8_t secret[TUTTI_SECRET_BYTES];
    uint64_t job_id;
    int64_t timeout_ns;
    int nranks; /* 0 until the first rank arrives */
    struct root_client **by_rank;
    int nbye;
    struct root_client **pending; /* accepted, not yet authenticated */
    int npending, pending_cap;
    int nevicted;        /* handshakes closed to make room (warned about once) */
    int64_t round_start; /* when the current round started waiting */
    int64_t first_ns;    /* when the first rank joined: the set-up's deadline counts from it */
    int quiet_warned;    /* the current round's ranks missing were warned about */
    int min_nranks;      /* the smallest size a rank claimed (below nranks on a mismatch) */
    int failed;          /* the set-up failed: verdict says why, told who has it */
    struct boot_error verdict;
    uint8_t *told;      /* [nranks] */
    struct pollfd *fds; /* root_wait's poll set, grown as needed */
    int fds_cap;
    struct tutti_boot_root_watch *watch; /* the starter's handle on our end, or NULL */
};

/* A root thread's end, shared by the thread and its starter (refs: who still holds it). */
struct tutti_boot_root_watch {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ended, refs;
};

/* One holder lets go of the watch (the last one frees it). */
static void watch_put(struct tutti_boot_root_watch *w, int ended)
{
    pthread_mutex_lock(&w->lock);
    w->ended |= ended;
    pthread_cond_broadcast(&w->cond);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->lock);
    if (last) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
    }
}

void tutti__boot_root_watch_end(struct tutti_boot_root_watch *w, int64_t deadline_ns)
{
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->ended && tutti__now_ns() < deadline_ns) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20000000; /* the deadline is on another clock: look again every 20 ms */
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
    }
    pthread_mutex_unlock(&w->lock);
    watch_put(w, 0);
}

static void client_free(struct root_client *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c->payload);
    free(c);
}

static tutti_status_t write_all(int fd, const void *buf, size_t len, int64_t deadline)
{
    size_t done = 0;
    while (done < len) {
        int err = 0;
        ssize_t n = tutti__sock_send(fd, (const char *)buf + done, len - done, &err);
        if (n < 0) {
            return TUTTI_ERR_REMOTE;
        }
        done += (size_t)n;
        if (n == 0) {
            if (tutti__now_ns() > deadline) {
                return TUTTI_ERR_TIMEOUT;
            }
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            tutti__fork_gate_leave();
            (void)poll(&pfd, 1, 10);
            tutti__fork_gate_enter();
        }
    }
    return TUTTI_OK;
}

static void send_msg(struct root *rt, struct root_client *c, uint32_t type, const void *p,
                     size_t len)
{
    uint8_t h[BOOT_HDR_BYTES];
    tutti__boot_hdr_encode(type, (uint32_t)len, h);
    int64_t deadline = tutti__now_ns() + rt->timeout_ns;
    if (write_all(c->fd, h, sizeof(h), deadline) == TUTTI_OK && len > 0) {
        (void)write_all(c->fd, p, len, deadline);
    }
}

/* Tell every connected rank that the set-up failed, and why; the root keeps the verdict for the
 * ranks that have not joined yet (root_linger). */
static void fail_all(struct root *rt, tutti_status_t st, int culprit, const char *reason)
{
    struct boot_error *e = &rt->verdict;
    *e = (struct boot_error){(int32_t)htonl((uint32_t)st), (int32_t)htonl((uint32_t)culprit), {0}};
    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    rt->failed = 1;
    tutti_warn("bootstrap root: %s", reason);
    /* Highest rank first, rank 0 last: under a launcher the root is a thread of rank 0, whose
     * process may exit as soon as it has its answer, taking the root with it. */
    for (int r = rt->nranks - 1; r >= 0; r--) {
        if (rt->by_rank[r] != NULL && rt->by_rank[r]->fd >= 0) {
            send_msg(rt, rt->by_rank[r], BOOT_REP_ERROR, e, sizeof(*e));
            rt->told[r] = 1;
        }
    }
}

/* A rank that joins after the set-up failed gets the verdict. */
static void tell_late(struct root *rt, struct root_client *c, const struct boot_hello *h)
{
    send_msg(rt, c, BOOT_REP_ERROR, &rt->verdict, sizeof(rt->verdict));
    if (h->rank >= 0 && h->rank < rt->nranks) {
        rt->told[h->rank] = 1;
    }
    tutti_debug(TUTTI_SUBSYS_BOOT,
                "bootstrap root: told rank %d (pid %u, %s) that the set-up failed", h->rank, h->pid,
                c->addr);
}

/*
 * Authenticated: place the client by the rank its hello claims, or refuse it. Returns 0 when
 * placed, -1 when refused, -2 when refused and the whole set-up fails: a rank that holds the
 * secret but disagrees on nranks is a misconfigured job, which no rank can complete, so every
 * rank is told at once instead of waiting for the timeout.
 */
static int place_client(struct root *rt, struct root_client *c)
{
    struct boot_hello h;
    memcpy(&h, c->hs.payload, sizeof(h));
    if (rt->failed) {
        tell_late(rt, c, &h);
        return -1;
    }
    char why[200] = "";
    int verdict = tutti__boot_hello_check(&h, rt->nranks, why, sizeof(why));
    int fatal = verdict == -2;
    if (verdict == 0 && rt->nranks != 0 && rt->by_rank[h.rank] != NULL) {
        /* Two processes hold this job's secret and claim one rank: no set-up can complete. */
        snprintf(why, sizeof(why),
                 "rank %d joined twice (pid %u, then pid %u from %s): two processes were "
                 "started as rank %d",
                 h.rank, rt->by_rank[h.rank]->pid, h.pid, c->addr, h.rank);
        fatal = 1;
    }
    if (why[0] != '\0') {
        struct boot_error e = {(int32_t)htonl((uint32_t)TUTTI_ERR_INVALID_USAGE), -1, {0}};
        snprintf(e.reason, sizeof(e.reason), "refused by the root: %s", why);
        tutti_warn("bootstrap root refused %s: %s", c->addr, why);
        send_msg(rt, c, BOOT_REP_ERROR, &e, sizeof(e));
        if (fatal) {
            rt->min_nranks = TUTTI_MIN(rt->min_nranks, TUTTI_MAX(h.nranks, 1));
            if (h.rank >= 0 && h.rank < rt->nranks) {
                rt->told[h.rank] = 1;
            }
            fail_all(rt, TUTTI_ERR_REMOTE, h.rank, why);
            return -2;
        }
        return -1;
    }
    if (rt->nranks == 0) {
        rt->by_rank = calloc((size_t)h.nranks, sizeof(*rt->by_rank));
        rt->told = calloc((size_t)h.nranks, 1);
        if (rt->by_rank == NULL || rt->told == NULL) {
            free(rt->by_rank);
            free(rt->told);
            rt->by_rank = NULL;
            rt->told = NULL;
            return -1;
        }
        rt->nranks = h.nranks;
        rt->min_nranks = h.nranks;
        rt->round_start = rt->first_ns = tutti__now_ns();
    }
    c->rank = h.rank;
    c->pid = h.pid;
    rt->by_rank[h.rank] = c;
    tutti_debug(TUTTI_SUBSYS_BOOT, "bootstrap root: rank %d joined from %s", h.rank, c->addr);
    return 0;
}

/* The pending handshake that has waited longest, or -1 when there is none. */
static int oldest_pending(const struct root *rt)
{
    int o = -1;
    for (int i = 0; i < rt->npending; i++) {
        if (o < 0 || rt->pending[i]->since < rt->pending[o]->since) {
            o = i;
        }
    }
    return o;
}

/*
 * Room for one more handshake? At the cap, the oldest one is closed if it has waited
 * TUTTI_BOOT_EVICT_AFTER_NS (a rank answers within a round trip: it is a stranger, or a rank so
 * slow that it will retry nothing and fail anyway); else new connections wait in the listen queue.
 */
static int make_room(struct root *rt)
{
    if (rt->npending < TUTTI_BOOT_MAX_HANDSHAKES) {
        return 1;
    }
    int o = oldest_pending(rt);
    struct root_client *c = rt->pending[o];
    if (tutti__now_ns() - c->since < TUTTI_BOOT_EVICT_AFTER_NS) {
        return 0;
    }
    if (rt->nevicted++ == 0) {
        tutti_warn("bootstrap root: %d handshakes in progress, the most it keeps; closing the "
                   "oldest (from %s) to make room, and so on for each newcomer (a flood of "
                   "connections that do not authenticate?)",
                   rt->npending, c->addr);
    } else {
        tutti_debug(TUTTI_SUBSYS_BOOT, "bootstrap root: closing a handshake from %s to make room",
                    c->addr);
    }
    rt->pending[o] = rt->pending[--rt->npending];
    client_free(c);
    return 1;
}

static void accept_new(struct root *rt)
{
    while (make_room(rt)) {
        int fd;
        union tutti_sockaddr from;
        if (tutti__sock_accept(rt->lfd, &fd, &from) != TUTTI_OK) {
            return;
        }
        if (rt->npending == rt->pending_cap) {
            int cap = rt->pending_cap + 16;
            struct root_client **n = realloc(rt->pending, (size_t)cap * sizeof(*n));
            if (n == NULL) {
                close(fd);
                return;
            }
            rt->pending = n;
            rt->pending_cap = cap;
        }
        struct root_client *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->rank = -1;
        c->since = tutti__now_ns();
        tutti__sockaddr_str(&from, c->addr, sizeof(c->addr));
        tutti__hs_init_accept(&c->hs, fd, rt->secret, rt->job_id, c->since + HANDSHAKE_TIMEOUT_NS);
        rt->pending[rt->npending++] = c;
    }
}

/* Move handshakes forward and place who passed; -1 when the set-up has failed. */
static int progress_handshakes(struct root *rt)
{
    for (int i = 0; i < rt->npending;) {
        struct root_client *c = rt->pending[i];
        tutti_status_t st = tutti__hs_progress(&c->hs);
        if (st == TUTTI_IN_PROGRESS) {
            i++;
            continue;
        }
        rt->pending[i] = rt->pending[--rt->npending];
        int placed = 0;
        if (st != TUTTI_OK && st != TUTTI_ERR_AUTH && st != TUTTI_ERR_TIMEOUT && c->hs.done == 0) {
            /* Closed before sending a byte: tutti_comm_shrink's liveness probe, or a scan. */
            tutti_debug(TUTTI_SUBSYS_BOOT, "bootstrap root: %s closed before the handshake",
                        c->addr);
        } else if (st != TUTTI_OK) {
            tutti_warn("bootstrap root refused connection from %s: %s", c->addr,
                       st == TUTTI_ERR_AUTH ? "authentication failed (wrong secret or another job)"
                                            : tutti_status_string(st));
        } else {
            placed = place_client(rt, c);
        }
        if (placed != 0 || st != TUTTI_OK) {
            client_free(c);
        }
        if (placed == -2) {
            return -1;
        }
    }
    return 0;
}

/* Read what is available of the client's next request; -1 if it left. */
static int read_request(struct root_client *c)
{
    while (!c->ready) {
        int err = 0;
        ssize_t n;
        if (c->hdr_done < sizeof(c->hdr_raw)) {
            n = tutti__sock_recv(c->fd, c->hdr_raw + c->hdr_done, sizeof(c->hdr_raw) - c->hdr_done,
                                 &err);
            if (n > 0 && (c->hdr_done += (size_t)n) == sizeof(c->hdr_raw)) {
                tutti__boot_hdr_decode(c->hdr_raw, &c->hdr);
                if (c->hdr.len > BOOT_MAX_PAYLOAD) {
                    return -1;
                }
                free(c->payload);
                c->payload = c->hdr.len > 0 ? malloc(c->hdr.len) : NULL;
                c->pay_done = 0;
                if (c->hdr.len > 0 && c->payload == NULL) {
                    return -1;
                }
                c->ready = (c->hdr.len == 0);
            }
        } else {
            n = tutti__sock_recv(c->fd, c->payload + c->pay_done, c->hdr.len - c->pay_done, &err);
            if (n > 0 && (c->pay_done += (size_t)n) == c->hdr.len) {
                c->ready = 1;
            }
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
    }
    return 0;
}

/* Every rank's request of this round is in: check they agree and answer all. */
static int answer_round(struct root *rt)
{
    uint32_t type = rt->by_rank[0]->hdr.type, len = rt->by_rank[0]->hdr.len;
    for (int r = 1; r < rt->nranks; r++) {
        if (rt->by_rank[r]->hdr.type != type || rt->by_rank[r]->hdr.len != len) {
            char why[160];
            snprintf(why, sizeof(why),
                     "ranks disagree on the set-up sequence (rank 0 sent "
                     "request %u of %u bytes, rank %d request %u of %u bytes)",
                     type, len, r, rt->by_rank[r]->hdr.type, rt->by_rank[r]->hdr.len);
            fail_all(rt, TUTTI_ERR_INVALID_USAGE, r, why);
            return -1;
        }
    }
    if (type == BOOT_REQ_ALLGATHER) {
        uint8_t *all = malloc((size_t)len * (size_t)rt->nranks);
        if (all == NULL) {
            fail_all(rt, TUTTI_ERR_NO_MEMORY, -1, "the root is out of memory");
            return -1;
        }
        for (int r = 0; r < rt->nranks; r++) {
            memcpy(all + (size_t)r * len, rt->by_rank[r]->payload, len);
        }
        for (int r = 0; r < rt->nranks; r++) {
            send_msg(rt, rt->by_rank[r], BOOT_REP_ALLGATHER, all, (size_t)len * rt->nranks);
        }
        free(all);
    } else if (type == BOOT_REQ_SYNC && len == sizeof(struct boot_sync)) {
        struct boot_sync worst = {0, -1};
        for (int r = 0; r < rt->nranks; r++) {
            struct boot_sync s;
            memcpy(&s, rt->by_rank[r]->payload, sizeof(s));
            int32_t st = tutti__boot_status_decode(s.status);
            if (st < worst.status) {
                worst.status = st;
                worst.rank = r;
            }
        }
        struct boot_sync rep = {(int32_t)htonl((uint32_t)worst.status),
                                (int32_t)htonl((uint32_t)worst.rank)};
        for (int r = 0; r < rt->nranks; r++) {
            send_msg(rt, rt->by_rank[r], BOOT_REP_SYNC, &rep, sizeof(rep));
        }
    } else {
        fail_all(rt, TUTTI_ERR_INVALID_USAGE, -1, "unknown bootstrap request");
        return -1;
    }
    for (int r = 0; r < rt->nranks; r++) {
        rt->by_rank[r]->ready = 0;
        rt->by_rank[r]->hdr_done = 0;
    }
    rt->round_start = tutti__now_ns();
    rt->quiet_warned = 0;
    return 0;
}

/* List the ranks that are absent (never joined) or have not sent this round's request. */
static void describe_missing(const struct root *rt, char *buf, size_t len)
{
    size_t o = 0;
    int absent = 0, late = 0;
    for (int r = 0; r < rt->nranks && o + 16 < len; r++) {
        const struct root_client *c = rt->by_rank[r];
        if (c == NULL || !c->ready) {
            o += (size_t)snprintf(buf + o, len - o, "%s%d", (absent + late) ? ", " : "", r);
            absent += (c == NULL);
            late += (c != NULL);
        }
    }
    if (o + 40 < len) {
        snprintf(buf + o, len - o,
                 absent > 0 ? " never joined" : " did not reach this set-up step");
    }
}

/* Handle one ready or departed client; returns -1 when the root must stop. */
static int serve_client(struct root *rt, int r)
{
    struct root_client *c = rt->by_rank[r];
    if (c == NULL || c->fd < 0) {
        return 0;
    }
    if (read_request(c) != 0) {
        char why[200];
        snprintf(why, sizeof(why), "rank %d (pid %u, %s) left before the set-up finished", r,
                 c->pid, c->addr);
        close(c->fd);
        c->fd = -1;
        fail_all(rt, TUTTI_ERR_REMOTE, r, why);
        return -1;
    }
    if (c->ready && c->hdr.type == BOOT_REQ_BYE) {
        close(c->fd);
        c->fd = -1;
        c->ready = 0;
        rt->nbye++;
    }
    return 0;
}

static int all_ready(const struct root *rt)
{
    if (rt->nranks == 0) {
        return 0;
    }
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] == NULL || !rt->by_rank[r]->ready) {
            return 0;
        }
    }
    return 1;
}

/* Wait for something to do, at most 100 ms; the listener only while there is room. */
static void root_wait(struct root *rt)
{
    int cap = 1 + rt->npending + rt->nranks;
    if (cap > rt->fds_cap) {
        struct pollfd *grown = realloc(rt->fds, (size_t)cap * sizeof(*grown));
        if (grown == NULL) {
            tutti__fork_gate_leave();
            usleep(1000);
            tutti__fork_gate_enter();
            return;
        }
        rt->fds = grown;
        rt->fds_cap = cap;
    }
    struct pollfd *fds = rt->fds;
    int n = 0, ms = 100;
    if (rt->npending < TUTTI_BOOT_MAX_HANDSHAKES) {
        fds[n++] = (struct pollfd){.fd = rt->lfd, .events = POLLIN};
    } else {
        /* Full: the queue may be readable for long, so wake when the oldest can be closed. */
        int64_t wait =
            rt->pending[oldest_pending(rt)]->since + TUTTI_BOOT_EVICT_AFTER_NS - tutti__now_ns();
        ms = (int)TUTTI_MAX(0, TUTTI_MIN(wait / 1000000 + 1, ms));
    }
    /* POLLIN only: a handshake sends small messages that never wait for room (and at worst
     * goes on at the next 100 ms wake-up), while POLLOUT on a silent connection would make
     * this loop spin until its deadline. */
    for (int i = 0; i < rt->npending; i++) {
        fds[n++] = (struct pollfd){.fd = rt->pending[i]->fd, .events = POLLIN};
    }
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] != NULL && rt->by_rank[r]->fd >= 0) {
            fds[n++] = (struct pollfd){.fd = rt->by_rank[r]->fd, .events = POLLIN};
        }
    }
    tutti__fork_gate_leave();
    (void)poll(fds, (nfds_t)n, ms);
    tutti__fork_gate_enter();
}

static void root_serve(struct root *rt)
{
    for (;;) {
        root_wait(rt);
        accept_new(rt);
        if (progress_handshakes(rt) != 0) {
            return;
        }
        for (int r = 0; r < rt->nranks; r++) {
            if (serve_client(rt, r) != 0) {
                return;
            }
        }
        if (rt->nranks > 0 && rt->nbye == rt->nranks) {
            return;
        }
        if (all_ready(rt)) {
            if (answer_round(rt) != 0) {
                return;
            }
            continue;
        }
        int64_t waited = tutti__now_ns() - rt->round_start;
        if (rt->nranks > 0 && waited > rt->timeout_ns) {
            char why[240];
            describe_missing(rt, why, sizeof(why));
            char full[300];
            snprintf(full, sizeof(full), "ranks %.200s within TUTTI_TIMEOUT", why);
            fail_all(rt, TUTTI_ERR_TIMEOUT, -1, full);
            return;
        }
        if (rt->nranks > 0 && waited > TUTTI_BOOT_QUIET_WARN_NS && !rt->quiet_warned) {
            char why[240];
            describe_missing(rt, why, sizeof(why));
            tutti_warn("bootstrap root: ranks %.200s after %.0f s; waiting until TUTTI_TIMEOUT "
                       "(%.0f s): are they running, with this root address, the same secret and "
                       "the same number of ranks?",
                       why, (double)waited / 1e9, (double)rt->timeout_ns / 1e9);
            rt->quiet_warned = 1;
        }
    }
}

/* Has every rank that exists whichever size is right (those below the smallest size claimed)
 * been told the verdict? */
static int all_told(const struct root *rt)
{
    for (int r = 0; r < TUTTI_MIN(rt->nranks, rt->min_nranks); r++) {
        if (!rt->told[r]) {
            return 0;
        }
    }
    return 1;
}

/*
 * After a failed set-up, ranks that have not joined yet would find the port closed and, under a
 * launcher (where the root may start late), try again until their timeout. So the root stays to
 * tell each of them the verdict, until every rank has it or the set-up's deadline (TUTTI_TIMEOUT
 * after the first rank came) has passed.
 */
static void root_linger(struct root *rt)
{
    if (!rt->failed || rt->nranks == 0) {
        return;
    }
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] != NULL) {
            client_free(rt->by_rank[r]); /* it has the verdict */
            rt->by_rank[r] = NULL;
        }
    }
    int64_t deadline = rt->first_ns + rt->timeout_ns;
    while (!all_told(rt) && tutti__now_ns() < deadline) {
        root_wait(rt);
        accept_new(rt);
        (void)progress_handshakes(rt);
    }
}

/* In a forked child (fork_gate.h): the child has no root thread, so nothing may listen or hold
 * a rank's connection on its behalf. Descriptors only: the child may not allocate here. */
static void root_in_child(void *arg)
{
    struct root *rt = arg;
    close(rt->lfd);
    for (int i = 0; i < rt->npending; i++) {
        close(rt->pending[i]->fd);
    }
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] != NULL && rt->by_rank[r]->fd >= 0) {
            close(rt->by_rank[r]->fd);
        }
    }
}

static void *root_main(void *arg)
{
    struct root *rt = arg;
    struct tutti_boot_root_watch *watch = rt->watch;
    root_serve(rt);
    root_linger(rt);
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] != NULL) {
            client_free(rt->by_rank[r]);
        }
    }
    for (int i = 0; i < rt->npending; i++) {
        client_free(rt->pending[i]);
    }
    close(rt->lfd);
    free(rt->by_rank);
    free(rt->told);
    free(rt->pending);
    free(rt->fds);
    free(rt);
    if (watch != NULL) {
        watch_put(watch, 1);
    }
    tutti__fork_gate_exit();
    return NULL;
}

/* Start the thread on rt; with watch_p, a watch on its end too. Frees rt on failure. */
static tutti_status_t root_launch(struct root *rt, struct tutti_boot_root_watch **watch_p)
{
    struct tutti_boot_root_watch *w = NULL;
    if (watch_p != NULL && (w = calloc(1, sizeof(*w))) != NULL) {
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->refs = 2; /* the thread and the starter */
    }
    if (watch_p != NULL && w == NULL) {
        close(rt->lfd);
        free(rt);
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for the bootstrap root");
    }
    rt->watch = w;
    int err = tutti__fork_gate_thread_start(root_main, rt, root_in_child);
    if (err != 0) {
        close(rt->lfd);
        free(rt);
        if (w != NULL) {
            watch_put(w, 1);
            watch_put(w, 1);
        }
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "starting the bootstrap root thread: %s",
                                strerror(err));
    }
    if (watch_p != NULL) {
        *watch_p = w;
    }
    return TUTTI_OK;
}

static struct root *root_new(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES], uint64_t job_id,
                             int64_t timeout_ns)
{
    struct root *rt = calloc(1, sizeof(*rt));
    if (rt == NULL) {
        close(lfd);
        tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for the bootstrap root");
        return NULL;
    }
    memcpy(rt->secret, secret, TUTTI_SECRET_BYTES);
    rt->job_id = job_id;
    rt->timeout_ns = timeout_ns;
    rt->lfd = lfd;
    return rt;
}

tutti_status_t tutti__boot_root_serve(int lfd, const uint8_t secret[TUTTI_SECRET_BYTES],
                                      uint64_t job_id, int64_t timeout_ns)
{
    struct root *rt = root_new(lfd, secret, job_id, timeout_ns);
    return rt != NULL ? root_launch(rt, NULL) : TUTTI_ERR_NO_MEMORY;
}

tutti_status_t tutti__boot_root_start(const union tutti_sockaddr *listen,
                                      const uint8_t secret[TUTTI_SECRET_BYTES], uint64_t job_id,
                                      union tutti_sockaddr *bound_p,
                                      struct tutti_boot_root_watch **watch_p)
{
    int lfd = -1;
    TUTTI_CHECK(tutti__sock_listen(listen, &lfd, bound_p));
    struct root *rt = root_new(lfd, secret, job_id, tutti__env()->TIMEOUT);
    if (rt == NULL) {
        return TUTTI_ERR_NO_MEMORY;
    }
    TUTTI_CHECK(root_launch(rt, watch_p));
    char addr[80];
    tutti_info(TUTTI_SUBSYS_BOOT, "bootstrap root listening on %s",
               tutti__sockaddr_str(bound_p, addr, sizeof(addr)));
    return TUTTI_OK;
}
