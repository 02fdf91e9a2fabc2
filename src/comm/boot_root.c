/*
 * boot_root.c - the bootstrap root: a thread that serves one communicator's set-up. It accepts
 * connections, authenticates each one (strangers are refused and logged, and the root carries
 * on), learns each rank from the authenticated hello, then answers rounds of requests: when
 * every rank has sent its k-th request it replies to all (an all-gather of records, or the worst
 * status of a sync). A rank that leaves early or never comes makes the root tell every other
 * rank who it was, so nobody waits for nothing, and after a failure it stays to tell the ranks
 * that come late. How a connection becomes a rank, against a flood of strangers, is
 * boot_join.c's. The thread is gated against fork() (fork_gate.h): it works inside the gate and
 * leaves it only to wait in poll(); a forked child closes the root's sockets, so that only the
 * root itself ever accepts at its port.
 */
#include "comm/boot_root.h"
#include "base/check.h"
#include "base/env.h"
#include "base/fork_gate.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

void tutti__root_client_free(struct root_client *c)
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

void tutti__root_send(struct root *rt, struct root_client *c, uint32_t type, const void *p,
                      size_t len)
{
    uint8_t h[BOOT_HDR_BYTES];
    tutti__boot_hdr_encode(type, (uint32_t)len, h);
    int64_t deadline = tutti__now_ns() + rt->timeout_ns;
    if (write_all(c->fd, h, sizeof(h), deadline) == TUTTI_OK && len > 0) {
        (void)write_all(c->fd, p, len, deadline);
    }
    rt->msgs_out++;
    rt->bytes_out += sizeof(h) + len;
}

/* Tell every connected rank that the set-up failed, and why; the root keeps the verdict for the
 * ranks that have not joined yet (root_linger). */
void tutti__root_fail_all(struct root *rt, tutti_status_t st, int culprit, const char *reason)
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
            tutti__root_send(rt, rt->by_rank[r], BOOT_REP_ERROR, e, sizeof(*e));
            rt->told[r] = 1;
        }
    }
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

/* The tree round (boot_tree.c): each rank gets its parent's address. From then on the ranks
 * exchange among themselves; the root only carries failures, and leaves the timing of the
 * set-up to them (each watches its tree neighbours and reports a stalled one). */
static void answer_tree(struct root *rt)
{
    for (int r = 0; r < rt->nranks; r++) {
        int parent, first[BOOT_TREE_FANOUT + 1];
        (void)tutti__boot_tree_place(rt->nranks, r, &parent, first);
        const uint8_t *addr = rt->by_rank[parent >= 0 ? parent : r]->payload;
        tutti__root_send(rt, rt->by_rank[r], BOOT_REP_TREE, addr, sizeof(struct tutti_wire_addr));
    }
    rt->tree = 1;
}

