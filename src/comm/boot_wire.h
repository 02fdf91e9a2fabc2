/*
 * boot_wire.h - messages between bootstrap clients and the root (private to boot_root.c and
 * boot_client.c). Every message is an 8-byte header {type, length} in network byte order and a
 * payload of at most BOOT_MAX_PAYLOAD bytes; lengths are checked before anything is allocated.
 * boot_wire.c decodes and checks what arrives, apart from the sockets, so that
 * tests/fuzz/fuzz_boot_wire.c runs exactly the checks the root and the clients run.
 */
#ifndef TUTTI_BOOT_WIRE_H
#define TUTTI_BOOT_WIRE_H

#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

#define BOOT_KIND        0x544f4f42u   /* "BOOT": handshake payload kind for bootstrap links */
#define BOOT_MAX_PAYLOAD (64u * 1024u) /* one rank's contribution to an all-gather */
#define BOOT_HDR_BYTES   8

enum boot_msg {
    BOOT_REQ_ALLGATHER = 1,  /* payload: this rank's record */
    BOOT_REQ_SYNC = 2,       /* payload: struct boot_sync */
    BOOT_REQ_BYE = 3,        /* no payload: the rank is done with the root */
    BOOT_REQ_TREE = 4,       /* payload: struct tutti_wire_addr, where this rank's tree listens */
    BOOT_REQ_FAIL = 5,       /* payload: struct boot_error; the root tells every rank (tree) */
    BOOT_REP_ALLGATHER = 17, /* payload: nranks records in rank order */
    BOOT_REP_SYNC = 18,      /* payload: struct boot_sync (worst status, culprit) */
    BOOT_REP_TREE = 19,      /* payload: struct tutti_wire_addr of the rank's tree parent */
    BOOT_REP_ERROR = 31,     /* payload: struct boot_error */
};

/*
 * Messages between ranks over the bootstrap tree (boot_tree.c), framed as the root's. Up: a
 * child's subtree (records, or its subtree's worst status); down: the whole result.
 */
enum boot_tree_msg {
    BOOT_TREE_GATHER_UP = 33,   /* payload: the records of the sender's subtree, in rank order */
    BOOT_TREE_GATHER_DOWN = 34, /* payload: every rank's record, in rank order */
    BOOT_TREE_SYNC_UP = 35,     /* payload: struct boot_sync, the subtree's worst */
    BOOT_TREE_SYNC_DOWN = 36,   /* payload: struct boot_sync, the communicator's worst */
};

#define BOOT_TREE_KIND   0x45455254u /* "TREE": handshake payload kind for tree links */
#define BOOT_TREE_FANOUT 8           /* children per rank at most: 512 ranks are 3 levels deep */

/* A header in host byte order (the wire has it in network byte order). */
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

/** Header to and from its wire form. */
void tutti__boot_hdr_encode(uint32_t type, uint32_t len, uint8_t out[BOOT_HDR_BYTES]);
void tutti__boot_hdr_decode(const uint8_t in[BOOT_HDR_BYTES], struct boot_hdr *h);

/**
 * Check an authenticated bootstrap hello against what the root knows (known_nranks: 0 before
 * the first rank arrived). Returns 0 when it may join, -1 when it is refused, -2 when it is
 * refused and the whole set-up fails (it holds the secret but disagrees on nranks); the reason
 * goes to why. Whether its rank is already taken is the root's to check.
 */
int tutti__boot_hello_check(const struct boot_hello *h, int known_nranks, char *why, size_t len);

/**
 * A status that came over the wire (network byte order): an error code the library knows, or
 * TUTTI_ERR_REMOTE for anything else, so a peer's bytes never become a success or an unknown code.
 */
tutti_status_t tutti__boot_status_decode(int32_t wire);

/**
 * The root's error message: its status (as tutti__boot_status_decode; OK becomes REMOTE too,
 * since an error message always reports a failure), its culprit rank and its reason, always
 * NUL-terminated in reason (at most len - 1 characters).
 */
tutti_status_t tutti__boot_error_decode(const struct boot_error *e, int *culprit_p, char *reason,
                                        size_t len);

/**
 * Rank r's place in the bootstrap tree of n ranks. The tree is built on contiguous ranges: the
 * subtree of r holds ranks [r, end), and the ranks after r in it are split into at most
 * BOOT_TREE_FANOUT contiguous runs, each the subtree of its first rank. So a subtree's records
 * are one contiguous piece of the all-gather's result.
 * @param parent_p  r's parent, -1 for rank 0
 * @param first     first[i] is child i and first[i + 1] the end of its subtree (i < the return
 *                  value); first[return value] is r's own end
 * @return the number of children (0 for a leaf); -1 when r is not in 0..n-1
 */
int tutti__boot_tree_place(int n, int r, int *parent_p, int first[BOOT_TREE_FANOUT + 1]);

/**
 * Levels below the first rank of a subtree of `size` ranks (0: a leaf), in O(log size): a
 * subtree's shape depends only on its size, and its largest child has the most levels below.
 */
int tutti__boot_tree_height(int size);

#endif /* TUTTI_BOOT_WIRE_H */
