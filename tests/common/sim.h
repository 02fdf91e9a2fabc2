/*
 * sim.h - a simulated network for unit tests: every rank lives in this
 * process, connections are bounded in-memory slot FIFOs behind a real transport ops table, and
 * the real executor (src/exec/exec.c) runs each rank's real plan. A round in which no rank can move
 * is a deadlock, reported instead of hanging.
 */
#ifndef TUTTI_TEST_SIM_H
#define TUTTI_TEST_SIM_H

#include "exec/exec.h"
#include "exec/plan.h"

#include <stddef.h>

struct sim_net;
struct tutti_fabric;

/** A network of nranks ranks whose FIFOs have nslots slots of slot_bytes bytes. */
struct sim_net *sim_net_new(int nranks, int nslots, size_t slot_bytes);
void sim_net_free(struct sim_net *net);

/** The fabric of one rank (chunk size = slot_bytes, nchannels as given): no communicator is
 * made, as the executor needs none. */
struct tutti_fabric *sim_fabric(struct sim_net *net, int rank, int nchannels);

/** Connections made from now on take frames by reference (TUTTI_TRANSPORT_SEND_REF), with
 * tutti_tconn.share_every = share_every and tutti_tconn.lone_max = lone_max. */
void sim_net_refs(struct sim_net *net, uint32_t share_every, size_t lone_max);

/** Connections made from now on write their send slots as mode says (TUTTI_FILL_*: through
 * the caches, streamed, or timed). */
void sim_net_fill(struct sim_net *net, uint32_t mode);

/** The non-empty frames rank posted so far: by reference, and copied into a slot. */
void sim_posts(const struct sim_net *net, int rank, unsigned long *by_ref_p,
               unsigned long *copied_p);

/** The last error recorded in rank's fabric ("" when none); valid until the next call. */
const char *sim_error(struct sim_net *net, int rank);

/**
 * Run one plan per rank until all complete. Returns 0 when all completed, -1 on deadlock
 * (a whole round without progress), or the first error status (< 0, not -1).
 */
int sim_run(struct tutti_exec *exs, int n);

#endif /* TUTTI_TEST_SIM_H */
