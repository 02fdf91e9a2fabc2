/*
 * test_shm.c - the shared-memory transport between two real processes: streams in both
 * directions through small FIFOs, a receiver that reads what a sender posted before it closed
 * (even when the receiver never opened its own sending direction), a dead peer found by
 * check(), frames sent by reference (read from the sender's memory, where placed, or refused by
 * the receiver), and settings or builds that differ between the two ends. Segments whose maker has
 * ended (a rank killed during init) are replaced and swept; those of a live maker are named, never
 * taken.
 *
 * The test process is rank 0 and forks rank 1; pipes serve as barriers. The forked rank reports
 * a failed check through its exit status (the line number).
 */
#include "base/env.h"
#include "transports/shm/shm.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OPS (&tutti__shm_ops)

#include "expect.h"

struct side {
    int rank;
    struct tutti_tctx_args args;
    struct tutti_tpeer peers[2];
    void *tctx;
    int to_peer, from_peer;
};

static int barrier(struct side *s)
{
    char b = 1;
    return (write(s->to_peer, &b, 1) == 1 && read(s->from_peer, &b, 1) == 1) ? 0 : -1;
}

/* Both ranks on this host; the context's arguments for rank. */
static void side_args(struct side *s, int rank, uint64_t comm_id)
{
    s->rank = rank;
    for (int r = 0; r < 2; r++) {
        s->peers[r].host = 0; /* both ranks on this host */
        s->peers[r].hostname = "test";
    }
    s->args = (struct tutti_tctx_args){.rank = rank,
                                       .nranks = 2,
                                       .comm_id = comm_id,
                                       .env = tutti__env(),
                                       .nchannels = 1,
                                       .timeout_ns = 10000000000ll,
                                       .peers = s->peers};
}

/* Both processes: context, blobs, then the three attach phases with barriers between them. */
static int side_init(struct side *s, int rank, uint64_t comm_id)
{
    side_args(s, rank, comm_id);
    uint8_t *blob = s->peers[rank].blob[TUTTI_TRANSPORT_SHM];
    uint8_t *theirs = s->peers[!rank].blob[TUTTI_TRANSPORT_SHM];
    EXPECT(OPS->init(&s->args, &s->tctx, blob) == TUTTI_OK, "init: %s", tutti_last_error(NULL));
    /* the all-gather of the blobs (the salt of each rank's names) */
    EXPECT(write(s->to_peer, blob, TUTTI_TRANSPORT_BLOB) == TUTTI_TRANSPORT_BLOB &&
               read(s->from_peer, theirs, TUTTI_TRANSPORT_BLOB) == TUTTI_TRANSPORT_BLOB,
           "blobs");
    for (int phase = 0; phase < 3; phase++) {
        EXPECT(barrier(s) == 0 && OPS->attach(s->tctx, phase) == TUTTI_OK, "attach %d: %s", phase,
               tutti_last_error(NULL));
    }
    return barrier(s);
}

static uint64_t comm_id_for_test(void)
{
    return ((uint64_t)getpid() << 20) ^ (uint64_t)time(NULL);
}

/* Fork rank 1 running fn; the caller runs rank 0. Returns rank 1's pid. */
static pid_t fork_pair(struct side *s0, struct side *s1, int (*fn)(struct side *, uint64_t),
                       uint64_t id)
{
    int a[2], b[2];
    cr_assert(pipe(a) == 0 && pipe(b) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        s1->to_peer = b[1];
        s1->from_peer = a[0];
        _exit(fn(s1, id));
    }
    s0->to_peer = a[1];
    s0->from_peer = b[0];
    return pid;
}

