/*
 * test_sock.c - addresses (parse, print, wire form), TUTTI_PORT_RANGE, the choice of the local
 * interface and the non-blocking socket wrappers, over loopback.
 */
#include "net/sock.h"
#include "tutti.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void parse_ok(const char *s, int def, union tutti_sockaddr *a)
{
    cr_assert_eq(tutti__sockaddr_parse(s, def, AF_UNSPEC, a), TUTTI_OK, "parse '%s': %s", s,
                 tutti_last_error(NULL));
}

/* Parse s, print it, and expect `printed`. */
static void round_trip(const char *s, int def, const char *printed)
{
    union tutti_sockaddr a;
    char buf[96];
    parse_ok(s, def, &a);
    cr_assert_str_eq(tutti__sockaddr_str(&a, buf, sizeof(buf)), printed);
    /* What we print parses back to the same address. */
    union tutti_sockaddr b;
    parse_ok(buf, -1, &b);
    cr_assert_eq(tutti__sockaddr_len(&a), tutti__sockaddr_len(&b));
    cr_assert_eq(memcmp(&a, &b, tutti__sockaddr_len(&a)), 0, "%s reparsed differently", buf);
}

Test(sock, ipv4_host_port_round_trips, .timeout = 10)
{
    round_trip("10.1.2.3:5678", -1, "10.1.2.3:5678");
    round_trip("127.0.0.1", 29500, "127.0.0.1:29500");
    round_trip("0.0.0.0:0", -1, "0.0.0.0:0");
}

Test(sock, ipv6_forms_round_trip, .timeout = 10)
{
    round_trip("[::1]:80", -1, "[::1]:80");
    round_trip("::1", 4242, "[::1]:4242"); /* bare v6: every ':' belongs to the address */
    round_trip("[2001:db8::7]", 9, "[2001:db8::7]:9");
    round_trip("[fd00::2]:65535", -1, "[fd00::2]:65535");
}

Test(sock, ipv6_link_local_keeps_scope_id, .timeout = 10)
{
    unsigned lo = if_nametoindex("lo");
    cr_assert_neq(lo, 0u);
    char expect[64];
    snprintf(expect, sizeof(expect), "[fe80::1%%%u]:7", lo);
    round_trip("[fe80::1%lo]:7", -1, expect);
    union tutti_sockaddr a;
    parse_ok(expect, -1, &a);
    cr_assert_eq(a.in6.sin6_scope_id, lo);
}

Test(sock, missing_or_invalid_port_is_invalid_arg, .timeout = 10)
{
    union tutti_sockaddr a;
    const char *bad[] = {"1.2.3.4:", "1.2.3.4:70000", "1.2.3.4:12ab",  "1.2.3.4:-1",
                         "[::1]:",   "[::1]x",        "[::1",          ":80",
                         "",         "[]:80",         "1.2.3.4:123456"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&a, 0x5a, sizeof(a));
        cr_assert_eq(tutti__sockaddr_parse(bad[i], 80, AF_UNSPEC, &a), TUTTI_ERR_INVALID_ARG,
                     "'%s' was accepted", bad[i]);
    }
    cr_assert_eq(tutti__sockaddr_parse("1.2.3.4", -1, AF_UNSPEC, &a), TUTTI_ERR_INVALID_ARG);
    cr_assert(strstr(tutti_last_error(NULL), "no port") != NULL, "%s", tutti_last_error(NULL));
    cr_assert_eq(tutti__sockaddr_parse("1.2.3.4:99999", -1, AF_UNSPEC, &a), TUTTI_ERR_INVALID_ARG);
    cr_assert(strstr(tutti_last_error(NULL), "99999") != NULL, "%s", tutti_last_error(NULL));
}

Test(sock, family_restricts_resolution, .timeout = 10)
{
    union tutti_sockaddr a;
    cr_assert_eq(tutti__sockaddr_parse("::1", 1, AF_INET, &a), TUTTI_ERR_INVALID_ARG);
    cr_assert_eq(tutti__sockaddr_parse("127.0.0.1:1", -1, AF_INET, &a), TUTTI_OK);
    cr_assert_eq(a.sa.sa_family, AF_INET);
}

