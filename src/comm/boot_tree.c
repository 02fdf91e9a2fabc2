/*
 * boot_tree.c - the bootstrap's all-gathers and syncs over a tree between the ranks, so that the
 * root serves only the rendezvous: O(n) bytes in all instead of n records to each of n ranks at
 * every all-gather, and O(log n) hops per round instead of n messages through one thread.
 *
 * After joining the root, each rank listens on a socket of its own and sends its address in one
 * more root round (BOOT_REQ_TREE); the root answers each rank with its parent's address (the tree
 * is tutti__boot_tree_place's, on contiguous rank ranges). Each rank connects its parent with
 * the job's authenticated handshake and accepts its children. An all-gather then goes up (a
 * child sends its subtree's records, one contiguous piece) and down (the whole result); a sync
 * the same way with the worst status.
 *
 * The root stays the place where failures meet: each rank keeps its root connection and watches
 * it while it waits on the tree. A rank that dies closes that connection, and the root tells
 * every rank who it was; a rank that sees a tree neighbour close, stall past TUTTI_TIMEOUT or
 * send the wrong message reports it to the root (BOOT_REQ_FAIL), which tells all the others.
 * Waits on a parent get a grace period over waits on children, so the rank nearest a stalled
 * one names it first.
 */
#include "comm/boot_client.h"
#include "comm/boot_wire.h"
#include "base/check.h"
#include "base/env.h"
#include "net/admit.h"
#include "base/global.h"
#include "tutti/comm.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TREE_GRACE_NS     (2000ll * 1000000ll)   /* per level: see up_deadline() */
#define TREE_ROOT_WORD_NS (5000ll * 1000000ll)   /* after a neighbour closed: the root's reason */
#define TREE_MAX_PENDING  (2 * BOOT_TREE_FANOUT) /* handshakes in progress on the listener */

struct boot_tree {
    int parent, parent_fd;
    int nchild;
    int first[BOOT_TREE_FANOUT + 1]; /* tutti__boot_tree_place's: children and subtree ends */
    int child_fd[BOOT_TREE_FANOUT];
    int height, top; /* levels below this rank, and below rank 0 */
};

/* One message to or from a tree neighbour: header, then payload. */
struct xfer {
    int fd, peer, out;
    uint32_t type;
    size_t len; /* payload bytes, sent or expected */
    uint8_t *buf;
    uint8_t hdr[BOOT_HDR_BYTES];
    size_t done; /* of BOOT_HDR_BYTES + len */
};

enum { X_PENDING = 0, X_DONE = 1, X_CLOSED = -1, X_WRONG = -2 };

int tutti__boot_tree_wanted(int nranks)
{
    long min = tutti__env()->BOOT_TREE;
    return min > 0 && nranks >= min && nranks > 1;
}

void tutti__boot_tree_free(struct boot_client *c)
{
    struct boot_tree *t = c->tree;
    if (t == NULL) {
        return;
    }
    if (t->parent_fd >= 0) {
        close(t->parent_fd);
    }
    for (int i = 0; i < t->nchild; i++) {
        if (t->child_fd[i] >= 0) {
            close(t->child_fd[i]);
        }
    }
    free(t);
    c->tree = NULL;
}

/*
 * Deadlines of one operation that started at t0. A stalled rank must be named by the rank
 * nearest it, not by one that waits for it through others: a rank waits for its children
 * TUTTI_TIMEOUT plus a grace per level below them, and for its parent's answer longer than any
 * rank waits for children. The first to give up reports to the root, which tells every rank.
 */
static int64_t up_deadline(const struct boot_client *c, int64_t t0)
{
    return t0 + c->timeout_ns + (int64_t)TUTTI_MAX(c->tree->height - 1, 0) * TREE_GRACE_NS;
}

static int64_t down_deadline(const struct boot_client *c, int64_t t0)
{
    return t0 + c->timeout_ns + (int64_t)(c->tree->top + 1) * TREE_GRACE_NS;
}

static const char *relation(const struct boot_tree *t, int peer)
{
    return peer == t->parent ? "parent" : "child";
}

/*
 * This rank's tree operation failed because of `culprit`: unless the root has already said why
 * (it watches every rank's connection, so a dead rank is its to name), record the error, tell the
 * root, which tells every rank, and return st. wait_ns: how long to give the root's word first.
 */