/* Every rank's request of this round is in: check they agree and answer all. */
static int answer_round(struct root *rt)
{
    uint32_t type = rt->by_rank[0]->hdr.type, len = rt->by_rank[0]->hdr.len;
    for (int r = 1; r < rt->nranks; r++) {
        if (rt->by_rank[r]->hdr.type != type || rt->by_rank[r]->hdr.len != len) {
            char why[160];
            int tree = type == BOOT_REQ_TREE || rt->by_rank[r]->hdr.type == BOOT_REQ_TREE;
            snprintf(why, sizeof(why),
                     "ranks disagree on the set-up sequence (rank 0 sent "
                     "request %u of %u bytes, rank %d request %u of %u bytes)%s",
                     type, len, r, rt->by_rank[r]->hdr.type, rt->by_rank[r]->hdr.len,
                     tree ? ": is TUTTI_BOOT_TREE the same for every rank?" : "");
            tutti__root_fail_all(rt, TUTTI_ERR_INVALID_USAGE, r, why);
            return -1;
        }
    }
    if (type == BOOT_REQ_ALLGATHER) {
        uint8_t *all = malloc((size_t)len * (size_t)rt->nranks);
        if (all == NULL) {
            tutti__root_fail_all(rt, TUTTI_ERR_NO_MEMORY, -1, "the root is out of memory");
            return -1;
        }
        for (int r = 0; r < rt->nranks; r++) {
            memcpy(all + (size_t)r * len, rt->by_rank[r]->payload, len);
        }
        for (int r = 0; r < rt->nranks; r++) {
            tutti__root_send(rt, rt->by_rank[r], BOOT_REP_ALLGATHER, all, (size_t)len * rt->nranks);
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
            tutti__root_send(rt, rt->by_rank[r], BOOT_REP_SYNC, &rep, sizeof(rep));
        }
    } else if (type == BOOT_REQ_TREE && len == sizeof(struct tutti_wire_addr)) {
        answer_tree(rt);
    } else {
        tutti__root_fail_all(rt, TUTTI_ERR_INVALID_USAGE, -1, "unknown bootstrap request");
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
    int absent = 0, missing = 0, unsaid = 0;
    for (int r = 0; r < rt->nranks; r++) {
        const struct root_client *c = rt->by_rank[r];
        if (c != NULL && c->ready) {
            continue;
        }
        int last = r; /* a run of missing ranks, written "a-b" */
        while (last + 1 < rt->nranks &&
               (rt->by_rank[last + 1] == NULL || !rt->by_rank[last + 1]->ready)) {
            last++;
        }
        for (int k = r; k <= last; k++) {
            absent += rt->by_rank[k] == NULL;
        }
        char run[32];
        snprintf(run, sizeof(run), last > r ? "%s%d-%d" : "%s%d", missing ? ", " : "", r, last);
        if (o + strlen(run) + 48 < len) {
            o += (size_t)snprintf(buf + o, len - o, "%s", run);
        } else {
            unsaid += last - r + 1;
        }
        missing += last - r + 1;
        r = last;
    }
    if (unsaid > 0) {
        o += (size_t)snprintf(buf + o, len - o, " and %d more", unsaid);
    }
    if (o < len) {
        o += (size_t)snprintf(buf + o, len - o, "%s",
                              absent > 0 ? " never joined" : " did not reach this set-up step");
    }
    if (o < len && missing > 1) {
        snprintf(buf + o, len - o, " (%d of %d)", missing, rt->nranks);
    }
}

/* Handle one ready or departed client; returns -1 when the root must stop. */
static int serve_client(struct root *rt, int r)
{
    struct root_client *c = rt->by_rank[r];
    if (c == NULL || c->fd < 0 || (c->revents == 0 && !c->fresh)) {
        return 0;
    }
    c->fresh = 0;
    c->revents = 0;
    int was_ready = c->ready;
    if (read_request(c) != 0) {
        char why[200];
        snprintf(why, sizeof(why), "rank %d (pid %u, %s) left before the set-up finished", r,
                 c->pid, c->addr);
        close(c->fd);
        c->fd = -1;
        tutti__root_fail_all(rt, TUTTI_ERR_REMOTE, r, why);
        return -1;
    }
    if (c->ready && !was_ready) {
        rt->msgs_in++;
        rt->bytes_in += BOOT_HDR_BYTES + c->hdr.len;
    }
    if (c->ready && c->hdr.type == BOOT_REQ_FAIL && c->hdr.len == sizeof(struct boot_error)) {
        struct boot_error e; /* a rank reports a tree neighbour (boot_tree.c): tell everyone */
        char reason[sizeof(e.reason)];
        int culprit;
        memcpy(&e, c->payload, sizeof(e));
        tutti_status_t st = tutti__boot_error_decode(&e, &culprit, reason, sizeof(reason));
        tutti__root_fail_all(rt, st, culprit >= -1 && culprit < rt->nranks ? culprit : -1, reason);
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
    if (tutti__root_may_accept(rt, &ms)) {
        fds[n++] = (struct pollfd){.fd = rt->lfd, .events = POLLIN};
    }
    /* POLLIN only: a handshake sends small messages that never wait for room (and at worst
     * goes on at the next 100 ms wake-up), while POLLOUT on a silent connection would make
     * this loop spin until its deadline. */
    for (int i = 0; i < rt->npending; i++) {
        fds[n++] = (struct pollfd){.fd = rt->pending[i]->fd, .events = POLLIN};
    }
    int first_rank = n;
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] != NULL && rt->by_rank[r]->fd >= 0) {
            fds[n++] = (struct pollfd){.fd = rt->by_rank[r]->fd, .events = POLLIN};
        }
    }
    tutti__fork_gate_leave();
    int got = poll(fds, (nfds_t)n, ms);
    tutti__fork_gate_enter();
    /* Which ranks have something to read: only those are read (serve_client), so that a wake-up
     * costs the root the messages that came, not a recv() on each of 512 connections. */
    for (int r = 0, k = first_rank; r < rt->nranks; r++) {
        struct root_client *c = rt->by_rank[r];
        if (c != NULL && c->fd >= 0) {
            c->revents = got > 0 ? fds[k].revents : 0;
            k++;
        }
    }
}

