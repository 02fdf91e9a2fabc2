/*
 * group.h - tutti_group_start/end: operations recorded per thread and run together.
 */
#ifndef TUTTI_GROUP_H
#define TUTTI_GROUP_H

#include "exec/plan.h"
#include "tutti/status.h"

#include <stdint.h>

struct tutti_comm;

struct tutti_group_op {
    struct tutti_comm *comm;
    uint64_t serial; /* comm's when recorded: the end runs nothing on another comm at its address */
    struct tutti_op_desc op;
    int on_stream; /* goes through stream.c (a stream, or device buffers) */
    void *stream;
    struct tutti_vcounts *owned_v; /* op.v's copy (the caller's arrays may go at once) */
};

/** Record a validated operation in the calling thread's open group. */
tutti_status_t tutti__group_record(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                   int on_stream, void *stream);

/**
 * End the calling thread's group without running it (NCCL's ncclGroupSimulateEnd): the
 * recorded calls are dropped and *time_us_p is the cost model's time for them, summed (each
 * collective as its fastest applicable algorithm, src/coll/tune.c; sends and receives are not
 * modelled and count 0). An inner end only closes its level (*time_us_p = 0).
 * @return TUTTI_OK; TUTTI_ERR_INVALID_USAGE without an open group.
 */
tutti_status_t tutti__group_simulate(double *time_us_p);

#endif /* TUTTI_GROUP_H */
