/*
 * test_tcp_frames.c - the TCP transport's frames between two real processes over loopback
 * (tcp_pair.h): what a closing peer sent stays readable, small frames read ahead wait staged,
 * frames land in a placed buffer, abort frames carry their reason, forged headers are refused.
 */
#include "tcp_pair.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"

/* Three 100-byte frames of 'a', 'b', 'c' with the fingerprints msg_fp(1, 0, i); the second
 * from the caller's memory (send_post_ref), as stable user data goes. */
static int rank_send_three_then_exit(struct rank *r, int nsocks)
{
    (void)nsocks;
    static char by_ref[100];
    int rc = connect_channels(r, 1);
    for (uint32_t i = 0; rc == 0 && i < 3; i++) {
        void *buf;
        size_t cap;
        struct tutti_fp fp = msg_fp(1, 0, i);
        EXPECT(OPS->send_acquire(r->conn[0], &buf, &cap) == TUTTI_OK, "acquire");
        memset(buf, 'a' + (int)i, 100);
        memset(by_ref, 'a' + (int)i, sizeof(by_ref));
        EXPECT((i == 1 ? OPS->send_post_ref(r->conn[0], by_ref, 100, &fp)
                       : OPS->send_post(r->conn[0], 100, &fp)) == TUTTI_OK,
               "post");
    }
    for (int done = 0; rc == 0 && !done;) {
        EXPECT(OPS->flushed(r->conn[0], &done) == TUTTI_OK, "flushed");
        int moved;
        EXPECT(OPS->progress(r->conn[0], &moved) == TUTTI_OK, "progress");
    }
    return rc; /* the conn and context are closed on the way out */
}

Test(tcp, data_sent_before_close_stays_readable, .timeout = 60)
{
    struct pair p;
    start_pair(&p, 3, rank_send_three_then_exit);
    cr_assert_eq(connect_channels(&p.r, 1), 0);
    cr_assert_eq(child_status(&p), 0); /* rank 1 is gone: its data and FIN are here */
    int moved;
    cr_assert_eq(OPS->progress(p.r.conn[0], &moved), TUTTI_OK, "EOF alone is not an error");
    for (int i = 0; i < 3; i++) {
        const void *buf;
        size_t len;
        cr_assert_eq(wait_recv(p.r.conn[0]), TUTTI_OK, "%s", tutti_last_error(NULL));
        const struct tutti_fp *fp = NULL, want = msg_fp(1, 0, (uint32_t)i);
        cr_assert_eq(OPS->recv_peek(p.r.conn[0], &buf, &len, &fp), TUTTI_OK);
        cr_assert_eq(len, 100);
        cr_assert_eq(((const char *)buf)[99], 'a' + i);
        cr_assert(fp != NULL && memcmp(fp, &want, sizeof(want)) == 0, "frame %d's fingerprint", i);
        cr_assert_eq(OPS->recv_release(p.r.conn[0]), TUTTI_OK);
    }
    cr_assert_eq(wait_recv(p.r.conn[0]), TUTTI_ERR_REMOTE, "a fourth message cannot come");
    cr_assert(strstr(tutti_last_error(NULL), "closed the connection") != NULL);
    rank_teardown(&p.r);
}

/* Small frames, more than the receiver has slots: 13 bytes and up, each with its own content
 * and fingerprint (msg_byte, msg_fp of rank 1, channel 0). */
#define STAGED_FRAMES 40
static size_t staged_size(uint32_t i)
{
    return 13 + (i * 37u) % 150;
}

static int rank_send_small_then_exit(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 1);
    for (uint32_t i = 0; rc == 0 && i < STAGED_FRAMES;) {
        void *buf;
        size_t cap;
        int moved;
        tutti_status_t st = OPS->send_acquire(r->conn[0], &buf, &cap);
        if (st == TUTTI_IN_PROGRESS) { /* the peer reads only after this rank exits: wait */
            EXPECT(OPS->progress(r->conn[0], &moved) == TUTTI_OK, "progress");
            continue;
        }
        EXPECT(st == TUTTI_OK, "acquire");
        for (size_t j = 0; j < staged_size(i); j++) {
            ((uint8_t *)buf)[j] = msg_byte(1, 0, i, j);
        }
        struct tutti_fp fp = msg_fp(1, 0, i);
        EXPECT(OPS->send_post(r->conn[0], staged_size(i), &fp) == TUTTI_OK, "post");
        i++;
    }
    for (int done = 0; rc == 0 && !done;) {
        EXPECT(OPS->flushed(r->conn[0], &done) == TUTTI_OK, "flushed");
        int moved;
        EXPECT(OPS->progress(r->conn[0], &moved) == TUTTI_OK, "progress");
    }
    return rc;
}

