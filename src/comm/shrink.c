/*
 * shrink.c - tutti_comm_shrink: after a failure, the survivors build a smaller communicator
 * without using the old one's connections (which a failure leaves in an unknown state).
 *
 * Every rank opens one extra listening socket when a communicator is made (init.c) and publishes
 * its address in its peer record. To shrink, each survivor decides who is in: every rank but
 * `exclude`, or, without a list, every rank whose shrink socket still accepts connections (a
 * process that ended has closed it: the connection is refused). The members keep their order;
 * the first one serves a fresh bootstrap root on its published socket and the others join it,
 * then the new communicator is set up as any other (tutti__comm_create). Its id and secret are
 * an HMAC of the old secret over (shrink number, the excluded set), so survivors that disagree
 * on who is in cannot complete the handshake: they fail instead of building different
 * communicators.
 */
#include "comm/bootstrap.h"
#include "base/check.h"
#include "comm/comm.h"
#include "base/global.h"
#include "comm/init.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBE_TIMEOUT_NS (2ll * 1000000000ll) /* a rank that does not answer is gone */

static tutti_status_t shrink_addr(const struct tutti_comm *comm, int rank, union tutti_sockaddr *a)
{
    struct tutti_wire_addr w;
    memcpy(&w, comm->fab.peers[rank].shrink_addr, sizeof(w));
    return tutti__wire_addr_decode(&w, a);
}

/* A connection to rank's shrink socket accepted within PROBE_TIMEOUT_NS, or -1. */
static int probe_connect(const struct tutti_comm *comm, int rank)
{
    union tutti_sockaddr a;
    int fd = -1, err = 0;
    if (shrink_addr(comm, rank, &a) != TUTTI_OK || tutti__sock_connect_start(&a, &fd) != TUTTI_OK) {
        return -1;
    }
    int64_t deadline = tutti__now_ns() + PROBE_TIMEOUT_NS;
    tutti_status_t st;
    while ((st = tutti__sock_connect_check(fd, &err)) == TUTTI_IN_PROGRESS &&
           tutti__now_ns() < deadline) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        (void)poll(&pfd, 1, 10);
    }
    if (st != TUTTI_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * A dying process closes its sockets one by one: a survivor that saw its data socket close may
 * still find its shrink socket accepting for a moment, and another survivor, a moment later,
 * not (the survivors then disagree on who is in and their shrink fails). So accepted probes are
 * held SETTLE_MS: a listener that closes meanwhile resets the connections in its queue, and that
 * rank is gone too. A live rank does not reset a probe: it leaves it in its queue, or, already
 * serving the shrink's bootstrap root there, sends its HELLO (data, not a reset).
 */
#define SETTLE_MS 200

static void settle(const int *fds, int n, uint8_t *gone)
{
    struct pollfd *p = malloc((size_t)n * sizeof(*p));
    int *idx = malloc((size_t)n * sizeof(*idx));
    int64_t deadline = tutti__now_ns() + SETTLE_MS * 1000000ll;
    for (int64_t now = tutti__now_ns(); p != NULL && idx != NULL && now < deadline;
         now = tutti__now_ns()) {
        int k = 0;
        for (int r = 0; r < n; r++) {
            if (fds[r] >= 0 && !gone[r]) {
                p[k] = (struct pollfd){.fd = fds[r], .events = POLLIN};
                idx[k++] = r;
            }
        }
        if (k == 0 || poll(p, (nfds_t)k, (int)((deadline - now) / 1000000) + 1) <= 0) {
            continue;
        }
        int reset = 0;
        for (int i = 0; i < k; i++) {
            reset |= (p[i].revents & (POLLERR | POLLHUP)) != 0;
        }
        if (!reset) {
            usleep(5000); /* a rank already serving the shrink's root answers: not a reset */
        }
        for (int i = 0; i < k; i++) {
            gone[idx[i]] |= (p[i].revents & (POLLERR | POLLHUP)) != 0;
        }
    }
    free(p); /* without memory, no settling: the probes' answer stands */
    free(idx);
}

/* Does rank's shrink socket accept a connection (and keep it SETTLE_MS)? */
static int rank_alive(const struct tutti_comm *comm, int rank)
{
    int fd = probe_connect(comm, rank);
    uint8_t gone = fd < 0;
    if (fd >= 0) {
        settle(&fd, 1, &gone);
        close(fd);
    }
    return !gone;
}

/* Mark the ranks to leave out in gone[]: the caller's list, or those whose process ended. */
static tutti_status_t choose_gone(struct tutti_comm *comm, const int *exclude, int nexclude,
                                  uint8_t *gone)
{
    for (int i = 0; exclude != NULL && i < nexclude; i++) {
        if (exclude[i] < 0 || exclude[i] >= comm->fab.nranks || exclude[i] == comm->fab.rank) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                    "shrink: exclude[%d] = %d is not another rank of 0..%d", i,
                                    exclude[i], comm->fab.nranks - 1);
        }
        gone[exclude[i]] = 1;
    }
    int *fds = exclude == NULL ? malloc((size_t)comm->fab.nranks * sizeof(*fds)) : NULL;
    if (exclude == NULL && fds == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "shrink: no memory for probes");
    }
    for (int r = 0; exclude == NULL && r < comm->fab.nranks; r++) {
        fds[r] = r != comm->fab.rank ? probe_connect(comm, r) : -1;
        gone[r] = r != comm->fab.rank && fds[r] < 0;
    }
    if (exclude == NULL) {
        settle(fds, comm->fab.nranks, gone);
    }
    for (int r = 0; exclude == NULL && r < comm->fab.nranks; r++) {
        if (fds[r] >= 0) {
            close(fds[r]);
        }
        if (gone[r]) {
            char who[128];
            tutti_info(TUTTI_SUBSYS_INIT, "shrink: %s is gone (its shrink socket is closed)",
                       tutti__peer_str(&comm->fab.peers[r], who, sizeof(who)));
        }
    }
    free(fds);
    return TUTTI_OK;
}

