/*
 * sock.c - addresses and non-blocking sockets for the bootstrap and the TCP transport.
 *
 * Owns: parsing and printing of IPv4/IPv6 addresses (with link-local scope ids), their fixed
 * wire form, the choice of the local interface (TUTTI_SOCKET_IFNAME, TUTTI_SOCKET_FAMILY),
 * listening inside TUTTI_PORT_RANGE, and the thin non-blocking connect/accept/send/recv wrappers
 * with the socket options every tutti socket gets. send() always passes MSG_NOSIGNAL, so a peer
 * that went away is an error code, never a SIGPIPE.
 */
#include "net/sock.h"
#include "base/check.h"
#include "base/env.h"
#include "net/ifmatch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LISTEN_BACKLOG 512

socklen_t tutti__sockaddr_len(const union tutti_sockaddr *a)
{
    return a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in);
}

void tutti__wire_addr_encode(const union tutti_sockaddr *a, struct tutti_wire_addr *w)
{
    memset(w, 0, sizeof(*w));
    if (a->sa.sa_family == AF_INET) {
        w->family = 4;
        w->port = a->in.sin_port; /* already in network order */
        memcpy(w->addr, &a->in.sin_addr, 4);
    } else if (a->sa.sa_family == AF_INET6) {
        w->family = 6;
        w->port = a->in6.sin6_port;
        w->scope_id = htonl(a->in6.sin6_scope_id);
        memcpy(w->addr, &a->in6.sin6_addr, 16);
    }
}

tutti_status_t tutti__wire_addr_decode(const struct tutti_wire_addr *w, union tutti_sockaddr *a)
{
    union tutti_sockaddr r;
    memset(&r, 0, sizeof(r));
    if (w->family == 4) {
        r.in.sin_family = AF_INET;
        r.in.sin_port = w->port;
        memcpy(&r.in.sin_addr, w->addr, 4);
    } else if (w->family == 6) {
        r.in6.sin6_family = AF_INET6;
        r.in6.sin6_port = w->port;
        r.in6.sin6_scope_id = ntohl(w->scope_id);
        memcpy(&r.in6.sin6_addr, w->addr, 16);
    } else {
        return TUTTI_ERR_INVALID_ARG; /* the caller knows whose address it was and logs */
    }
    *a = r;
    return TUTTI_OK;
}

char *tutti__sockaddr_str(const union tutti_sockaddr *a, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    if (len == 0) {
        return buf;
    }
    if (a->sa.sa_family == AF_INET &&
        inet_ntop(AF_INET, &a->in.sin_addr, host, sizeof(host)) != NULL) {
        snprintf(buf, len, "%s:%u", host, ntohs(a->in.sin_port));
    } else if (a->sa.sa_family == AF_INET6 &&
               inet_ntop(AF_INET6, &a->in6.sin6_addr, host, sizeof(host)) != NULL) {
        if (a->in6.sin6_scope_id != 0) {
            snprintf(buf, len, "[%s%%%u]:%u", host, (unsigned)a->in6.sin6_scope_id,
                     ntohs(a->in6.sin6_port));
        } else {
            snprintf(buf, len, "[%s]:%u", host, ntohs(a->in6.sin6_port));
        }
    } else {
        snprintf(buf, len, "?");
    }
    return buf;
}

/* Decimal port 0..65535, digits only; returns -1 otherwise. */
static int parse_port(const char *s)
{
    long v = 0;
    if (*s == '\0' || strlen(s) > 5) {
        return -1;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return -1;
        }
        v = v * 10 + (*s - '0');
    }
    return v <= 65535 ? (int)v : -1;
}

/* Split s into host and port text. The port text is NULL when s names none. */
static tutti_status_t split_host_port(const char *s, char *host, size_t hostlen,
                                      const char **port_p)
{
    const char *h = s, *port = NULL;
    size_t n;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || (close[1] != '\0' && close[1] != ':')) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                    "address '%s' is malformed (expected [v6addr]:port)", s);
        }
        h = s + 1;
        n = (size_t)(close - h);
        port = close[1] == ':' ? close + 2 : NULL;
    } else {
        const char *colon = strchr(s, ':');
        if (colon != NULL && strchr(colon + 1, ':') == NULL) {
            n = (size_t)(colon - s); /* exactly one ':' : host:port */
            port = colon + 1;
        } else {
            n = strlen(s); /* no ':' (a host) or several (a bare IPv6 address) */
        }
    }
    if (n == 0 || n >= hostlen) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "address '%s' has %s host", s,
                                n == 0 ? "no" : "a too long");
    }
    memcpy(host, h, n);
    host[n] = '\0';
    *port_p = port;
    return TUTTI_OK;
}

