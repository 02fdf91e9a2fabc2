/*
 * view.h - the communicator's global view of the topology (private): every rank's struct
 * tutti_topo_rank, all-gathered over the bootstrap at init (view.c).
 */
#ifndef TUTTI_TOPO_VIEW_H
#define TUTTI_TOPO_VIEW_H

#include "bootstrap.h"
#include "topology/topo.h"

struct tutti_comm;

/**
 * Local phase of init: TUTTI_TOPO_FILE names a file that could not be loaded -> that error
 * (INVALID_ARG) on comm, so that every rank fails init. Detection that found little is no error.
 */
tutti_status_t tutti__topo_check(struct tutti_comm *comm);

/**
 * After the peer records are in: all-gather every rank's view into comm->topo (checked), and
 * log the locality ring at info level (rank 0, subsystem topo). Every rank must call it.
 */
tutti_status_t tutti__topo_comm_init(struct tutti_comm *comm, struct tutti_boot *boot);

/** host[r] = the lowest rank on rank r's host (malloc'd, nranks entries), or NULL. */
int *tutti__topo_hosts(const struct tutti_comm *comm);

#endif /* TUTTI_TOPO_VIEW_H */
