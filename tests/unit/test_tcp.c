/*
 * test_tcp.c - the TCP transport between two real processes over loopback (tcp_pair.h: the
 * test process is rank 0 and forks rank 1): streams both ways, strangers at the listener, a
 * killed peer, two contexts in one process (connect failures, back-pressure, deadlines, beats)
 * and side connections. Frame-level checks are in test_tcp_frames.c.
 */
#include "base/env.h"
#include "net/handshake.h"
#include "net/sock.h"
#include "transports/tcp/tcp.h"
#include "tcp_pair.h"
#include "tutti.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"

/* Post what fits and take what arrived on one channel; returns 0 or a failed line. */
static int stream_step(struct rank *r, int ch, uint32_t n, uint32_t *sent, uint32_t *got)
{
    struct tutti_tconn *c = r->conn[ch];
    void *buf;
    const void *rbuf;
    size_t cap, len;
    tutti_status_t st;
    while (*sent < n && (st = OPS->send_acquire(c, &buf, &cap)) != TUTTI_IN_PROGRESS) {
        EXPECT(st == TUTTI_OK && cap >= SLOT, "send_acquire: %s", tutti_last_error(NULL));
        size_t sz = msg_size(r->rank, ch, *sent);
        for (size_t j = 0; j < sz; j++) {
            ((uint8_t *)buf)[j] = msg_byte(r->rank, ch, *sent, j);
        }
        struct tutti_fp fp = msg_fp(r->rank, ch, *sent);
        EXPECT(OPS->send_post(c, sz, &fp) == TUTTI_OK, "send_post: %s", tutti_last_error(NULL));
        (*sent)++;
    }
    const struct tutti_fp *rfp = NULL;
    while (*got < n && (st = OPS->recv_peek(c, &rbuf, &len, &rfp)) != TUTTI_IN_PROGRESS) {
        EXPECT(st == TUTTI_OK, "recv_peek: %s", tutti_last_error(NULL));
        int peer = 1 - r->rank;
        EXPECT(len == msg_size(peer, ch, *got), "channel %d message %u: %zu bytes, expected %zu",
               ch, *got, len, msg_size(peer, ch, *got));
        struct tutti_fp want = msg_fp(peer, ch, *got);
        EXPECT(rfp != NULL && memcmp(rfp, &want, sizeof(want)) == 0,
               "channel %d message %u: another fingerprint", ch, *got);
        for (size_t j = 0; j < len; j++) {
            EXPECT(((const uint8_t *)rbuf)[j] == msg_byte(peer, ch, *got, j),
                   "channel %d message %u byte %zu differs", ch, *got, j);
        }
        EXPECT(OPS->recv_release(c) == TUTTI_OK, "recv_release");
        (*got)++;
    }
    int moved = 0;
    EXPECT(OPS->progress(c, &moved) == TUTTI_OK, "progress: %s", tutti_last_error(NULL));
    return 0;
}