Test(sock, wire_form_round_trips, .timeout = 10)
{
    const char *addrs[] = {"192.0.2.7:1234", "[2001:db8::1]:80", "[fe80::9%lo]:65000"};
    for (size_t i = 0; i < 3; i++) {
        union tutti_sockaddr a, b;
        struct tutti_wire_addr w;
        char s1[96], s2[96];
        parse_ok(addrs[i], -1, &a);
        tutti__wire_addr_encode(&a, &w);
        cr_assert_eq(w.family, a.sa.sa_family == AF_INET ? 4 : 6);
        cr_assert_eq(tutti__wire_addr_decode(&w, &b), TUTTI_OK);
        cr_assert_str_eq(tutti__sockaddr_str(&b, s2, sizeof(s2)),
                         tutti__sockaddr_str(&a, s1, sizeof(s1)));
    }
    /* The port travels in network byte order. */
    union tutti_sockaddr a;
    struct tutti_wire_addr w;
    parse_ok("1.2.3.4:258", -1, &a);
    tutti__wire_addr_encode(&a, &w);
    cr_assert_eq(((const uint8_t *)&w.port)[0], 1);
    cr_assert_eq(((const uint8_t *)&w.port)[1], 2);
}

Test(sock, wire_decode_rejects_unknown_family, .timeout = 10)
{
    struct tutti_wire_addr w;
    union tutti_sockaddr a;
    memset(&w, 0, sizeof(w));
    w.family = 5;
    cr_assert_eq(tutti__wire_addr_decode(&w, &a), TUTTI_ERR_INVALID_ARG);
    w.family = 0;
    cr_assert_eq(tutti__wire_addr_decode(&w, &a), TUTTI_ERR_INVALID_ARG);
}

static union tutti_sockaddr loopback(void)
{
    union tutti_sockaddr a;
    parse_ok("127.0.0.1:0", -1, &a);
    return a;
}

static int port_of(const union tutti_sockaddr *a)
{
    return ntohs(a->sa.sa_family == AF_INET ? a->in.sin_port : a->in6.sin6_port);
}

/* A block of ports unlikely to be used by parallel test processes. */
static int range_base(void)
{
    return 42000 + (int)(getpid() % 2000) * 8;
}