static tutti_status_t tree_fail(struct boot_client *c, int64_t wait_ns, tutti_status_t st,
                                int culprit, const char *fmt, ...)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    if (poll(&pfd, 1, (int)(wait_ns / 1000000)) > 0) {
        return tutti__boot_client_root_word(c, tutti__now_ns() + TREE_ROOT_WORD_NS);
    }
    struct boot_error e = {(int32_t)htonl((uint32_t)st), (int32_t)htonl((uint32_t)culprit), {0}};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.reason, sizeof(e.reason), fmt, ap);
    va_end(ap);
    st = tutti__set_error(NULL, st, "bootstrap: %s", e.reason);
    char msg[sizeof(tutti__tls.last_error)];
    snprintf(msg, sizeof(msg), "%s", tutti_last_error(NULL));
    (void)tutti__boot_client_transact(c, BOOT_REQ_FAIL, &e, sizeof(e), 0, NULL, 0);
    tutti__set_error_quiet(NULL, st, "%s", msg); /* the report's own errors do not replace it */
    return st;
}

static void xfer_init(struct xfer *x, int fd, int peer, int out, uint32_t type, void *buf,
                      size_t len)
{
    *x = (struct xfer){.fd = fd, .peer = peer, .out = out, .type = type, .len = len, .buf = buf};
    if (out) {
        tutti__boot_hdr_encode(type, (uint32_t)len, x->hdr);
    }
}

/* Move what the kernel takes now. */
static int xfer_progress(struct xfer *x)
{
    while (x->done < BOOT_HDR_BYTES + x->len) {
        int hdr = x->done < BOOT_HDR_BYTES, err = 0;
        uint8_t *p = hdr ? x->hdr + x->done : x->buf + (x->done - BOOT_HDR_BYTES);
        size_t want = hdr ? BOOT_HDR_BYTES - x->done : BOOT_HDR_BYTES + x->len - x->done;
        ssize_t n = x->out ? tutti__sock_send(x->fd, p, want, &err)
                           : tutti__sock_recv(x->fd, p, want, &err);
        if (n < 0) {
            return X_CLOSED;
        }
        if (n == 0) {
            return X_PENDING;
        }
        x->done += (size_t)n;
        if (!x->out && hdr && x->done == BOOT_HDR_BYTES) {
            struct boot_hdr h;
            tutti__boot_hdr_decode(x->hdr, &h);
            if (h.type != x->type || h.len != x->len) {
                return X_WRONG;
            }
        }
    }
    return X_DONE;
}

/* Move every transfer on once; whether all are done. */
static int tree_done(struct xfer *xs, int n)
{
    int done = 1;
    for (int i = 0; i < n; i++) {
        struct xfer *x = &xs[i];
        done &= x->done == BOOT_HDR_BYTES + x->len || xfer_progress(x) == X_DONE;
    }
    return done;
}