/* Send n messages on every channel and receive the peer's n, both at once. */
static int stream(struct rank *r, int nch, uint32_t n)
{
    uint32_t sent[TUTTI_MAX_CHANNELS] = {0}, got[TUTTI_MAX_CHANNELS] = {0};
    int64_t end = tutti__now_ns() + 30 * SEC;
    for (int busy = 1; busy;) {
        busy = 0;
        for (int ch = 0; ch < nch; ch++) {
            int rc = stream_step(r, ch, n, &sent[ch], &got[ch]);
            if (rc != 0) {
                return rc;
            }
            busy |= sent[ch] < n || got[ch] < n;
        }
        EXPECT(tutti__now_ns() < end, "stream stalled");
    }
    for (int ch = 0; ch < nch; ch++) {
        int done = 0, moved;
        while (!done) {
            EXPECT(OPS->flushed(r->conn[ch], &done) == TUTTI_OK, "flushed");
            EXPECT(OPS->progress(r->conn[ch], &moved) == TUTTI_OK, "progress");
            EXPECT(tutti__now_ns() < end, "flush stalled");
        }
        struct pollfd fds[TCP_MAX_SOCKS];
        int nfds = OPS->pollfds(r->conn[ch], fds, TCP_MAX_SOCKS);
        EXPECT(nfds == r->env.NSOCKS, "pollfds gave %d", nfds);
        for (int i = 0; i < nfds; i++) {
            EXPECT((fds[i].events & POLLOUT) == 0 && (fds[i].events & POLLIN) != 0, "events");
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ streaming */

#define NMSGS 600

static int rank_stream(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 2);
    rc = rc != 0 ? rc : stream(r, 2, NMSGS);
    return rc != 0 ? rc : barrier(r);
}

static void stream_test(int nsocks)
{
    struct pair p;
    start_pair(&p, nsocks, rank_stream);
    cr_assert_eq(rank_stream(&p.r, nsocks), 0);
    finish_pair(&p);
}

Test(tcp, streams_both_ways_on_two_channels_with_one_socket, .timeout = 60)
{
    stream_test(1);
}

Test(tcp, streams_both_ways_on_two_channels_with_three_sockets, .timeout = 60)
{
    stream_test(3);
}

/* ------------------------------------------------------------------ strangers */

/* Connect a raw socket to rank 1's listener (blocking until connected). */
static int stranger_connect(const struct rank *r)
{
    struct tutti_wire_addr w;
    union tutti_sockaddr to;
    int fd = -1, err = 0;
    memcpy(&w, r->peers[1].blob[TUTTI_TRANSPORT_TCP], sizeof(w));
    cr_assert_eq(tutti__wire_addr_decode(&w, &to), TUTTI_OK);
    cr_assert_eq(tutti__sock_connect_start(&to, &fd), TUTTI_OK);
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int64_t end = tutti__now_ns() + 5 * SEC; st == TUTTI_IN_PROGRESS;) {
        st = tutti__sock_connect_check(fd, &err);
        cr_assert_lt(tutti__now_ns(), end);
    }
    cr_assert_eq(st, TUTTI_OK);
    return fd;
}

/* Wait until the other end closes fd (EOF or reset). */
static void expect_closed(int fd)
{
    char buf[256];
    int err = 0;
    ssize_t n = 0;
    for (int64_t end = tutti__now_ns() + 5 * SEC; n >= 0; usleep(1000)) {
        n = tutti__sock_recv(fd, buf, sizeof(buf), &err);
        cr_assert_lt(tutti__now_ns(), end, "the stranger was not closed");
    }
    close(fd);
}

static tutti_status_t run_hs(struct tutti_hs *hs)
{
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int64_t end = tutti__now_ns() + 5 * SEC; st == TUTTI_IN_PROGRESS; usleep(100)) {
        st = tutti__hs_progress(hs);
        cr_assert_lt(tutti__now_ns(), end);
    }
    return st;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

static int rank_stream_short(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 2);
    rc = rc != 0 ? rc : stream(r, 2, 60);
    return rc != 0 ? rc : barrier(r);
}

Test(tcp, refuses_strangers_while_the_real_connection_works, .timeout = 60)
{
    char log[128];
    snprintf(log, sizeof(log), "/tmp/tutti-test-tcp-%d.log", (int)getpid());
    unlink(log);
    setenv("TUTTI_LOG_FILE", log, 1);
    struct pair p;
    start_pair(&p, 2, rank_stream_short);

    /* Garbage instead of a PROVE. */
    int junk = stranger_connect(&p.r), err = 0;
    char garbage[200];
    memset(garbage, 'G', sizeof(garbage));
    cr_assert_eq(tutti__sock_send(junk, garbage, sizeof(garbage), &err), (ssize_t)sizeof(garbage));
    /* Another job's secret. */
    struct tutti_hs wrong;
    uint8_t other[TUTTI_SECRET_BYTES] = "another-secret!";
    tutti__hs_init_connect(&wrong, stranger_connect(&p.r), other, comm_id, "x", 1,
                           tutti__now_ns() + 5 * SEC);
    /* The right secret, but a payload that claims a rank that does not exist. */
    struct tutti_hs liar;
    uint32_t claim[8] = {TCP_KIND_DATA, 5, 1, 0, 0, 1, SLOT, 0}; /* little-endian host */
    tutti__hs_init_connect(&liar, stranger_connect(&p.r), secret, comm_id, claim, sizeof(claim),
                           tutti__now_ns() + 5 * SEC);

    cr_assert_eq(run_hs(&wrong), TUTTI_ERR_AUTH, "the acceptor refuses a wrong secret");
    close(wrong.fd);
    cr_assert_eq(run_hs(&liar), TUTTI_OK, "the secret is right");
    expect_closed(liar.fd);
    expect_closed(junk);

    cr_assert_eq(rank_stream_short(&p.r, 2), 0);
    finish_pair(&p);

    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(log);
    cr_assert_eq(count(text, "refused connection from 127.0.0.1:"), 3, "log:\n%s", text);
    cr_assert_eq(count(text, "authentication failed"), 2, "log:\n%s", text);
    cr_assert_eq(count(text, "claims rank 5"), 1, "log:\n%s", text);
}

