/*
 * service.h - the library's own collectives (UCC's service collectives): blocking, on host
 * buffers, run on a communicator the caller has entered, without the public entry's checks
 * (the arguments are the library's), recording into a group or queuing a request. They take
 * their place in issue order like any blocking call and are numbered like one, so the peers
 * see the same fingerprints as for a public call.
 */
#ifndef TUTTI_SERVICE_H
#define TUTTI_SERVICE_H

#include "tutti/coll.h"

#include <stddef.h>

struct tutti_runner;

/** All-reduce count elements of dt from sendbuf into recvbuf (may be the same) with op. */
tutti_status_t tutti__svc_allreduce(struct tutti_runner *runner, const void *sendbuf, void *recvbuf,
                                    size_t count, tutti_datatype_t dt, tutti_op_t op);

/** All-gather count elements of dt from every rank into recvbuf, in rank order. */
tutti_status_t tutti__svc_allgather(struct tutti_runner *runner, const void *sendbuf, void *recvbuf,
                                    size_t count, tutti_datatype_t dt);

#endif /* TUTTI_SERVICE_H */
