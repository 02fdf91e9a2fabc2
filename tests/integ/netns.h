/*
 * netns.h - "hosts" for integration tests: network namespaces joined by a bridge.
 *
 * netns_setup(n) makes n namespaces, tutti-integ-<pid>-a, -b, ..., each with one veth end,
 * NETNS_IFNAME, holding 10.77.0.<i+1>/24, and a namespace of its own for the bridge
 * (tutti-integ-<pid>-br, bridge br0, the other veth ends h0, h1, ...). The links are made inside
 * the namespaces (ip -n ... link add ... peer ... netns ...), so the root namespace never holds
 * a link or an address of the test, and the addresses exist only inside the namespaces.
 * netns_teardown() removes them (also from a Criterion .fini, after a failure); namespaces left
 * by a test process that died are removed by the next netns_setup().
 *
 * tutti's host id includes the network namespace, so ranks in different namespaces are
 * different hosts to it and talk over TCP.
 */
#ifndef TUTTI_INTEG_NETNS_H
#define TUTTI_INTEG_NETNS_H

#include "harness.h"

#include <stdatomic.h>
#include <stddef.h>

#define NETNS_MAX_HOSTS 4
#define NETNS_IFNAME    "veth0"

/**
 * Make nhosts (2..NETNS_MAX_HOSTS) namespaces on one bridge. Skips the current Criterion test
 * with the reason when the process is not root, ip(8) is missing or the kernel refuses (after
 * undoing what it made).
 */
void netns_setup(int nhosts);

/** Remove what netns_setup made (safe to call when it made nothing). */
void netns_teardown(void);

/** The name of host i's namespace ("tutti-integ-<pid>-a" for 0). */
const char *netns_name(int host);

/** Move the calling process into host i's namespace (setns). 0, or -1 with errno set. */
int netns_enter(int host);

/** Run ip(8) with the NULL-terminated arguments; 0 when it exits with 0, else -1 with its
 * output in err. */
int netns_ip(char *err, size_t errlen, const char *const *args);

/** What the ranks of a job share (integ_opts.shared_bytes): the id rank 0 makes in its host. */
struct netns_shared {
    _Atomic int id_ready;
    tutti_unique_id_t id;
};

/**
 * In a rank: enter host[rank]'s namespace, take the job's id (rank 0 makes it there, so the
 * bootstrap root listens on its host's address, and publishes it in ctx->shared, a struct
 * netns_shared), create the comm, and check that the ranks of the same host are reached over
 * shared memory (over TCP with all_tcp, i.e. TUTTI_TRANSPORT=tcp) and the others over TCP.
 * @return 0, or 1 after reporting what failed (integ_fail).
 */
int netns_comm_init(const struct integ_ctx *ctx, const int *host, int all_tcp,
                    tutti_comm_t **comm_p);

#define NETNS_IP(err, ...) netns_ip(err, sizeof(err), (const char *const[]){__VA_ARGS__, NULL})

#endif /* TUTTI_INTEG_NETNS_H */
