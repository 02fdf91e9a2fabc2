/*
 * boot_client.c - a rank's side of the root bootstrap: connect (retrying while the root is not
 * up yet), authenticate, then requests and replies with deadlines. A reply of type ERROR carries
 * the root's word on which rank failed, and becomes this rank's error.
 */
#include "comm/boot_client.h"
#include "comm/boot_wire.h"
#include "base/check.h"
#include "base/global.h"
#include "tutti/comm.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BOOT_ROOT_GRACE_NS (1000ll * 1000000ll) /* see transact() */
#define BOOT_RETRY_LOG_NS  (1000ll * 1000000ll) /* retries are logged (info) this often */

/* Move exactly len bytes in or out by the deadline. */
static tutti_status_t io_all(struct boot_client *c, void *buf, size_t len, int out,
                             int64_t deadline)
{
    size_t done = 0;
    while (done < len) {
        int err = 0;
        ssize_t n = out ? tutti__sock_send(c->fd, (char *)buf + done, len - done, &err)
                        : tutti__sock_recv(c->fd, (char *)buf + done, len - done, &err);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0) {
            /* Sending: transact() looks for the root's reason first, and logs (refused()). */
            return (out ? tutti__set_error_quiet : tutti__set_error)(
                NULL, TUTTI_ERR_REMOTE, "bootstrap root %s closed the connection%s%s", c->root_str,
                err != 0 ? ": " : "", err != 0 ? strerror(err) : "");
        }
        int64_t left = deadline - tutti__now_ns();
        if (left <= 0) {
            return tutti__set_error(NULL, TUTTI_ERR_TIMEOUT,
                                    "no answer from the bootstrap root %s within the timeout "
                                    "(other ranks missing?)",
                                    c->root_str);
        }
        struct pollfd pfd = {.fd = c->fd, .events = out ? POLLOUT : POLLIN};
        int ms = (int)TUTTI_MIN(left / 1000000 + 1, 1000);
        if (poll(&pfd, 1, ms) < 0 && errno != EINTR) {
            return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "poll: %s", strerror(errno));
        }
    }
    return TUTTI_OK;
}

/* The root's BOOT_REP_ERROR, whose header was read: its reason becomes our error. */
static tutti_status_t root_error(struct boot_client *c, int64_t deadline)
{
    struct boot_error e;
    char reason[sizeof(e.reason)];
    int culprit;
    TUTTI_CHECK(io_all(c, &e, sizeof(e), 0, deadline));
    tutti_status_t st = tutti__boot_error_decode(&e, &culprit, reason, sizeof(reason));
    return tutti__set_error(NULL, st, "bootstrap: %s", reason);
}

/*
 * Sending failed because the root closed the connection: it may have refused this rank (it
 * answers with its reason, then closes, while our request is on its way). The reason is then in
 * our receive buffer; report it rather than the broken pipe.
 */
static tutti_status_t refused(struct boot_client *c, tutti_status_t st)
{
    uint8_t raw[BOOT_HDR_BYTES];
    struct boot_hdr h;
    size_t got = 0;
    int err = 0;
    ssize_t n;
    while (got < sizeof(raw) &&
           (n = tutti__sock_recv(c->fd, raw + got, sizeof(raw) - got, &err)) > 0) {
        got += (size_t)n;
    }
    tutti__boot_hdr_decode(raw, &h);
    if (got == sizeof(raw) && h.type == BOOT_REP_ERROR && h.len == sizeof(struct boot_error)) {
        return root_error(c, tutti__now_ns());
    }
    char msg[sizeof(tutti__tls.last_error)];
    snprintf(msg, sizeof(msg), "%s", tutti_last_error(NULL));
    return tutti__set_error(NULL, st, "%s", msg);
}

tutti_status_t tutti__boot_client_root_word(struct boot_client *c, int64_t deadline)
{
    uint8_t raw[BOOT_HDR_BYTES];
    struct boot_hdr h;
    TUTTI_CHECK(io_all(c, raw, sizeof(raw), 0, deadline));
    tutti__boot_hdr_decode(raw, &h);
    if (h.type == BOOT_REP_ERROR && h.len == sizeof(struct boot_error)) {
        return root_error(c, deadline);
    }
    return tutti__set_error(NULL, TUTTI_ERR_REMOTE,
                            "bootstrap root %s sent message %u of %u bytes while the ranks "
                            "exchanged over the tree (only an error was expected)",
                            c->root_str, h.type, h.len);
}