static int child_status(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static tutti_status_t wait_peek(struct tutti_tconn *c, const void **buf, size_t *len)
{
    tutti_status_t st;
    for (long i = 0; (st = OPS->recv_peek(c, buf, len, NULL)) == TUTTI_IN_PROGRESS && i < 200000000;
         i++) {
    }
    return st;
}

static tutti_status_t wait_acquire(struct tutti_tconn *c, void **buf, size_t *cap)
{
    tutti_status_t st;
    for (long i = 0; (st = OPS->send_acquire(c, buf, cap)) == TUTTI_IN_PROGRESS && i < 200000000;
         i++) {
    }
    return st;
}

/* ---- streams in both directions ---- */

static size_t msg_len(int i, size_t slot)
{
    return (size_t)(i * 7919) % (slot + 1);
}

/* Any 32 bytes: the transport carries the fingerprint of message i of `sender` unread. */
static struct tutti_fp msg_fp(int sender, int i)
{
    return (struct tutti_fp){{(uint64_t)i, (uint64_t)sender, (uint64_t)i * 7919, ~(uint64_t)i}};
}

/* Where in its slot's payload frame i (received at b) starts. */
static size_t frame_off(struct tutti_tconn *c, uint64_t i, const void *b)
{
    const uint8_t *payload = tutti__shm_slot(&((struct shm_conn *)c)->recv, i) + TUTTI_SHM_SLOT_HDR;
    return (size_t)((const uint8_t *)b - payload);
}

/* n messages each way; *moved_p: how many of those received started past their slot's start. */
static int stream(struct side *s, int n, int *moved_p)
{
    struct tutti_tconn *c = NULL;
    EXPECT(OPS->connect(s->tctx, 1 - s->rank, 0, &c) == TUTTI_OK && c != NULL, "connect");
    int sent = 0, got = 0, moved = 0;
    while (sent < n || got < n) {
        void *sb;
        const void *rb;
        size_t cap, len;
        size_t l = msg_len(sent, c->slot_size);
        c->next_bytes = l; /* as the engine says before it acquires */
        if (sent < n && OPS->send_acquire(c, &sb, &cap) == TUTTI_OK) {
            EXPECT(cap >= l, "message %d of %zu bytes acquired a slot of %zu", sent, l, cap);
            memset(sb, (sent + s->rank) & 0xff, l);
            struct tutti_fp fp = msg_fp(s->rank, sent);
            EXPECT(OPS->send_post(c, l, &fp) == TUTTI_OK, "post");
            sent++;
        }
        const struct tutti_fp *rfp = NULL;
        if (got < n && OPS->recv_peek(c, &rb, &len, &rfp) == TUTTI_OK) {
            struct tutti_fp want = msg_fp(1 - s->rank, got);
            EXPECT(len == msg_len(got, c->slot_size), "message %d has %zu bytes", got, len);
            EXPECT(rfp != NULL && memcmp(rfp, &want, sizeof(want)) == 0,
                   "message %d: another fingerprint", got);
            size_t off = frame_off(c, (uint64_t)got, rb);
            EXPECT(off + len <= c->slot_size, "message %d at %zu past its slot", got, off);
            moved += off != 0;
            for (size_t k = 0; k < len; k++) {
                EXPECT(((const uint8_t *)rb)[k] == ((got + 1 - s->rank) & 0xff), "byte %zu", k);
            }
            EXPECT(OPS->recv_release(c) == TUTTI_OK, "release");
            got++;
        }
    }
    EXPECT(barrier(s) == 0, "barrier");
    OPS->close(c);
    OPS->fini(s->tctx);
    *moved_p = moved;
    return 0;
}

static int stream_rank1(struct side *s, uint64_t id)
{
    int rc = side_init(s, 1, id), moved = 0;
    return rc != 0 ? rc : stream(s, 3000, &moved);
}

/* Rank 0 here, rank 1 forked: 3000 messages each way. */
static void stream_pair(void)
{
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    int moved = 0;
    pid_t pid = fork_pair(&s0, &s1, stream_rank1, id);
    cr_assert_eq(side_init(&s0, 0, id), 0);
    cr_assert_eq(stream(&s0, 3000, &moved), 0);
    cr_assert_eq(child_status(pid), 0);
    if (tutti__env()->SHM_ROTATE == 0) {
        cr_assert_eq(moved, 0, "no frame moves without TUTTI_SHM_ROTATE");
    } else {
        cr_assert_gt(moved, 100, "frames of at most half a slot move along it: %d did", moved);
    }
}

Test(shm, streams_both_ways_through_small_fifos, .timeout = 60)
{
    setenv("TUTTI_SHM_NSLOTS", "2", 1);
    setenv("TUTTI_SHM_SLOT_SIZE", "4k", 1);
    setenv("TUTTI_SHM_ROTATE", "0", 1);
    stream_pair();
}

/* Frames of 1 KiB to half a slot start at offsets that move from lap to lap; every byte and
 * length arrives as sent, and a frame never crosses its slot's end. */
Test(shm, small_frames_move_along_their_slots, .timeout = 60)
{
    setenv("TUTTI_SHM_NSLOTS", "3", 1);
    setenv("TUTTI_SHM_SLOT_SIZE", "16k", 1);
    setenv("TUTTI_SHM_ROTATE", "1k", 1);
    stream_pair();
}

/* ---- a sender that closes before the receiver ever sends ---- */

static int early_sender(struct side *s, uint64_t id)
{
    EXPECT(side_init(s, 1, id) == 0, "init");
    EXPECT(barrier(s) == 0, "rank 0 connected first");
    struct tutti_tconn *c = NULL;
    EXPECT(OPS->connect(s->tctx, 0, 0, &c) == TUTTI_OK && c != NULL, "connect");
    for (int i = 0; i < 3; i++) {
        void *b;
        size_t cap;
        EXPECT(wait_acquire(c, &b, &cap) == TUTTI_OK, "acquire %d", i);
        memset(b, 0x40 + i, 16);
        EXPECT(OPS->send_post(c, 16, NULL) == TUTTI_OK, "post");
    }
    OPS->close(c);
    OPS->fini(s->tctx); /* destroyed: its FIFO names are gone */
    EXPECT(barrier(s) == 0, "closed");
    return 0;
}

/* Rank 0 here, connected to an early sender that has posted its three frames and finished. */
static pid_t early_pair(struct side *s0, struct tutti_tconn **c_p)
{
    struct side s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(s0, &s1, early_sender, id);
    cr_assert_eq(side_init(s0, 0, id), 0);
    struct tutti_tconn *c = NULL;
    cr_assert_eq(OPS->connect(s0->tctx, 1, 0, &c), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_not_null(c, "usable before the peer's FIFO exists");
    cr_assert_eq(barrier(s0), 0);
    cr_assert_eq(barrier(s0), 0); /* the sender has posted, closed and finished */
    *c_p = c;
    return pid;
}

Test(shm, receiver_reads_what_a_closed_sender_posted, .timeout = 60)
{
    struct side s0 = {0};
    struct tutti_tconn *c = NULL;
    pid_t pid = early_pair(&s0, &c);
    for (int i = 0; i < 3; i++) {
        const void *b;
        size_t len;
        cr_assert_eq(wait_peek(c, &b, &len), TUTTI_OK, "message %d", i);
        cr_assert_eq(len, 16);
        cr_assert_eq(((const uint8_t *)b)[15], 0x40 + i);
        OPS->recv_release(c);
    }
    const void *b;
    size_t len;
    cr_assert_eq(OPS->recv_peek(c, &b, &len, NULL), TUTTI_ERR_REMOTE, "nothing more will come");
    void *sb;
    size_t cap;
    cr_assert_eq(OPS->send_acquire(c, &sb, &cap), TUTTI_ERR_REMOTE, "the peer is gone");
    cr_assert(strstr(tutti_last_error(NULL), "rank 1") != NULL, "%s", tutti_last_error(NULL));
    OPS->close(c);
    OPS->fini(s0.tctx);
    cr_assert_eq(child_status(pid), 0);
}

/* A header that puts its frame past the slot's end (a peer that wrote garbage) is an error that
 * names the frame, never a read past the segment. */
Test(shm, a_frame_said_to_end_past_its_slot_is_refused, .timeout = 60)
{
    struct side s0 = {0};
    struct tutti_tconn *c = NULL;
    pid_t pid = early_pair(&s0, &c); /* three frames of 16 bytes posted */
    struct shm_fifo *f = &((struct shm_conn *)c)->recv;
    struct shm_slot_hdr *h = (struct shm_slot_hdr *)(void *)tutti__shm_slot(f, 0);
    h->off = c->slot_size - 8;
    const void *b;
    size_t len;
    cr_assert_eq(OPS->recv_peek(c, &b, &len, NULL), TUTTI_ERR_REMOTE);
    cr_assert(strstr(tutti_last_error(NULL), "16 bytes at offset") != NULL, "%s",
              tutti_last_error(NULL));
    h->off = 0;
    cr_assert_eq(wait_peek(c, &b, &len), TUTTI_OK, "the frame as posted");
    cr_assert(len == 16 && ((const uint8_t *)b)[15] == 0x40);
    OPS->close(c);
    OPS->fini(s0.tctx);
    cr_assert_eq(child_status(pid), 0);
}

/* ---- a peer that dies ---- */

static int sleeper(struct side *s, uint64_t id)
{
    EXPECT(side_init(s, 1, id) == 0, "init");
    pause();
    return 0;
}

Test(shm, check_names_a_peer_that_died, .timeout = 60)
{
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(&s0, &s1, sleeper, id);
    cr_assert_eq(side_init(&s0, 0, id), 0);
    struct tutti_tconn *c = NULL; /* a rank watches the local peers it connects to */
    cr_assert_eq(OPS->connect(s0.tctx, 1, 0, &c), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(OPS->check(s0.tctx), TUTTI_OK, "alive");
    kill(pid, SIGKILL);
    int64_t t0 = time(NULL);
    tutti_status_t st;
    while ((st = OPS->check(s0.tctx)) == TUTTI_OK && time(NULL) - t0 < 10) {
        usleep(1000);
    }
    cr_assert_eq(st, TUTTI_ERR_REMOTE);
    cr_assert(strstr(tutti_last_error(NULL), "rank 1") != NULL &&
                  strstr(tutti_last_error(NULL), "died") != NULL,
              "%s", tutti_last_error(NULL));
    OPS->close(c);
    OPS->fini(s0.tctx);
    child_status(pid);
}

/* ---- frames sent by reference (shm_cma.c) ---- */

#define REF_FRAMES 40
#define REF_LEN    3000 /* at least TUTTI_SHM_CMA_MIN (1k here), at most the 4 KiB slot */

static uint8_t ref_data[REF_FRAMES][REF_LEN];

static int flushed_now(struct tutti_tconn *c)
{
    int done = -1;
    return OPS->flushed(c, &done) == TUTTI_OK ? done : -1;
}

/* Fill ref_data[i] with i + 1 and post it by reference as frame i; 0 when posted. */
static int post_ref_frame(struct tutti_tconn *c, int i)
{
    memset(ref_data[i], i + 1, REF_LEN);
    void *b;
    size_t cap;
    EXPECT(wait_acquire(c, &b, &cap) == TUTTI_OK, "acquire %d", i);
    struct tutti_fp fp = msg_fp(1, i);
    EXPECT(OPS->send_post_ref(c, ref_data[i], REF_LEN, &fp) == TUTTI_OK, "post %d", i);
    return 0;
}

/* Rank 1 posts REF_FRAMES frames by reference. by_ref: the receiver reads them from here, so
 * they stay unflushed until it releases them; else they were copied at the post, and this
 * rank overwrites its buffers at once to prove it. */
static int ref_sender(struct side *s, int by_ref)
{
    struct tutti_tconn *c = NULL;
    EXPECT(OPS->connect(s->tctx, 0, 0, &c) == TUTTI_OK && c != NULL, "connect");
    for (int i = 0; i < REF_FRAMES; i++) {
        EXPECT(post_ref_frame(c, i) == 0, "frame %d posted", i);
        EXPECT(flushed_now(c) == !by_ref, "frame %d: flushed %d", i, flushed_now(c));
        if (!by_ref) {
            memset(ref_data[i], 0xee, REF_LEN);
        }
        if (i == 0) {
            EXPECT(barrier(s) == 0, "the receiver may read");
        }
    }
    long spins = 0;
    while (flushed_now(c) == 0 && spins++ < 2000000000L) {
    }
    EXPECT(flushed_now(c) == 1, "flushed once the receiver released every frame");
    EXPECT(barrier(s) == 0, "done");
    OPS->close(c);
    OPS->fini(s->tctx);
    return 0;
}

static int ref_sender_rank1(struct side *s, uint64_t id)
{
    int rc = side_init(s, 1, id);
    return rc != 0 ? rc : ref_sender(s, 1);
}

static int copy_sender_rank1(struct side *s, uint64_t id)
{
    int rc = side_init(s, 1, id);
    return rc != 0 ? rc : ref_sender(s, 0);
}

/* Rank 0 receives them, placing the odd frames (frame 3 for another call's fingerprint); returns
 * how many came where they were placed. */
static int ref_receiver(struct side *s)
{
    struct tutti_tconn *c = NULL;
    cr_assert_eq(OPS->connect(s->tctx, 1, 0, &c), TUTTI_OK);
    cr_assert_eq(barrier(s), 0);
    static uint8_t dst[REF_FRAMES][REF_LEN];
    int placed = 0;
    for (int i = 0; i < REF_FRAMES; i++) {
        if (i % 2 == 1) { /* frame 3 is placed for another call: it must not land there */
            struct tutti_fp want = msg_fp(1, i == 3 ? 1000 : i);
            cr_assert_eq(OPS->recv_place(c, 0, dst[i], REF_LEN, &want), TUTTI_OK);
        }
        const void *b;
        size_t len;
        cr_assert_eq(wait_peek(c, &b, &len), TUTTI_OK, "%s", tutti_last_error(NULL));
        /* peeked twice, as a step that waits for its send slot does: read once */
        cr_assert_eq(OPS->recv_peek(c, &b, &len, NULL), TUTTI_OK);
        cr_assert_eq(len, REF_LEN);
        for (size_t k = 0; k < len; k++) {
            cr_assert_eq(((const uint8_t *)b)[k], i + 1, "frame %d byte %zu", i, k);
        }
        placed += b == dst[i];
        cr_assert(i % 2 == 1 || b != dst[i]);
        if (i == 3) { /* issue 36 item 3: nothing lands before its fingerprint is checked */
            cr_assert(b != dst[i], "a frame of another call landed in the caller's buffer");
            for (size_t k = 0; k < REF_LEN; k++) {
                cr_assert_eq(dst[i][k], 0, "the buffer placed for another call was written");
            }
        }
        cr_assert_eq(OPS->recv_release(c), TUTTI_OK);
    }
    cr_assert_eq(barrier(s), 0);
    OPS->close(c);
    OPS->fini(s->tctx);
    return placed;
}

Test(shm, frames_by_reference_land_where_placed_and_hold_the_sender_until_released, .timeout = 60)
{
    setenv("TUTTI_SHM_SLOT_SIZE", "4k", 1);
    setenv("TUTTI_SHM_CMA_MIN", "1k", 1);
    setenv("TUTTI_SHM_CMA", "1", 1); /* by reference whatever the copies cost here */
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(&s0, &s1, ref_sender_rank1, id);
    cr_assert_eq(side_init(&s0, 0, id), 0);
    cr_assert_eq(ref_receiver(&s0), REF_FRAMES / 2 - 1,
                 "the odd frames come where they were placed, but frame 3 (another call's)");
    cr_assert_eq(child_status(pid), 0);
}

Test(shm, a_receiver_that_refuses_references_gets_copies, .timeout = 60)
{
    setenv("TUTTI_SHM_SLOT_SIZE", "4k", 1);
    setenv("TUTTI_SHM_CMA_MIN", "1k", 1);
    setenv("TUTTI_SHM_CMA", "1", 1); /* by reference whatever the copies cost here */
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(&s0, &s1, copy_sender_rank1, id);
    setenv("TUTTI_SHM_CMA", "0", 1); /* here only: the sender was forked before */
    cr_assert_eq(side_init(&s0, 0, id), 0);
    cr_assert_eq(ref_receiver(&s0), 0, "every frame comes in its slot");
    cr_assert_eq(child_status(pid), 0);
}

/* Rank 1 posts 5 frames by reference at once, then holds them until the receiver is done. */
static int batch_sender_rank1(struct side *s, uint64_t id)
{
    EXPECT(side_init(s, 1, id) == 0, "init");
    struct tutti_tconn *c = NULL;
    EXPECT(OPS->connect(s->tctx, 0, 0, &c) == TUTTI_OK && c != NULL, "connect");
    for (int i = 0; i < 5; i++) {
        EXPECT(post_ref_frame(c, i) == 0, "frame %d posted", i);
    }
    EXPECT(barrier(s) == 0, "all posted");
    EXPECT(barrier(s) == 0, "all read");
    OPS->close(c);
    OPS->fini(s->tctx);
    return 0;
}

static int filled(const uint8_t *b, int v)
{
    for (size_t k = 0; k < REF_LEN; k++) {
        if (b[k] != v) {
            return 0;
        }
    }
    return 1;
}

Test(shm, one_read_takes_the_placed_frames_posted_after_the_peeked_one, .timeout = 60)
{
    setenv("TUTTI_SHM_SLOT_SIZE", "4k", 1);
    setenv("TUTTI_SHM_CMA_MIN", "1k", 1);
    setenv("TUTTI_SHM_CMA", "1", 1); /* by reference whatever the copies cost here */
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(&s0, &s1, batch_sender_rank1, id);
    cr_assert_eq(side_init(&s0, 0, id), 0);
    struct tutti_tconn *c = NULL;
    cr_assert_eq(OPS->connect(s0.tctx, 1, 0, &c), TUTTI_OK);
    cr_assert_eq(barrier(&s0), 0);
    static uint8_t dst[5][REF_LEN];
    for (int i = 0; i < 5; i++) { /* frame 3 is not placed: the first read stops before it */
        struct tutti_fp want = msg_fp(1, i);
        cr_assert_eq(i == 3 ? TUTTI_OK : OPS->recv_place(c, (uint32_t)i, dst[i], REF_LEN, &want),
                     TUTTI_OK);
    }
    for (int i = 0; i < 5; i++) {
        const void *b;
        size_t len;
        cr_assert_eq(wait_peek(c, &b, &len), TUTTI_OK, "%s", tutti_last_error(NULL));
        cr_assert_eq(len, REF_LEN);
        cr_assert(filled(b, i + 1), "frame %d holds its bytes", i);
        cr_assert_eq(b == dst[i], i != 3, "frame %d came where it was placed, or in its slot", i);
        if (i == 0) {
            cr_assert(filled(dst[1], 2) && filled(dst[2], 3), "frames 1 and 2 came with 0");
            cr_assert(filled(dst[4], 0), "frame 4 waits for the read of the unplaced frame 3");
        }
        cr_assert_eq(OPS->recv_release(c), TUTTI_OK);
    }
    cr_assert_eq(barrier(&s0), 0);
    OPS->close(c);
    OPS->fini(s0.tctx);
    cr_assert_eq(child_status(pid), 0);
}

/* ---- geometry that differs between the ends ---- */

static int other_geometry(struct side *s, uint64_t id)
{
    setenv("TUTTI_SHM_NSLOTS", "3", 1);
    EXPECT(side_init(s, 1, id) == 0, "init");
    struct tutti_tconn *c = NULL;
    EXPECT(OPS->connect(s->tctx, 0, 0, &c) == TUTTI_OK, "connect");
    EXPECT(barrier(s) == 0, "connected");
    EXPECT(barrier(s) == 0, "checked");
    OPS->close(c);
    OPS->fini(s->tctx);
    return 0;
}

Test(shm, different_fifo_settings_are_refused_by_name, .timeout = 60)
{
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(&s0, &s1, other_geometry, id);
    cr_assert_eq(side_init(&s0, 0, id), 0);
    struct tutti_tconn *c = NULL;
    cr_assert_eq(barrier(&s0), 0);
    tutti_status_t st = OPS->connect(s0.tctx, 1, 0, &c);
    if (st == TUTTI_OK) {
        void *b;
        size_t cap;
        st = OPS->send_acquire(c, &b, &cap);
    }
    cr_assert_eq(st, TUTTI_ERR_INVALID_USAGE);
    cr_assert(strstr(tutti_last_error(NULL), "TUTTI_SHM_NSLOTS") != NULL, "%s",
              tutti_last_error(NULL));
    cr_assert_eq(barrier(&s0), 0);
    OPS->fini(s0.tctx);
    cr_assert_eq(child_status(pid), 0);
}

/* Rank 0 set up beside a rank 1 on host1 whose blob is rank 0's own with `layout` after the
 * salt, or all zero (no_shm: a rank without the transport); the status of attach phase 0 and
 * its message in msg, everything undone. */
static tutti_status_t attach_beside(uint32_t layout, int no_shm, int host1, char *msg, size_t len)
{
    struct side s = {0};
    side_args(&s, 0, comm_id_for_test());
    uint8_t *blob = s.peers[0].blob[TUTTI_TRANSPORT_SHM];
    uint8_t *theirs = s.peers[1].blob[TUTTI_TRANSPORT_SHM];
    cr_assert_eq(OPS->init(&s.args, &s.tctx, blob), TUTTI_OK, "%s", tutti_last_error(NULL));
    uint32_t mine;
    memcpy(&mine, blob + TUTTI_SHM_SALT_BYTES, sizeof(mine));
    cr_assert_eq(mine, TUTTI_SHM_LAYOUT, "the blob carries this build's layout");
    memcpy(theirs, blob, TUTTI_TRANSPORT_BLOB);
    memcpy(theirs + TUTTI_SHM_SALT_BYTES, &layout, sizeof(layout));
    if (no_shm) {
        memset(theirs, 0, TUTTI_TRANSPORT_BLOB);
    }
    s.peers[1].host = host1;
    tutti_status_t st = OPS->attach(s.tctx, 0);
    snprintf(msg, len, "%s", st == TUTTI_OK ? "" : tutti_last_error(NULL));
    if (st == TUTTI_OK) {
        cr_assert_eq(OPS->attach(s.tctx, 2), TUTTI_OK); /* the directory's name goes */
    }
    OPS->fini(s.tctx);
    return st;
}

/* A rank of this host whose blob gives another layout (another build of tutti) fails the attach
 * at once, naming the rank and both versions. One on another host does not matter, nor one that
 * published nothing (no shared memory there, as with TUTTI_TRANSPORT=tcp: the attach's
 * agreement then takes every pair to TCP). */
Test(shm, a_local_rank_of_another_build_is_refused_by_name, .timeout = 60)
{
    char msg[400], want[96];
    uint32_t other[] = {0, TUTTI_SHM_LAYOUT + 1};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(attach_beside(other[i], 0, 0, msg, sizeof(msg)), TUTTI_ERR_INVALID_USAGE);
        snprintf(want, sizeof(want),
                 "rank 1 (host test, pid 0) lays out shared memory as version %u",
                 (unsigned)other[i]);
        cr_assert(strstr(msg, want) != NULL && strstr(msg, "same libtutti") != NULL, "%s", msg);
        cr_assert_eq(attach_beside(other[i], 0, 1, msg, sizeof(msg)), TUTTI_OK, "%s", msg);
    }
    cr_assert_eq(attach_beside(0, 1, 0, msg, sizeof(msg)), TUTTI_OK, "%s", msg);
    cr_assert_eq(attach_beside(TUTTI_SHM_LAYOUT, 0, 0, msg, sizeof(msg)), TUTTI_OK, "%s", msg);
}

/* ------------------------------------------------------------ segments left by dead makers */

/* A segment named after this test, made by a child that then dies of SIGKILL (as a rank killed
 * during init leaves one); name gets its name. */
static void dead_makers_segment(const char *tag, char *name, size_t len)
{
    snprintf(name, len, "/tutti-%016llx-c7", (unsigned long long)comm_id_for_test() ^ tag[0]);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        tutti_status_t st;
        if (tutti__shm_map(name, 4096, 1, &st, NULL) == NULL) {
            _exit(1);
        }
        raise(SIGKILL);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st), "the child could not make %s", name);
}