tutti_status_t tutti__sockaddr_parse(const char *s, int default_port, int family,
                                     union tutti_sockaddr *out)
{
    char host[256];
    const char *port_s = NULL;
    if (s == NULL || s[0] == '\0') {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "empty address");
    }
    TUTTI_CHECK(split_host_port(s, host, sizeof(host), &port_s));
    int port = default_port;
    if (port_s != NULL) {
        port = parse_port(port_s);
        if (port < 0) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                    "port '%s' of address '%s' is not a number from 0 to 65535",
                                    port_s, s);
        }
    } else if (default_port < 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "address '%s' has no port", s);
    }

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    int ret = getaddrinfo(host, NULL, &hints, &res);
    if (ret != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "cannot resolve host '%s': %s", host,
                                gai_strerror(ret));
    }
    tutti_status_t status = TUTTI_ERR_INVALID_ARG;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
            memset(out, 0, sizeof(*out));
            memcpy(out, ai->ai_addr, ai->ai_addrlen);
            if (ai->ai_family == AF_INET) {
                out->in.sin_port = htons((uint16_t)port);
            } else {
                out->in6.sin6_port = htons((uint16_t)port);
            }
            status = TUTTI_OK;
            break;
        }
    }
    freeaddrinfo(res);
    if (status != TUTTI_OK) {
        return tutti__set_error(NULL, status, "host '%s' has no IPv4 or IPv6 address", host);
    }
    return TUTTI_OK;
}

int tutti__sock_family_pref(void)
{
    const char *f = tutti__env()->SOCKET_FAMILY;
    if (strcmp(f, "ipv4") == 0 || strcmp(f, "4") == 0) {
        return AF_INET;
    }
    if (strcmp(f, "ipv6") == 0 || strcmp(f, "6") == 0) {
        return AF_INET6;
    }
    if (strcmp(f, "any") != 0 && f[0] != '\0') {
        tutti_warn_once("TUTTI_SOCKET_FAMILY value '%s' is not any, ipv4 or ipv6; using any", f);
    }
    return AF_UNSPEC;
}

static void set_port(union tutti_sockaddr *a, int port)
{
    if (a->sa.sa_family == AF_INET6) {
        a->in6.sin6_port = htons((uint16_t)port);
    } else {
        a->in.sin_port = htons((uint16_t)port);
    }
}

/* Interfaces least wanted by default: container and VM bridges, then loopback. */
static int if_class(const struct ifaddrs *ifa)
{
    if ((ifa->ifa_flags & IFF_LOOPBACK) != 0) {
        return 2;
    }
    if (strncmp(ifa->ifa_name, "docker", 6) == 0 || strncmp(ifa->ifa_name, "virbr", 5) == 0 ||
        strncmp(ifa->ifa_name, "br-", 3) == 0 || strncmp(ifa->ifa_name, "veth", 4) == 0) {
        return 1;
    }
    return 0;
}

/* Within one interface: IPv4, then global IPv6, then link-local IPv6. */
static int addr_kind(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        return 0;
    }
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    return IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) ? 2 : 1;
}

/* Append name to the comma-separated list unless it is there already. */
static void list_add(char *list, size_t len, const char *name, int up)
{
    char item[IFNAMSIZ + 8];
    snprintf(item, sizeof(item), "%s%s", name, up ? "" : " (down)");
    size_t n = strlen(item);
    for (const char *p = list; (p = strstr(p, item)) != NULL; p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) {
            return;
        }
    }
    size_t used = strlen(list);
    snprintf(list + used, len - used, "%s%s", used > 0 ? ", " : "", item);
}

/* Best address of an interface that is up: one that `ifname` names (ifmatch.h), or any (ifname
 * NULL). */