/* ------------------------------------------------------------------ failures */

static int rank_connect_then_sleep(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 2);
    rc = rc != 0 ? rc : barrier(r);
    for (;;) {
        pause(); /* until SIGKILL */
    }
    return rc;
}

Test(tcp, killed_peer_is_remote_error_not_hang, .timeout = 60)
{
    struct pair p;
    start_pair(&p, 2, rank_connect_then_sleep);
    cr_assert_eq(connect_channels(&p.r, 2), 0);
    cr_assert_eq(barrier(&p.r), 0);
    kill(p.child, SIGKILL);
    cr_assert_eq(child_status(&p), 1000 + SIGKILL);

    /* Waiting for data: an error naming the peer. */
    cr_assert_eq(wait_recv(p.r.conn[0]), TUTTI_ERR_REMOTE);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, "rank 1 (host testhost, pid ") != NULL, "%s", msg);
    cr_assert(strstr(msg, "closed the connection") != NULL, "%s", msg);

    /* Sending: an error too, never SIGPIPE. */
    tutti_status_t st = TUTTI_OK;
    for (int64_t end = tutti__now_ns() + 5 * SEC; st >= 0;) {
        void *buf;
        size_t cap;
        int moved;
        st = OPS->send_acquire(p.r.conn[1], &buf, &cap);
        st = st == TUTTI_OK ? OPS->send_post(p.r.conn[1], SLOT, NULL) : st;
        st = st >= 0 ? OPS->progress(p.r.conn[1], &moved) : st;
        cr_assert_lt(tutti__now_ns(), end, "sending to a dead peer never failed");
    }
    cr_assert_eq(st, TUTTI_ERR_REMOTE);
    rank_teardown(&p.r);
}
/* ------------------------------------------------------------------ one process */

/* Both ranks as two contexts of this process (the pipes hold both records), with TCP slots of
 * slot bytes (0: SLOT). */
static void local_pair_slots(struct rank *r0, struct rank *r1, int64_t timeout_ns, size_t slot)
{
    int down[2], up[2];
    cr_assert_eq(pipe(down), 0);
    cr_assert_eq(pipe(up), 0);
    *r0 = (struct rank){
        .to_peer = down[1], .from_peer = up[0], .timeout_ns = timeout_ns, .slot_size = slot};
    *r1 = (struct rank){
        .to_peer = up[1], .from_peer = down[0], .timeout_ns = timeout_ns, .slot_size = slot};
    cr_assert_eq(rank_publish(r0, 0, 2), 0);
    cr_assert_eq(rank_publish(r1, 1, 2), 0);
    /* rank 1's record goes first, so that rank_join(r0) finds it. */
    cr_assert_eq(full_write(r1->to_peer, &r1->peers[1], sizeof(r1->peers[1])), 0);
    cr_assert_eq(rank_join(r0), 0);
    cr_assert_eq(full_read(r1->from_peer, &r1->peers[0], sizeof(r1->peers[0])), 0);
    r1->args.peers = r1->peers;
    cr_assert_eq(OPS->attach(r1->tctx, 0), TUTTI_OK);
}