tutti_status_t tutti__boot_client_transact(struct boot_client *c, uint32_t type,
                                           const void *payload, uint32_t len, uint32_t rep_type,
                                           void *rep, size_t rep_len)
{
    /* The root times out after the same TUTTI_TIMEOUT, counted from the first rank's arrival,
     * and then tells every rank who is missing; wait a little longer, so that its word arrives
     * before our own, less informative, timeout. */
    int64_t deadline = tutti__now_ns() + c->timeout_ns + BOOT_ROOT_GRACE_NS;
    uint8_t raw[BOOT_HDR_BYTES];
    tutti__boot_hdr_encode(type, len, raw);
    tutti_status_t st = io_all(c, raw, sizeof(raw), 1, deadline);
    if (st == TUTTI_OK && len > 0) {
        st = io_all(c, (void *)payload, len, 1, deadline);
    }
    if (st == TUTTI_ERR_REMOTE) {
        return refused(c, st);
    }
    TUTTI_CHECK(st);
    if (rep_type == 0) {
        return TUTTI_OK;
    }
    struct boot_hdr h;
    TUTTI_CHECK(io_all(c, raw, sizeof(raw), 0, deadline));
    tutti__boot_hdr_decode(raw, &h);
    uint32_t got_type = h.type, got_len = h.len;
    if (got_type == BOOT_REP_ERROR && got_len == sizeof(struct boot_error)) {
        return root_error(c, deadline);
    }
    if (got_type != rep_type || got_len != rep_len) {
        return tutti__set_error(NULL, TUTTI_ERR_REMOTE,
                                "bootstrap root %s sent message %u of %u bytes, expected %u of %zu",
                                c->root_str, got_type, got_len, rep_type, rep_len);
    }
    return io_all(c, rep, rep_len, 0, deadline);
}

static tutti_status_t client_allgather(struct tutti_boot *b, const void *mine, void *all,
                                       size_t size)
{
    struct boot_client *c = (struct boot_client *)b;
    if (size == 0 || size > BOOT_MAX_PAYLOAD) {
        return tutti__set_error(NULL, TUTTI_ERR_INTERNAL, "bootstrap record of %zu bytes", size);
    }
    return tutti__boot_client_transact(c, BOOT_REQ_ALLGATHER, mine, (uint32_t)size,
                                       BOOT_REP_ALLGATHER, all, size * (size_t)c->nranks);
}

static tutti_status_t client_sync(struct tutti_boot *b, tutti_status_t mine,
                                  tutti_status_t *agreed_p, int *culprit_p)
{
    struct boot_client *c = (struct boot_client *)b;
    struct boot_sync s = {(int32_t)htonl((uint32_t)mine), (int32_t)htonl((uint32_t)c->rank)};
    struct boot_sync r;
    TUTTI_CHECK(
        tutti__boot_client_transact(c, BOOT_REQ_SYNC, &s, sizeof(s), BOOT_REP_SYNC, &r, sizeof(r)));
    *agreed_p = tutti__boot_status_decode(r.status);
    *culprit_p = (int32_t)ntohl((uint32_t)r.rank);
    return TUTTI_OK;
}

void tutti__boot_client_close(struct tutti_boot *b, int ok)
{
    struct boot_client *c = (struct boot_client *)b;
    tutti__boot_tree_free(c);
    if (ok) {
        (void)tutti__boot_client_transact(c, BOOT_REQ_BYE, NULL, 0, 0, NULL, 0);
    }
    close(c->fd);
    free(c);
}

static const struct tutti_boot_ops client_ops = {
    .allgather = client_allgather,
    .sync = client_sync,
    .close = tutti__boot_client_close,
};

/* Why a try at the root must be tried again. */
enum retry_why {
    RETRY_NO_ROOT, /* the connection was refused or not answered (err says why) */
    RETRY_CLOSED,  /* the root closed the connection during the handshake */
};

/*
 * Connect and authenticate once, by the deadline. Returns TUTTI_OK (joined), TUTTI_IN_PROGRESS
 * with *why_p (and *err_p for RETRY_NO_ROOT) when another try may succeed, or an error
 * (recorded) that another try cannot mend.
 */
static tutti_status_t try_root(struct boot_client *c, const struct tutti_boot_id *id,
                               int64_t deadline, enum retry_why *why_p, int *err_p)
{
    struct boot_hello hello = {
        .kind = BOOT_KIND, .rank = c->rank, .nranks = c->nranks, .pid = (uint32_t)getpid()};
    *why_p = RETRY_NO_ROOT;
    tutti_status_t st = tutti__sock_connect_start(&id->root, &c->fd);
    if (st == TUTTI_ERR_REMOTE) {
        *err_p = errno; /* refused at once */
        return TUTTI_IN_PROGRESS;
    }
    TUTTI_CHECK(st);
    while ((st = tutti__sock_connect_check(c->fd, err_p)) == TUTTI_IN_PROGRESS &&
           tutti__now_ns() < deadline) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
        (void)poll(&pfd, 1, 10);
    }
    if (st != TUTTI_OK) {
        *err_p = st == TUTTI_IN_PROGRESS ? ETIMEDOUT : *err_p;
        close(c->fd);
        c->fd = -1;
        return TUTTI_IN_PROGRESS;
    }
    struct tutti_hs hs;
    tutti__hs_init_connect(&hs, c->fd, id->secret, id->job_id, &hello, sizeof(hello), deadline);
    while ((st = tutti__hs_progress(&hs)) == TUTTI_IN_PROGRESS) {
        /* Sleep until the root speaks: with 512 ranks waiting for a root that handshakes one
         * at a time, each rank's spinning costs the root its CPU. */
        struct pollfd pfd = {.fd = c->fd, .events = tutti__hs_events(&hs)};
        (void)poll(&pfd, 1, 100);
    }
    if (st == TUTTI_OK) {
        return TUTTI_OK;
    }
    close(c->fd);
    c->fd = -1;
    if (st == TUTTI_ERR_AUTH) {
        return tutti__set_error(NULL, st,
                                "the bootstrap root %s refused this rank's handshake: "
                                "authentication failed (a different secret, or another job's "
                                "root)",
                                c->root_str);
    }
    if (st == TUTTI_ERR_TIMEOUT) {
        return tutti__set_error(NULL, st,
                                "the bootstrap root %s took the connection but sent no handshake "
                                "within the timeout (is a tutti root at that address?)",
                                c->root_str);
    }
    *why_p = RETRY_CLOSED;
    return TUTTI_IN_PROGRESS;
}