static tutti_status_t pick_interface(const char *ifname, int family, union tutti_sockaddr *out)
{
    const char *why = NULL;
    if (ifname != NULL && tutti__ifname_spec_check(ifname, &why) != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_SOCKET_IFNAME '%s' is malformed: %s (expected names or "
                                "prefixes separated by commas, optionally after ^ to exclude "
                                "them and = for exact names)",
                                ifname, why);
    }
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "getifaddrs failed: %s", strerror(errno));
    }
    const struct ifaddrs *best = NULL;
    int best_score = 1 << 30;
    char seen[512] = "";
    for (const struct ifaddrs *ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        int up = (ifa->ifa_flags & IFF_UP) != 0;
        list_add(seen, sizeof(seen), ifa->ifa_name, up);
        if (ifa->ifa_addr == NULL || !up ||
            (ifa->ifa_addr->sa_family != AF_INET && ifa->ifa_addr->sa_family != AF_INET6) ||
            (family != AF_UNSPEC && ifa->ifa_addr->sa_family != family) ||
            (ifname != NULL && !tutti__ifname_match(ifname, ifa->ifa_name))) {
            continue;
        }
        int score = if_class(ifa) * 10 + addr_kind(ifa->ifa_addr);
        if (score < best_score) {
            best = ifa;
            best_score = score;
        }
    }
    tutti_status_t status = TUTTI_OK;
    if (best != NULL) {
        memset(out, 0, sizeof(*out));
        memcpy(out, best->ifa_addr,
               best->ifa_addr->sa_family == AF_INET6 ? sizeof(out->in6) : sizeof(out->in));
        if (out->sa.sa_family == AF_INET6 && !IN6_IS_ADDR_LINKLOCAL(&out->in6.sin6_addr)) {
            out->in6.sin6_scope_id = 0;
        }
    } else if (ifname != NULL) {
        status = tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                  "TUTTI_SOCKET_IFNAME %s: no interface it names is up with "
                                  "an %s address (interfaces: %s)",
                                  ifname,
                                  family == AF_INET    ? "IPv4"
                                  : family == AF_INET6 ? "IPv6"
                                                       : "IP",
                                  seen);
    } else {
        status = tutti__set_error(NULL, TUTTI_ERR_SYSTEM,
                                  "no network interface is up with an %s address "
                                  "(interfaces: %s)",
                                  family == AF_INET    ? "IPv4"
                                  : family == AF_INET6 ? "IPv6"
                                                       : "IP",
                                  seen);
    }
    freeifaddrs(ifs);
    return status;
}

/* The source address the kernel would use toward `to`: connect a UDP socket, send nothing. */
static int route_source(const union tutti_sockaddr *to, union tutti_sockaddr *out)
{
    int fd = socket(to->sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    union tutti_sockaddr src;
    socklen_t len = sizeof(src);
    memset(&src, 0, sizeof(src));
    int ret = connect(fd, &to->sa, tutti__sockaddr_len(to));
    if (ret == 0) {
        ret = getsockname(fd, &src.sa, &len);
    }
    close(fd);
    if (ret == 0) {
        *out = src;
    }
    return ret;
}

tutti_status_t tutti__sock_local_addr(const union tutti_sockaddr *toward, union tutti_sockaddr *out)
{
    const char *ifname = tutti__env()->SOCKET_IFNAME;
    union tutti_sockaddr a;
    if (ifname[0] != '\0') {
        TUTTI_CHECK(pick_interface(ifname, tutti__sock_family_pref(), &a));
    } else if (toward == NULL || route_source(toward, &a) != 0) {
        if (toward != NULL) {
            char s[80];
            tutti_debug(TUTTI_SUBSYS_NET, "no route toward %s (%s); picking an interface",
                        tutti__sockaddr_str(toward, s, sizeof(s)), strerror(errno));
        }
        TUTTI_CHECK(pick_interface(NULL, tutti__sock_family_pref(), &a));
    }
    if (a.sa.sa_family == AF_INET) {
        a.in.sin_port = 0;
    } else {
        a.in6.sin6_port = 0;
    }
    *out = a;
    return TUTTI_OK;
}

tutti_status_t tutti__sock_ifname_addr(int family, union tutti_sockaddr *out)
{
    const char *ifname = tutti__env()->SOCKET_IFNAME;
    union tutti_sockaddr a;
    if (ifname[0] == '\0') {
        return TUTTI_IN_PROGRESS;
    }
    TUTTI_CHECK(pick_interface(ifname, family, &a));
    set_port(&a, 0);
    *out = a;
    return TUTTI_OK;
}

int tutti__sock_is_local(const union tutti_sockaddr *a)
{
    union tutti_sockaddr probe = *a;
    int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    set_port(&probe, 0);
    int ok = fd >= 0 && bind(fd, &probe.sa, tutti__sockaddr_len(&probe)) == 0;
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

int tutti__sock_is_loopback(const union tutti_sockaddr *a)
{
    return a->sa.sa_family == AF_INET ? (ntohl(a->in.sin_addr.s_addr) >> 24) == 127
                                      : IN6_IS_ADDR_LOOPBACK(&a->in6.sin6_addr);
}

tutti_status_t tutti__sock_port_range(int *lo_p, int *hi_p, int *set_p)
{
    const char *s = tutti__env()->PORT_RANGE;
    *set_p = 0;
    if (s[0] == '\0') {
        return TUTTI_OK;
    }
    char lo_s[8] = "", hi_s[8] = "";
    const char *dash = strchr(s, '-');
    if (dash != NULL && (size_t)(dash - s) < sizeof(lo_s) && strlen(dash + 1) < sizeof(hi_s)) {
        memcpy(lo_s, s, (size_t)(dash - s));
        strcpy(hi_s, dash + 1);
    }
    int lo = parse_port(lo_s), hi = parse_port(hi_s);
    if (lo < 1 || hi < lo) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "TUTTI_PORT_RANGE value '%s' is malformed (expected lo-hi with "
                                "1 <= lo <= hi <= 65535)",
                                s);
    }
    *lo_p = lo;
    *hi_p = hi;
    *set_p = 1;
    return TUTTI_OK;
}

