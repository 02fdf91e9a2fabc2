/*
 * boot_client.h - a rank's link to the bootstrap root, shared by boot_client.c (joining, the
 * root's rounds) and boot_tree.c (the all-gathers and syncs over a tree between the ranks, where
 * the root only serves the rendezvous and carries errors).
 */
#ifndef TUTTI_BOOT_CLIENT_H
#define TUTTI_BOOT_CLIENT_H

#include "comm/bootstrap.h"

#include <stddef.h>
#include <stdint.h>

struct boot_tree;

struct boot_client {
    struct tutti_boot base;
    int fd; /* to the root */
    int rank, nranks;
    int64_t timeout_ns;
    char root_str[80];
    struct boot_tree *tree; /* NULL: every request goes to the root */
};

/** Send one request to the root and receive its reply into rep (rep_len bytes exactly; rep_type
 * 0: no reply). A BOOT_REP_ERROR becomes this rank's error, with the root's reason. */
tutti_status_t tutti__boot_client_transact(struct boot_client *c, uint32_t type,
                                           const void *payload, uint32_t len, uint32_t rep_type,
                                           void *rep, size_t rep_len);

/** Leave the root (ok: say BYE first), close the tree if any, free c. */
void tutti__boot_client_close(struct tutti_boot *b, int ok);

/** The root sent something while this rank waited on the tree: read it whole; a
 * BOOT_REP_ERROR becomes this rank's error (the status returned), anything else is a protocol
 * error. By deadline. */
tutti_status_t tutti__boot_client_root_word(struct boot_client *c, int64_t deadline);

/** Ask the root for this rank's parent in the tree and connect it (boot_tree.c): from then on
 * c's all-gathers and syncs go over the tree. */
tutti_status_t tutti__boot_tree_form(struct boot_client *c, const struct tutti_boot_id *id);

/** Close the tree's connections and free it; c->tree becomes NULL. */
void tutti__boot_tree_free(struct boot_client *c);

/** Whether a communicator of n ranks uses the tree (TUTTI_BOOT_TREE). */
int tutti__boot_tree_wanted(int nranks);

#endif /* TUTTI_BOOT_CLIENT_H */