static void local_pair(struct rank *r0, struct rank *r1, int64_t timeout_ns)
{
    local_pair_slots(r0, r1, timeout_ns, 0);
}

Test(tcp, connect_to_a_closed_listener_names_the_peer, .timeout = 30)
{
    struct rank r0, r1;
    local_pair(&r0, &r1, 5 * SEC);
    rank_teardown(&r1); /* rank 1 is gone, its listener with it */
    tutti_status_t st = TUTTI_OK;
    struct tutti_tconn *c = NULL;
    for (int64_t end = tutti__now_ns() + 5 * SEC; st == TUTTI_OK && c == NULL;) {
        st = OPS->connect(r0.tctx, 1, 0, &c);
        cr_assert_lt(tutti__now_ns(), end);
    }
    cr_assert_eq(st, TUTTI_ERR_REMOTE);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, "cannot connect to rank 1 (host testhost, pid") != NULL, "%s", msg);
    cr_assert(strstr(msg, "refused") != NULL, "%s", msg);
    rank_teardown(&r0);
}

Test(tcp, peer_that_never_connects_times_out, .timeout = 30)
{
    struct rank r0, r1;
    local_pair(&r0, &r1, 200 * 1000000LL);
    tutti_status_t st = TUTTI_OK;
    struct tutti_tconn *c = NULL;
    int64_t t0 = tutti__now_ns();
    while (st == TUTTI_OK && c == NULL && tutti__now_ns() < t0 + 5 * SEC) {
        st = OPS->connect(r1.tctx, 0, 1, &c); /* rank 0 never calls connect */
        usleep(1000);
    }
    cr_assert_eq(st, TUTTI_ERR_TIMEOUT);
    cr_assert_geq(tutti__now_ns() - t0, 200 * 1000000LL);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, "rank 0 (host testhost, pid") != NULL, "%s", msg);
    cr_assert(strstr(msg, "did not connect channel 1") != NULL, "%s", msg);
    rank_teardown(&r0);
    rank_teardown(&r1);
}

/* Connect channel 0 of two contexts of this process, calling both ends in turn. */
static void local_connect(struct rank *r0, struct rank *r1)
{
    for (int64_t end = tutti__now_ns() + 5 * SEC; r0->conn[0] == NULL || r1->conn[0] == NULL;) {
        if (r0->conn[0] == NULL) {
            cr_assert_eq(OPS->connect(r0->tctx, 1, 0, &r0->conn[0]), TUTTI_OK);
        }
        if (r1->conn[0] == NULL) {
            cr_assert_eq(OPS->connect(r1->tctx, 0, 0, &r1->conn[0]), TUTTI_OK);
        }
        cr_assert_lt(tutti__now_ns(), end);
    }
}

Test(tcp, full_receive_slots_push_back_on_the_sender, .timeout = 30)
{
    enum { N = 4096 };
    struct rank r0, r1;
    local_pair(&r0, &r1, 5 * SEC);
    local_connect(&r0, &r1);
    struct tutti_tconn *tx = r0.conn[0], *rx = r1.conn[0];
    uint32_t sent = 0;
    int moved;
    /* The receiver moves bytes but never releases a slot. */
    for (int stalls = 0; sent < N && stalls < 1000;) {
        void *buf;
        size_t cap;
        tutti_status_t st = OPS->send_acquire(tx, &buf, &cap);
        if (st == TUTTI_OK) {
            memset(buf, (int)(sent & 0xff), SLOT);
            memcpy(buf, &sent, sizeof(sent));
            cr_assert_eq(OPS->send_post(tx, SLOT, NULL), TUTTI_OK);
            sent++;
            stalls = 0;
        } else {
            cr_assert_eq(st, TUTTI_IN_PROGRESS);
            stalls++;
        }
        cr_assert_eq(OPS->progress(tx, &moved), TUTTI_OK);
        cr_assert_eq(OPS->progress(rx, &moved), TUTTI_OK);
    }
    cr_assert_lt(sent, N, "the sender never felt back-pressure");
    /* Exactly the 4 receive slots are filled; the rest waits in the kernel. */
    const struct tcp_conn *c = (const struct tcp_conn *)rx;
    for (uint64_t k = 0; k < 6; k++) {
        int arrived = c->socks[k % (uint64_t)c->nsocks].rnext > k;
        cr_assert_eq(arrived, k < 4, "slot %llu", (unsigned long long)k);
    }
    /* Everything that was posted then arrives, in order. */
    for (uint32_t got = 0; got < sent;) {
        const void *buf;
        size_t len;
        tutti_status_t st = OPS->recv_peek(rx, &buf, &len, NULL);
        if (st == TUTTI_OK) {
            uint32_t seq;
            memcpy(&seq, buf, sizeof(seq));
            cr_assert_eq(len, SLOT);
            cr_assert_eq(seq, got);
            cr_assert_eq(((const uint8_t *)buf)[SLOT - 1], got & 0xff);
            cr_assert_eq(OPS->recv_release(rx), TUTTI_OK);
            got++;
        } else {
            cr_assert_eq(st, TUTTI_IN_PROGRESS);
        }
        cr_assert_eq(OPS->progress(tx, &moved), TUTTI_OK);
    }
    rank_teardown(&r0);
    rank_teardown(&r1);
}

