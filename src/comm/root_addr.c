/*
 * root_addr.c - where the bootstrap root of a launcher job (a root address from TUTTI_ROOT,
 * MASTER_ADDR/MASTER_PORT + 1 or Slurm) listens, and where the ranks reach it. Rank 0 listens on
 * one address, not on every interface: TUTTI_SOCKET_IFNAME's when set, else the root address
 * itself when it is an address of this host. Only a root address that cannot tell (not an
 * address of this host, or a host name that resolves to loopback here but to the host's own
 * address elsewhere) leaves the root on every interface, with a warning naming the fix. The
 * root port must lie inside TUTTI_PORT_RANGE when that is set. docs/SECURITY.md states the rule.
 */
#include "base/check.h"
#include "base/env.h"
#include "comm/launch.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static int port_of(const union tutti_sockaddr *a)
{
    return ntohs(a->sa.sa_family == AF_INET6 ? a->in6.sin6_port : a->in.sin_port);
}

static void with_port(union tutti_sockaddr *a, int port)
{
    if (a->sa.sa_family == AF_INET6) {
        a->in6.sin6_port = htons((uint16_t)port);
    } else {
        a->in.sin_port = htons((uint16_t)port);
    }
}

static int same_ip(const union tutti_sockaddr *a, const union tutti_sockaddr *b)
{
    if (a->sa.sa_family != b->sa.sa_family) {
        return 0;
    }
    return a->sa.sa_family == AF_INET
               ? a->in.sin_addr.s_addr == b->in.sin_addr.s_addr
               : memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, sizeof(a->in6.sin6_addr)) == 0;
}

int tutti__root_names_loopback(const char *root)
{
    char host[256];
    struct in_addr v4;
    if (root[0] == '[') {
        return 1; /* a bracketed IPv6 literal */
    }
    const char *colon = strrchr(root, ':');
    size_t n = colon != NULL && strchr(root, ':') == colon ? (size_t)(colon - root) : strlen(root);
    if (n >= sizeof(host)) {
        return 0;
    }
    memcpy(host, root, n);
    host[n] = '\0';
    return inet_pton(AF_INET, host, &v4) == 1 || strncmp(host, "localhost", 9) == 0 ||
           strcmp(host, "ip6-localhost") == 0;
}

int tutti__slurm_root_port(long job, long step, int lo, int hi)
{
    long k = job * 16 + (step < 0 ? 0 : step);
    if (hi >= lo && lo > 0) {
        return lo + (int)(k % (hi - lo + 1));
    }
    return 20000 + (int)(k % 20000);
}

tutti_status_t tutti__root_port_check(const struct tutti_launch *l)
{
    int lo = 0, hi = 0, set = 0, port = port_of(&l->boot.root);
    TUTTI_CHECK(tutti__sock_port_range(&lo, &hi, &set));
    if (set && port != 0 && (port < lo || port > hi)) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "the root port %d (root %s, from %s) is outside TUTTI_PORT_RANGE "
                                "%d-%d: choose a root port inside the range, or widen it",
                                port, l->root, l->root_from, lo, hi);
    }
    return TUTTI_OK;
}

/* The root listens on every interface: say why, once, on rank 0. */
static void every_interface(const struct tutti_launch *l, const char *why,
                            union tutti_sockaddr *listen_p)
{
    union tutti_sockaddr any = l->boot.root; /* same family and port, any address */
    if (any.sa.sa_family == AF_INET6) {
        any.in6.sin6_addr = in6addr_any;
        any.in6.sin6_scope_id = 0;
    } else {
        any.in.sin_addr.s_addr = htonl(INADDR_ANY);
    }
    if (l->rank == 0) {
        tutti_warn("the bootstrap root listens on every interface, port %d: the root address %s "
                   "%s; set TUTTI_SOCKET_IFNAME to the interface the other hosts reach it through "
                   "(docs/SECURITY.md)",
                   port_of(&any), l->root, why);
    }
    *listen_p = any;
}

tutti_status_t tutti__root_addrs(struct tutti_launch *l, union tutti_sockaddr *listen_p)
{
    union tutti_sockaddr r = l->boot.root, dev;
    char rs[80], ds[80];
    tutti_status_t st = tutti__sock_ifname_addr(r.sa.sa_family, &dev);
    if (st == TUTTI_OK) {
        with_port(&dev, port_of(&r));
        if (tutti__sock_is_loopback(&r)) {
            /* The root is on this host, where it listens on the interface's address. */
            l->boot.root = dev;
        } else if (l->rank == 0 && tutti__sock_is_local(&r) && !same_ip(&r, &dev)) {
            /* Only rank 0 listens there; another rank of this host may use another interface
             * (one NIC per rank) and reaches the root at the address given. */
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                    "the root address %s (%s) is an address of this host but not "
                                    "of TUTTI_SOCKET_IFNAME %s, where the root listens (%s): give "
                                    "the root that interface's address, or name the interface "
                                    "that has the root's",
                                    l->root, tutti__sockaddr_str(&r, rs, sizeof(rs)),
                                    tutti__env()->SOCKET_IFNAME,
                                    tutti__sockaddr_str(&dev, ds, sizeof(ds)));
        }
        *listen_p = dev;
        return TUTTI_OK;
    }
    if (st != TUTTI_IN_PROGRESS) {
        return st; /* TUTTI_SOCKET_IFNAME has no address of that family: already logged */
    }
    if (!tutti__sock_is_local(&r)) {
        every_interface(l, "is not an address of this host (NAT, a container's port mapping?)",
                        listen_p);
    } else if (tutti__sock_is_loopback(&r) && !l->single_host &&
               !tutti__root_names_loopback(l->root)) {
        every_interface(l,
                        "resolves to loopback here, and other hosts may resolve it to this "
                        "host's address",
                        listen_p);
    } else {
        *listen_p = r;
    }
    return TUTTI_OK;
}
