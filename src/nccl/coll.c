/*
 * coll.c - NCCL's collectives and point-to-point calls, each a forward to tutti's (same
 * argument order; the stream goes through as tutti's stream argument: host buffers with no
 * stream run on tutti's host path, device buffers or a stream on its stream path), gather and
 * scatter included (tutti_gather, tutti_scatter). The nccl*Config forms check their
 * ncclCollConfig_t (config.c) and make the plain call. Reduction operators: NCCL's built-in ones
 * mapped to tutti's, and PreMulSum operators (ncclRedOpCreatePreMulSum) made as tutti's own
 * pre-multiplied sums (tutti_op_create_premul_sum), which scale each rank's input and sum on
 * host buffers, device buffers and streams, the scalar read at creation
 * (ncclScalarHostImmediate) or by each call when it runs (ncclScalarDevice, host or device
 * memory). The shim keeps no state for them: NCCL's value is tutti's handle shifted down to
 * start at ncclNumOps, and tutti checks every use.
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

static const tutti_op_t op_table[ncclNumOps] = {
    [ncclSum] = TUTTI_SUM, [ncclProd] = TUTTI_PROD, [ncclMax] = TUTTI_MAX,
    [ncclMin] = TUTTI_MIN, [ncclAvg] = TUTTI_AVG,
};

/* NCCL's value of tutti's handle, and back. Handles count up from TUTTI_OP_DYNAMIC_FIRST, values
 * from ncclNumOps; both reuse the slots of destroyed operators. */
static ncclRedOp_t nccl_op_of(tutti_op_t top)
{
    return (ncclRedOp_t)((long)top - TUTTI_OP_DYNAMIC_FIRST + ncclNumOps);
}

static tutti_op_t tutti_op_of(ncclRedOp_t op)
{
    return (tutti_op_t)((long)op - ncclNumOps + TUTTI_OP_DYNAMIC_FIRST);
}

ncclResult_t shim_redop(struct ncclComm *c, ncclRedOp_t op, tutti_op_t *op_p)
{
    if ((int)op >= 0 && op < ncclNumOps) {
        *op_p = op_table[op];
        return ncclSuccess;
    }
    if ((int)op < 0) {
        return shim_error(c, ncclInvalidArgument,
                          "reduction operator %d is neither built in nor made by "
                          "ncclRedOpCreatePreMulSum",
                          (int)op);
    }
    *op_p = tutti_op_of(op); /* tutti refuses it unless it is a live operator of c */
    return ncclSuccess;
}

NCCL_API(ncclResult_t, RedOpCreatePreMulSum, ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm)
{
    struct ncclComm *c;
    tutti_datatype_t dt = TUTTI_INT8;
    ncclResult_t r = shim_enter(comm, "ncclRedOpCreatePreMulSum", &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_dtype(c, datatype, &dt);
    if (r == ncclSuccess && (op == NULL || scalar == NULL)) {
        r = shim_error(c, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %s is NULL",
                       op == NULL ? "op" : "scalar");
    }
    if (r == ncclSuccess && residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclRedOpCreatePreMulSum: residence %d is not an ncclScalarResidence_t",
                       (int)residence);
    }
    if (r == ncclSuccess) {
        /* tutti's residence values are NCCL's */
        tutti_op_t top = TUTTI_SUM;
        r = shim_status(c, tutti_op_create_premul_sum(
                               scalar, dt, (tutti_scalar_residence_t)residence, c->tc, &top));
        if (r == ncclSuccess && (long)nccl_op_of(top) > (long)ncclMaxRedOp) {
            (void)tutti_op_destroy(top, c->tc);
            r = shim_error(c, ncclInvalidUsage,
                           "ncclRedOpCreatePreMulSum: too many operators alive on this "
                           "communicator; destroy some with ncclRedOpDestroy");
        } else if (r == ncclSuccess) {
            *op = nccl_op_of(top);
        }
    }
    shim_leave(c);
    return r;
}

/* As NCCL: destroyable once the last call given it has returned; calls already issued (queued,
 * on a stream, in an open group) keep the scalar they were given. */
NCCL_API(ncclResult_t, RedOpDestroy, ncclRedOp_t op, ncclComm_t comm)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, "ncclRedOpDestroy", &c);
    if (r != ncclSuccess) {
        return r;
    }
    if ((int)op < ncclNumOps) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclRedOpDestroy: operator %d is built in, not made by "
                       "ncclRedOpCreatePreMulSum",
                       (int)op);
    } else if (tutti_op_destroy(tutti_op_of(op), c->tc) != TUTTI_OK) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclRedOpDestroy: operator %d was not made by ncclRedOpCreatePreMulSum "
                       "on this communicator (or was destroyed)",
                       (int)op);
    }
    shim_leave(c);
    return r;
}

/* Every call, one body: the datatype (and operator) translated, the call chosen by `kind`. */
enum kind {
    ALLREDUCE,
    REDUCE,
    REDUCE_SCATTER,
    BROADCAST,
    ALLGATHER,
    ALLTOALL,
    GATHER,
    SCATTER,
    SEND,
    RECV
};

struct call {
    enum kind kind;
    const char *what;
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    ncclDataType_t datatype;
    ncclRedOp_t op;
    int peer; /* the root, or the peer of a send or receive */
};