/* Run the transfers until all are done, the root speaks, or one fails (named to the root). */
static tutti_status_t tree_run(struct boot_client *c, struct xfer *xs, int n, int64_t deadline,
                               const char *what)
{
    struct boot_tree *t = c->tree;
    struct pollfd pfd[BOOT_TREE_FANOUT + 2];
    for (;;) {
        int np = 0;
        for (int i = 0; i < n; i++) {
            struct xfer *x = &xs[i];
            int r = x->done < BOOT_HDR_BYTES + x->len ? xfer_progress(x) : X_DONE;
            if (r == X_CLOSED) {
                return tree_fail(c, TREE_ROOT_WORD_NS, TUTTI_ERR_REMOTE, x->peer,
                                 "rank %d, the %s of rank %d in the bootstrap tree, closed its "
                                 "connection during the %s",
                                 x->peer, relation(t, x->peer), c->rank, what);
            }
            if (r == X_WRONG) {
                struct boot_hdr h;
                tutti__boot_hdr_decode(x->hdr, &h);
                return tree_fail(c, 0, TUTTI_ERR_INVALID_USAGE, x->peer,
                                 "ranks disagree on the set-up sequence: rank %d sent rank %d "
                                 "tree message %u of %u bytes during the %s, expected %u of %zu",
                                 x->peer, c->rank, h.type, h.len, what, x->type, x->len);
            }
            if (r == X_PENDING) {
                pfd[np++] = (struct pollfd){.fd = x->fd, .events = x->out ? POLLOUT : POLLIN};
            }
        }
        if (np == 0) {
            return TUTTI_OK;
        }
        int64_t left = deadline - tutti__now_ns();
        if (left <= 0) {
            int late = -1;
            for (int i = 0; i < n && late < 0; i++) {
                late = xs[i].done < BOOT_HDR_BYTES + xs[i].len ? xs[i].peer : -1;
            }
            return tree_fail(c, 0, TUTTI_ERR_TIMEOUT, late,
                             "rank %d waited beyond TUTTI_TIMEOUT (%.0f s) for rank %d, its %s "
                             "in the bootstrap tree, during the %s",
                             c->rank, (double)c->timeout_ns / 1e9, late, relation(t, late), what);
        }
        pfd[np] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        int got = poll(pfd, (nfds_t)np + 1, (int)TUTTI_MIN(left / 1000000 + 1, 1000));
        if (got < 0 && errno != EINTR) {
            return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "poll: %s", strerror(errno));
        }
        if (got > 0 && pfd[np].revents != 0 && !tree_done(xs, n)) {
            /* The root spoke, and what this operation waits for has not all come (an operation
             * whose data arrived with the word still completes). A failure spreads through the
             * root at once while data moves hop by hop, so ranks may learn of it in different
             * operations: one that completed its last one on one rank, in that one on another. */
            return tutti__boot_client_root_word(c, tutti__now_ns() + TREE_ROOT_WORD_NS);
        }
    }
}

/* The transfers with every child, all of one kind; returns how many. */
static int with_children(const struct boot_tree *t, struct xfer *xs, int out, uint32_t type,
                         uint8_t *base, size_t size, int whole)
{
    for (int i = 0; i < t->nchild; i++) {
        int lo = t->first[i], hi = t->first[i + 1];
        uint8_t *p = whole ? base : base + (size_t)lo * size;
        size_t len = whole ? size : (size_t)(hi - lo) * size;
        xfer_init(&xs[i], t->child_fd[i], lo, out, type, p, len);
    }
    return t->nchild;
}

static tutti_status_t tree_allgather(struct tutti_boot *b, const void *mine, void *all, size_t size)
{
    struct boot_client *c = (struct boot_client *)b;
    struct boot_tree *t = c->tree;
    if (size == 0 || size > BOOT_MAX_PAYLOAD) {
        return tutti__set_error(NULL, TUTTI_ERR_INTERNAL, "bootstrap record of %zu bytes", size);
    }
    uint8_t *a = all;
    size_t whole = size * (size_t)c->nranks;
    int64_t t0 = tutti__now_ns();
    memcpy(a + (size_t)c->rank * size, mine, size);
    struct xfer xs[BOOT_TREE_FANOUT];
    int n = with_children(t, xs, 0, BOOT_TREE_GATHER_UP, a, size, 0);
    TUTTI_CHECK(tree_run(c, xs, n, up_deadline(c, t0), "all-gather (up)"));
    if (t->parent >= 0) {
        size_t mine_len = (size_t)(t->first[t->nchild] - c->rank) * size;
        xfer_init(&xs[0], t->parent_fd, t->parent, 1, BOOT_TREE_GATHER_UP,
                  a + (size_t)c->rank * size, mine_len);
        xfer_init(&xs[1], t->parent_fd, t->parent, 0, BOOT_TREE_GATHER_DOWN, a, whole);
        TUTTI_CHECK(tree_run(c, &xs[0], 1, down_deadline(c, t0), "all-gather (up)"));
        TUTTI_CHECK(tree_run(c, &xs[1], 1, down_deadline(c, t0), "all-gather (down)"));
    }
    n = with_children(t, xs, 1, BOOT_TREE_GATHER_DOWN, a, whole, 1);
    return tree_run(c, xs, n, down_deadline(c, t0), "all-gather (down)");
}

/* The worse of two sync values (host order): the lower status, then the lower rank. */
static void sync_merge(struct boot_sync *acc, const struct boot_sync *wire)
{
    struct boot_sync x = {tutti__boot_status_decode(wire->status),
                          (int32_t)ntohl((uint32_t)wire->rank)};
    if (x.status < acc->status || (x.status == acc->status && x.status < 0 && x.rank < acc->rank)) {
        *acc = x;
    }
}

