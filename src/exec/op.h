/*
 * op.h - facts about one operation that every layer asks: how many bytes it reads and writes
 * on this rank, and where a barrier's one byte goes.
 */
#ifndef TUTTI_OP_H
#define TUTTI_OP_H

#include "exec/plan.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_comm;

/** Bytes read from sendbuf and written to recvbuf by op on this rank (after validation). */
void tutti__op_extents(const struct tutti_comm *comm, const struct tutti_op_desc *op,
                       size_t *send_bytes_p, size_t *recv_bytes_p);

/**
 * A barrier runs as a one-byte exchange: point op's buffers at byte, which must outlive the
 * operation's execution. Other operations are left as they are.
 */
void tutti__op_bind_barrier(struct tutti_op_desc *op, uint8_t *byte);

#endif /* TUTTI_OP_H */
