/*
 * test_handshake.c - the authenticated handshake over socket pairs and loopback TCP: success,
 * wrong secrets and comm ids, garbage, peers that close or stay silent, and replays.
 * One thread drives both ends alternately: every call is non-blocking.
 */
#include "net/handshake.h"
#include "net/sock.h"
#include "tutti.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEC 1000000000LL

static const uint8_t key1[TUTTI_SECRET_BYTES] = "0123456789abcdef";
static const uint8_t key2[TUTTI_SECRET_BYTES] = "0123456789abcdeF";
static const char payload[TUTTI_HS_PAYLOAD] = "rank 3 channel 1 socket 2";

static void pair(int *a, int *b)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    *a = sv[0];
    *b = sv[1];
}

static int64_t soon(void)
{
    return tutti__now_ns() + 5 * SEC;
}

/*
 * Drive both handshakes until neither is in progress. Like the transport, a side that fails
 * closes its socket, so the other end sees the connection end.
 */
static void drive(struct tutti_hs *x, struct tutti_hs *y, tutti_status_t *sx, tutti_status_t *sy)
{
    *sx = *sy = TUTTI_IN_PROGRESS;
    for (int i = 0; i < 1000000 && (*sx == TUTTI_IN_PROGRESS || *sy == TUTTI_IN_PROGRESS); i++) {
        if (*sx == TUTTI_IN_PROGRESS && (*sx = tutti__hs_progress(x)) < 0) {
            close(x->fd);
        }
        if (*sy == TUTTI_IN_PROGRESS && (*sy = tutti__hs_progress(y)) < 0) {
            close(y->fd);
        }
    }
}

/*
 * A full exchange over a fresh socket pair: acceptor (ka, ida) against connector (kc, idc).
 * *hc gets the connector's state (its fd stays open when it succeeded).
 */
static void exchange(const uint8_t *ka, uint64_t ida, const uint8_t *kc, uint64_t idc,
                     struct tutti_hs *ha, struct tutti_hs *hc, tutti_status_t *sa,
                     tutti_status_t *sc)
{
    int a, c;
    pair(&a, &c);
    tutti__hs_init_accept(ha, a, ka, ida, soon());
    tutti__hs_init_connect(hc, c, kc, idc, payload, sizeof(payload), soon());
    drive(ha, hc, sa, sc);
}

/* Progress one handshake until it ends. */
static tutti_status_t finish(struct tutti_hs *hs)
{
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int i = 0; i < 1000000 && st == TUTTI_IN_PROGRESS; i++) {
        st = tutti__hs_progress(hs);
    }
    return st;
}

/* Read exactly n bytes from a non-blocking fd (spinning), or fail the test. */
static void read_exact(int fd, void *buf, size_t n)
{
    size_t got = 0;
    int err = 0;
    for (int i = 0; i < 1000000 && got < n; i++) {
        ssize_t r = tutti__sock_recv(fd, (char *)buf + got, n - got, &err);
        cr_assert_geq(r, 0, "recv: eof or errno %d", err);
        got += (size_t)r;
    }
    cr_assert_eq(got, n);
}

static void write_all(int fd, const void *buf, size_t n)
{
    int err = 0;
    cr_assert_eq(tutti__sock_send(fd, buf, n, &err), (ssize_t)n);
}

Test(handshake, succeeds_and_delivers_payload, .timeout = 10)
{
    struct tutti_hs ha, hc;
    tutti_status_t sa, sc;
    char data[5];
    exchange(key1, 77, key1, 77, &ha, &hc, &sa, &sc);
    cr_assert_eq(sa, TUTTI_OK);
    cr_assert_eq(sc, TUTTI_OK);
    cr_assert_eq(memcmp(ha.payload, payload, sizeof(payload)), 0);
    /* Done is done, and nothing after the handshake was consumed by it. */
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_OK);
    write_all(hc.fd, "DATA!", 5);
    read_exact(ha.fd, data, 5);
    cr_assert_eq(memcmp(data, "DATA!", 5), 0);
}