static struct boot_sync sync_wire(const struct boot_sync *h)
{
    return (struct boot_sync){(int32_t)htonl((uint32_t)h->status),
                              (int32_t)htonl((uint32_t)h->rank)};
}

static tutti_status_t tree_sync(struct tutti_boot *b, tutti_status_t mine, tutti_status_t *agreed_p,
                                int *culprit_p)
{
    struct boot_client *c = (struct boot_client *)b;
    struct boot_tree *t = c->tree;
    int64_t t0 = tutti__now_ns();
    struct boot_sync acc = {mine < 0 ? mine : 0, mine < 0 ? c->rank : -1};
    struct boot_sync from[BOOT_TREE_FANOUT], wire;
    struct xfer xs[BOOT_TREE_FANOUT];
    for (int i = 0; i < t->nchild; i++) {
        xfer_init(&xs[i], t->child_fd[i], t->first[i], 0, BOOT_TREE_SYNC_UP, &from[i],
                  sizeof(from[i]));
    }
    TUTTI_CHECK(tree_run(c, xs, t->nchild, up_deadline(c, t0), "sync (up)"));
    for (int i = 0; i < t->nchild; i++) {
        sync_merge(&acc, &from[i]);
    }
    wire = sync_wire(&acc);
    if (t->parent >= 0) {
        xfer_init(&xs[0], t->parent_fd, t->parent, 1, BOOT_TREE_SYNC_UP, &wire, sizeof(wire));
        TUTTI_CHECK(tree_run(c, xs, 1, down_deadline(c, t0), "sync (up)"));
        xfer_init(&xs[0], t->parent_fd, t->parent, 0, BOOT_TREE_SYNC_DOWN, &wire, sizeof(wire));
        TUTTI_CHECK(tree_run(c, xs, 1, down_deadline(c, t0), "sync (down)"));
    }
    for (int i = 0; i < t->nchild; i++) {
        xfer_init(&xs[i], t->child_fd[i], t->first[i], 1, BOOT_TREE_SYNC_DOWN, &wire, sizeof(wire));
    }
    TUTTI_CHECK(tree_run(c, xs, t->nchild, down_deadline(c, t0), "sync (down)"));
    *agreed_p = tutti__boot_status_decode(wire.status);
    *culprit_p = (int32_t)ntohl((uint32_t)wire.rank);
    return TUTTI_OK;
}

static const struct tutti_boot_ops tree_ops = {
    .allgather = tree_allgather,
    .sync = tree_sync,
    .close = tutti__boot_client_close,
};

/* Wait for one fd (events) or the root's word, until the deadline or a second at most (waking
 * 512 ranks every few ms would cost their host's CPUs more than the set-up itself); the root's
 * error if it spoke. */
static tutti_status_t wait_fd(struct boot_client *c, int fd, short events, int64_t deadline)
{
    struct pollfd pfd[2] = {{.fd = fd, .events = events}, {.fd = c->fd, .events = POLLIN}};
    int64_t left = deadline - tutti__now_ns();
    int ms = (int)TUTTI_MAX(TUTTI_MIN(left / 1000000 + 1, 1000), 0);
    if (poll(pfd, 2, ms) > 0 && pfd[1].revents != 0) {
        return tutti__boot_client_root_word(c, tutti__now_ns() + TREE_ROOT_WORD_NS);
    }
    return TUTTI_OK;
}

/* One try at connecting the parent and proving this rank to it. *in_hs_p: 1 when the
 * connection was made, so a failure came during the handshake; -1 when the root spoke (its
 * error is returned). */
