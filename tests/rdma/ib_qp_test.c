/*
 * ib_qp_test.c - real verbs between two devices (run in the Soft-RoCE VM by vm_suite.sh:
 * `ib_qp_test rxe0 rxe1`): two processes, one per device, connect RC queue pairs with
 * transports/ibverbs/ib_qp.c, exchanging addresses over a socketpair. Prints one
 * "name ok|failed [detail]" line per check:
 *   ib_qp_write_imm  4 MiB RDMA WRITE with immediate lands intact, the immediate and length in
 *                    the receiver's completion
 *   ib_qp_inline     a 64-byte inline RDMA WRITE with immediate
 *   ib_qp_dead_peer  after the peer's process is gone, a write completes in error (retries
 *                    exhausted) within seconds, and the message names device, port and QP
 * Exit status 0 when every check passed.
 */
#include "transports/ibverbs/ib_devices.h"
#include "transports/ibverbs/ib_qp.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BIG (4u << 20)

struct hello {
    struct tutti_ib_qp_addr qp;
    uint64_t addr;
    uint32_t rkey;
};

static int find_port(const char *dev, struct tutti_ib_port *out)
{
    struct tutti_ib_port p[TUTTI_IB_MAX_PORTS];
    char why[256];
    int n = tutti__ib_ports(p, TUTTI_IB_MAX_PORTS, why, sizeof(why));
    for (int i = 0; i < n; i++) {
        if (strcmp(p[i].dev, dev) == 0 && p[i].active) {
            *out = p[i];
            return 0;
        }
    }
    fprintf(stderr, "%s: no active port (%s)\n", dev, n > 0 ? "not listed" : why);
    return -1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Poll until one completion or `secs`; 0 ok (wc filled), -1 timeout. */
static int poll1(struct tutti_ib_dev *d, struct ibv_wc *wc, double secs)
{
    double end = now_s() + secs;
    while (now_s() < end) {
        int n = ibv_poll_cq(d->cq, 1, wc);
        if (n > 0) {
            return 0;
        }
        if (n < 0) {
            return -1;
        }
    }
    return -1;
}

struct side {
    struct tutti_ib_dev d;
    struct ibv_qp *qp;
    struct hello me, peer;
    char *buf;
    struct ibv_mr *mr;
};

static int side_up(struct side *s, const char *dev, int sock, char *why, size_t len)
{
    struct tutti_ib_port port;
    int inl = 64;
    if (find_port(dev, &port) != 0 || tutti__ib_dev_open(&port, 64, &s->d, why, len) != 0 ||
        tutti__ib_qp_create(&s->d, s->d.cq, 16, &inl, &s->qp, &s->me.qp, why, len) != 0) {
        return -1;
    }
    s->buf = aligned_alloc(4096, BIG);
    s->mr = s->buf
                ? ibv_reg_mr(s->d.pd, s->buf, BIG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
                : NULL;
    if (s->mr == NULL) {
        snprintf(why, len, "ibv_reg_mr failed");
        return -1;
    }
    s->me.addr = (uint64_t)(uintptr_t)s->buf;
    s->me.rkey = s->mr->rkey;
    struct hello me = s->me, peer;
    if (write(sock, &me, sizeof(me)) != (ssize_t)sizeof(me) ||
        read(sock, &peer, sizeof(peer)) != (ssize_t)sizeof(peer)) {
        snprintf(why, len, "address exchange failed");
        return -1;
    }
    s->peer = peer;
    return tutti__ib_qp_connect(&s->d, s->qp, &s->me.qp, &s->peer.qp, 12, 3, why, len);
}

static int post_recv(struct side *s)
{
    struct ibv_recv_wr wr = {.wr_id = 1}, *bad = NULL;
    return ibv_post_recv(s->qp, &wr, &bad);
}

static int write_imm(struct side *s, size_t bytes, uint32_t imm, int inl)
{
    struct ibv_sge sge = {
        .addr = (uint64_t)(uintptr_t)s->buf, .length = (uint32_t)bytes, .lkey = s->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0),
                             .imm_data = htonl(imm),
                             .wr.rdma = {.remote_addr = s->peer.addr, .rkey = s->peer.rkey}};
    struct ibv_send_wr *bad = NULL;
    return ibv_post_send(s->qp, &wr, &bad);
}

/* The receiver: two writes with immediate, checked; then it exits without a word. */
static int receiver(const char *dev, int sock)
{
    struct side s;
    char why[256] = "", ok = 1;
    if (side_up(&s, dev, sock, why, sizeof(why)) != 0) {
        fprintf(stderr, "receiver: %s\n", why);
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        size_t bytes = k == 0 ? BIG : 64;
        struct ibv_wc wc;
        if (post_recv(&s) != 0 || write(sock, "r", 1) != 1 || poll1(&s.d, &wc, 20) != 0) {
            ok = 0;
        } else if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
                   ntohl(wc.imm_data) != 0x1234u + (unsigned)k || wc.byte_len != bytes) {
            tutti__ib_wc_error(&s.d, &wc, why, sizeof(why));
            fprintf(stderr, "receiver: completion %s opcode %d imm %x len %u\n", why, wc.opcode,
                    ntohl(wc.imm_data), wc.byte_len);
            ok = 0;
        } else {
            for (size_t i = 0; i < bytes && ok; i++) {
                ok = s.buf[i] == (char)(i * 7 + (size_t)k);
            }
        }
        if (write(sock, &ok, 1) != 1) {
            return 1;
        }
    }
    return 0; /* exit: the QP goes with the process */
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ib_qp_test DEV_SENDER DEV_RECEIVER\n");
        return 2;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        _exit(receiver(argv[2], sv[1]));
    }
    close(sv[1]);
    struct side s;
    char why[256] = "", r = 0, ok = 0;
    int failed = 0;
    if (side_up(&s, argv[1], sv[0], why, sizeof(why)) != 0) {
        printf("ib_qp_write_imm failed %s\n", why);
        kill(pid, SIGKILL);
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        size_t bytes = k == 0 ? BIG : 64;
        for (size_t i = 0; i < bytes; i++) {
            s.buf[i] = (char)(i * 7 + (size_t)k);
        }
        struct ibv_wc wc = {0};
        int sent = read(sv[0], &r, 1) == 1 && write_imm(&s, bytes, 0x1234u + (unsigned)k, k) == 0 &&
                   poll1(&s.d, &wc, 20) == 0 && wc.status == IBV_WC_SUCCESS;
        int got = read(sv[0], &ok, 1) == 1 && ok;
        printf("%s %s\n", k == 0 ? "ib_qp_write_imm" : "ib_qp_inline",
               sent && got ? "ok" : "failed");
        failed += !(sent && got);
    }
    int status = 0;
    waitpid(pid, &status, 0); /* the receiver is gone */
    double t0 = now_s();
    struct ibv_wc wc = {0};
    int posted = write_imm(&s, 4096, 0x99, 0) == 0;
    int done = posted && poll1(&s.d, &wc, 30) == 0;
    tutti__ib_wc_error(&s.d, &wc, why, sizeof(why));
    int good = done && wc.status != IBV_WC_SUCCESS && strstr(why, argv[1]) != NULL &&
               strstr(why, "QP") != NULL;
    printf("ib_qp_dead_peer %s after %.2f s: %s\n", good ? "ok" : "failed", now_s() - t0,
           done ? why : "no completion within 30 s");
    failed += !good;
    return failed != 0;
}
