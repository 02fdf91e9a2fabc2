/*
 * coll.c - NCCL's collectives and point-to-point calls, each a forward to tutti's (same
 * argument order; the stream goes through as tutti's stream argument: host buffers with no
 * stream run on tutti's host path, device buffers or a stream on its stream path). Gather and
 * scatter, which tutti lacks, are groups of sends and receives; PreMulSum operators scale the
 * input on the host, then sum (redop.c).
 */
#include "shim.h"

static const tutti_datatype_t dtype_table[ncclNumTypes] = {
    [ncclInt8] = TUTTI_INT8,           [ncclUint8] = TUTTI_UINT8,
    [ncclInt32] = TUTTI_INT32,         [ncclUint32] = TUTTI_UINT32,
    [ncclInt64] = TUTTI_INT64,         [ncclUint64] = TUTTI_UINT64,
    [ncclFloat16] = TUTTI_FLOAT16,     [ncclFloat32] = TUTTI_FLOAT32,
    [ncclFloat64] = TUTTI_FLOAT64,     [ncclBfloat16] = TUTTI_BFLOAT16,
    [ncclFloat8e4m3] = TUTTI_FP8_E4M3, [ncclFloat8e5m2] = TUTTI_FP8_E5M2,
};

ncclResult_t shim_dtype(struct ncclComm *c, ncclDataType_t dt, tutti_datatype_t *dt_p)
{
    if ((int)dt < 0 || dt >= ncclNumTypes) {
        return shim_error(c, ncclInvalidArgument, "datatype %d is not an NCCL datatype", (int)dt);
    }
    *dt_p = dtype_table[dt];
    return ncclSuccess;
}

/*
 * The reductions, one body: datatype and operator, and for a PreMulSum operator a scaled copy
 * of the input (count elements; reduce-scatter's whole input) that tutti sums instead. In place
 * (recvbuff is sendbuff, or this rank's block of it) reads the copy then: no overlap remains,
 * and the input was read when it was copied. The copy is freed after the call, or at the end
 * of the group that holds the call.
 */
enum red { RED_ALLREDUCE, RED_REDUCE, RED_REDUCE_SCATTER };