/* The receiver reads many small frames at once; those its slots cannot take yet wait in the
 * socket's stage, and each release takes the next of them at once: the frame is ready without
 * another read, so a wait never polls the socket for bytes already read. */
Test(tcp, small_frames_past_the_slots_wait_staged_and_arrive_in_order, .timeout = 60)
{
    struct pair p;
    start_pair(&p, 1, rank_send_small_then_exit);
    cr_assert_eq(connect_channels(&p.r, 1), 0);
    cr_assert_eq(child_status(&p), 0); /* every frame and the FIN are in the kernel now */
    struct tutti_tconn *c = p.r.conn[0];
    int moved = 0;
    cr_assert_eq(OPS->progress(c, &moved), TUTTI_OK, "%s", tutti_last_error(NULL));
    for (uint32_t i = 0; i < STAGED_FRAMES; i++) {
        cr_assert(tutti__tcp_recv_ready(c), "frame %u is not ready after the release before it", i);
        const void *buf;
        size_t len;
        const struct tutti_fp *fp = NULL, want = msg_fp(1, 0, i);
        cr_assert_eq(OPS->recv_peek(c, &buf, &len, &fp), TUTTI_OK, "%s", tutti_last_error(NULL));
        cr_assert_eq(len, staged_size(i), "frame %u: %zu bytes", i, len);
        cr_assert(fp != NULL && memcmp(fp, &want, sizeof(want)) == 0, "frame %u's fingerprint", i);
        for (size_t j = 0; j < len; j++) {
            cr_assert_eq(((const uint8_t *)buf)[j], msg_byte(1, 0, i, j), "frame %u byte %zu", i,
                         j);
        }
        cr_assert_eq(OPS->recv_release(c), TUTTI_OK);
    }
    cr_assert_eq(wait_recv(c), TUTTI_ERR_REMOTE, "no frame after the last");
    cr_assert(strstr(tutti_last_error(NULL), "closed the connection") != NULL);
    rank_teardown(&p.r);
}

Test(tcp, placed_frames_land_in_the_callers_buffer, .timeout = 60)
{
    struct pair p;
    start_pair(&p, 3, rank_send_three_then_exit);
    cr_assert_eq(connect_channels(&p.r, 1), 0);
    cr_assert_eq(child_status(&p), 0); /* its three 100-byte frames wait in the sockets */
    struct tutti_tconn *c = p.r.conn[0];
    char fits[100], small[100], other[100];
    memset(fits, 0, sizeof(fits));
    memset(small, 0, sizeof(small));
    memset(other, 0, sizeof(other));
    struct tutti_fp want0 = msg_fp(1, 0, 0), want1 = msg_fp(1, 0, 1), wrong = msg_fp(1, 0, 77);
    cr_assert_eq(OPS->recv_place(c, 0, fits, sizeof(fits), &want0), TUTTI_OK);
    cr_assert_eq(OPS->recv_place(c, 1, small, 50, &want1), TUTTI_OK); /* too small: a slot */
    /* issue 36 item 3: placed for another call, frame 2 must not land in the caller's memory */
    cr_assert_eq(OPS->recv_place(c, 2, other, sizeof(other), &wrong), TUTTI_OK);
    cr_assert_eq(OPS->recv_place(c, 1000, fits, sizeof(fits), &want0), TUTTI_IN_PROGRESS,
                 "beyond the receive window");
    for (int i = 0; i < 3; i++) {
        const void *buf;
        size_t len;
        cr_assert_eq(wait_recv(c), TUTTI_OK, "%s", tutti_last_error(NULL));
        if (i == 2) { /* placing a frame that has arrived already changes nothing */
            struct tutti_fp want2 = msg_fp(1, 0, 2);
            cr_assert_eq(OPS->recv_place(c, 0, small, sizeof(small), &want2), TUTTI_OK);
        }
        const struct tutti_fp *fp = NULL, want = msg_fp(1, 0, (uint32_t)i);
        cr_assert_eq(OPS->recv_peek(c, &buf, &len, &fp), TUTTI_OK);
        cr_assert_eq(len, 100);
        cr_assert_eq(buf == (const void *)fits, i == 0, "frame %d landed at %p", i, buf);
        /* the header stays with the transport when the payload lands in the caller's buffer */
        cr_assert(fp != NULL && memcmp(fp, &want, sizeof(want)) == 0, "frame %d's fingerprint", i);
        cr_assert_eq(((const char *)buf)[0], 'a' + i);
        cr_assert_eq(((const char *)buf)[99], 'a' + i);
        cr_assert_eq(OPS->recv_release(c), TUTTI_OK);
    }
    cr_assert_eq(small[0], 0, "a buffer too small for its frame must not be written");
    for (size_t k = 0; k < sizeof(other); k++) {
        cr_assert_eq(other[k], 0, "a frame of another call landed in the caller's buffer");
    }
    rank_teardown(&p.r);
}

