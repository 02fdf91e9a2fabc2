/*
 * footprint.h - what a communicator holds (issue 20's footprint report): its connections by
 * transport, the shared memory it made, the memory registered with RDMA devices and the pinned
 * host memory of the GPU stream path. Connections are made on first use, so the figures grow
 * with the calls made; at destroy they are the communicator's peak. Logged in one info line when
 * a communicator is destroyed, and shown by `tutti-info --footprint N`.
 */
#ifndef TUTTI_COMM_FOOTPRINT_H
#define TUTTI_COMM_FOOTPRINT_H

#include "transports/transport.h"

#include <stddef.h>

struct tutti_comm;

/** *fp = what comm holds now. */
void tutti__comm_footprint(const struct tutti_comm *comm, struct tutti_footprint *fp);

/** "connections shm 2, tcp 0, ib 0; shared 2.0 MiB, registered 0 B, pinned 0 B" into buf. */
void tutti__footprint_str(const struct tutti_footprint *fp, char *buf, size_t len);

/** One info line naming the rank, its footprint and the connection memory budget. */
void tutti__comm_footprint_log(const struct tutti_comm *comm);

#endif /* TUTTI_COMM_FOOTPRINT_H */