Test(sock, listens_inside_port_range, .timeout = 10)
{
    char range[32];
    int lo = range_base();
    snprintf(range, sizeof(range), "%d-%d", lo, lo + 7);
    setenv("TUTTI_PORT_RANGE", range, 1);
    union tutti_sockaddr l = loopback(), b1, b2;
    int fd1, fd2;
    cr_assert_eq(tutti__sock_listen(&l, &fd1, &b1), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(tutti__sock_listen(&l, &fd2, &b2), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert(port_of(&b1) >= lo && port_of(&b1) <= lo + 7, "port %d", port_of(&b1));
    cr_assert(port_of(&b2) >= lo && port_of(&b2) <= lo + 7, "port %d", port_of(&b2));
    cr_assert_neq(port_of(&b1), port_of(&b2));
    close(fd1);
    close(fd2);
}

Test(sock, explicit_port_ignores_port_range, .timeout = 10)
{
    char range[32];
    int lo = range_base();
    snprintf(range, sizeof(range), "%d-%d", lo, lo + 1);
    setenv("TUTTI_PORT_RANGE", range, 1);
    union tutti_sockaddr l = loopback(), b;
    int fd;
    l.in.sin_port = htons((uint16_t)(lo + 3));
    cr_assert_eq(tutti__sock_listen(&l, &fd, &b), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(port_of(&b), lo + 3);
    close(fd);
}

Test(sock, malformed_port_range_is_error_naming_it, .timeout = 10)
{
    setenv("TUTTI_PORT_RANGE", "30000-", 1);
    union tutti_sockaddr l = loopback(), b;
    int fd = -1;
    cr_assert_eq(tutti__sock_listen(&l, &fd, &b), TUTTI_ERR_INVALID_ARG);
    cr_assert(strstr(tutti_last_error(NULL), "TUTTI_PORT_RANGE") != NULL);
    cr_assert(strstr(tutti_last_error(NULL), "'30000-'") != NULL, "%s", tutti_last_error(NULL));
    cr_assert_eq(fd, -1);
}

Test(sock, reversed_port_range_is_error, .timeout = 10)
{
    setenv("TUTTI_PORT_RANGE", "40010-40000", 1);
    union tutti_sockaddr l = loopback(), b;
    int fd;
    cr_assert_eq(tutti__sock_listen(&l, &fd, &b), TUTTI_ERR_INVALID_ARG);
    cr_assert(strstr(tutti_last_error(NULL), "40010-40000") != NULL);
}

Test(sock, exhausted_port_range_is_error_naming_it, .timeout = 10)
{
    char range[32];
    int p = range_base() + 5;
    snprintf(range, sizeof(range), "%d-%d", p, p);
    setenv("TUTTI_PORT_RANGE", range, 1);
    union tutti_sockaddr l = loopback(), b;
    int fd1, fd2;
    cr_assert_eq(tutti__sock_listen(&l, &fd1, &b), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(port_of(&b), p);
    cr_assert_eq(tutti__sock_listen(&l, &fd2, &b), TUTTI_ERR_SYSTEM);
    cr_assert(strstr(tutti_last_error(NULL), range) != NULL, "%s", tutti_last_error(NULL));
    cr_assert(strstr(tutti_last_error(NULL), "no free port") != NULL);
    close(fd1);
}

/* Is any interface other than loopback up with an address of `family`? */
static int have_non_loopback(int family)
{
    struct ifaddrs *ifs, *i;
    int found = 0;
    cr_assert_eq(getifaddrs(&ifs), 0);
    for (i = ifs; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == family &&
            (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_LOOPBACK) == 0) {
            found = 1;
        }
    }
    freeifaddrs(ifs);
    return found;
}

static int is_loopback(const union tutti_sockaddr *a)
{
    if (a->sa.sa_family == AF_INET) {
        return (ntohl(a->in.sin_addr.s_addr) >> 24) == 127;
    }
    return IN6_IS_ADDR_LOOPBACK(&a->in6.sin6_addr);
}

Test(sock, local_addr_prefers_non_loopback, .timeout = 10)
{
    setenv("TUTTI_SOCKET_FAMILY", "ipv4", 1);
    union tutti_sockaddr a;
    cr_assert_eq(tutti__sock_local_addr(NULL, &a), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(a.sa.sa_family, AF_INET);
    cr_assert_eq(port_of(&a), 0);
    cr_assert_eq(is_loopback(&a), !have_non_loopback(AF_INET));
}

Test(sock, ifname_lo_gives_loopback, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    union tutti_sockaddr a, toward;
    char s[96];
    cr_assert_eq(tutti__sock_local_addr(NULL, &a), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert(is_loopback(&a), "%s", tutti__sockaddr_str(&a, s, sizeof(s)));
    cr_assert_eq(a.sa.sa_family, AF_INET); /* IPv4 first within an interface */
    /* The interface wins over the route toward a peer. */
    parse_ok("192.0.2.99:1", -1, &toward);
    cr_assert_eq(tutti__sock_local_addr(&toward, &a), TUTTI_OK);
    cr_assert(is_loopback(&a), "%s", tutti__sockaddr_str(&a, s, sizeof(s)));
}

Test(sock, ifname_with_ipv6_family_gives_v6_loopback, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    setenv("TUTTI_SOCKET_FAMILY", "ipv6", 1);
    union tutti_sockaddr a;
    tutti_status_t st = tutti__sock_local_addr(NULL, &a);
    if (st != TUTTI_OK && strstr(tutti_last_error(NULL), "lo") != NULL) {
        cr_skip_test("loopback has no IPv6 address here");
    }
    cr_assert_eq(st, TUTTI_OK);
    cr_assert_eq(a.sa.sa_family, AF_INET6);
    cr_assert(IN6_IS_ADDR_LOOPBACK(&a.in6.sin6_addr));
}

/* The device a socket is tied to (SO_BINDTODEVICE), "" when none. */
static void bound_device(int fd, char *dev, socklen_t len)
{
    memset(dev, 0, len);
    cr_assert_eq(getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, &len), 0, "getsockopt: %s",
                 strerror(errno));
}

/* Listen on `addr` port 0 and return the device the listener is tied to in dev. */
static void listen_and_get_device(const char *addr, char *dev, socklen_t len)
{
    union tutti_sockaddr a, bound;
    int lfd = -1;
    parse_ok(addr, 0, &a);
    cr_assert_eq(tutti__sock_listen(&a, &lfd, &bound), TUTTI_OK, "%s", tutti_last_error(NULL));
    bound_device(lfd, dev, len);
    close(lfd);
}

Test(sock, listener_on_an_address_of_ifname_is_tied_to_the_device, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    char dev[IFNAMSIZ];
    listen_and_get_device("127.0.0.1", dev, sizeof(dev));
    cr_assert_str_eq(dev, "lo", "SO_BINDTODEVICE is '%s'", dev);
}

Test(sock, listener_off_the_addresses_of_ifname_is_not_tied, .timeout = 10)
{
    struct ifaddrs *ifs;
    char host[INET_ADDRSTRLEN] = "";
    cr_assert_eq(getifaddrs(&ifs), 0);
    for (struct ifaddrs *i = ifs; i != NULL && host[0] == '\0'; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_LOOPBACK) == 0) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, host, sizeof(host));
        }
    }
    freeifaddrs(ifs);
    if (host[0] == '\0') {
        cr_skip_test("no IPv4 interface but loopback");
    }
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    char dev[IFNAMSIZ];
    listen_and_get_device(host, dev, sizeof(dev));
    cr_assert_str_eq(dev, "", "a listener on %s is tied to '%s'", host, dev);
}

