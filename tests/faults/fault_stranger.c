/*
 * fault_stranger.c - strangers at one listening port of a tutti job (fault_matrix.sh):
 *   garbage        600 random bytes, then wait: the port must close the connection;
 *   silent         connect and say nothing (half-open), held for --hold seconds;
 *   wrong secret   a complete handshake with another secret: must be refused;
 *   wrong version  (with --secret and --comm-id) a handshake with the job's own secret and
 *                  comm id but protocol version 99: must be refused;
 *   flood          (with --flood N) N more silent connections, opened at once and held like the
 *                  silent one: the port must keep serving its job (it evicts them).
 * The handshake messages are built here from handshake.h's description, with the library's
 * HMAC, so that a field can be wrong on purpose. Prints one line, "STRANGER addr garbage
 * closed wrong_secret refused wrong_version refused flood N/M", and exits 0 when every stranger
 * was shut out, 1 when one was let in or kept, 2 on usage or connection errors. --listen-only: the
 * port is one nobody reads until it is needed (the shrink listener): strangers there are never
 * answered, and only an accepted handshake counts as let in.
 */
#include "net/handshake.h"
#include "net/sock.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000000LL

/* A connection to `to` (a plain blocking connect, at most 5 s: SO_SNDTIMEO), or -1. */
static int dial(const union tutti_sockaddr *to)
{
    int fd = socket(to->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {5, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        connect(fd, &to->sa, tutti__sockaddr_len(to)) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd; /* blocking; tutti__sock_recv/send use MSG_DONTWAIT */
}

/* Read exactly len bytes within secs; returns len, or fewer at EOF/error/deadline. */
static size_t read_full(int fd, uint8_t *buf, size_t len, int secs)
{
    size_t got = 0;
    int64_t end = tutti__now_ns() + secs * SEC;
    while (got < len && tutti__now_ns() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        int err = 0;
        ssize_t n = tutti__sock_recv(fd, buf + got, len - got, &err);
        if (n < 0) {
            break;
        }
        got += (size_t)n;
    }
    return got;
}

/* Has the other end closed fd within secs (anything it sends first is skipped)? */
static int closed_by_peer(int fd, int secs)
{
    uint8_t sink[256];
    int64_t end = tutti__now_ns() + secs * SEC;
    while (tutti__now_ns() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        int err = 0;
        if (poll(&p, 1, 50) > 0 && tutti__sock_recv(fd, sink, sizeof(sink), &err) < 0) {
            return 1;
        }
    }
    return 0;
}

static void le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/*
 * The connector's side by hand: HELLO in, PROVE out (magic, `version`, comm id, nonce, zero
 * payload, MAC over "tutti-c" | nonce_a | nonce_c | comm id | payload), then the acceptor's
 * 32-byte answer. Returns 1 when the acceptor answered with the right MAC (let in), 0 when it
 * refused (zeros or a hang-up), -1 when the port did not speak the handshake.
 */
static int handshake(const union tutti_sockaddr *to, const uint8_t key[TUTTI_SECRET_BYTES],
                     uint64_t comm_id, uint32_t version)
{
    int fd = dial(to);
    uint8_t hello[24], prove[96] = {0}, ans[32], want[32], comm[8], payload[32] = {0};
    if (fd < 0 || read_full(fd, hello, sizeof(hello), 10) != sizeof(hello)) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    memcpy(prove, hello, 4); /* the magic */
    for (int i = 0; i < 4; i++) {
        prove[4 + i] = (uint8_t)(version >> (8 * i));
    }
    le64(comm, comm_id);
    memcpy(prove + 8, comm, 8);
    tutti__random_bytes(prove + 16, 16);
    const void *parts[] = {"tutti-c", hello + 8, prove + 16, comm, payload};
    const size_t lens[] = {7, 16, 16, 8, 32};
    tutti__hmac(key, parts, lens, 5, prove + 64);
    const void *aparts[] = {"tutti-a", prove + 16, hello + 8, comm, payload};
    tutti__hmac(key, aparts, lens, 5, want);
    int err = 0;
    int let_in = tutti__sock_send(fd, prove, sizeof(prove), &err) == (ssize_t)sizeof(prove) &&
                 read_full(fd, ans, sizeof(ans), 10) == sizeof(ans) &&
                 memcmp(ans, want, sizeof(want)) == 0;
    close(fd);
    return let_in;
}

static int hex_to_bytes(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            return -1;
        }
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* Open n silent connections to `to` at once (non-blocking) into fds; how many got through. */
static int flood(const union tutti_sockaddr *to, int *fds, int n)
{
    int started = 0, connected = 0;
    for (int i = 0; i < n; i++) {
        fds[i] = -1;
        started += tutti__sock_connect_start(to, &fds[i]) == TUTTI_OK;
    }
    for (int64_t end = tutti__now_ns() + 5 * SEC; started > 0 && tutti__now_ns() < end;) {
        connected = 0;
        for (int i = 0; i < n; i++) {
            int err = 0;
            connected += fds[i] >= 0 && tutti__sock_connect_check(fds[i], &err) == TUTTI_OK;
        }
        if (connected == started) {
            break;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return connected;
}

int main(int argc, char **argv)
{
    int listen_only = 0;
    const char *addr = NULL, *secret_hex = NULL;
    unsigned long long comm_id = 0;
    int hold = 0, nflood = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--secret") == 0 && i + 1 < argc) {
            secret_hex = argv[++i];
        } else if (strcmp(argv[i], "--comm-id") == 0 && i + 1 < argc) {
            comm_id = strtoull(argv[++i], NULL, 16);
        } else if (strcmp(argv[i], "--listen-only") == 0) {
            listen_only = 1;
        } else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
            hold = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--flood") == 0 && i + 1 < argc) {
            nflood = atoi(argv[++i]);
        } else {
            addr = argv[i];
        }
    }
    union tutti_sockaddr to;
    uint8_t secret[TUTTI_SECRET_BYTES], other[TUTTI_SECRET_BYTES];
    if (addr == NULL || tutti__sockaddr_parse(addr, -1, AF_UNSPEC, &to) != TUTTI_OK ||
        (secret_hex != NULL && hex_to_bytes(secret_hex, secret, sizeof(secret)) != 0)) {
        fprintf(stderr, "usage: fault_stranger HOST:PORT [--secret HEX --comm-id HEX] "
                        "[--hold SECONDS] [--flood N]\n");
        return 2;
    }
    int garbage = dial(&to), silent = dial(&to);
    if (garbage < 0 || silent < 0) {
        fprintf(stderr, "fault_stranger: cannot connect to %s: %s\n", addr, strerror(errno));
        return 2;
    }
    uint8_t junk[600];
    tutti__random_bytes(junk, sizeof(junk));
    int err = 0;
    (void)tutti__sock_send(garbage, junk, sizeof(junk), &err);
    tutti__random_bytes(other, sizeof(other));
    int wrong_secret = handshake(&to, other, comm_id, TUTTI_HS_VERSION);
    int wrong_version = secret_hex != NULL ? handshake(&to, secret, comm_id, 99) : -2;
    static int flood_fds[4096];
    nflood = nflood < 0 ? 0 : nflood > 4096 ? 4096 : nflood;
    int flooded = flood(&to, flood_fds, nflood);
    int garbage_closed = closed_by_peer(garbage, 15);
    printf("STRANGER %s garbage %s wrong_secret %s wrong_version %s flood %d/%d\n", addr,
           garbage_closed ? "closed" : "KEPT",
           wrong_secret == 0  ? "refused"
           : wrong_secret > 0 ? "ACCEPTED"
                              : "NO-HANDSHAKE",
           wrong_version == 0    ? "refused"
           : wrong_version > 0   ? "ACCEPTED"
           : wrong_version == -2 ? "skipped"
                                 : "NO-HANDSHAKE",
           flooded, nflood);
    fflush(stdout);
    sleep((unsigned)hold); /* the silent connections stay open meanwhile */
    close(garbage);
    close(silent);
    for (int i = 0; i < nflood; i++) {
        if (flood_fds[i] >= 0) {
            close(flood_fds[i]);
        }
    }
    int ok = garbage_closed && wrong_secret == 0 && (wrong_version == 0 || wrong_version == -2);
    if (listen_only) {
        ok = wrong_secret <= 0 && wrong_version <= 0; /* never answered is shut out too */
    }
    return ok ? 0 : 1;
}