static tutti_status_t run(const struct call *k, tutti_datatype_t dt, tutti_op_t op,
                          tutti_comm_t *tc, void *stream)
{
    const void *s = k->sendbuff;
    void *r = k->recvbuff;
    size_t n = k->count;
    switch (k->kind) {
    case ALLREDUCE:
        return tutti_allreduce(s, r, n, dt, op, tc, stream);
    case REDUCE:
        return tutti_reduce(s, r, n, dt, op, k->peer, tc, stream);
    case REDUCE_SCATTER:
        return tutti_reduce_scatter(s, r, n, dt, op, tc, stream);
    case BROADCAST:
        return tutti_broadcast(s, r, n, dt, k->peer, tc, stream);
    case ALLGATHER:
        return tutti_allgather(s, r, n, dt, tc, stream);
    case ALLTOALL:
        return tutti_alltoall(s, r, n, dt, tc, stream);
    case GATHER:
        return tutti_gather(s, r, n, dt, k->peer, tc, stream);
    case SCATTER:
        return tutti_scatter(s, r, n, dt, k->peer, tc, stream);
    case SEND:
        return tutti_send(s, n, dt, k->peer, tc, stream);
    case RECV:
        return tutti_recv(r, n, dt, k->peer, tc, stream);
    }
    return TUTTI_ERR_INTERNAL;
}

static ncclResult_t call(const struct call *k, ncclComm_t comm, cudaStream_t stream,
                         const ncclCollConfig_t *config)
{
    struct ncclComm *c;
    tutti_datatype_t dt = TUTTI_INT8;
    tutti_op_t op = TUTTI_SUM;
    ncclResult_t r = shim_enter_call(comm, k->what, &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_coll_config(c, config, k->what);
    if (r == ncclSuccess) {
        r = shim_dtype(c, k->datatype, &dt);
    }
    if (r == ncclSuccess && k->kind <= REDUCE_SCATTER) {
        r = shim_redop(c, k->op, &op);
    }
    if (r == ncclSuccess) {
        r = shim_status(c, run(k, dt, op, c->tc, stream));
    }
    shim_leave_call(c);
    return r;
}

#define CALL(kind, name, s, r, n, dt, op, peer) (&(struct call){kind, name, s, r, n, dt, op, peer})

NCCL_API(ncclResult_t, AllReduce, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(ALLREDUCE, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, 0), comm,
                stream, NULL);
}

NCCL_API(ncclResult_t, Reduce, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(REDUCE, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root), comm,
                stream, NULL);
}

NCCL_API(ncclResult_t, ReduceScatter, const void *sendbuff, void *recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return call(
        CALL(REDUCE_SCATTER, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, 0),
        comm, stream, NULL);
}

NCCL_API(ncclResult_t, Broadcast, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(BROADCAST, "ncclBroadcast", sendbuff, recvbuff, count, datatype, 0, root),
                comm, stream, NULL);
}

/* The older, in-place broadcast. */
NCCL_API(ncclResult_t, Bcast, void *buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(BROADCAST, "ncclBcast", buff, buff, count, datatype, 0, root), comm, stream,
                NULL);
}

NCCL_API(ncclResult_t, AllGather, const void *sendbuff, void *recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(ALLGATHER, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, 0, 0),
                comm, stream, NULL);
}

NCCL_API(ncclResult_t, AlltoAll, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(ALLTOALL, "ncclAlltoAll", sendbuff, recvbuff, count, datatype, 0, 0), comm,
                stream, NULL);
}

NCCL_API(ncclResult_t, Gather, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(GATHER, "ncclGather", sendbuff, recvbuff, count, datatype, 0, root), comm,
                stream, NULL);
}

NCCL_API(ncclResult_t, Scatter, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(SCATTER, "ncclScatter", sendbuff, recvbuff, count, datatype, 0, root), comm,
                stream, NULL);
}

NCCL_API(ncclResult_t, Send, const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(SEND, "ncclSend", sendbuff, NULL, count, datatype, 0, peer), comm, stream,
                NULL);
}

NCCL_API(ncclResult_t, Recv, void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream)
{
    return call(CALL(RECV, "ncclRecv", NULL, recvbuff, count, datatype, 0, peer), comm, stream,
                NULL);
}

/* ---- the same with a per-call config ---- */

NCCL_API(ncclResult_t, AllReduceConfig, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(CALL(ALLREDUCE, "ncclAllReduceConfig", sendbuff, recvbuff, count, datatype, op, 0),
                comm, stream, config);
}

NCCL_API(ncclResult_t, ReduceConfig, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(CALL(REDUCE, "ncclReduceConfig", sendbuff, recvbuff, count, datatype, op, root),
                comm, stream, config);
}

NCCL_API(ncclResult_t, ReduceScatterConfig, const void *sendbuff, void *recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(CALL(REDUCE_SCATTER, "ncclReduceScatterConfig", sendbuff, recvbuff, recvcount,
                     datatype, op, 0),
                comm, stream, config);
}

NCCL_API(ncclResult_t, BroadcastConfig, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(
        CALL(BROADCAST, "ncclBroadcastConfig", sendbuff, recvbuff, count, datatype, 0, root), comm,
        stream, config);
}

NCCL_API(ncclResult_t, AllGatherConfig, const void *sendbuff, void *recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(
        CALL(ALLGATHER, "ncclAllGatherConfig", sendbuff, recvbuff, sendcount, datatype, 0, 0), comm,
        stream, config);
}

NCCL_API(ncclResult_t, AlltoAllConfig, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(CALL(ALLTOALL, "ncclAlltoAllConfig", sendbuff, recvbuff, count, datatype, 0, 0),
                comm, stream, config);
}

NCCL_API(ncclResult_t, GatherConfig, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(CALL(GATHER, "ncclGatherConfig", sendbuff, recvbuff, count, datatype, 0, root),
                comm, stream, config);
}

NCCL_API(ncclResult_t, ScatterConfig, const void *sendbuff, void *recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t *config)
{
    return call(CALL(SCATTER, "ncclScatterConfig", sendbuff, recvbuff, count, datatype, 0, root),
                comm, stream, config);
}
