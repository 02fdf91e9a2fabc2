/*
 * op.c - facts about one operation (op.h).
 */
#include "exec/op.h"
#include "comm/comm.h"

void tutti__op_extents(const struct tutti_comm *comm, const struct tutti_op_desc *op,
                       size_t *send_bytes_p, size_t *recv_bytes_p)
{
    size_t b = op->count * tutti_datatype_size(op->dt);
    size_t n = (size_t)comm->nranks;
    size_t s = b, r = b;
    switch (op->coll) {
    case TUTTI_COLL_REDUCE_SCATTER:
        s = b * n;
        break;
    case TUTTI_COLL_ALLGATHER:
        r = b * n;
        break;
    case TUTTI_COLL_ALLTOALL:
        s = r = b * n;
        break;
    case TUTTI_COLL_BROADCAST:
        s = (op->root == comm->rank) ? b : 0;
        break;
    case TUTTI_COLL_REDUCE:
        r = (op->root == comm->rank) ? b : 0;
        break;
    case TUTTI_COLL_SEND:
        r = 0;
        break;
    case TUTTI_COLL_RECV:
        s = 0;
        break;
    case TUTTI_COLL_BARRIER:
        s = r = 0;
        break;
    default:
        break;
    }
    *send_bytes_p = s;
    *recv_bytes_p = r;
}

void tutti__op_bind_barrier(struct tutti_op_desc *op, uint8_t *byte)
{
    if (op->coll == TUTTI_COLL_BARRIER) {
        op->sendbuf = byte;
        op->recvbuf = byte;
    }
}