/* What each side waits for, step by step: a side with nothing to send waits to read, so that
 * a waiting rank sleeps in poll() instead of spinning on an always-writable socket. */
Test(handshake, events_ask_to_read_while_waiting_and_to_write_only_with_something_to_send,
     .timeout = 10)
{
    int a, c;
    pair(&a, &c);
    struct tutti_hs ha, hc;
    tutti__hs_init_accept(&ha, a, key1, 77, soon());
    tutti__hs_init_connect(&hc, c, key1, 77, payload, sizeof(payload), soon());
    cr_assert_eq(tutti__hs_events(&ha), POLLOUT, "the acceptor speaks first (HELLO)");
    cr_assert_eq(tutti__hs_events(&hc), POLLIN, "the connector waits for HELLO");
    cr_assert_eq(tutti__hs_progress(&hc), TUTTI_IN_PROGRESS);
    cr_assert_eq(tutti__hs_events(&hc), POLLIN, "nothing came: still waiting to read");
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_IN_PROGRESS); /* HELLO sent */
    cr_assert_eq(tutti__hs_events(&ha), POLLIN, "then the acceptor waits for PROVE");
    tutti_status_t sa, sc;
    drive(&ha, &hc, &sa, &sc);
    cr_assert_eq(sa, TUTTI_OK);
    cr_assert_eq(sc, TUTTI_OK);
    close(ha.fd);
    close(hc.fd);
}

Test(handshake, succeeds_over_loopback_tcp_both_ways, .timeout = 10)
{
    union tutti_sockaddr l, bound;
    int lfd;
    cr_assert_eq(tutti__sockaddr_parse("127.0.0.1:0", -1, AF_INET, &l), TUTTI_OK);
    cr_assert_eq(tutti__sock_listen(&l, &lfd, &bound), TUTTI_OK);
    for (int way = 0; way < 2; way++) {
        int client, server = -1;
        cr_assert_eq(tutti__sock_connect_start(&bound, &client), TUTTI_OK);
        tutti_status_t st = TUTTI_IN_PROGRESS;
        for (int i = 0; i < 1000000 && st == TUTTI_IN_PROGRESS; i++) {
            st = tutti__sock_accept(lfd, &server, NULL);
        }
        cr_assert_eq(st, TUTTI_OK);
        /* way 0: the TCP client proves; way 1: the TCP server proves. */
        int afd = way == 0 ? server : client, cfd = way == 0 ? client : server;
        struct tutti_hs ha, hc;
        tutti_status_t sa, sc;
        tutti__hs_init_accept(&ha, afd, key2, 1, soon());
        tutti__hs_init_connect(&hc, cfd, key2, 1, payload, 7, soon());
        drive(&ha, &hc, &sa, &sc);
        cr_assert_eq(sa, TUTTI_OK, "way %d", way);
        cr_assert_eq(sc, TUTTI_OK, "way %d", way);
        cr_assert_eq(memcmp(ha.payload, payload, 7), 0);
        cr_assert_eq(ha.payload[7], 0, "a short payload is zero-padded");
        close(client);
        close(server);
    }
    close(lfd);
}

Test(handshake, wrong_key_fails_auth_at_acceptor, .timeout = 10)
{
    struct tutti_hs ha, hc;
    tutti_status_t sa, sc;
    exchange(key1, 77, key2, 77, &ha, &hc, &sa, &sc);
    cr_assert_eq(sa, TUTTI_ERR_AUTH);
    cr_assert_eq(sc, TUTTI_ERR_AUTH, "the refused connector is told that it failed to prove");
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_ERR_AUTH, "failure is sticky");
}