static ncclResult_t reduction(enum red kind, const char *what, const void *sendbuff, void *recvbuff,
                              size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                              ncclComm_t comm, cudaStream_t stream)
{
    struct ncclComm *c;
    const struct shim_redop *pm = NULL;
    tutti_datatype_t dt = TUTTI_INT8;
    tutti_op_t top = TUTTI_SUM;
    void *scaled = NULL;
    ncclResult_t r = shim_enter(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_dtype(c, datatype, &dt);
    if (r == ncclSuccess) {
        r = shim_redop(c, op, dt, &top, &pm);
    }
    if (r == ncclSuccess && pm != NULL) {
        size_t total = kind == RED_REDUCE_SCATTER ? count * (size_t)c->nranks : count;
        r = shim_premul(c, pm, sendbuff, total, stream, what, &scaled);
        sendbuff = scaled;
    }
    if (r == ncclSuccess) {
        tutti_status_t st =
            kind == RED_ALLREDUCE
                ? tutti_allreduce(sendbuff, recvbuff, count, dt, top, c->tc, stream)
            : kind == RED_REDUCE
                ? tutti_reduce(sendbuff, recvbuff, count, dt, top, root, c->tc, stream)
                : tutti_reduce_scatter(sendbuff, recvbuff, count, dt, top, c->tc, stream);
        r = shim_status(c, st);
    }
    shim_free_at_group_end(scaled);
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, AllReduce, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return reduction(RED_ALLREDUCE, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, 0,
                     comm, stream);
}

NCCL_API(ncclResult_t, Reduce, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    return reduction(RED_REDUCE, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm,
                     stream);
}

NCCL_API(ncclResult_t, ReduceScatter, const void *sendbuff, void *recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return reduction(RED_REDUCE_SCATTER, "ncclReduceScatter", sendbuff, recvbuff, recvcount,
                     datatype, op, 0, comm, stream);
}

/* The calls that only translate the datatype: one body, the call chosen by `kind`. */
enum fwd { FWD_BROADCAST, FWD_ALLGATHER, FWD_ALLTOALL, FWD_SEND, FWD_RECV };

static ncclResult_t forward(enum fwd kind, const char *what, const void *sendbuff, void *recvbuff,
                            size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                            cudaStream_t stream)
{
    struct ncclComm *c;
    tutti_datatype_t dt = TUTTI_INT8;
    ncclResult_t r = shim_enter(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_dtype(c, datatype, &dt);
    if (r == ncclSuccess) {
        tutti_comm_t *tc = c->tc;
        tutti_status_t st = TUTTI_OK;
        switch (kind) {
        case FWD_BROADCAST:
            st = tutti_broadcast(sendbuff, recvbuff, count, dt, peer, tc, stream);
            break;
        case FWD_ALLGATHER:
            st = tutti_allgather(sendbuff, recvbuff, count, dt, tc, stream);
            break;
        case FWD_ALLTOALL:
            st = tutti_alltoall(sendbuff, recvbuff, count, dt, tc, stream);
            break;
        case FWD_SEND:
            st = tutti_send(sendbuff, count, dt, peer, tc, stream);
            break;
        case FWD_RECV:
            st = tutti_recv(recvbuff, count, dt, peer, tc, stream);
            break;
        }
        r = shim_status(c, st);
    }
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, Broadcast, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return forward(FWD_BROADCAST, "ncclBroadcast", sendbuff, recvbuff, count, datatype, root, comm,
                   stream);
}

/* The older, in-place broadcast. */
NCCL_API(ncclResult_t, Bcast, void *buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream)
{
    return forward(FWD_BROADCAST, "ncclBcast", buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, AllGather, const void *sendbuff, void *recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return forward(FWD_ALLGATHER, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, 0, comm,
                   stream);
}

NCCL_API(ncclResult_t, AlltoAll, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return forward(FWD_ALLTOALL, "ncclAlltoAll", sendbuff, recvbuff, count, datatype, 0, comm,
                   stream);
}

NCCL_API(ncclResult_t, Send, const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream)
{
    return forward(FWD_SEND, "ncclSend", sendbuff, NULL, count, datatype, peer, comm, stream);
}

NCCL_API(ncclResult_t, Recv, void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream)
{
    return forward(FWD_RECV, "ncclRecv", NULL, recvbuff, count, datatype, peer, comm, stream);
}

/*
 * Gather (to_root = 1) and scatter (0) as one group of sends and receives: block i of the
 * root's buffer comes from / goes to rank i; the root's own block is a send to itself paired
 * with a receive from itself, unless it is already in place.
 */
static ncclResult_t rooted(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                           int to_root, const char *what)
{
    struct ncclComm *c;
    tutti_datatype_t dt = TUTTI_INT8;
    ncclResult_t r = shim_enter(comm, what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_dtype(c, datatype, &dt);
    if (r == ncclSuccess && (root < 0 || root >= c->nranks)) {
        r = shim_error(c, ncclInvalidArgument, "%s: root %d is not a rank of %d", what, root,
                       c->nranks);
    }
    if (r != ncclSuccess) {
        shim_leave(c);
        return r;
    }
    size_t block = count * tutti_datatype_size(dt);
    char *base = (char *)(to_root ? recvbuff : (void *)sendbuff); /* the root's n blocks */
    tutti_status_t st = tutti_group_start();
    if (c->rank != root) {
        st = to_root ? tutti_send(sendbuff, count, dt, root, c->tc, stream)
                     : tutti_recv(recvbuff, count, dt, root, c->tc, stream);
    }
    for (int i = 0; c->rank == root && i < c->nranks && st == TUTTI_OK; i++) {
        char *blk = base + (size_t)i * block;
        const char *own = to_root ? (const char *)sendbuff : (const char *)recvbuff;
        if (i != root) {
            st = to_root ? tutti_recv(blk, count, dt, i, c->tc, stream)
                         : tutti_send(blk, count, dt, i, c->tc, stream);
        } else if (own != blk) {
            st = tutti_send(to_root ? sendbuff : blk, count, dt, root, c->tc, stream);
            if (st == TUTTI_OK) {
                st = tutti_recv(to_root ? blk : recvbuff, count, dt, root, c->tc, stream);
            }
        }
    }
    tutti_status_t st_end = tutti_group_end(); /* always: the group must close */
    r = shim_status(c, st != TUTTI_OK ? st : st_end);
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, Gather, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return rooted(sendbuff, recvbuff, count, datatype, root, comm, stream, 1, "ncclGather");
}

NCCL_API(ncclResult_t, Scatter, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return rooted(sendbuff, recvbuff, count, datatype, root, comm, stream, 0, "ncclScatter");
}