static tutti_status_t try_parent(struct boot_client *c, const union tutti_sockaddr *to,
                                 const uint8_t *secret, uint64_t job_id, int64_t deadline,
                                 int *err_p, int *in_hs_p)
{
    struct boot_tree *t = c->tree;
    *in_hs_p = 0;
    tutti_status_t st = tutti__sock_connect_start(to, &t->parent_fd);
    *err_p = st == TUTTI_OK ? 0 : errno;
    while (st == TUTTI_OK &&
           (st = tutti__sock_connect_check(t->parent_fd, err_p)) == TUTTI_IN_PROGRESS) {
        if (tutti__now_ns() > deadline) {
            return TUTTI_ERR_TIMEOUT;
        }
        if ((st = wait_fd(c, t->parent_fd, POLLOUT, deadline)) != TUTTI_OK) {
            *in_hs_p = -1;
            return st;
        }
        st = TUTTI_OK;
    }
    if (st != TUTTI_OK) {
        return st;
    }
    *in_hs_p = 1;
    struct boot_hello hello = {
        .kind = BOOT_TREE_KIND, .rank = c->rank, .nranks = c->nranks, .pid = (uint32_t)getpid()};
    struct tutti_hs hs;
    tutti__hs_init_connect(&hs, t->parent_fd, secret, job_id, &hello, sizeof(hello), deadline);
    while ((st = tutti__hs_progress(&hs)) == TUTTI_IN_PROGRESS) {
        tutti_status_t w = wait_fd(c, t->parent_fd, tutti__hs_events(&hs), deadline);
        if (w != TUTTI_OK) {
            *in_hs_p = -1;
            return w;
        }
    }
    return st;
}

/*
 * Connect the parent at `to` and prove this rank to it, by the deadline. A handshake the parent
 * closes is tried again: a parent whose listener is crowded by strangers closes the oldest
 * handshakes (net/admit.h), and a child must not pay for them.
 */
static tutti_status_t connect_parent(struct boot_client *c, const union tutti_sockaddr *to,
                                     const uint8_t *secret, uint64_t job_id, int64_t deadline)
{
    struct boot_tree *t = c->tree;
    int err = 0, in_hs = 0;
    tutti_status_t st;
    for (int64_t backoff_us = 1000;; backoff_us = TUTTI_MIN(backoff_us * 2, 200000)) {
        st = try_parent(c, to, secret, job_id, deadline, &err, &in_hs);
        if (st == TUTTI_OK || in_hs != 1 || st != TUTTI_ERR_REMOTE ||
            tutti__now_ns() + backoff_us * 1000 >= deadline) {
            break;
        }
        tutti_info(TUTTI_SUBSYS_BOOT,
                   "bootstrap tree: rank %d's parent (rank %d) closed the "
                   "handshake; trying again",
                   c->rank, t->parent);
        close(t->parent_fd);
        t->parent_fd = -1;
        usleep((useconds_t)backoff_us);
    }
    if (st == TUTTI_OK) {
        return TUTTI_OK;
    }
    if (in_hs == -1) {
        return st; /* the root's word, recorded */
    }
    char addr[80];
    tutti__sockaddr_str(to, addr, sizeof(addr));
    return tree_fail(c, TREE_ROOT_WORD_NS, st, t->parent,
                     "rank %d cannot join rank %d, its parent in the bootstrap tree, at %s: %s",
                     c->rank, t->parent, addr,
                     st == TUTTI_ERR_AUTH ? "the handshake failed (another job at that address?)"
                     : err != 0           ? strerror(err)
                                          : tutti_status_string(st));
}

/* A handshake on the listener passed: place the child it names, or refuse it (-1). */
static int place_child(struct boot_client *c, const struct tutti_hs *hs, int fd)
{
    struct boot_tree *t = c->tree;
    struct boot_hello h;
    memcpy(&h, hs->payload, sizeof(h));
    for (int i = 0; i < t->nchild; i++) {
        if (h.kind == BOOT_TREE_KIND && h.nranks == c->nranks && h.rank == t->first[i] &&
            t->child_fd[i] < 0) {
            t->child_fd[i] = fd;
            return 0;
        }
    }
    tutti_warn("bootstrap tree: rank %d refused a connection that proved the job's secret but "
               "claims rank %d of %d, which is not an unconnected child of this rank",
               c->rank, h.rank, h.nranks);
    return -1;
}

/* A connection on the tree listener, until its handshake passes. */
struct tree_pending {
    struct tutti_admit_slot adm; /* first: tutti_admit_at_fn reads it */
    struct tutti_hs hs;
    char from[80];
};

static const struct tutti_admit_slot *pending_slot(const void *table, int i)
{
    return &((const struct tree_pending *)table)[i].adm;
}