/* Play the acceptor by hand, answering PROVE with a MAC made with `key`: the connector's status. */
static tutti_status_t hand_made_acceptor(const uint8_t *key)
{
    int a, c;
    struct tutti_hs hc;
    uint8_t hello[24], prove[96], mac[32], comm[8] = {77};
    pair(&a, &c);
    tutti__hs_init_connect(&hc, c, key1, 77, payload, sizeof(payload), soon());
    memcpy(hello, "TUTI\x01\0\0\0", 8); /* magic and version, little-endian */
    memset(hello + 8, 0x42, 16);
    write_all(a, hello, sizeof(hello));
    cr_assert_eq(tutti__hs_progress(&hc), TUTTI_IN_PROGRESS);
    read_exact(a, prove, sizeof(prove));
    const void *parts[] = {"tutti-a", prove + 16, hello + 8, comm, prove + 32};
    const size_t lens[] = {7, 16, 16, 8, 32};
    tutti__hmac(key, parts, lens, 5, mac);
    write_all(a, mac, sizeof(mac));
    tutti_status_t st = finish(&hc);
    close(a);
    close(c);
    return st;
}

Test(handshake, wrong_key_fails_auth_at_connector, .timeout = 10)
{
    cr_assert_eq(hand_made_acceptor(key2), TUTTI_ERR_AUTH);
    /* The same hand-made answer with the right key passes: the key is what failed. */
    cr_assert_eq(hand_made_acceptor(key1), TUTTI_OK);
}

Test(handshake, wrong_comm_id_fails_auth, .timeout = 10)
{
    struct tutti_hs ha, hc;
    tutti_status_t sa, sc;
    exchange(key1, 77, key1, 78, &ha, &hc, &sa, &sc);
    cr_assert_eq(sa, TUTTI_ERR_AUTH);
    cr_assert_lt(sc, 0);
}

Test(handshake, garbage_fails_auth_without_reading_past_message, .timeout = 10)
{
    int a, raw;
    struct tutti_hs ha;
    uint8_t junk[96 + 5], hello[24], rest[16];
    pair(&a, &raw);
    memset(junk, 'x', 96);
    memcpy(junk + 96, "TAIL!", 5);
    tutti__hs_init_accept(&ha, a, key1, 77, soon());
    write_all(raw, junk, sizeof(junk));
    tutti_status_t st = finish(&ha);
    cr_assert_eq(st, TUTTI_ERR_AUTH);
    read_exact(raw, hello, sizeof(hello)); /* the acceptor's HELLO */
    read_exact(a, rest, 5);                /* exactly the 5 bytes after the message are left */
    cr_assert_eq(memcmp(rest, "TAIL!", 5), 0);
    int err = 0;
    cr_assert_eq(tutti__sock_recv(a, rest, sizeof(rest), &err), 0, "nothing more is there");
}

Test(handshake, garbage_hello_fails_auth_at_connector, .timeout = 10)
{
    int raw, c;
    struct tutti_hs hc;
    uint8_t junk[24 + 3], rest[3];
    pair(&raw, &c);
    memset(junk, 0xee, sizeof(junk));
    tutti__hs_init_connect(&hc, c, key1, 77, payload, sizeof(payload), soon());
    write_all(raw, junk, sizeof(junk));
    tutti_status_t st = finish(&hc);
    cr_assert_eq(st, TUTTI_ERR_AUTH);
    read_exact(c, rest, 3);
    cr_assert_eq(rest[0], 0xee);
}

Test(handshake, peer_closing_mid_handshake_is_remote, .timeout = 10)
{
    int a, raw1, raw2, c;
    struct tutti_hs ha, hc;
    pair(&a, &raw1);
    pair(&raw2, &c);
    tutti__hs_init_accept(&ha, a, key1, 77, soon());
    tutti__hs_init_connect(&hc, c, key1, 77, payload, sizeof(payload), soon());
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_IN_PROGRESS); /* HELLO sent */
    write_all(raw1, "TUTI", 4);                               /* a PROVE that stops short */
    write_all(raw2, "TUTI\x01\0\0\0", 8);                     /* a HELLO that stops short */
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_IN_PROGRESS);
    cr_assert_eq(tutti__hs_progress(&hc), TUTTI_IN_PROGRESS);
    close(raw1);
    close(raw2);
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_ERR_REMOTE);
    cr_assert_eq(tutti__hs_progress(&hc), TUTTI_ERR_REMOTE);
}