static int exists(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    return access(path, F_OK) == 0;
}

Test(shm, a_segment_whose_maker_has_ended_is_replaced)
{
    char name[64];
    dead_makers_segment("r", name, sizeof(name));
    tutti_status_t st;
    struct shm_ctl *ctl = tutti__shm_map(name, 4096, 1, &st, NULL);
    cr_assert_not_null(ctl, "a stale segment stayed in the way: %s", tutti_last_error(NULL));
    cr_assert_eq(ctl->own.id.pid, (uint32_t)getpid(), "the segment is not this process's");
    munmap(ctl, 4096);
    shm_unlink(name);
}

/* Issue 36 item 1: the sender opened an existing FIFO without an owner check, so a user who
 * planted the name (mode 0666) received a rank's first frame. A segment this process opens (its
 * peer's) must be this user's, mode 600: a planted one is refused, naming its owner. */
Test(shm, a_segment_planted_by_another_user_is_not_opened, .init = cr_redirect_stderr)
{
    char name[64];
    snprintf(name, sizeof(name), "/tutti-%016llx-f0-1-0", (unsigned long long)comm_id_for_test());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 4096), 0);
    cr_assert_eq(fchmod(fd, 0666), 0); /* (shm_open's mode passes through the umask) */
    tutti_status_t st = TUTTI_OK;
    cr_assert_null(tutti__shm_map(name, 4096, 0, &st, NULL), "a segment open to all was used");
    cr_assert_eq(st, TUTTI_ERR_SYSTEM);
    cr_assert(strstr(tutti_last_error(NULL), "mode 666") != NULL, "%s", tutti_last_error(NULL));
    if (geteuid() == 0) {
        cr_assert_eq(fchmod(fd, 0600), 0);
        cr_assert_eq(fchown(fd, 65534, 65534), 0);
        cr_assert_null(tutti__shm_map(name, 4096, 0, &st, NULL), "another user's was used");
        cr_assert(strstr(tutti_last_error(NULL), "belongs to uid 65534") != NULL, "%s",
                  tutti_last_error(NULL));
    }
    close(fd);
    shm_unlink(name);
}

