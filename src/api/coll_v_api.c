/*
 * coll_v_api.c - the public entry points of gather, scatter and the variable-size collectives,
 * blocking and asynchronous. Each one describes the call (its count arrays in a struct
 * tutti_vcounts on the caller's stack: enqueue.c copies it where the call outlives the entry
 * point) and hands it to enqueue.c, which validates and dispatches.
 */
#include "api/enqueue.h"
#include "tutti/coll.h"

/* The blocking form (stream may be NULL) or, with req_p, the asynchronous one. */
static tutti_status_t go(tutti_comm_t *comm, struct tutti_op_desc *d, const struct tutti_vcounts *v,
                         void *stream, tutti_request_t **req_p, int async)
{
    d->v = v;
    return async ? tutti__enqueue_async(comm, d, req_p) : tutti__enqueue(comm, d, stream, NULL);
}

static tutti_status_t alltoallv(const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, tutti_datatype_t dt, tutti_comm_t *comm,
                                void *stream, tutti_request_t **req_p, int async)
{
    struct tutti_vcounts v = {sendcounts, sdispls, recvcounts, rdispls, 0};
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_ALLTOALLV, sendbuf, recvbuf, 0, dt, TUTTI_SUM, -1, -1);
    return go(comm, &d, &v, stream, req_p, async);
}

static tutti_status_t allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                 const size_t *recvcounts, const size_t *displs,
                                 tutti_datatype_t dt, tutti_comm_t *comm, void *stream,
                                 tutti_request_t **req_p, int async)
{
    struct tutti_vcounts v = {NULL, NULL, recvcounts, displs, 0};
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_ALLGATHERV, sendbuf, recvbuf, sendcount, dt, TUTTI_SUM, -1, -1);
    return go(comm, &d, &v, stream, req_p, async);
}

static tutti_status_t gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, tutti_datatype_t dt,
                              int root, tutti_comm_t *comm, void *stream, tutti_request_t **req_p,
                              int async)
{
    struct tutti_vcounts v = {NULL, NULL, recvcounts, displs, 0};
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_GATHERV, sendbuf, recvbuf, sendcount, dt, TUTTI_SUM, root, -1);
    return go(comm, &d, &v, stream, req_p, async);
}

static tutti_status_t scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                               void *recvbuf, size_t recvcount, tutti_datatype_t dt, int root,
                               tutti_comm_t *comm, void *stream, tutti_request_t **req_p, int async)
{
    struct tutti_vcounts v = {sendcounts, displs, NULL, NULL, 0};
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_SCATTERV, sendbuf, recvbuf, recvcount, dt, TUTTI_SUM, root, -1);
    return go(comm, &d, &v, stream, req_p, async);
}

static tutti_status_t reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                      tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                      void *stream, tutti_request_t **req_p, int async)
{
    struct tutti_vcounts v = {NULL, NULL, recvcounts, NULL, 0};
    struct tutti_op_desc d =
        OP_DESC(TUTTI_COLL_REDUCE_SCATTERV, sendbuf, recvbuf, 0, dt, op, -1, -1);
    return go(comm, &d, &v, stream, req_p, async);
}

static tutti_status_t rooted(tutti_coll_t coll, const void *sendbuf, void *recvbuf, size_t count,
                             tutti_datatype_t dt, int root, tutti_comm_t *comm, void *stream,
                             tutti_request_t **req_p, int async)
{
    struct tutti_op_desc d = OP_DESC(coll, sendbuf, recvbuf, count, dt, TUTTI_SUM, root, -1);
    return go(comm, &d, NULL, stream, req_p, async);
}

tutti_status_t tutti_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                               void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                               tutti_datatype_t dt, tutti_comm_t *comm, void *stream)
{
    return alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dt, comm, stream,
                     NULL, 0);
}

tutti_status_t tutti_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs, tutti_datatype_t dt,
                                tutti_comm_t *comm, void *stream)
{
    return allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dt, comm, stream, NULL, 0);
}

tutti_status_t tutti_gather(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                            int root, tutti_comm_t *comm, void *stream)
{
    return rooted(TUTTI_COLL_GATHER, sendbuf, recvbuf, count, dt, root, comm, stream, NULL, 0);
}

tutti_status_t tutti_scatter(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                             int root, tutti_comm_t *comm, void *stream)
{
    return rooted(TUTTI_COLL_SCATTER, sendbuf, recvbuf, count, dt, root, comm, stream, NULL, 0);
}

tutti_status_t tutti_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                             const size_t *recvcounts, const size_t *displs, tutti_datatype_t dt,
                             int root, tutti_comm_t *comm, void *stream)
{
    return gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dt, root, comm, stream, NULL,
                   0);
}

tutti_status_t tutti_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                              void *recvbuf, size_t recvcount, tutti_datatype_t dt, int root,
                              tutti_comm_t *comm, void *stream)
{
    return scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, dt, root, comm, stream, NULL,
                    0);
}

tutti_status_t tutti_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                     tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                     void *stream)
{
    return reduce_scatterv(sendbuf, recvbuf, recvcounts, dt, op, comm, stream, NULL, 0);
}

tutti_status_t tutti_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, tutti_datatype_t dt, tutti_comm_t *comm,
                                tutti_request_t **req_p)
{
    return alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dt, comm, NULL,
                     req_p, 1);
}

tutti_status_t tutti_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                 const size_t *recvcounts, const size_t *displs,
                                 tutti_datatype_t dt, tutti_comm_t *comm, tutti_request_t **req_p)
{
    return allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dt, comm, NULL, req_p, 1);
}

tutti_status_t tutti_igather(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                             int root, tutti_comm_t *comm, tutti_request_t **req_p)
{
    return rooted(TUTTI_COLL_GATHER, sendbuf, recvbuf, count, dt, root, comm, NULL, req_p, 1);
}

tutti_status_t tutti_iscatter(const void *sendbuf, void *recvbuf, size_t count, tutti_datatype_t dt,
                              int root, tutti_comm_t *comm, tutti_request_t **req_p)
{
    return rooted(TUTTI_COLL_SCATTER, sendbuf, recvbuf, count, dt, root, comm, NULL, req_p, 1);
}

tutti_status_t tutti_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, tutti_datatype_t dt,
                              int root, tutti_comm_t *comm, tutti_request_t **req_p)
{
    return gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dt, root, comm, NULL, req_p, 1);
}

tutti_status_t tutti_iscatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                               void *recvbuf, size_t recvcount, tutti_datatype_t dt, int root,
                               tutti_comm_t *comm, tutti_request_t **req_p)
{
    return scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, dt, root, comm, NULL, req_p,
                    1);
}

tutti_status_t tutti_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                      tutti_datatype_t dt, tutti_op_t op, tutti_comm_t *comm,
                                      tutti_request_t **req_p)
{
    return reduce_scatterv(sendbuf, recvbuf, recvcounts, dt, op, comm, NULL, req_p, 1);
}