/*
 * Join (and, as the first member, serve) the new communicator's bootstrap, then build it.
 * nth: the number of this shrink of comm, the same on every rank.
 */
static tutti_status_t build(struct tutti_comm *comm, const uint8_t *gone, uint32_t nth,
                            tutti_comm_t **newcomm_p)
{
    int n = 0, me = 0, leader = -1;
    for (int r = 0; r < comm->fab.nranks; r++) {
        if (!gone[r]) {
            leader = leader < 0 ? r : leader;
            me = r == comm->fab.rank ? n : me;
            n++;
        }
    }
    /* Identity: HMAC of the old secret over (shrink number, who is out). */
    uint8_t mac[32];
    const void *parts[3] = {"tutti-shrink", &nth, gone};
    const size_t lens[3] = {12, sizeof(nth), (size_t)comm->fab.nranks};
    tutti__hmac(comm->fab.secret, parts, lens, 3, mac);
    struct tutti_boot_id bid;
    memcpy(bid.secret, mac, TUTTI_SECRET_BYTES);
    memcpy(&bid.job_id, mac + TUTTI_SECRET_BYTES, sizeof(bid.job_id));
    TUTTI_CHECK(shrink_addr(comm, leader, &bid.root));
    if (leader == comm->fab.rank) {
        int lfd = dup(comm->shrink_fd);
        if (lfd < 0) {
            return tutti__set_error(tutti__comm_err(comm), tutti__sys_status(errno),
                                    "shrink: dup: %s", strerror(errno));
        }
        TUTTI_CHECK(tutti__boot_root_serve(lfd, bid.secret, bid.job_id, comm->fab.cfg.timeout_ns));
    }
    struct tutti_boot *boot = NULL;
    tutti_status_t st =
        tutti__boot_client_open(&bid, me, n, comm->fab.cfg.timeout_ns, TUTTI_BOOT_ROOT_UP, &boot);
    if (st != TUTTI_OK) {
        char who[128];
        return tutti__set_error(tutti__comm_err(comm), st,
                                "shrink: cannot join the new communicator's bootstrap at %s "
                                "(is it alive, and do all survivors exclude the same ranks?): %s",
                                tutti__peer_str(&comm->fab.peers[leader], who, sizeof(who)),
                                tutti_last_error(NULL));
    }
    tutti_comm_params_t params = {.field_mask = TUTTI_COMM_PARAM_TIMEOUT,
                                  .timeout_ms =
                                      (int)TUTTI_MAX(comm->fab.cfg.timeout_ns / 1000000, 1)};
    struct tutti_comm *child = NULL;
    st = tutti__comm_create(n, me, bid.job_id, bid.secret, &comm->fab.root_hint, &params, boot,
                            &child);
    boot->ops->close(boot, st == TUTTI_OK);
    if (st != TUTTI_OK) {
        return tutti__set_error(tutti__comm_err(comm), st,
                                "shrink: setting up the new communicator of %d: %s", n,
                                tutti_last_error(NULL));
    }
    tutti_info(TUTTI_SUBSYS_INIT, "shrink: rank %d of %d is rank %d of %d", comm->fab.rank,
               comm->fab.nranks, me, n);
    *newcomm_p = child;
    return TUTTI_OK;
}

/* tutti_comm_shrink on a communicator it has entered (or NULL: the error says so). */
static tutti_status_t shrink_entered(tutti_comm_t *comm, const int *exclude, int nexclude,
                                     tutti_comm_t **newcomm_p)
{
    if (comm == NULL || newcomm_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "shrink: %s is NULL",
                                comm == NULL ? "comm" : "newcomm_p");
    }
    if (nexclude < 0 || (exclude == NULL && nexclude != 0)) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "shrink: nexclude %d with exclude %s", nexclude,
                                exclude == NULL ? "NULL" : "set");
    }
    if (comm->shrink_fd < 0) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INTERNAL,
                                "shrink: the communicator has no "
                                "shrink socket");
    }
    uint8_t *gone = calloc((size_t)comm->fab.nranks, 1);
    if (gone == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY, "shrink: no memory");
    }
    tutti_status_t st = choose_gone(comm, exclude, nexclude, gone);
    uint32_t nth = st == TUTTI_OK ? comm->nshrinks++ : 0;
    while (st == TUTTI_OK) {
        st = build(comm, gone, nth, newcomm_p);
        /* A first rank that was still dying when probed (it accepted, then its socket closed):
         * it is gone after all. Every survivor sees the same and tries the next one. */
        int leader = 0;
        while (gone[leader]) {
            leader++;
        }
        if (st == TUTTI_OK || exclude != NULL || leader == comm->fab.rank ||
            rank_alive(comm, leader)) {
            break;
        }
        tutti_info(TUTTI_SUBSYS_INIT, "shrink: rank %d is gone after all; trying again", leader);
        gone[leader] = 1;
        st = TUTTI_OK;
    }
    free(gone);
    tutti__tls.rank = comm->fab.rank;
    return st;
}

tutti_status_t tutti_comm_shrink(tutti_comm_t *comm, const int *exclude, int nexclude,
                                 tutti_comm_t **newcomm_p)
{
    /* A destroyed or aborted handle is refused before anything reads it. */
    if (comm != NULL && tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_shrink");
    }
    tutti_status_t st = shrink_entered(comm, exclude, nexclude, newcomm_p);
    if (comm != NULL) {
        tutti__comm_leave(comm);
    }
    return st;
}