/* An empty frame whose header arrived while every receive slot was full has nothing left in
 * the kernel to read: it must still arrive once a slot frees, with no later frame to wake it,
 * also on a connection that polls before it reads (its last frame was large). */
Test(tcp, empty_frame_behind_full_slots_arrives_without_more_traffic, .timeout = 30)
{
    enum { N = 6, BIG = TCP_POLL_MIN }; /* 4 full slots, and an empty frame on each socket */
    struct rank r0, r1;
    local_pair_slots(&r0, &r1, 5 * SEC, BIG);
    local_connect(&r0, &r1);
    struct tutti_tconn *tx = r0.conn[0], *rx = r1.conn[0];
    int moved, done = 0;
    for (int i = 0; i < N; i++) {
        void *buf;
        size_t cap;
        cr_assert_eq(OPS->send_acquire(tx, &buf, &cap), TUTTI_OK);
        memset(buf, i, BIG);
        cr_assert_eq(OPS->send_post(tx, i < 4 ? BIG : 0, NULL), TUTTI_OK);
    }
    for (int64_t end = tutti__now_ns() + 5 * SEC; !done;) {
        cr_assert_eq(OPS->progress(tx, &moved), TUTTI_OK);
        cr_assert_eq(OPS->flushed(tx, &done), TUTTI_OK);
        cr_assert_lt(tutti__now_ns(), end, "the sender never flushed");
    }
    const struct tcp_conn *c = (const struct tcp_conn *)rx;
    for (int64_t end = tutti__now_ns() + 5 * SEC; c->socks[0].rhdr_ok + c->socks[1].rhdr_ok < 2;) {
        cr_assert_eq(OPS->progress(rx, &moved), TUTTI_OK); /* fills the slots, reads ahead */
        cr_assert_lt(tutti__now_ns(), end, "the headers behind the full slots never came");
    }
    for (int got = 0; got < N;) {
        const void *buf;
        size_t len;
        tutti_status_t st = OPS->recv_peek(rx, &buf, &len, NULL);
        if (st == TUTTI_OK) {
            cr_assert_eq(len, got < 4 ? BIG : 0);
            cr_assert(got >= 4 || ((const uint8_t *)buf)[BIG - 1] == got);
            cr_assert_eq(OPS->recv_release(rx), TUTTI_OK);
            got++;
            continue;
        }
        cr_assert_eq(st, TUTTI_IN_PROGRESS);
        for (int spins = 0; spins < 1000 && st == TUTTI_IN_PROGRESS; spins++) {
            cr_assert_eq(OPS->progress(rx, &moved), TUTTI_OK);
            st = OPS->recv_peek(rx, &buf, &len, NULL);
        }
        cr_assert_eq(st, TUTTI_OK, "empty frame %d never arrived", got);
    }
    rank_teardown(&r0);
    rank_teardown(&r1);
}

