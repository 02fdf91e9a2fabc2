/*
 * tpeer.c - what the transports say of a peer in their messages. Apart from the registry
 * (registry.c), which knows every transport's ops table, so that a transport that names a peer
 * does not depend on the file that depends on it.
 */
#include "transports/transport.h"

#include <stdio.h>

const char *tutti__tpeer_name(const struct tutti_tpeer *peers, int r, char *buf, size_t len)
{
    if (peers != NULL && peers[r].hostname != NULL) {
        snprintf(buf, len, "rank %d (host %s, pid %u)", r, peers[r].hostname, peers[r].pid);
    } else {
        snprintf(buf, len, "rank %d", r);
    }
    return buf;
}