Test(shm, a_segment_of_a_live_maker_is_named_with_its_owner_and_removal)
{
    char name[64];
    snprintf(name, sizeof(name), "/tutti-%016llx-c8", (unsigned long long)comm_id_for_test());
    tutti_status_t st;
    void *mine = tutti__shm_map(name, 4096, 1, &st, NULL);
    cr_assert_not_null(mine);
    cr_assert_null(tutti__shm_map(name, 4096, 1, &st, NULL), "a live segment was replaced");
    const char *msg = tutti_last_error(NULL);
    char pid[32], rm[96];
    snprintf(pid, sizeof(pid), "pid %d, is running", (int)getpid());
    snprintf(rm, sizeof(rm), "rm /dev/shm%s", name);
    cr_assert(st == TUTTI_ERR_SYSTEM && strstr(msg, pid) != NULL && strstr(msg, rm) != NULL,
              "%s: %s", tutti_status_name(st), msg);
    munmap(mine, 4096);
    shm_unlink(name);
}

Test(shm, the_sweep_removes_only_segments_whose_maker_has_ended)
{
    char dead[64], live[64], unowned[64];
    dead_makers_segment("s", dead, sizeof(dead));
    snprintf(live, sizeof(live), "/tutti-%016llx-c9", (unsigned long long)comm_id_for_test());
    tutti_status_t st;
    void *mine = tutti__shm_map(live, 4096, 1, &st, NULL);
    cr_assert_not_null(mine);
    /* No maker recorded (another version's): not the sweep's to judge. */
    snprintf(unowned, sizeof(unowned), "/tutti-%016llx-f1-2-3",
             (unsigned long long)comm_id_for_test());
    int fd = shm_open(unowned, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert(fd >= 0 && ftruncate(fd, 4096) == 0);
    close(fd);
    tutti__shm_sweep();
    int dead_left = exists(dead), live_left = exists(live), unowned_left = exists(unowned);
    shm_unlink(dead);
    shm_unlink(live);
    shm_unlink(unowned);
    munmap(mine, 4096);
    cr_assert(!dead_left, "the sweep left %s, whose maker has ended", dead);
    cr_assert(live_left && unowned_left, "the sweep removed a live (%d) or unowned (%d) segment",
              !live_left, !unowned_left);
}

/* ---- the control directory (shm_dir.c) ---- */

static int dir_rank1(struct side *s, uint64_t id)
{
    EXPECT(side_init(s, 1, id) == 0, "init");
    EXPECT(barrier(s) == 0, "checked");
    OPS->fini(s->tctx);
    return 0;
}

Test(shm, both_control_pages_are_in_one_directory_whose_name_goes_after_attach, .timeout = 60)
{
    struct side s0 = {0}, s1 = {0};
    uint64_t id = comm_id_for_test();
    pid_t pid = fork_pair(&s0, &s1, dir_rank1, id);
    cr_assert_eq(side_init(&s0, 0, id), 0);
    struct shm_ctx *ctx = s0.tctx;
    char name[64];
    tutti__shm_name(ctx, 'd', 0, 0, 0, name, sizeof(name));
    int left = exists(name);
    struct shm_ctl *mine = tutti__shm_dir_page(ctx, 0), *peer = tutti__shm_dir_page(ctx, 1);
    cr_assert_eq(ctx->ctl, mine, "rank 0's page is not its page of the directory");
    cr_assert(atomic_load(&peer->magic) == TUTTI_SHM_CTL_MAGIC && peer->rank == 1 &&
                  peer->pid == (uint32_t)pid,
              "rank 1's page: magic %x, rank %d, pid %u", atomic_load(&peer->magic), peer->rank,
              peer->pid);
    cr_assert_eq(barrier(&s0), 0);
    cr_assert_eq(child_status(pid), 0);
    OPS->fini(s0.tctx);
    cr_assert(!left, "%s still exists once both ranks attached", name);
}

/*
 * Issue 36: names derived from the communicator id alone could be taken first by another user
 * (the job then failed at set-up, "it belongs to uid 65534"), and two jobs with one id clashed.
 * Names keyed by a salt only the job knows: two pairs with one id, with the id's former names
 * taken (open to all) before they start, both stream, and nobody touched the planted names.
 */
Test(shm, two_jobs_with_one_id_and_names_planted_before_them_do_not_meet, .timeout = 60)
{
    uint64_t id = comm_id_for_test();
    const char *former[] = {"d", "f0-1-0", "f1-0-0"};
    char planted[3][64];
    for (int i = 0; i < 3; i++) {
        snprintf(planted[i], sizeof(planted[i]), "/tutti-%016llx-%s", (unsigned long long)id,
                 former[i]);
        int fd = shm_open(planted[i], O_RDWR | O_CREAT | O_EXCL, 0600);
        cr_assert(fd >= 0 && ftruncate(fd, 1 << 20) == 0 && fchmod(fd, 0666) == 0);
        close(fd);
    }
    struct side a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
    pid_t pa = fork_pair(&a0, &a1, stream_rank1, id), pb = fork_pair(&b0, &b1, stream_rank1, id);
    int ok = side_init(&a0, 0, id) == 0 && side_init(&b0, 0, id) == 0;
    int moved = 0;
    ok = ok && stream(&a0, 3000, &moved) == 0 && stream(&b0, 3000, &moved) == 0;
    int sa = child_status(pa), sb = child_status(pb);
    int untouched = 1;
    for (int i = 0; i < 3; i++) {
        int fd = shm_open(planted[i], O_RDONLY, 0);
        uint8_t head[4096], zero[4096] = {0};
        untouched = untouched && fd >= 0 && pread(fd, head, sizeof(head), 0) == sizeof(head) &&
                    memcmp(head, zero, sizeof(head)) == 0;
        close(fd);
        shm_unlink(planted[i]);
    }
    cr_assert(ok && sa == 0 && sb == 0, "a pair failed: rank 0 %s, ranks 1 exit %d and %d (%s)",
              ok ? "ok" : "failed", sa, sb, tutti_last_error(NULL));
    cr_assert(untouched, "a planted name was written or removed");
}
