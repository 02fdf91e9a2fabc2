/*
 * barrier_ring.c - barrier as a one-byte all-reduce: ring (nobody finishes the all-gather pass
 * before every rank has contributed to the reduce-scatter pass) or one-shot (nobody finishes
 * before it has received every rank's byte). The caller points both buffers at a byte it owns.
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

int tutti__barrier_oneshot(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                           struct tutti_plan *plan)
{
    struct tutti_op_desc one = *op;
    one.count = 1;
    one.dt = TUTTI_UINT8;
    one.op = TUTTI_MAX;
    return tutti__allreduce_oneshot(&one, pp, plan);
}