Test(tcp, check_closes_a_silent_stranger_at_the_deadline, .timeout = 30)
{
    struct rank r0, r1;
    local_pair(&r0, &r1, 200 * 1000000LL);
    int64_t t0 = tutti__now_ns();
    int fd = stranger_connect(&r0); /* to rank 1's listener; says nothing */
    char buf[64];
    int err = 0;
    ssize_t n = 0;
    while (n >= 0 && tutti__now_ns() < t0 + 5 * SEC) {
        cr_assert_eq(OPS->check(r1.tctx), TUTTI_OK);
        n = tutti__sock_recv(fd, buf, sizeof(buf), &err); /* the HELLO, then the end */
        usleep(1000);
    }
    cr_assert_eq(n, -1, "the silent stranger was never closed");
    cr_assert_geq(tutti__now_ns() - t0, 200 * 1000000LL, "closed before the deadline");
    close(fd);
    rank_teardown(&r0);
    rank_teardown(&r1);
}

/* Post a frame of len bytes of `fill` on tx, waiting for a free slot. */
static void post_frame(struct tutti_tconn *tx, char fill, size_t len)
{
    void *buf;
    size_t cap;
    while (OPS->send_acquire(tx, &buf, &cap) != TUTTI_OK) {
    }
    memset(buf, fill, len);
    cr_assert_eq(OPS->send_post(tx, len, NULL), TUTTI_OK);
}

Test(tcp, beats_vouch_without_counting_as_progress_and_leave_frames_intact, .timeout = 30)
{
    struct rank r0, r1;
    local_pair(&r0, &r1, 5 * SEC);
    local_connect(&r0, &r1);
    struct tutti_tconn *tx = r0.conn[0], *rx = r1.conn[0];
    int moved = 0;
    /* a frame, a beat between two frames, a frame */
    for (int i = 0; i < 2; i++) {
        post_frame(tx, (char)('a' + i), 100);
        if (i == 0) {
            cr_assert_eq(OPS->beat(tx, 2 * SEC), TUTTI_OK);
        }
    }
    int64_t t0 = tutti__now_ns();
    for (int i = 0; i < 2; i++) {
        const void *got;
        size_t len;
        while (OPS->recv_peek(rx, &got, &len, NULL) == TUTTI_IN_PROGRESS) {
            cr_assert_eq(OPS->progress(tx, &moved), TUTTI_OK);
        }
        cr_assert_eq(len, 100);
        cr_assert_eq(((const char *)got)[99], 'a' + i, "frame %d after the beat", i);
        cr_assert_eq(OPS->recv_release(rx), TUTTI_OK);
    }
    /* the beat said: data moved 2 s before it was sent */
    cr_assert_neq(rx->vouched, 0);
    cr_assert_leq(rx->vouched, t0 - 2 * SEC + SEC / 2, "vouched %lld", (long long)rx->vouched);
    cr_assert_geq(rx->vouched, t0 - 3 * SEC);
    /* a beat alone is read, but is not progress */
    rx->vouched = 0;
    cr_assert_eq(OPS->beat(tx, 0), TUTTI_OK);
    for (int64_t end = tutti__now_ns() + 5 * SEC; rx->vouched == 0;) {
        moved = 0;
        cr_assert_eq(OPS->progress(rx, &moved), TUTTI_OK);
        cr_assert_eq(moved, 0, "reading a beat counted as progress");
        cr_assert_lt(tutti__now_ns(), end, "the beat never arrived");
    }
    rank_teardown(&r0);
    rank_teardown(&r1);
}

/* After frame 0 the receiver of small frames waits on socket 1 and reads socket 0 only in its
 * sweeps (TCP_SWEEP): a beat that goes out on socket 0 must still be read. */
