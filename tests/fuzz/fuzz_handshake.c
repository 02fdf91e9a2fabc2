/*
 * fuzz_handshake.c - the authentication handshake (src/net/handshake.c) against hostile bytes,
 * over real non-blocking socket pairs. The first byte picks the scene:
 *   0: a stranger sends the rest to an acceptor;
 *   1: a stranger answers a connector with the rest;
 *   2: an honest acceptor and connector talk through a relay that XORs the bytes in flight
 *      with the rest of the input (byte 1: cut the stream after that many bytes - 1, 0: never;
 *      byte 2 bit 0: the connector holds another secret).
 * Invariants: without the secret nobody gets in, and the exact error is predictable from the
 * byte count (a stranger gets TUTTI_ERR_AUTH once it sent a whole message, TUTTI_ERR_REMOTE
 * before); the handshake never reads past its own messages; through the relay both sides
 * succeed exactly when nothing was altered, cut or keyed differently, and the acceptor then
 * holds the connector's payload.
 */
#include "fuzz.h"
#include "net/handshake.h"

#include <sys/socket.h>
#include <unistd.h>

#define HELLO_LEN  24
#define PROVE_LEN  96
#define ACCEPT_LEN 32
#define TOTAL_LEN  (HELLO_LEN + PROVE_LEN + ACCEPT_LEN)

static const uint8_t key[TUTTI_SECRET_BYTES] = "fuzz-secret-key";
static const uint64_t comm_id = 0x1122334455667788ull;

static void make_pair(int sv[2])
{
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0, "socketpair");
}

/* Run one side alone until it finishes (the peer's bytes are all queued, then EOF). */
static tutti_status_t run_alone(struct tutti_hs *hs)
{
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int i = 0; i < 64 && st == TUTTI_IN_PROGRESS; i++) {
        st = tutti__hs_progress(hs);
    }
    FUZZ_CHECK(st != TUTTI_IN_PROGRESS, "handshake still in progress after its peer's EOF");
    return st;
}

/* Bytes left unread in fd (the handshake must not have taken them). */
static size_t unread(int fd)
{
    uint8_t buf[4096];
    size_t total = 0;
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
        total += (size_t)n;
    }
    return total;
}

static void stranger_to_acceptor(const uint8_t *p, size_t n)
{
    int sv[2];
    struct tutti_hs hs;
    make_pair(sv);
    FUZZ_CHECK(n == 0 || send(sv[1], p, n, 0) == (ssize_t)n, "queueing %zu bytes", n);
    shutdown(sv[1], SHUT_WR);
    tutti__hs_init_accept(&hs, sv[0], key, comm_id, 0);
    tutti_status_t st = run_alone(&hs);
    FUZZ_CHECK(st == (n >= PROVE_LEN ? TUTTI_ERR_AUTH : TUTTI_ERR_REMOTE),
               "%zu stranger bytes gave %s", n, tutti_status_name(st));
    size_t left = unread(sv[0]);
    FUZZ_CHECK(left == (n >= PROVE_LEN ? n - PROVE_LEN : 0), "%zu of %zu bytes left unread", left,
               n);
    close(sv[0]);
    close(sv[1]);
}

static void stranger_to_connector(const uint8_t *p, size_t n)
{
    int sv[2];
    struct tutti_hs hs;
    const uint8_t payload[8] = "payload";
    make_pair(sv);
    FUZZ_CHECK(n == 0 || send(sv[1], p, n, 0) == (ssize_t)n, "queueing %zu bytes", n);
    shutdown(sv[1], SHUT_WR);
    tutti__hs_init_connect(&hs, sv[0], key, comm_id, payload, sizeof(payload), 0);
    tutti_status_t st = run_alone(&hs);
    static const uint8_t head[8] = {'T', 'U', 'T', 'I', 1, 0, 0, 0};
    int head_ok = n >= 8 && memcmp(p, head, 8) == 0;
    tutti_status_t want = n < HELLO_LEN                ? TUTTI_ERR_REMOTE
                          : !head_ok                   ? TUTTI_ERR_AUTH
                          : n < HELLO_LEN + ACCEPT_LEN ? TUTTI_ERR_REMOTE
                                                       : TUTTI_ERR_AUTH;
    FUZZ_CHECK(st == want, "%zu stranger bytes gave %s, expected %s", n, tutti_status_name(st),
               tutti_status_name(want));
    size_t taken = want == TUTTI_ERR_AUTH ? (head_ok ? HELLO_LEN + ACCEPT_LEN : HELLO_LEN) : n;
    size_t left = unread(sv[0]);
    FUZZ_CHECK(left == n - taken, "%zu of %zu bytes left unread", left, n);
    close(sv[0]);
    close(sv[1]);
}

