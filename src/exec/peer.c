/*
 * peer.c - this process's identity (host id, host name, pid) and checks of peer records that
 * arrive from the network.
 */
#include "exec/peer.h"
#include "base/check.h"
#include "base/env.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

tutti_status_t tutti__peer_validate(const struct tutti_peer_info *p, int expect_rank, int nranks)
{
    if (p->magic != TUTTI_PEER_MAGIC) {
        return tutti__set_error(NULL, TUTTI_ERR_REMOTE, "peer record %d has a bad magic",
                                expect_rank);
    }
    if (p->rank != expect_rank || p->nranks != nranks) {
        return tutti__set_error(NULL, TUTTI_ERR_REMOTE,
                                "peer record %d claims rank %d of %d (expected %d of %d)",
                                expect_rank, p->rank, p->nranks, expect_rank, nranks);
    }
    if (memchr(p->hostname, '\0', sizeof(p->hostname)) == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_REMOTE, "peer record %d has an unterminated host",
                                expect_rank);
    }
    return TUTTI_OK;
}

char *tutti__peer_str(const struct tutti_peer_info *p, char *buf, size_t len)
{
    snprintf(buf, len, "rank %d (host %s, pid %u)", p->rank, p->hostname, p->pid);
    return buf;
}

/* Append the inode of /proc/self/ns/<name> (the namespace's identity) to the hash state. */
static void hash_ns(crypto_generichash_state *st, const char *name)
{
    char path[64];
    struct stat sb;
    snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
    if (stat(path, &sb) == 0) {
        uint64_t ino = (uint64_t)sb.st_ino;
        crypto_generichash_update(st, (const unsigned char *)name, strlen(name));
        crypto_generichash_update(st, (const unsigned char *)&ino, sizeof(ino));
    }
}

void tutti__host_id(uint8_t out[TUTTI_HOSTID_BYTES])
{
    crypto_generichash_state st;
    if (sodium_init() < 0) {
        abort(); /* libsodium cannot work at all: nothing in tutti could authenticate */
    }
    crypto_generichash_init(&st, NULL, 0, TUTTI_HOSTID_BYTES);
    const char *override = tutti__env()->HOSTID;
    if (override[0] != '\0') {
        crypto_generichash_update(&st, (const unsigned char *)"hostid:", 7);
        crypto_generichash_update(&st, (const unsigned char *) override, strlen(override));
        crypto_generichash_final(&st, out, TUTTI_HOSTID_BYTES);
        return;
    }
    char host[256] = {0};
    (void)gethostname(host, sizeof(host) - 1);
    crypto_generichash_update(&st, (const unsigned char *)host, strlen(host));
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        char boot[64] = {0};
        if (fgets(boot, sizeof(boot), f) != NULL) {
            crypto_generichash_update(&st, (const unsigned char *)boot, strlen(boot));
        }
        fclose(f);
    }
    /* Shared memory needs the same IPC and mount namespaces (/dev/shm), liveness checks need the
     * same PID namespace, and a separate network namespace is how tests model another host. */
    hash_ns(&st, "net");
    hash_ns(&st, "ipc");
    hash_ns(&st, "mnt");
    hash_ns(&st, "pid");
    crypto_generichash_final(&st, out, TUTTI_HOSTID_BYTES);
}
