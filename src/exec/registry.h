/*
 * registry.h - the transports built into this library (registry.c) and the choice of one per
 * pair of ranks (transport_used.c). The executor's connection layer (connect.c) is their user;
 * it sits above every transport, so the transports know only transport.h and none of each other.
 */
#ifndef TUTTI_EXEC_REGISTRY_H
#define TUTTI_EXEC_REGISTRY_H

#include "transports/transport.h"

/** Registered transports, indexed by tutti_transport_id_t; NULL slots are not built. */
const struct tutti_transport_ops *tutti__transport_get(tutti_transport_id_t id);

/**
 * The transport that carries the traffic between ranks a and b (a != b): the first, in the
 * registry's order of preference (shm, verbs, TCP; not the order of the ids, in which contexts
 * are made), whose can_connect takes the pair. ops[id] and tctx[id], indexed by
 * tutti_transport_id_t, are the transports in use (ops[id] NULL: not in use). Every rank gets the
 * same answer for a pair when every rank passes the same transports. TUTTI_ERR_UNSUPPORTED: none
 * takes it (nothing recorded: the caller names the pair).
 */
tutti_status_t tutti__transport_pick(const struct tutti_transport_ops *const ops[],
                                     void *const tctx[], int a, int b, tutti_transport_id_t *id_p);

/**
 * The transports that some pair of the n ranks uses (bit 1 << id each), as
 * tutti__transport_pick answers pair by pair, found by asking about one pair of each kind
 * (transport_used.c): O(n log n), not n^2 / 2 questions. TUTTI_ERR_UNSUPPORTED with bad[0..1]
 * a pair that no transport takes (nothing recorded); TUTTI_ERR_NO_MEMORY (nothing recorded).
 */
tutti_status_t tutti__transport_used(const struct tutti_transport_ops *const ops[],
                                     void *const tctx[], const struct tutti_tpeer *peers, int n,
                                     unsigned *used_p, int bad[2]);

/** Name of a transport id ("shm"). */
const char *tutti__transport_name(tutti_transport_id_t id);

#endif /* TUTTI_EXEC_REGISTRY_H */
