/*
 * init.h - building communicators: from a unique id, from the launcher's environment
 * (launch.c) and from a parent (split.c) all end in tutti__comm_create().
 */
#ifndef TUTTI_INIT_H
#define TUTTI_INIT_H

#include "comm/bootstrap.h"
#include "tutti/comm.h"

struct tutti_comm;
struct tutti_peer_info;

/** Decoded unique id. */
struct tutti_uid {
    struct tutti_boot_id boot;
};

/** Encode/decode the 128-byte unique id. decode: TUTTI_ERR_INVALID_ARG naming what is wrong. */
void tutti__uid_encode(const struct tutti_uid *u, tutti_unique_id_t *id);
tutti_status_t tutti__uid_decode(const tutti_unique_id_t *id, struct tutti_uid *u);

/**
 * Build rank `rank` of an `nranks` communicator over `boot` (which every rank uses in the same
 * sequence). comm_id and secret identify it on the wire; root_hint points the TCP transport at
 * the interface that reaches the other ranks. On failure *comm_p is untouched and boot is left
 * for the caller to close.
 */
tutti_status_t tutti__comm_create(int nranks, int rank, uint64_t comm_id,
                                  const uint8_t secret[TUTTI_SECRET_BYTES],
                                  const union tutti_sockaddr *root_hint,
                                  const tutti_comm_params_t *params, struct tutti_boot *boot,
                                  struct tutti_comm **comm_p);

/**
 * Once every rank of the job behind `id` has ended (a launcher's children, killed or not):
 * remove what they may have left in /dev/shm, their transport segments and their host's
 * topology file. Returns how many transport segments were removed.
 */
int tutti__uid_remove_leftovers(const tutti_unique_id_t *id);

/** Validate params against the field mask. */
tutti_status_t tutti__params_check(const tutti_comm_params_t *params);

#endif /* TUTTI_INIT_H */