static void root_serve(struct root *rt)
{
    for (;;) {
        root_wait(rt);
        tutti__root_accept(rt);
        if (tutti__root_handshakes(rt) != 0) {
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
        if (rt->tree) {
            continue; /* the tree's waits are the ranks' (boot_tree.c): no deadline here */
        }
        int64_t waited = tutti__now_ns() - rt->round_start;
        if (rt->nranks > 0 && waited > rt->timeout_ns) {
            char why[200];
            describe_missing(rt, why, sizeof(why));
            char full[300];
            snprintf(full, sizeof(full), "ranks %.200s within TUTTI_TIMEOUT", why);
            tutti__root_fail_all(rt, TUTTI_ERR_TIMEOUT, -1, full);
            return;
        }
        if (rt->nranks > 0 && waited > TUTTI_BOOT_QUIET_WARN_NS && !rt->quiet_warned) {
            char why[200];
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
            tutti__root_client_free(rt->by_rank[r]); /* it has the verdict */
            rt->by_rank[r] = NULL;
        }
    }
    int64_t deadline = rt->first_ns + rt->timeout_ns;
    while (!all_told(rt) && tutti__now_ns() < deadline) {
        root_wait(rt);
        tutti__root_accept(rt);
        (void)tutti__root_handshakes(rt);
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
    /* What the set-up cost the root, beyond the handshakes (issue 20: O(n) with the tree). */
    tutti_info(TUTTI_SUBSYS_BOOT,
               "bootstrap root: %d ranks%s; %llu messages (%llu bytes) received, %llu (%llu "
               "bytes) sent",
               rt->nranks, rt->tree ? " over the tree" : " through the root",
               (unsigned long long)rt->msgs_in, (unsigned long long)rt->bytes_in,
               (unsigned long long)rt->msgs_out, (unsigned long long)rt->bytes_out);
    root_linger(rt);
    tutti__admit_flush(&rt->alog, tutti__now_ns(), 1);
    for (int r = 0; r < rt->nranks; r++) {
        if (rt->by_rank[r] != NULL) {
            tutti__root_client_free(rt->by_rank[r]);
        }
    }
    for (int i = 0; i < rt->npending; i++) {
        tutti__root_client_free(rt->pending[i]);
    }
    close(rt->lfd);
    free(rt->by_rank);
    free(rt->told);
    free(rt->pending);
    free(rt->fds);
    free(rt);
    /* Listed as ended (for the join at exit) before the starter learns that the root ended: a
     * starter that then returns and exits must find this thread to join (TSan saw a thread leak
     * when the order was the other way round). */
    tutti__fork_gate_exit();
    if (watch != NULL) {
        watch_put(watch, 1);
    }
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
    rt->hs_timeout_ns = TUTTI_MIN(tutti__env()->HANDSHAKE_TIMEOUT, timeout_ns);
    rt->lfd = lfd;
    snprintf(rt->alog.who, sizeof(rt->alog.who), "bootstrap root");
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