Test(tcp, beat_on_a_socket_no_frame_is_due_on_is_read, .timeout = 30)
{
    struct rank r0, r1;
    local_pair(&r0, &r1, 5 * SEC);
    local_connect(&r0, &r1);
    struct tutti_tconn *tx = r0.conn[0], *rx = r1.conn[0];
    const void *got;
    size_t len;
    int moved = 0;
    post_frame(tx, 'a', 8);
    while (OPS->recv_peek(rx, &got, &len, NULL) == TUTTI_IN_PROGRESS) {
        cr_assert_eq(OPS->progress(tx, &moved), TUTTI_OK);
    }
    cr_assert_eq(OPS->recv_release(rx), TUTTI_OK);
    const struct tcp_conn *c = (const struct tcp_conn *)rx;
    cr_assert_eq(c->nsocks, 2);
    cr_assert_eq(c->socks[1].rnext, 1, "frame 1 is due on socket 1");
    rx->vouched = 0;
    cr_assert_eq(OPS->beat(tx, 0), TUTTI_OK);
    cr_assert_eq(((const struct tcp_conn *)tx)->socks[0].sbeat_left, 0,
                 "the beat left on socket 0");
    for (int64_t end = tutti__now_ns() + 5 * SEC; rx->vouched == 0;) {
        cr_assert_eq(OPS->progress(rx, &moved), TUTTI_OK);
        cr_assert_lt(tutti__now_ns(), end, "the beat on socket 0 was never read");
    }
    rank_teardown(&r0);
    rank_teardown(&r1);
}

/* ------------------------------------------------------------------ side connections */

/* Channel 0 twice: a data connection and a side connection (the verbs transport's), each
 * carrying its own message; then rank 1 leaves and the side connection tells so. */
static int rank_side(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 1);
    struct tutti_tconn *side = NULL;
    int64_t end = tutti__now_ns() + 10 * SEC;
    while (rc == 0 && side == NULL) {
        EXPECT(tutti__tcp_side_connect(r->tctx, 1 - r->rank, 0, &side) == TUTTI_OK,
               "side connect: %s", tutti_last_error(NULL));
        EXPECT(tutti__now_ns() < end, "side connect timed out");
    }
    EXPECT(side->slot_size == TCP_SIDE_SLOT_SIZE && ((struct tcp_conn *)side)->nsocks == 1,
           "side connection: %zu-byte slots", side->slot_size);
    EXPECT(tutti__tcp_side_connect(r->tctx, 1 - r->rank, 0, &side) == TUTTI_ERR_INVALID_USAGE,
           "a second side connection on channel 0");
    struct tutti_tconn *both[2] = {r->conn[0], side};
    for (int k = 0; k < 2; k++) {
        void *buf;
        size_t cap;
        EXPECT(OPS->send_acquire(both[k], &buf, &cap) == TUTTI_OK, "acquire %d", k);
        memset(buf, 'd' + k + 2 * r->rank, 10);
        EXPECT(OPS->send_post(both[k], 10, NULL) == TUTTI_OK, "post %d", k);
    }
    for (int k = 0; k < 2; k++) {
        const void *buf;
        size_t len;
        tutti_status_t st;
        int moved;
        while ((st = OPS->recv_peek(both[k], &buf, &len, NULL)) == TUTTI_IN_PROGRESS) {
            EXPECT(OPS->progress(both[k], &moved) == TUTTI_OK && tutti__now_ns() < end, "wait");
        }
        EXPECT(st == TUTTI_OK && len == 10 && ((const char *)buf)[9] == 'd' + k + 2 * (1 - r->rank),
               "connection %d carried the other one's message", k);
        EXPECT(OPS->recv_release(both[k]) == TUTTI_OK, "release");
    }
    EXPECT(!tutti__tcp_peer_gone(side), "peer gone too early");
    rc = barrier(r);
    if (r->rank == 1) {
        OPS->close(side);
        return rc;
    }
    int moved; /* rank 1 closes its side connection right after the barrier */
    while (!tutti__tcp_peer_gone(side)) {
        EXPECT(OPS->progress(side, &moved) == TUTTI_OK && tutti__now_ns() < end, "no EOF");
    }
    OPS->close(side);
    return rc;
}

Test(tcp, side_connection_beside_a_data_connection_tells_when_the_peer_leaves, .timeout = 60)
{
    struct pair p;
    start_pair(&p, 2, rank_side);
    cr_assert_eq(rank_side(&p.r, 2), 0);
    finish_pair(&p);
}