/* Is `a` (port aside) an address of an interface that `ifname` names? Its name into dev. */
static int on_interface(const char *ifname, const union tutti_sockaddr *a, char dev[IFNAMSIZ])
{
    struct ifaddrs *ifs = NULL;
    int found = 0;
    if (getifaddrs(&ifs) != 0) {
        return 0;
    }
    for (const struct ifaddrs *ifa = ifs; ifa != NULL && !found; ifa = ifa->ifa_next) {
        const struct sockaddr *s = ifa->ifa_addr;
        if (s == NULL || s->sa_family != a->sa.sa_family ||
            !tutti__ifname_match(ifname, ifa->ifa_name)) {
            continue;
        }
        found = s->sa_family == AF_INET
                    ? ((const struct sockaddr_in *)s)->sin_addr.s_addr == a->in.sin_addr.s_addr
                    : memcmp(&((const struct sockaddr_in6 *)s)->sin6_addr, &a->in6.sin6_addr,
                             sizeof(a->in6.sin6_addr)) == 0;
        if (found) {
            snprintf(dev, IFNAMSIZ, "%s", ifa->ifa_name);
        }
    }
    freeifaddrs(ifs);
    return found;
}

/* The interface a listener on `a` is tied to: the one TUTTI_SOCKET_IFNAME names that has `a`
 * (its name into dev); NULL otherwise (none named, or a loopback root of a one-host job). */
static const char *listen_device(const union tutti_sockaddr *a, char dev[IFNAMSIZ])
{
    const char *ifname = tutti__env()->SOCKET_IFNAME;
    return ifname[0] != '\0' && on_interface(ifname, a, dev) ? dev : NULL;
}

/*
 * A listener on an address of TUTTI_SOCKET_IFNAME also takes only what arrives through that
 * interface (SO_BINDTODEVICE): with Linux's weak-host routing, a socket bound to an address
 * alone accepts packets for it from any interface. Older kernels (before 5.7) want CAP_NET_RAW
 * for it: then the address bind alone stays, and one warning says so.
 */
static void bind_to_device(int fd, const char *dev)
{
    if (dev == NULL ||
        setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev)) == 0) {
        return;
    }
    if (errno == EPERM) {
        tutti_warn_once("listening sockets are bound to the address of TUTTI_SOCKET_IFNAME %s "
                        "but not to the device itself: SO_BINDTODEVICE needs CAP_NET_RAW on "
                        "this kernel, so packets for that address from other interfaces are "
                        "accepted too",
                        dev);
    } else {
        tutti_warn_once("SO_BINDTODEVICE %s failed: %s; listening on its address only", dev,
                        strerror(errno));
    }
}

