/*
 * boot_wire.h - messages between bootstrap clients and the root (private to boot_root.c and
 * boot_client.c). Every message is an 8-byte header {type, length} in network byte order and a
 * payload of at most BOOT_MAX_PAYLOAD bytes; lengths are checked before anything is allocated.
 */
#ifndef TUTTI_BOOT_WIRE_H
#define TUTTI_BOOT_WIRE_H

#include <stdint.h>

#define BOOT_KIND        0x544f4f42u /* "BOOT": handshake payload kind for bootstrap links */
#define BOOT_MAX_PAYLOAD (64u * 1024u) /* one rank's contribution to an all-gather */

enum boot_msg {
    BOOT_REQ_ALLGATHER = 1, /* payload: this rank's record */
    BOOT_REQ_SYNC = 2,      /* payload: struct boot_sync */
    BOOT_REQ_BYE = 3,       /* no payload: the rank is done with the root */
    BOOT_REP_ALLGATHER = 17, /* payload: nranks records in rank order */
    BOOT_REP_SYNC = 18,      /* payload: struct boot_sync (worst status, culprit) */
    BOOT_REP_ERROR = 31,     /* payload: struct boot_error */
};

struct boot_hdr {
    uint32_t type;
    uint32_t len;
};

/* Handshake payload of a bootstrap connection (authenticated by the handshake's MAC). */
struct boot_hello {
    uint32_t kind; /* BOOT_KIND */
    int32_t rank;
    int32_t nranks;
    uint32_t pid;
    uint8_t pad[16];
};

struct boot_sync {
    int32_t status;
    int32_t rank;
};

struct boot_error {
    int32_t status;
    int32_t culprit;
    char reason[248];
};

#endif /* TUTTI_BOOT_WIRE_H */
