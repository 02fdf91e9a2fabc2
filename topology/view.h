/*
 * view.h - the communicator's global view of the topology (private): every rank's struct
 * tutti_topo_rank, all-gathered at init (view.c) through the caller's bootstrap. The
 * communicator is not known here: its caller passes what the view needs and stores the result.
 */
#ifndef TUTTI_TOPO_VIEW_H
#define TUTTI_TOPO_VIEW_H

#include "base/check.h"

#include "topology/topo.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_layout;

/** Every rank's host id as the caller stores them: rank r's `len` bytes at ids + r * stride
 * (equal ids: one host). */
struct tutti_topo_hostids {
    const uint8_t *ids;
    size_t len, stride;
};

/** All-gather `size` bytes from every rank: `mine` into all + r * size for each rank r (the
 * caller's bootstrap). */
typedef tutti_status_t (*tutti_topo_allgather_fn)(void *arg, const void *mine, void *all,
                                                  size_t size);

/** What the global view needs of a communicator, given by its caller. */
struct tutti_topo_group {
    int nranks, rank;
    struct tutti_topo_hostids hosts;
    /* every rank's view as it came with its record (tutti__topo_rank_view with local rank 0):
     * rank r's at (const uint8_t *)early + r * early_stride; or NULL */
    const struct tutti_topo_rank *early;
    size_t early_stride;
    tutti_topo_allgather_fn allgather;
    void *allgather_arg;
    struct tutti_errbuf *err; /* the communicator's: errors are recorded there (check.h) */
};

/**
 * Local phase of init: the process's machine, detected once per host and job through the file
 * `share` (tutti__topo_host), then checked: TUTTI_TOPO_FILE names a file that could not be
 * loaded -> that error (INVALID_ARG) in err, so that every rank fails init. Detection that found
 * little is no error.
 */
tutti_status_t tutti__topo_check(struct tutti_errbuf *err, const char *share);

/**
 * After the peer records are in: every rank's view (checked), and the layout (hosts, locality
 * ring) derived from it; log the ring at info level (rank 0, subsystem topo). Where no rank has
 * a GPU the early views are the views, as they are; else the views are all-gathered, each with
 * its rank's GPU (local rank mod GPUs). Every rank sees the same early views, so all choose
 * alike. Every rank must call it. On success *topo_p gets the nranks views (malloc'd) and
 * *layout_p the layout (tutti__layout_free); on error neither is written.
 */
tutti_status_t tutti__topo_gather(const struct tutti_topo_group *g, struct tutti_topo_rank **topo_p,
                                  struct tutti_layout **layout_p);

/** host[r] = the lowest rank on rank r's host (malloc'd, nranks entries), or NULL. */
int *tutti__topo_hosts(int nranks, const struct tutti_topo_hostids *ids);

#endif /* TUTTI_TOPO_VIEW_H */