/* The listener's children and strangers: the shared policy (net/admit.h), sized for a few
 * children. A child whose handshake is closed connects again (connect_parent). */
struct tree_listen {
    int lfd;
    struct tree_pending pend[TREE_MAX_PENDING];
    int npend;
    struct tutti_admit_log log;
    struct tutti_admit_cfg cfg;
};

static void drop(struct tree_listen *l, int i, enum tutti_admit_why why, const char *detail)
{
    tutti__admit_closed(&l->log, why, l->pend[i].from, detail, tutti__now_ns());
    close(l->pend[i].hs.fd);
    l->pend[i] = l->pend[--l->npend];
}

/* Accept one connection if the policy leaves room (closing the oldest stranger if it says so). */
static void admit_one(struct tree_listen *l, const uint8_t *secret, uint64_t job_id,
                      int64_t deadline)
{
    int64_t now = tutti__now_ns(), wait;
    int room = tutti__admit_room(l->pend, l->npend, pending_slot, &l->cfg, now, &wait);
    int fd;
    union tutti_sockaddr from;
    if (room == -2 || tutti__sock_accept(l->lfd, &fd, &from) != TUTTI_OK) {
        return;
    }
    if (room >= 0) {
        drop(l, room, TUTTI_ADMIT_FULL, "too many handshakes in progress; the oldest is closed");
    }
    uint64_t addr = tutti__admit_addr_key(&from);
    int victim = tutti__admit_addr_victim(l->pend, l->npend, pending_slot, addr, &l->cfg, now);
    if (victim >= 0) {
        drop(l, victim, TUTTI_ADMIT_ADDR, "too many handshakes from its address");
    }
    struct tree_pending *p = &l->pend[l->npend++];
    p->adm = (struct tutti_admit_slot){.since_ns = now, .addr = addr};
    tutti__sockaddr_str(&from, p->from, sizeof(p->from));
    int64_t hs_end = now + tutti__env()->HANDSHAKE_TIMEOUT;
    tutti__hs_init_accept(&p->hs, fd, secret, job_id, TUTTI_MIN(hs_end, deadline));
}

/* Accept this rank's children on lfd, by the deadline; strangers are refused and logged. */
static tutti_status_t accept_children(struct boot_client *c, struct tree_listen *l,
                                      const uint8_t *secret, uint64_t job_id, int64_t deadline)
{
    struct boot_tree *t = c->tree;
    int placed = 0;
    tutti_status_t st = TUTTI_OK;
    while (placed < t->nchild && st == TUTTI_OK) {
        struct pollfd pfd[TREE_MAX_PENDING + 2];
        int np = 0;
        for (int i = 0; i < l->npend; i++) {
            pfd[np++] =
                (struct pollfd){.fd = l->pend[i].hs.fd, .events = tutti__hs_events(&l->pend[i].hs)};
        }
        pfd[np++] = (struct pollfd){.fd = l->lfd, .events = POLLIN};
        pfd[np] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        int64_t left = deadline - tutti__now_ns();
        if (left <= 0) {
            int late = -1;
            for (int i = 0; i < t->nchild && late < 0; i++) {
                late = t->child_fd[i] < 0 ? t->first[i] : -1;
            }
            st = tree_fail(c, 0, TUTTI_ERR_TIMEOUT, late,
                           "rank %d waited TUTTI_TIMEOUT (%.0f s) for rank %d, its child in the "
                           "bootstrap tree, to connect",
                           c->rank, (double)c->timeout_ns / 1e9, late);
            break;
        }
        /* A full table leaves the listener readable: then wake at least every 100 ms, when the
         * oldest handshake may have aged enough to be closed. */
        int ms = (int)TUTTI_MIN(left / 1000000 + 1, l->npend == TREE_MAX_PENDING ? 100 : 1000);
        int got = poll(pfd, (nfds_t)np + 1, ms);
        if (got > 0 && pfd[np].revents != 0) {
            st = tutti__boot_client_root_word(c, tutti__now_ns() + TREE_ROOT_WORD_NS);
            break;
        }
        if (got > 0 && pfd[np - 1].revents != 0) {
            admit_one(l, secret, job_id, deadline);
        }
        for (int i = 0; i < l->npend; i++) {
            tutti_status_t hs = tutti__hs_progress(&l->pend[i].hs);
            if (hs == TUTTI_OK && place_child(c, &l->pend[i].hs, l->pend[i].hs.fd) == 0) {
                placed++;
                l->pend[i] = l->pend[--l->npend];
                i--;
            } else if (hs != TUTTI_IN_PROGRESS) {
                drop(l, i--,
                     hs == TUTTI_OK            ? TUTTI_ADMIT_OTHER
                     : hs == TUTTI_ERR_AUTH    ? TUTTI_ADMIT_AUTH
                     : hs == TUTTI_ERR_TIMEOUT ? TUTTI_ADMIT_DEADLINE
                                               : TUTTI_ADMIT_OTHER,
                     hs == TUTTI_OK ? "not a child of this rank" : tutti_status_string(hs));
            }
        }
        tutti__admit_flush(&l->log, tutti__now_ns(), 0);
    }
    while (l->npend > 0) {
        close(l->pend[--l->npend].hs.fd);
    }
    tutti__admit_flush(&l->log, tutti__now_ns(), 1);
    return st;
}

