/*
 * launch.h - what tutti_comm_init_env learned from the launcher (private; unit-tested pieces).
 */
#ifndef TUTTI_LAUNCH_H
#define TUTTI_LAUNCH_H

#include "bootstrap.h"

struct tutti_launch {
    const char *source; /* "tutti", "torchrun", "mpirun", "slurm" */
    int rank, nranks;
    int single_host;    /* the launcher says every rank is on this host */
    char root[256];     /* "host:port", or "" */
    int have_secret;
    char rendezvous[300]; /* rank 0: the file it published, removed once all joined */
    struct tutti_boot_id boot;
};

/** Decode exactly 2n hex digits (trailing white space allowed). 0, or -1 if malformed. */
int tutti__hex_decode(const char *hex, uint8_t *out, size_t n);

/** First host name of a Slurm node list ("gpu[03-05],x" -> "gpu03"). 0, or -1. */
int tutti__slurm_first_host(const char *list, char *out, size_t len);

/**
 * One-host rendezvous (rendezvous.c): rank 0 publishes id's root address and secret in `path`,
 * atomically (a fresh file of mode 0600, renamed into place).
 * @return TUTTI_OK; TUTTI_ERR_SYSTEM naming the path and errno.
 */
tutti_status_t tutti__rendezvous_publish(const char *path, const struct tutti_boot_id *id);

/**
 * Read what rank 0 published into id->root and id->secret (the rest of id is left alone).
 * @return TUTTI_OK; TUTTI_IN_PROGRESS while there is no such file (or not a whole one: wait);
 *         TUTTI_ERR_INVALID_USAGE, logged with the path, owner and mode, when the file is a
 *         symbolic link, not a regular file, not owned by this uid, or open to group or others
 *         (any of the 077 mode bits): nobody but this user's rank 0 may tell the ranks where
 *         to connect.
 */
tutti_status_t tutti__rendezvous_read(const char *path, struct tutti_boot_id *id);

#endif /* TUTTI_LAUNCH_H */
