/*
 * service.c - the library's own collectives (service.h), for the set-up of other features:
 * the CUDA IPC all-reduce (ipc.c) and tutti_comm_split (split.c).
 */
#include "run/service.h"
#include "exec/fp.h"
#include "run/request.h"

/* Number the call (its fingerprint) and run it in issue order. */
static tutti_status_t run(struct tutti_runner *runner, tutti_coll_t coll, const void *sendbuf,
                          void *recvbuf, size_t count, tutti_datatype_t dt, tutti_op_t op)
{
    struct tutti_op_desc d = {.coll = coll,
                              .sendbuf = sendbuf,
                              .recvbuf = recvbuf,
                              .count = count,
                              .dt = dt,
                              .op = op,
                              .root = -1,
                              .peer = -1};
    return tutti__run_service(runner, &d);
}

tutti_status_t tutti__svc_allreduce(struct tutti_runner *runner, const void *sendbuf, void *recvbuf,
                                    size_t count, tutti_datatype_t dt, tutti_op_t op)
{
    return run(runner, TUTTI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dt, op);
}

tutti_status_t tutti__svc_allgather(struct tutti_runner *runner, const void *sendbuf, void *recvbuf,
                                    size_t count, tutti_datatype_t dt)
{
    return run(runner, TUTTI_COLL_ALLGATHER, sendbuf, recvbuf, count, dt, TUTTI_SUM);
}