tutti_status_t tutti__boot_tree_form(struct boot_client *c, const struct tutti_boot_id *id)
{
    struct boot_tree *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for the bootstrap tree");
    }
    c->tree = t;
    t->parent_fd = -1;
    t->nchild = tutti__boot_tree_place(c->nranks, c->rank, &t->parent, t->first);
    for (int i = 0; i < BOOT_TREE_FANOUT; i++) {
        t->child_fd[i] = -1;
    }
    t->height = tutti__boot_tree_height(t->first[t->nchild] - c->rank); /* its subtree's size */
    t->top = tutti__boot_tree_height(c->nranks);
    union tutti_sockaddr local, bound, parent;
    int lfd = -1;
    tutti_status_t st = tutti__sock_local_addr(&id->root, &local);
    if (st == TUTTI_OK) {
        st = tutti__sock_listen(&local, &lfd, &bound);
    }
    /* Every rank makes the round, even one that could not listen: the root answers only when
     * all have, and the failure is then reported to all. */
    struct tutti_wire_addr mine, theirs;
    memset(&mine, 0, sizeof(mine));
    if (st == TUTTI_OK) {
        tutti__wire_addr_encode(&bound, &mine);
    }
    tutti_status_t rt = tutti__boot_client_transact(c, BOOT_REQ_TREE, &mine, sizeof(mine),
                                                    BOOT_REP_TREE, &theirs, sizeof(theirs));
    if (rt != TUTTI_OK || st != TUTTI_OK) {
        if (lfd >= 0) {
            close(lfd);
        }
        return rt != TUTTI_OK ? rt
                              : tree_fail(c, 0, st, c->rank,
                                          "rank %d cannot listen for its bootstrap tree: %s",
                                          c->rank, tutti_last_error(NULL));
    }
    int64_t deadline = tutti__now_ns() + c->timeout_ns;
    if (t->parent >= 0) {
        if (tutti__wire_addr_decode(&theirs, &parent) != TUTTI_OK) {
            st = tree_fail(c, 0, TUTTI_ERR_REMOTE, t->parent,
                           "rank %d published no valid bootstrap tree address", t->parent);
        } else {
            st = connect_parent(c, &parent, id->secret, id->job_id, deadline);
        }
    }
    if (st == TUTTI_OK) {
        struct tree_listen *l = calloc(1, sizeof(*l));
        if (l == NULL) {
            st = tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for the bootstrap tree");
        } else {
            l->lfd = lfd;
            l->cfg = (struct tutti_admit_cfg){.max_total = TREE_MAX_PENDING,
                                              .max_per_addr = TREE_MAX_PENDING / 2,
                                              .min_age_ns = TUTTI_ADMIT_MIN_AGE_NS};
            snprintf(l->log.who, sizeof(l->log.who), "bootstrap tree: rank %d", c->rank);
            st = accept_children(c, l, id->secret, id->job_id, deadline);
            free(l);
        }
    }
    close(lfd);
    if (st == TUTTI_OK) {
        c->base.ops = &tree_ops;
        tutti_debug(TUTTI_SUBSYS_BOOT, "bootstrap tree: rank %d, parent %d, %d children", c->rank,
                    t->parent, t->nchild);
    }
    return st;
}
