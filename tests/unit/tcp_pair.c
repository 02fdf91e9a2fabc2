/*
 * tcp_pair.c - two ranks of the TCP transport for its unit tests (tcp_pair.h).
 */
#include "tcp_pair.h"
#include "net/handshake.h"
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

const uint8_t secret[TUTTI_SECRET_BYTES] = "tcp-test-secret";
const uint64_t comm_id = 0x7e57c0ffeeull;

int full_write(int fd, const void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = write(fd, (const char *)buf + done, n - done);
        if (r <= 0) {
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

int full_read(int fd, void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = read(fd, (char *)buf + done, n - done);
        if (r <= 0) {
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

int barrier(struct rank *r)
{
    char b = 'b';
    EXPECT(full_write(r->to_peer, &b, 1) == 0 && full_read(r->from_peer, &b, 1) == 0,
           "barrier: the other rank is gone");
    return 0;
}

/* init, and this rank's peer record with the published address. */
int rank_publish(struct rank *r, int rank, int nsocks)
{
    r->rank = rank;
    r->env = *tutti__env();
    r->env.NSOCKS = nsocks;
    r->env.TCP_SLOT_SIZE = r->slot_size > 0 ? r->slot_size : SLOT;
    r->env.TCP_NSLOTS = 4;
    memcpy(r->secret, secret, sizeof(secret));
    EXPECT(tutti__sockaddr_parse("127.0.0.1:1", -1, AF_INET, &r->hint) == TUTTI_OK, "hint");
    r->args = (struct tutti_tctx_args){
        .err = NULL,
        .rank = rank,
        .nranks = 2,
        .comm_id = comm_id,
        .secret = r->secret,
        .env = &r->env,
        .nchannels = 4,
        .timeout_ns = r->timeout_ns > 0 ? r->timeout_ns : 10 * SEC,
        .root_hint = &r->hint,
        .peers = NULL,
    };
    struct tutti_tpeer *me = &r->peers[rank];
    EXPECT(OPS->init(&r->args, &r->tctx, me->blob[TUTTI_TRANSPORT_TCP]) == TUTTI_OK, "init: %s",
           tutti_last_error(NULL));
    me->host = rank;           /* each rank its own host */
    me->hostname = "testhost"; /* a literal: at the same address in the forked peer */
    me->pid = (uint32_t)getpid();
    return 0;
}

/* Swap peer records through the pipes, then attach. */
int rank_join(struct rank *r)
{
    struct tutti_tpeer *me = &r->peers[r->rank], *other = &r->peers[1 - r->rank];
    EXPECT(full_write(r->to_peer, me, sizeof(*me)) == 0, "send record");
    EXPECT(full_read(r->from_peer, other, sizeof(*other)) == 0, "receive record");
    EXPECT(other->host == 1 - r->rank && other->pid != 0 &&
               strcmp(other->hostname, "testhost") == 0,
           "record");
    r->args.peers = r->peers;
    EXPECT(OPS->attach(r->tctx, 0) == TUTTI_OK, "attach");
    return 0;
}

int rank_setup(struct rank *r, int rank, int nsocks)
{
    int rc = rank_publish(r, rank, nsocks);
    return rc != 0 ? rc : rank_join(r);
}

int connect_channels(struct rank *r, int nch)
{
    int64_t end = tutti__now_ns() + 10 * SEC;
    for (int done = 0; done < nch;) {
        done = 0;
        for (int ch = 0; ch < nch; ch++) {
            if (r->conn[ch] == NULL) {
                tutti_status_t st = OPS->connect(r->tctx, 1 - r->rank, ch, &r->conn[ch]);
                EXPECT(st == TUTTI_OK, "connect channel %d: %s", ch, tutti_last_error(NULL));
            }
            done += r->conn[ch] != NULL;
        }
        EXPECT(tutti__now_ns() < end, "connect timed out");
    }
    for (int ch = 0; ch < nch; ch++) {
        EXPECT(r->conn[ch]->peer == 1 - r->rank && r->conn[ch]->channel == ch, "conn identity");
        EXPECT(r->conn[ch]->slot_size == SLOT, "slot size");
    }
    return 0;
}

void rank_teardown(struct rank *r)
{
    for (int ch = 0; ch < TUTTI_MAX_CHANNELS; ch++) {
        if (r->conn[ch] != NULL) {
            OPS->close(r->conn[ch]);
            r->conn[ch] = NULL;
        }
    }
    if (r->tctx != NULL) {
        OPS->fini(r->tctx);
        r->tctx = NULL;
    }
}

uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

/* Message i of `sender` on channel ch: sizes 0, 1, 7, slot-1, slot, random; known content. */
size_t msg_size(int sender, int ch, uint32_t i)
{
    static const size_t fixed[] = {0, 1, 7, SLOT - 1, SLOT};
    if (i % 6 < 5) {
        return fixed[i % 6];
    }
    return mix(i * 131u + (uint32_t)ch * 7u + (uint32_t)sender) % (SLOT + 1);
}

uint8_t msg_byte(int sender, int ch, uint32_t i, size_t j)
{
    return (uint8_t)(mix(i ^ ((uint32_t)sender << 24) ^ ((uint32_t)ch << 16)) + j * 7);
}

/* The fingerprint message i of `sender` on channel ch goes with (any 32 bytes: the transport
 * carries them without reading them). */
struct tutti_fp msg_fp(int sender, int ch, uint32_t i)
{
    return (struct tutti_fp){
        {i, (uint64_t)ch << 32 | (uint32_t)sender, mix(i) | 1ull << 40, ~(uint64_t)i}};
}

/* Fork rank 1 running fn; set up rank 0 here. */
void start_pair(struct pair *p, int nsocks, rank_fn fn)
{
    int down[2], up[2];
    cr_assert_eq(pipe(down), 0);
    cr_assert_eq(pipe(up), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(60);
        struct rank r = {.to_peer = up[1], .from_peer = down[0]};
        int rc = rank_setup(&r, 1, nsocks);
        rc = rc != 0 ? rc : fn(&r, nsocks);
        rank_teardown(&r);
        _exit(rc > 255 ? 255 : rc);
    }
    memset(&p->r, 0, sizeof(p->r));
    p->child = pid;
    p->r.to_peer = down[1];
    p->r.from_peer = up[0];
    cr_assert_eq(rank_setup(&p->r, 0, nsocks), 0);
}

/* Exit status of rank 1: 0 when all its checks passed. */
int child_status(struct pair *p)
{
    int ws = 0;
    cr_assert_eq(waitpid(p->child, &ws, 0), p->child);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1000 + WTERMSIG(ws);
}

void finish_pair(struct pair *p)
{
    rank_teardown(&p->r);
    int st = child_status(p);
    cr_assert_eq(st, 0, "rank 1 failed at line %d (its stderr names the file)", st);
}

/* Call op until it stops saying "in progress"; fail the test after 5 s. */
tutti_status_t wait_recv(struct tutti_tconn *c)
{
    const void *buf;
    size_t len;
    int moved;
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int64_t end = tutti__now_ns() + 5 * SEC; st == TUTTI_IN_PROGRESS; usleep(100)) {
        st = OPS->progress(c, &moved);
        st = st == TUTTI_OK ? OPS->recv_peek(c, &buf, &len, NULL) : st;
        cr_assert_lt(tutti__now_ns(), end, "no error within 5 s");
    }
    return st;
}