static int rank_abort(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 2);
    if (rc != 0) {
        return rc;
    }
    struct tutti_abort_info info = {.origin = 1,
                                    .culprit = 0,
                                    .status = TUTTI_ERR_REMOTE,
                                    .seq = 7,
                                    .reason = "injected failure"};
    EXPECT(OPS->abort(r->tctx, &info) == TUTTI_OK, "abort");
    void *buf;
    size_t cap;
    EXPECT(OPS->send_acquire(r->conn[0], &buf, &cap) == TUTTI_ERR_ABORTED, "aborted locally");
    return barrier(r);
}

Test(tcp, abort_frame_arrives_as_remote_error_with_reason, .timeout = 60)
{
    struct pair p;
    start_pair(&p, 2, rank_abort);
    cr_assert_eq(connect_channels(&p.r, 2), 0);
    for (int ch = 0; ch < 2; ch++) {
        cr_assert_eq(wait_recv(p.r.conn[ch]), TUTTI_ERR_REMOTE, "channel %d", ch);
        const char *msg = tutti_last_error(NULL);
        cr_assert(strstr(msg, "rank 1 reports that rank 0 failed: injected failure") != NULL, "%s",
                  msg);
    }
    void *buf;
    size_t cap;
    cr_assert_eq(OPS->send_acquire(p.r.conn[0], &buf, &cap), TUTTI_ERR_REMOTE, "sticky");
    cr_assert_eq(barrier(&p.r), 0);
    finish_pair(&p);
}

static int rank_forge(struct rank *r, int nsocks)
{
    (void)nsocks;
    int rc = connect_channels(r, 3);
    if (rc != 0) {
        return rc;
    }
    /* {type, length, sequence, fingerprint} as the transport writes them (little-endian
     * host; the fingerprint, 8 words, zero). */
    const uint32_t forged[3][TCP_HDR_BYTES / 4] = {
        {TCP_FRAME_DATA, SLOT + 1, 0, 0}, /* longer than a slot */
        {TCP_FRAME_DATA, 5, 9, 0},        /* out of sequence */
        {0xdeadbeefu, 0, 0, 0},           /* unknown type */
    };
    for (int ch = 0; ch < 3; ch++) {
        struct tcp_conn *c = (struct tcp_conn *)r->conn[ch];
        EXPECT(full_write(c->socks[0].fd, forged[ch], sizeof(forged[ch])) == 0, "forge");
    }
    return barrier(r);
}

Test(tcp, forged_headers_are_rejected, .timeout = 60)
{
    static const char *const expect[] = {"length 32769 exceeds the slot size 32768",
                                         "sequence number 9, expected 0", "unknown type"};
    struct pair p;
    start_pair(&p, 1, rank_forge);
    cr_assert_eq(connect_channels(&p.r, 3), 0);
    for (int ch = 0; ch < 3; ch++) {
        cr_assert_eq(wait_recv(p.r.conn[ch]), TUTTI_ERR_REMOTE, "channel %d", ch);
        const char *msg = tutti_last_error(NULL);
        cr_assert(strstr(msg, "bad frame from rank 1 (host testhost, pid") != NULL, "%s", msg);
        cr_assert(strstr(msg, expect[ch]) != NULL, "%s", msg);
    }
    cr_assert_eq(barrier(&p.r), 0);
    finish_pair(&p);
}
