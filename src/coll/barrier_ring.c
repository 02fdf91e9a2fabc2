/*
 * barrier_ring.c - barrier as a one-byte ring all-reduce on one channel: nobody can finish the
 * all-gather pass before every rank has contributed to the reduce-scatter pass. The caller
 * points both buffers at one byte it owns.
 */
#include "coll/coll.h"

int tutti__barrier_ring(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                        struct tutti_plan *plan)
{
    struct tutti_op_desc one = *op;
    one.count = 1;
    one.dt = TUTTI_UINT8;
    one.op = TUTTI_MAX;
    struct tutti_plan_params p = *pp;
    p.nchannels = 1;
    return tutti__allreduce_ring(&one, &p, plan);
}
