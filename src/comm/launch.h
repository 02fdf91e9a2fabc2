/*
 * launch.h - what tutti_comm_init_env learned from the launcher (private; unit-tested pieces).
 */
#ifndef TUTTI_LAUNCH_H
#define TUTTI_LAUNCH_H

#include "comm/bootstrap.h"
#include "base/proc.h"

struct tutti_launch {
    const char *source; /* "tutti", "torchrun", "mpirun", "slurm" */
    int rank, nranks;
    int single_host;       /* the launcher says every rank is on this host */
    char root[256];        /* "host:port", or "" */
    const char *root_from; /* where root came from, for messages: "TUTTI_ROOT", ... */
    int have_secret;
    int root_by_pmix;     /* root (and secret) from rank 0 through the launcher's PMIx */
    char rendezvous[300]; /* rank 0: the file it published, removed once all joined */
    struct tutti_boot_id boot;
    struct tutti_boot_root_watch *root_watch; /* rank 0: the root it serves */
};

/** Decode exactly 2n hex digits (trailing white space allowed). 0, or -1 if malformed. */
int tutti__hex_decode(const char *hex, uint8_t *out, size_t n);

/** Largest secret file read: 32 hex digits and their white space need far less. */
#define TUTTI_SECRET_FILE_MAX 4096

/**
 * Read a secret of n bytes (2n hex digits, white space around them allowed) from a file, without
 * blocking: the file is opened O_NONBLOCK and must be a regular file of 1 to
 * TUTTI_SECRET_FILE_MAX bytes. Warns when group or others may read it.
 * @return TUTTI_OK; TUTTI_ERR_INVALID_ARG, logged and naming the path and what is wrong (cannot
 *         be opened, a directory, a FIFO, a device, empty, too long, not 2n hex digits).
 */
tutti_status_t tutti__secret_file_read(const char *path, uint8_t *secret, size_t n);

/** First host name of a Slurm node list ("gpu[03-05],x" -> "gpu03"). 0, or -1. */
int tutti__slurm_first_host(const char *list, char *out, size_t len);

/**
 * Does the root address name loopback itself (an IP literal, "localhost..."), rather than a host
 * name that merely resolves to loopback here (Debian's 127.0.1.1 for the host's own name)?
 */
int tutti__root_names_loopback(const char *root);

/**
 * The root port of a Slurm job without a root address: the same on every rank of the step,
 * inside lo..hi (TUTTI_PORT_RANGE) when hi >= lo > 0, else in 20000..39999.
 */
int tutti__slurm_root_port(long job, long step, int lo, int hi);

/**
 * A root port (not 0) outside TUTTI_PORT_RANGE is an error (logged, naming both): every rank
 * checks, so that all fail at once rather than time out.
 */
tutti_status_t tutti__root_port_check(const struct tutti_launch *l);

/**
 * Where rank 0 serves the root of a launcher job (root_addr.c, docs/SECURITY.md): with
 * TUTTI_SOCKET_IFNAME, that interface's address (a root address that resolves to loopback then
 * also becomes that address, for every rank: loopback means this host); else the root address
 * when it is an address of this host (a loopback one only if the launcher said one host or the
 * root names loopback itself); else every interface, with a warning on rank 0. The port is the
 * root address's.
 * @return TUTTI_OK with *listen_p; TUTTI_ERR_INVALID_ARG (logged) when TUTTI_SOCKET_IFNAME has
 *         no address of the root's family, or the root address is another local interface's.
 */
tutti_status_t tutti__root_addrs(struct tutti_launch *l, union tutti_sockaddr *listen_p);

/** The one-host rendezvous file of a job key: <dir>/tutti-<uid>-<hash of key>.root, where dir is
 * the user's own XDG_RUNTIME_DIR (mode 700) if it has one, else /tmp. */
void tutti__rendezvous_path(const char *key, char *out, size_t len);

/**
 * One-host rendezvous (rendezvous.c): rank 0 publishes id's root address and secret in `path`,
 * atomically (a fresh file of mode 0600, renamed into place), with its own identity (proc.h) and
 * the number of ranks it was started with. Warns when it replaces the file of a running job.
 * @return TUTTI_OK; TUTTI_ERR_SYSTEM naming the path and errno.
 */
tutti_status_t tutti__rendezvous_publish(const char *path, const struct tutti_boot_id *id,
                                         int nranks);

/* Who wrote a rendezvous file, as far as a reader could tell. */
struct tutti_rdv_owner {
    uint32_t pid; /* rank 0's pid, 0 when unknown */
    int nranks;   /* the number of ranks it was started with, 0 when unknown */
    int stale;    /* its writer has ended (or the file is not one this version writes) */
};

/**
 * Read what rank 0 published into id->root and id->secret (the rest of id is left alone), and
 * who published it into *owner_p.
 * @return TUTTI_OK; TUTTI_IN_PROGRESS while there is no such file, or only a stale one
 *         (owner_p->stale: its rank 0 has ended; wait for the next to replace it);
 *         TUTTI_ERR_INVALID_USAGE, logged with the path, owner and mode, when the file is a
 *         symbolic link, not a regular file, not owned by this uid, or open to group or others
 *         (any of the 077 mode bits): nobody but this user's rank 0 may tell the ranks where
 *         to connect.
 */
tutti_status_t tutti__rendezvous_read(const char *path, struct tutti_boot_id *id,
                                      struct tutti_rdv_owner *owner_p);

#endif /* TUTTI_LAUNCH_H */
