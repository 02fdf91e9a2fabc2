/*
 * enqueue.c - validation of every operation's arguments (clear TUTTI_ERR_INVALID_ARG naming
 * the argument: NULL buffers, datatypes, ops, roots, peers, size overflow, overlapping buffers
 * that are not NCCL's in-place forms) and the dispatch to a group, the queue, a CUDA stream
 * (stream.c) or the engine.
 */
#include "api/enqueue.h"
#include "api/vcheck.h"
#include "base/check.h"
#include "comm/premul.h"
#include "kernels/reduce.h"
#include "comm/comm.h"
#include "exec/fail.h"
#include "base/global.h"
#include "comm/group.h"
#include "run/request.h"
#include "gpu/ipc.h"
#include "exec/op.h"
#include "gpu/stream.h"
#include "base/util.h"

#include <stdint.h>

/* Overflow of count * size * nranks. */
static tutti_status_t check_sizes(struct tutti_comm *comm, const struct tutti_op_desc *op)
{
    size_t es = tutti_datatype_size(op->dt), b, total;
    int many = op->coll == TUTTI_COLL_REDUCE_SCATTER || op->coll == TUTTI_COLL_ALLGATHER ||
               op->coll == TUTTI_COLL_ALLTOALL;
    if (tutti__mul_size(op->count, es, &b) != 0 ||
        (many && tutti__mul_size(b, (size_t)comm->fab.nranks, &total) != 0) ||
        b > (SIZE_MAX >> 2)) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: count %zu of %s overflows the address space",
                                tutti__coll_name(op->coll), op->count, tutti_datatype_name(op->dt));
    }
    return TUTTI_OK;
}

/* Is the overlap of [s, s+sl) and [r, r+rl) allowed? NCCL's in-place forms only. */
static tutti_status_t check_overlap(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                    size_t sl, size_t rl)
{
    if (!tutti__ranges_overlap(op->sendbuf, sl, op->recvbuf, rl)) {
        return TUTTI_OK;
    }
    uintptr_t s = (uintptr_t)op->sendbuf, r = (uintptr_t)op->recvbuf;
    size_t b = op->count * tutti_datatype_size(op->dt);
    uintptr_t me = (uintptr_t)comm->fab.rank * b;
    int ok = 0;
    switch (op->coll) {
    case TUTTI_COLL_ALLREDUCE:
    case TUTTI_COLL_BROADCAST:
    case TUTTI_COLL_REDUCE:
    case TUTTI_COLL_ALLTOALL:
        ok = (s == r);
        break;
    case TUTTI_COLL_REDUCE_SCATTER:
        ok = (r == s + me);
        break;
    case TUTTI_COLL_ALLGATHER:
        ok = (s == r + me);
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: sendbuf and recvbuf overlap without being in place (see "
                                "tutti/coll.h for the in-place forms)",
                                tutti__coll_name(op->coll));
    }
    return TUTTI_OK;
}

/* The op of a reduction: a tutti_op_t that applies to the datatype, or one of comm's
 * pre-multiplied sums (made TUTTI_OP_PREMUL with its scalar here). */
static tutti_status_t check_op(struct tutti_comm *comm, struct tutti_op_desc *op, const char *name)
{
    int handle = (int)op->op >= TUTTI_OP_DYNAMIC_FIRST;
    TUTTI_CHECK(tutti__premul_resolve(comm, op));
    if (handle) {
        return TUTTI_OK; /* the handle's datatype is the call's, and never bool */
    }
    if ((unsigned)op->op >= TUTTI_NUM_OPS) { /* TUTTI_OP_PREMUL included: only a handle's */
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: op %d is not a tutti_op_t", name, (int)op->op);
    }
    if (!tutti__reduce_supported(op->dt, op->op)) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: op %s does not apply to %s%s", name, tutti_op_name(op->op),
                                tutti_datatype_name(op->dt),
                                op->dt == TUTTI_BOOL ? "" : " (bitwise ops need an integer type)");
    }
    return TUTTI_OK;
}