Test(sock, listener_without_ifname_is_not_tied, .timeout = 10)
{
    unsetenv("TUTTI_SOCKET_IFNAME");
    char dev[IFNAMSIZ];
    listen_and_get_device("127.0.0.1", dev, sizeof(dev));
    cr_assert_str_eq(dev, "", "SO_BINDTODEVICE is '%s'", dev);
}

Test(sock, unknown_ifname_is_error_listing_interfaces, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "nosuch9", 1);
    union tutti_sockaddr a;
    cr_assert_eq(tutti__sock_local_addr(NULL, &a), TUTTI_ERR_INVALID_ARG);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, "nosuch9") != NULL, "%s", msg);
    cr_assert(strstr(msg, "interfaces: ") != NULL && strstr(msg, "lo") != NULL, "%s", msg);
}

Test(sock, toward_loopback_uses_loopback, .timeout = 10)
{
    union tutti_sockaddr to, a;
    parse_ok("127.0.0.1:9", -1, &to);
    cr_assert_eq(tutti__sock_local_addr(&to, &a), TUTTI_OK);
    cr_assert(is_loopback(&a));
    cr_assert_eq(port_of(&a), 0);
}

/* Listen on loopback, connect to it and accept: a connected pair (client, server). */
static void loopback_pair(int *lfd_p, int *c_p, int *s_p)
{
    union tutti_sockaddr l = loopback(), bound, peer;
    int lfd, c, s = -1, err = 0;
    cr_assert_eq(tutti__sock_listen(&l, &lfd, &bound), TUTTI_OK);
    cr_assert_eq(tutti__sock_connect_start(&bound, &c), TUTTI_OK);
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int i = 0; i < 100000 && st == TUTTI_IN_PROGRESS; i++) {
        st = tutti__sock_accept(lfd, &s, &peer);
    }
    cr_assert_eq(st, TUTTI_OK);
    st = TUTTI_IN_PROGRESS;
    for (int i = 0; i < 100000 && st == TUTTI_IN_PROGRESS; i++) {
        st = tutti__sock_connect_check(c, &err);
    }
    cr_assert_eq(st, TUTTI_OK, "err %d", err);
    *lfd_p = lfd;
    *c_p = c;
    *s_p = s;
}

Test(sock, connect_accept_send_recv_and_eof, .timeout = 10)
{
    int lfd, c, s, err = 0;
    char buf[16];
    loopback_pair(&lfd, &c, &s);
    cr_assert_eq(tutti__sock_recv(s, buf, sizeof(buf), &err), 0); /* nothing yet: would block */
    cr_assert_eq(tutti__sock_send(c, "hello", 5, &err), 5);
    ssize_t n = 0;
    for (int i = 0; i < 100000 && n == 0; i++) {
        n = tutti__sock_recv(s, buf, sizeof(buf), &err);
    }
    cr_assert_eq(n, 5);
    cr_assert_eq(memcmp(buf, "hello", 5), 0);
    char name[96];
    cr_assert(strncmp(tutti__sock_peer_str(s, name, sizeof(name)), "127.0.0.1:", 10) == 0);
    close(c);
    n = 0;
    for (int i = 0; i < 100000 && n == 0; i++) {
        n = tutti__sock_recv(s, buf, sizeof(buf), &err);
    }
    cr_assert_eq(n, -1);
    cr_assert_eq(err, 0, "EOF has no errno");
    /* Writing to a closed peer is an error code, never SIGPIPE (which would kill the test). */
    n = 0;
    for (int i = 0; i < 100 && n >= 0; i++) {
        n = tutti__sock_send(s, buf, sizeof(buf), &err);
        usleep(1000);
    }
    cr_assert_eq(n, -1);
    cr_assert(err == EPIPE || err == ECONNRESET, "errno %d", err);
    close(s);
    close(lfd);
}