/* socket + bind + listen on `a` (tied to interface dev unless NULL); the fd, or -1 (errno). */
static int listen_on(const union tutti_sockaddr *a, const char *dev)
{
    int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    bind_to_device(fd, dev);
    if (bind(fd, &a->sa, tutti__sockaddr_len(a)) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

tutti_status_t tutti__sock_listen(const union tutti_sockaddr *local, int *fd_p,
                                  union tutti_sockaddr *bound_p)
{
    union tutti_sockaddr a = *local;
    char s[80];
    int lo = 0, hi = 0, ranged = 0, fd = -1;
    char dev_name[IFNAMSIZ];
    const char *dev = listen_device(&a, dev_name);
    int port = ntohs(a.sa.sa_family == AF_INET6 ? a.in6.sin6_port : a.in.sin_port);
    if (port == 0) {
        TUTTI_CHECK(tutti__sock_port_range(&lo, &hi, &ranged));
    }
    if (ranged) {
        for (int p = lo; p <= hi && fd < 0; p++) {
            set_port(&a, p);
            fd = listen_on(&a, dev);
            if (fd < 0 && errno != EADDRINUSE) {
                break;
            }
        }
        if (fd < 0 && errno == EADDRINUSE) {
            set_port(&a, 0);
            return tutti__set_error(NULL, TUTTI_ERR_SYSTEM,
                                    "no free port in TUTTI_PORT_RANGE %d-%d on %s", lo, hi,
                                    tutti__sockaddr_str(&a, s, sizeof(s)));
        }
    } else {
        fd = listen_on(&a, dev);
    }
    if (fd < 0) {
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "cannot listen on %s: %s",
                                tutti__sockaddr_str(&a, s, sizeof(s)), strerror(errno));
    }
    socklen_t len = sizeof(a);
    if (getsockname(fd, &a.sa, &len) != 0) {
        int err = errno;
        close(fd);
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "getsockname of a listener failed: %s",
                                strerror(err));
    }
    *fd_p = fd;
    *bound_p = a;
    return TUTTI_OK;
}

tutti_status_t tutti__sock_connect_start(const union tutti_sockaddr *to, int *fd_p)
{
    char s[80];
    int fd = socket(to->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "socket for %s failed: %s",
                                tutti__sockaddr_str(to, s, sizeof(s)), strerror(errno));
    }
    tutti__sock_tune(fd);
    if (connect(fd, &to->sa, tutti__sockaddr_len(to)) != 0 && errno != EINPROGRESS &&
        errno != EINTR) {
        int err = errno;
        close(fd);
        errno = err;
        if (tutti__sys_status(err) == TUTTI_ERR_REMOTE) {
            return TUTTI_ERR_REMOTE; /* the caller names the peer that is not there */
        }
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "connect to %s failed: %s",
                                tutti__sockaddr_str(to, s, sizeof(s)), strerror(err));
    }
    *fd_p = fd;
    return TUTTI_OK;
}

tutti_status_t tutti__sock_connect_check(int fd, int *err_p)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
    }
    if (err != 0) {
        *err_p = err;
        return TUTTI_ERR_REMOTE;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    if (poll(&p, 1, 0) <= 0 || (p.revents & (POLLOUT | POLLHUP | POLLERR)) == 0) {
        return TUTTI_IN_PROGRESS;
    }
    /* Writable: connected, unless the attempt failed between the two checks. */
    len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
        *err_p = err;
        return TUTTI_ERR_REMOTE;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__sock_accept(int lfd, int *fd_p, union tutti_sockaddr *peer_p)
{
    union tutti_sockaddr a;
    socklen_t len = sizeof(a);
    memset(&a, 0, sizeof(a));
    int fd = accept4(lfd, &a.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        switch (errno) {
        case EAGAIN:
        case EINTR:
        case ECONNABORTED: /* the connection died in the queue: nothing to accept */
        case EPROTO:
        case ENETDOWN:
        case EHOSTUNREACH:
        case ENETUNREACH:
            return TUTTI_IN_PROGRESS;
        case EMFILE: /* out of descriptors or buffers: the caller may make room (errno kept) */
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
            return TUTTI_ERR_NO_MEMORY;
        default:
            return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "accept failed: %s", strerror(errno));
        }
    }
    tutti__sock_tune(fd);
    *fd_p = fd;
    if (peer_p != NULL) {
        *peer_p = a;
    }
    return TUTTI_OK;
}

void tutti__sock_tune(int fd)
{
    int one = 1;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) == 0) {
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* Kernel buffer sizes are left to autotuning: setting SO_SNDBUF/SO_RCVBUF disables it. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

ssize_t tutti__sock_send(int fd, const void *buf, size_t len, int *err_p)
{
    if (len == 0) {
        return 0;
    }
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
        return n;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return 0;
    }
    *err_p = errno;
    return -1;
}

ssize_t tutti__sock_recv(int fd, void *buf, size_t len, int *err_p)
{
    if (len == 0) {
        return 0;
    }
    ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
    if (n > 0) {
        return n;
    }
    if (n == 0) {
        *err_p = 0; /* EOF */
        return -1;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return 0;
    }
    *err_p = errno;
    return -1;
}

char *tutti__sock_peer_str(int fd, char *buf, size_t len)
{
    union tutti_sockaddr a;
    socklen_t alen = sizeof(a);
    memset(&a, 0, sizeof(a));
    if (getpeername(fd, &a.sa, &alen) != 0) {
        snprintf(buf, len, "?");
        return buf;
    }
    return tutti__sockaddr_str(&a, buf, len);
}
