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

#endif /* TUTTI_LAUNCH_H */