tutti_status_t tutti__op_validate(struct tutti_comm *comm, struct tutti_op_desc *op,
                                  struct tutti_vcounts *v)
{
    const char *name = tutti__coll_name(op->coll);
    if (comm == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s: comm is NULL", name);
    }
    tutti__tls.rank = comm->fab.rank;
    if ((unsigned)op->dt >= TUTTI_NUM_DATATYPES) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: datatype %d is not a tutti_datatype_t", name, (int)op->dt);
    }
    if (tutti__coll_reduces(op->coll)) {
        TUTTI_CHECK(check_op(comm, op, name));
    }
    if (tutti__coll_rooted(op->coll) && (op->root < 0 || op->root >= comm->fab.nranks)) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: root %d is not a rank of this communicator (0..%d)", name,
                                op->root, comm->fab.nranks - 1);
    }
    if ((op->coll == TUTTI_COLL_SEND || op->coll == TUTTI_COLL_RECV) &&
        (op->peer < 0 || op->peer >= comm->fab.nranks)) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: peer %d is not a rank of this communicator (0..%d)", name,
                                op->peer, comm->fab.nranks - 1);
    }
    int blockwise = tutti__coll_is_blockwise(op->coll);
    if (blockwise) {
        TUTTI_CHECK(tutti__vcheck(comm, op, v));
    } else {
        TUTTI_CHECK(check_sizes(comm, op));
    }
    size_t sl, rl;
    tutti__op_extents(&comm->fab, op, &sl, &rl);
    if (sl > 0 && op->sendbuf == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: %s is NULL with %zu bytes to send", name,
                                op->coll == TUTTI_COLL_SEND ? "buf" : "sendbuf", sl);
    }
    if (rl > 0 && op->recvbuf == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: %s is NULL with %zu bytes to receive", name,
                                op->coll == TUTTI_COLL_RECV ? "buf" : "recvbuf", rl);
    }
    return blockwise ? TUTTI_OK : check_overlap(comm, op, sl, rl); /* vcheck did it */
}

/* The call on a communicator it has entered (tutti__enqueue). */
static tutti_status_t enqueue_entered(struct tutti_comm *comm, const struct tutti_op_desc *call,
                                      void *stream, tutti_request_t **req_p)
{
    /* Validation completes the call's description: a copy of it and of its counts' struct
     * (the arrays stay the caller's: whatever outlives this call copies them). */
    struct tutti_op_desc d = *call, *op = &d;
    struct tutti_vcounts v;
    if (call->v != NULL) {
        v = *call->v;
        d.v = &v;
    }
    TUTTI_CHECK(tutti__op_validate(comm, op, call->v != NULL ? &v : NULL));
    int on_stream = 0;
    TUTTI_CHECK(tutti__stream_wanted(&comm->gpu, op, stream, &on_stream));
    if (on_stream && req_p != NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_UNSUPPORTED,
                                "i%s: device buffers need the stream form (tutti_%s with a "
                                "stream), which is asynchronous already",
                                tutti__coll_name(op->coll), tutti__coll_name(op->coll));
    }
    if (tutti__tls.group_depth > 0) {
        if (req_p != NULL) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_USAGE,
                                    "%s: asynchronous calls are not allowed inside a group",
                                    tutti__coll_name(op->coll));
        }
        return tutti__group_record(comm, op, on_stream, stream);
    }
    if ((op->coll == TUTTI_COLL_SEND || op->coll == TUTTI_COLL_RECV) &&
        op->peer == comm->fab.rank) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_USAGE,
                                "%s to itself outside a group would wait forever; pair it with "
                                "its %s inside tutti_group_start/end",
                                tutti__coll_name(op->coll),
                                op->coll == TUTTI_COLL_SEND ? "recv" : "send");
    }
    tutti__ipc_check(&comm->gpu);
    tutti_status_t st = tutti__fabric_health(&comm->fab);
    if (st != TUTTI_OK) {
        return tutti__set_error_quiet(NULL, st, "%s on a communicator that failed earlier: %s",
                                      tutti__coll_name(op->coll), tutti_last_error(comm));
    }
    if (on_stream) {
        return tutti__stream_enqueue(&comm->gpu, op, 1, stream); /* numbers each piece it makes */
    }
    tutti__fp_issue(&comm->fab, &d); /* issued now: its place among the ranks' calls is fixed */
    if (req_p != NULL) {
        return tutti__submit(&comm->run, &d, req_p);
    }
    return tutti__run_blocking(&comm->run, &d);
}

tutti_status_t tutti__enqueue_async(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                    tutti_request_t **req_p)
{
    if (req_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "i%s: req_p is NULL",
                                tutti__coll_name(op->coll));
    }
    return tutti__enqueue(comm, op, NULL, req_p);
}

tutti_status_t tutti__enqueue(struct tutti_comm *comm, const struct tutti_op_desc *op, void *stream,
                              tutti_request_t **req_p)
{
    if (comm == NULL) {
        struct tutti_op_desc d = *op;
        return tutti__op_validate(comm, &d, NULL); /* the error naming comm */
    }
    /* A destroyed or aborted handle is refused before anything reads it; a live one counts in
     * state.inflight for the whole call, so that tutti_comm_abort waits for it. */
    if (tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, tutti__coll_name(op->coll));
    }
    tutti_status_t st = enqueue_entered(comm, op, stream, req_p);
    tutti__comm_leave(comm);
    return st;
}