/*
 * Connect and authenticate. A connection the root closes during the handshake is tried again:
 * a root that keeps too many strangers' handshakes closes the oldest, and a rank must not pay
 * for them. A refused connection is tried again only when the root may not listen yet (a
 * launcher's rank 0 may start after the others); when it listened before this rank learned
 * its address (root_up: a unique id, a shrink), refused means it has closed.
 */
static tutti_status_t connect_root(struct boot_client *c, const struct tutti_boot_id *id,
                                   int root_up, int64_t deadline)
{
    int64_t backoff_us = 1000, t0 = tutti__now_ns(), said = 0;
    for (int warned = 0;;) {
        int err = 0;
        enum retry_why why;
        tutti_status_t st = try_root(c, id, deadline, &why, &err);
        if (st != TUTTI_IN_PROGRESS) {
            return st;
        }
        const char *what = why == RETRY_CLOSED ? "it closed the handshake"
                           : err != 0          ? strerror(err)
                                               : "no answer";
        int64_t now = tutti__now_ns();
        if (!root_up && now - said >= BOOT_RETRY_LOG_NS) {
            said = now;
            tutti_info(TUTTI_SUBSYS_BOOT, "bootstrap root %s: %s; trying again (%.1f s of %.0f s)",
                       c->root_str, what, (double)(now - t0) / 1e9, (double)c->timeout_ns / 1e9);
        }
        if (!root_up && !warned && now - t0 >= TUTTI_BOOT_QUIET_WARN_NS) {
            warned = 1;
            tutti_warn("rank %d has had no contact with the bootstrap root %s for %.0f s (%s): is "
                       "rank 0 running, and does every rank have the same root address and port? "
                       "trying again until TUTTI_TIMEOUT (%.0f s)",
                       c->rank, c->root_str, (double)(now - t0) / 1e9, what,
                       (double)c->timeout_ns / 1e9);
        }
        if (why == RETRY_NO_ROOT && root_up) {
            return tutti__set_error(NULL, TUTTI_ERR_REMOTE,
                                    "the bootstrap root %s refuses connections (%s): it has "
                                    "closed. A root serves one set-up and closes once every rank "
                                    "has joined, after a set-up error, or TUTTI_TIMEOUT after the "
                                    "first rank came: this rank came too late, or its id belongs "
                                    "to a communicator that has formed already",
                                    c->root_str, strerror(err));
        }
        if (now + backoff_us * 1000 >= deadline) {
            return tutti__set_error(NULL, TUTTI_ERR_TIMEOUT,
                                    "cannot reach the bootstrap root %s within TUTTI_TIMEOUT "
                                    "(%.0f s): %s (is rank 0 running, with this root address?)",
                                    c->root_str, (double)c->timeout_ns / 1e9, what);
        }
        usleep((useconds_t)backoff_us);
        backoff_us = TUTTI_MIN(backoff_us * 2, 200000);
    }
}

tutti_status_t tutti__boot_client_open(const struct tutti_boot_id *id, int rank, int nranks,
                                       int64_t timeout_ns, int flags, struct tutti_boot **b_p)
{
    struct boot_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for the bootstrap");
    }
    c->base.ops = &client_ops;
    c->fd = -1;
    c->rank = rank;
    c->nranks = nranks;
    c->timeout_ns = timeout_ns;
    tutti__sockaddr_str(&id->root, c->root_str, sizeof(c->root_str));
    int64_t t0 = tutti__now_ns();
    tutti_status_t st = connect_root(c, id, (flags & TUTTI_BOOT_ROOT_UP) != 0, t0 + timeout_ns);
    c->base.join_ns = tutti__now_ns() - t0;
    if (st != TUTTI_OK) {
        free(c);
        return st;
    }
    tutti_debug(TUTTI_SUBSYS_BOOT, "joined the bootstrap root %s as rank %d of %d", c->root_str,
                rank, nranks);
    if (tutti__boot_tree_wanted(nranks)) {
        st = tutti__boot_tree_form(c, id);
        c->base.join_ns = tutti__now_ns() - t0;
        if (st != TUTTI_OK) {
            tutti__boot_client_close(&c->base, 0);
            return st;
        }
    }
    *b_p = &c->base;
    return TUTTI_OK;
}