Test(sock, accept_with_nothing_pending_is_in_progress, .timeout = 10)
{
    union tutti_sockaddr l = loopback(), bound;
    int lfd, fd;
    cr_assert_eq(tutti__sock_listen(&l, &lfd, &bound), TUTTI_OK);
    cr_assert_eq(tutti__sock_accept(lfd, &fd, NULL), TUTTI_IN_PROGRESS);
    close(lfd);
}

Test(sock, connect_to_closed_port_is_remote, .timeout = 10)
{
    union tutti_sockaddr l = loopback(), bound;
    int lfd, fd = -1, err = 0;
    cr_assert_eq(tutti__sock_listen(&l, &lfd, &bound), TUTTI_OK);
    close(lfd); /* now nothing listens on that port */
    tutti_status_t st = tutti__sock_connect_start(&bound, &fd);
    if (st == TUTTI_OK) {
        for (int i = 0; i < 100000 && st != TUTTI_ERR_REMOTE; i++) {
            st = tutti__sock_connect_check(fd, &err);
        }
        close(fd);
    } else {
        err = errno; /* refused at once */
    }
    cr_assert_eq(st, TUTTI_ERR_REMOTE);
    cr_assert_eq(err, ECONNREFUSED);
}

Test(sock, ifname_prefix_and_exact_forms_as_nccl_writes_them, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "nosuch,l", 1); /* a list; "l" is a prefix of lo */
    union tutti_sockaddr a;
    char s[96];
    cr_assert_eq(tutti__sock_local_addr(NULL, &a), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert(is_loopback(&a), "%s", tutti__sockaddr_str(&a, s, sizeof(s)));
    /* The listener is tied to the device the prefix found, not to the pattern. */
    char dev[IFNAMSIZ];
    listen_and_get_device("127.0.0.1", dev, sizeof(dev));
    cr_assert_str_eq(dev, "lo", "SO_BINDTODEVICE is '%s'", dev);
}

Test(sock, ifname_exact_form_does_not_take_a_prefix, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "=l", 1);
    union tutti_sockaddr a;
    cr_assert_eq(tutti__sock_local_addr(NULL, &a), TUTTI_ERR_INVALID_ARG);
    cr_assert(strstr(tutti_last_error(NULL), "=l") != NULL, "%s", tutti_last_error(NULL));
}

Test(sock, ifname_exclusion_skips_loopback, .timeout = 10)
{
    if (!have_non_loopback(AF_INET)) {
        cr_skip_test("no IPv4 interface but loopback");
    }
    setenv("TUTTI_SOCKET_IFNAME", "^lo", 1);
    setenv("TUTTI_SOCKET_FAMILY", "ipv4", 1);
    union tutti_sockaddr a, toward;
    char s[96];
    /* Even toward a loopback peer: the pattern wins over the route. */
    parse_ok("127.0.0.1:9", -1, &toward);
    cr_assert_eq(tutti__sock_local_addr(&toward, &a), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert(!is_loopback(&a), "%s", tutti__sockaddr_str(&a, s, sizeof(s)));
}

Test(sock, malformed_ifname_is_error_naming_it, .timeout = 10)
{
    setenv("TUTTI_SOCKET_IFNAME", "eth0,,eth1", 1);
    union tutti_sockaddr a;
    cr_assert_eq(tutti__sock_local_addr(NULL, &a), TUTTI_ERR_INVALID_ARG);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, "eth0,,eth1") != NULL && strstr(msg, "malformed") != NULL, "%s", msg);
}