Test(handshake, silent_peer_times_out_at_deadline, .timeout = 10)
{
    int a, raw1, raw2, c;
    struct tutti_hs ha, hc;
    pair(&a, &raw1);
    pair(&raw2, &c);
    int64_t t0 = tutti__now_ns(), deadline = t0 + 150 * 1000000LL;
    tutti__hs_init_accept(&ha, a, key1, 77, deadline);
    tutti__hs_init_connect(&hc, c, key1, 77, payload, sizeof(payload), deadline);
    tutti_status_t sa = TUTTI_IN_PROGRESS, sc = TUTTI_IN_PROGRESS;
    while ((sa == TUTTI_IN_PROGRESS || sc == TUTTI_IN_PROGRESS) && tutti__now_ns() < t0 + SEC) {
        sa = sa == TUTTI_IN_PROGRESS ? tutti__hs_progress(&ha) : sa;
        sc = sc == TUTTI_IN_PROGRESS ? tutti__hs_progress(&hc) : sc;
        usleep(1000);
    }
    int64_t elapsed = tutti__now_ns() - t0;
    cr_assert_eq(sa, TUTTI_ERR_TIMEOUT);
    cr_assert_eq(sc, TUTTI_ERR_TIMEOUT);
    cr_assert_geq(elapsed, 150 * 1000000LL);
    cr_assert_lt(elapsed, 500 * 1000000LL, "took %lld ns", (long long)elapsed);
}

/* Copy one message of n bytes from one fd to another. */
static void relay(int from, int to, uint8_t *copy, size_t n)
{
    read_exact(from, copy, n);
    write_all(to, copy, n);
}

Test(handshake, replayed_prove_fails, .timeout = 10)
{
    int a, ta, tc, c;
    struct tutti_hs ha, hc;
    uint8_t msg[96], prove[96];
    /* Exchange 1, through a relay that records the connector's PROVE. */
    pair(&a, &ta);
    pair(&tc, &c);
    tutti__hs_init_accept(&ha, a, key1, 77, soon());
    tutti__hs_init_connect(&hc, c, key1, 77, payload, sizeof(payload), soon());
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_IN_PROGRESS);
    relay(ta, tc, msg, 24);
    cr_assert_eq(tutti__hs_progress(&hc), TUTTI_IN_PROGRESS);
    relay(tc, ta, prove, 96);
    cr_assert_eq(tutti__hs_progress(&ha), TUTTI_OK);
    relay(ta, tc, msg, 32);
    cr_assert_eq(tutti__hs_progress(&hc), TUTTI_OK);

    /* Exchange 2: a new acceptor, answered with the recorded PROVE. */
    int a2, raw;
    struct tutti_hs ha2;
    pair(&a2, &raw);
    tutti__hs_init_accept(&ha2, a2, key1, 77, soon());
    cr_assert_eq(tutti__hs_progress(&ha2), TUTTI_IN_PROGRESS);
    read_exact(raw, msg, 24);
    cr_assert_neq(memcmp(msg + 8, ha.nonce_a, 16), 0, "each HELLO has a fresh nonce");
    write_all(raw, prove, sizeof(prove));
    tutti_status_t st = finish(&ha2);
    cr_assert_eq(st, TUTTI_ERR_AUTH);
}

Test(handshake, hmac_of_parts_equals_hmac_of_concatenation, .timeout = 10)
{
    uint8_t m1[32], m2[32], m3[32];
    const void *split[] = {"abc", "defgh"};
    const size_t split_lens[] = {3, 5};
    const void *whole[] = {"abcdefgh"};
    const size_t whole_len[] = {8};
    tutti__hmac(key1, split, split_lens, 2, m1);
    tutti__hmac(key1, whole, whole_len, 1, m2);
    tutti__hmac(key2, whole, whole_len, 1, m3);
    cr_assert_eq(memcmp(m1, m2, 32), 0);
    cr_assert_neq(memcmp(m2, m3, 32), 0, "the key matters");
}
