/*
 * sock.h - socket helpers shared by the bootstrap and the TCP transport: addresses (IPv4 and
 * IPv6, parsed and printed), choice of the local interface, listening inside TUTTI_PORT_RANGE,
 * non-blocking connect/accept and the socket options tutti wants (TCP_NODELAY, CLOEXEC, ...).
 * No function here blocks, except address parsing, which may resolve a host name.
 */
#ifndef TUTTI_SOCK_H
#define TUTTI_SOCK_H

#include "tutti/status.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/** Any socket address tutti uses. */
union tutti_sockaddr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
};

/**
 * Portable, fixed-size form of an address for the wire (peer info, unique id): all integers in
 * network byte order, no padding. family is 4 or 6.
 */
struct tutti_wire_addr {
    uint8_t family;
    uint8_t pad_;
    uint16_t port;
    uint32_t scope_id;
    uint8_t addr[16]; /* IPv4 uses the first 4 bytes */
};
_Static_assert(sizeof(struct tutti_wire_addr) == 24, "wire address is 24 bytes");

/** Length of the sockaddr for bind/connect. */
socklen_t tutti__sockaddr_len(const union tutti_sockaddr *a);

/** Encode/decode the wire form. decode returns TUTTI_ERR_INVALID_ARG for an unknown family. */
void tutti__wire_addr_encode(const union tutti_sockaddr *a, struct tutti_wire_addr *w);
tutti_status_t tutti__wire_addr_decode(const struct tutti_wire_addr *w, union tutti_sockaddr *a);

/** "1.2.3.4:5678" or "[fe80::1%2]:5678" into buf; always NUL-terminated. Returns buf. */
char *tutti__sockaddr_str(const union tutti_sockaddr *a, char *buf, size_t len);

/**
 * Parse "host:port", "[v6addr]:port", "v6addr" (no port) or "host" (no port: default_port; a
 * default_port < 0 makes the port mandatory). Host names are resolved (getaddrinfo; may block).
 * @param family  AF_UNSPEC, AF_INET or AF_INET6: restricts resolution.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG naming the problem through tutti__set_error(NULL,...).
 */
tutti_status_t tutti__sockaddr_parse(const char *s, int default_port, int family,
                                     union tutti_sockaddr *out);

/** TUTTI_SOCKET_FAMILY as AF_UNSPEC / AF_INET / AF_INET6. */
int tutti__sock_family_pref(void);

/**
 * Local address to listen on.
 * - toward != NULL: the source address the kernel would use to reach `toward` (a UDP connect,
 *   nothing sent), unless TUTTI_SOCKET_IFNAME is set (patterns: ifmatch.h): then the address of
 *   the best interface it names.
 * - toward == NULL: that address, else the first interface that is up and not loopback
 *   (docker*, virbr* and veth-less bridges last), else loopback.
 * The port of the result is 0.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG if TUTTI_SOCKET_IFNAME is malformed or names no
 *         interface with an address of the wanted family (the message lists the interfaces
 *         seen).
 */
tutti_status_t tutti__sock_local_addr(const union tutti_sockaddr *toward,
                                      union tutti_sockaddr *out);

/**
 * The address of TUTTI_SOCKET_IFNAME of the given family (AF_UNSPEC: IPv4 first), port 0.
 * @return TUTTI_OK; TUTTI_IN_PROGRESS when TUTTI_SOCKET_IFNAME is unset; TUTTI_ERR_INVALID_ARG
 *         (logged, listing the interfaces) when the interface has no such address.
 */
tutti_status_t tutti__sock_ifname_addr(int family, union tutti_sockaddr *out);

/** Is `a` an address of this host, one a socket can bind (any port)? */
int tutti__sock_is_local(const union tutti_sockaddr *a);

/** 127.0.0.0/8 or ::1. */
int tutti__sock_is_loopback(const union tutti_sockaddr *a);

/**
 * TUTTI_PORT_RANGE: *set_p = 0 when unset, else 1 with the bounds in *lo_p, *hi_p.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG (logged, naming the value) when malformed.
 */
tutti_status_t tutti__sock_port_range(int *lo_p, int *hi_p, int *set_p);

/**
 * Create a non-blocking listening socket bound to `local`. If local's port is 0 and
 * TUTTI_PORT_RANGE is set, the first free port of the range is used; if the port is not 0 it
 * is used as is (SO_REUSEADDR). *bound_p gets the real address with its port. When local is an
 * address of TUTTI_SOCKET_IFNAME, the socket is also tied to that device (SO_BINDTODEVICE; where
 * the kernel wants CAP_NET_RAW for it and the process lacks it, one warning, and the address
 * bind alone).
 * @return TUTTI_OK; TUTTI_ERR_SYSTEM with a message naming the address and errno (for example
 *         "no free port in TUTTI_PORT_RANGE 30000-30010").
 */
tutti_status_t tutti__sock_listen(const union tutti_sockaddr *local, int *fd_p,
                                  union tutti_sockaddr *bound_p);

/**
 * Start a non-blocking connect.
 * @return TUTTI_OK with *fd_p set; TUTTI_ERR_REMOTE when refused or unreachable at once (errno
 *         says why; not logged, the caller names the peer); TUTTI_ERR_SYSTEM otherwise (logged).
 */
tutti_status_t tutti__sock_connect_start(const union tutti_sockaddr *to, int *fd_p);

/**
 * Has a started connect finished? TUTTI_OK: connected; TUTTI_IN_PROGRESS: not yet;
 * TUTTI_ERR_REMOTE: refused / unreachable (errno value in *err_p, fd still to be closed).
 */
tutti_status_t tutti__sock_connect_check(int fd, int *err_p);

/**
 * Accept one pending connection, made non-blocking with tutti's options.
 * @return TUTTI_OK with *fd_p (and *peer_p if not NULL); TUTTI_IN_PROGRESS when none is
 *         pending; TUTTI_ERR_NO_MEMORY, not logged and with errno kept, when descriptors or
 *         buffers ran out (EMFILE, ENFILE, ENOBUFS, ENOMEM: the caller may close something and
 *         try again); TUTTI_ERR_SYSTEM on other errors.
 */
tutti_status_t tutti__sock_accept(int lfd, int *fd_p, union tutti_sockaddr *peer_p);

/** Options for a connected data socket: TCP_NODELAY, O_NONBLOCK, FD_CLOEXEC, keepalive. */
void tutti__sock_tune(int fd);

/**
 * Non-blocking send/recv of exactly what the kernel takes now.
 * @return bytes moved (>= 0; 0 means "would block" for send, and for recv "would block" too);
 *         -1 for EOF on recv (*err_p = 0) or an error (*err_p = errno).
 */
ssize_t tutti__sock_send(int fd, const void *buf, size_t len, int *err_p);
ssize_t tutti__sock_recv(int fd, void *buf, size_t len, int *err_p);

/** Address of the other end, or "?" . */
char *tutti__sock_peer_str(int fd, char *buf, size_t len);

#endif /* TUTTI_SOCK_H */
