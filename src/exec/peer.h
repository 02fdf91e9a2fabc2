/*
 * peer.h - what each rank tells the others about itself when a communicator is built.
 *
 * The record is all-gathered through the bootstrap (or through the parent communicator in a
 * split), so it is fixed-size, has no pointers and is checked on arrival: magic, rank in range,
 * strings NUL-terminated.
 */
#ifndef TUTTI_EXEC_PEER_H
#define TUTTI_EXEC_PEER_H

#include "topology/topo.h"
#include "transports/transport.h"
#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

#define TUTTI_PEER_MAGIC   0x52454550u /* "PEER" */
#define TUTTI_HOSTID_BYTES 16

struct tutti_peer_info {
    uint32_t magic;
    int32_t rank;
    int32_t nranks;
    uint32_t pid;
    uint8_t hostid[TUTTI_HOSTID_BYTES]; /* equal ids: same host, memory can be shared */
    char hostname[64];
    /* what each transport publishes (the TCP transport: its listening address) */
    uint8_t blob[TUTTI_TRANSPORT_COUNT][TUTTI_TRANSPORT_BLOB];
    /* its topology view (topology/view.c) as its GPU-less part stands before the local ranks
     * are known: the whole view where no rank has a GPU (tutti__topo_gather) */
    struct tutti_topo_rank view;
    /* where this rank listens for tutti_comm_shrink (a struct tutti_wire_addr, shrink.c) */
    uint8_t shrink_addr[24];
};

_Static_assert(sizeof(struct tutti_peer_info) == 376, "the record's wire size (no padding)");

/** Check a record received from the network: magic, rank/nranks, terminated hostname. */
tutti_status_t tutti__peer_validate(const struct tutti_peer_info *p, int expect_rank, int nranks);

/** "rank 3 (host node7, pid 4242)" into buf. Returns buf. */
char *tutti__peer_str(const struct tutti_peer_info *p, char *buf, size_t len);

/**
 * This process's host identity: TUTTI_HOSTID if set (hashed), else a hash of the boot id, the
 * host name and the ids of the network, IPC, mount and PID namespaces, so that containers and
 * network namespaces on one machine count as different hosts unless told otherwise.
 */
void tutti__host_id(uint8_t out[TUTTI_HOSTID_BYTES]);

#endif /* TUTTI_EXEC_PEER_H */