struct relay {
    const uint8_t *mask;
    size_t nmask, cut; /* cut: bytes to pass before the relay stops (SIZE_MAX: never) */
    size_t moved;      /* bytes passed in both directions together, in protocol order */
    int altered;
};

/* Pass what is waiting in from to `to`, XORed with the mask; returns the bytes passed. */
static size_t pass(struct relay *r, int from, int to)
{
    uint8_t buf[256];
    size_t room = r->cut - r->moved < sizeof(buf) ? r->cut - r->moved : sizeof(buf);
    ssize_t n = room > 0 ? recv(from, buf, room, MSG_DONTWAIT) : 0;
    if (n <= 0) {
        return 0;
    }
    for (ssize_t i = 0; i < n; i++) {
        uint8_t m = r->moved + (size_t)i < r->nmask ? r->mask[r->moved + (size_t)i] : 0;
        r->altered |= m != 0;
        buf[i] ^= m;
    }
    FUZZ_CHECK(send(to, buf, (size_t)n, MSG_NOSIGNAL) == n, "relay send");
    r->moved += (size_t)n;
    return (size_t)n;
}

static void through_relay(const uint8_t *p, size_t n)
{
    int a[2], c[2];
    struct tutti_hs ha, hc;
    uint8_t payload[TUTTI_HS_PAYLOAD];
    uint8_t other[TUTTI_SECRET_BYTES];
    for (size_t i = 0; i < sizeof(payload); i++) {
        payload[i] = (uint8_t)(i * 7 + 1);
    }
    struct relay r = {.mask = n > 2 ? p + 2 : NULL, .nmask = n > 2 ? n - 2 : 0, .cut = SIZE_MAX};
    if (n > 0 && p[0] != 0) {
        r.cut = (size_t)p[0] - 1;
    }
    int wrong_key = n > 1 && (p[1] & 1);
    memcpy(other, key, sizeof(other));
    other[0] ^= 1;
    make_pair(a);
    make_pair(c);
    tutti__hs_init_accept(&ha, a[0], key, comm_id, 0);
    tutti__hs_init_connect(&hc, c[0], wrong_key ? other : key, comm_id, payload, sizeof(payload),
                           0);
    tutti_status_t sa = TUTTI_IN_PROGRESS, sc = TUTTI_IN_PROGRESS;
    int a_shut = 0, c_shut = 0;
    for (int round = 0; round < 64 && (sa == TUTTI_IN_PROGRESS || sc == TUTTI_IN_PROGRESS);
         round++) {
        sa = sa == TUTTI_IN_PROGRESS ? tutti__hs_progress(&ha) : sa;
        sc = sc == TUTTI_IN_PROGRESS ? tutti__hs_progress(&hc) : sc;
        size_t moved = pass(&r, a[1], c[1]) + pass(&r, c[1], a[1]);
        /* Nothing moves: the relay cut the stream, or one side gave up; EOF to the other. */
        if (moved == 0 && round > 0) {
            if (!c_shut && (sa != TUTTI_IN_PROGRESS || r.moved == r.cut)) {
                shutdown(c[1], SHUT_WR);
                c_shut = 1;
            }
            if (!a_shut && (sc != TUTTI_IN_PROGRESS || r.moved == r.cut)) {
                shutdown(a[1], SHUT_WR);
                a_shut = 1;
            }
        }
    }
    FUZZ_CHECK(sa != TUTTI_IN_PROGRESS && sc != TUTTI_IN_PROGRESS,
               "handshake stuck (acceptor %s, connector %s)", tutti_status_name(sa),
               tutti_status_name(sc));
    int clean = !r.altered && !wrong_key && r.cut >= TOTAL_LEN;
    FUZZ_CHECK((sa == TUTTI_OK && sc == TUTTI_OK) == clean,
               "acceptor %s, connector %s; altered %d, other key %d, cut %zu",
               tutti_status_name(sa), tutti_status_name(sc), r.altered, wrong_key, r.cut);
    if (sa == TUTTI_OK) {
        FUZZ_CHECK(!wrong_key, "the acceptor let in a connector with another secret");
        FUZZ_CHECK(memcmp(ha.payload, payload, sizeof(payload)) == 0, "payload altered");
    }
    FUZZ_CHECK(sc != TUTTI_OK || sa == TUTTI_OK, "the connector believes a refusing acceptor");
    close(a[0]);
    close(a[1]);
    close(c[0]);
    close(c[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    size = size > 4096 ? 4096 : size; /* a socket pair's buffer holds it without blocking */
    switch (data[0] % 3) {
    case 0:
        stranger_to_acceptor(data + 1, size - 1);
        break;
    case 1:
        stranger_to_connector(data + 1, size - 1);
        break;
    default:
        through_relay(data + 1, size - 1);
        break;
    }
    return 0;
}
