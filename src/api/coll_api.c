/*
 * coll_api.c - the public collective and point-to-point entry points, blocking and
 * asynchronous. Each one only describes the call; enqueue.c validates and dispatches.
 */
#include "api/enqueue.h"
#include "base/check.h"
#include "tutti/coll.h"

tutti_status_t tutti_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dt, op, -1, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_datatype_t dt, int root, tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_BROADCAST, sendbuf, recvbuf, count, dt, TUTTI_SUM, root, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_reduce(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                            tutti_op_t op, int root, tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_REDUCE, sendbuf, recvbuf, count, dt, op, root, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                    void *stream)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dt, op, -1, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                               tutti_datatype_t dt, tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dt, TUTTI_SUM, -1, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_alltoall(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                              tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_ALLTOALL, sendbuf, recvbuf, count, dt, TUTTI_SUM, -1, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_send(const void *buf, size_t count, tutti_datatype_t dt, int peer,
                          tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_SEND, buf, NULL, count, dt, TUTTI_SUM, -1, peer);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_recv(void *buf, size_t count, tutti_datatype_t dt, int peer,
                          tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_RECV, NULL, buf, count, dt, TUTTI_SUM, -1, peer);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_barrier(tutti_comm_t *comm, void *stream)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_BARRIER, NULL, NULL, 0, TUTTI_UINT8, TUTTI_MAX, -1, -1);
    return tutti__enqueue(comm, &d, stream, NULL);
}

tutti_status_t tutti_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                tutti_request_t **req_p)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dt, op, -1, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_ibroadcast(const void *sendbuf, void *recvbuf, size_t count,
                                tutti_datatype_t dt, int root, tutti_comm_t *comm,
                                tutti_request_t **req_p)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_BROADCAST, sendbuf, recvbuf, count, dt, TUTTI_SUM, root, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_ireduce(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                             tutti_op_t op, int root, tutti_comm_t *comm, tutti_request_t **req_p)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_REDUCE, sendbuf, recvbuf, count, dt, op, root, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                     tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                     tutti_request_t **req_p)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dt, op, -1, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                tutti_datatype_t dt, tutti_comm_t *comm, tutti_request_t **req_p)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dt, TUTTI_SUM, -1, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                               tutti_datatype_t dt, tutti_comm_t *comm, tutti_request_t **req_p)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_ALLTOALL, sendbuf, recvbuf, count, dt, TUTTI_SUM, -1, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_isend(const void *buf, size_t count, tutti_datatype_t dt, int peer,
                           tutti_comm_t *comm, tutti_request_t **req_p)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_SEND, buf, NULL, count, dt, TUTTI_SUM, -1, peer);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_irecv(void *buf, size_t count, tutti_datatype_t dt, int peer,
                           tutti_comm_t *comm, tutti_request_t **req_p)
{
    struct tutti_op_desc d = OP_DESC(TUTTI_COLL_RECV, NULL, buf, count, dt, TUTTI_SUM, -1, peer);
    return tutti__enqueue_async(comm, &d, req_p);
}

tutti_status_t tutti_ibarrier(tutti_comm_t *comm, tutti_request_t **req_p)
{
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_BARRIER, NULL, NULL, 0, TUTTI_UINT8, TUTTI_MAX, -1, -1);
    return tutti__enqueue_async(comm, &d, req_p);
}
