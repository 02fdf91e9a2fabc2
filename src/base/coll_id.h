/*
 * coll_id.h - which collective an operation is (base layer): the one id that the plans of src/
 * and the cost model of coll/tune.h both speak of, and its name (coll_id.c). Also the one
 * internal reduction op that the public enum lacks.
 */
#ifndef TUTTI_COLL_ID_H
#define TUTTI_COLL_ID_H

typedef enum {
    TUTTI_COLL_ALLREDUCE,
    TUTTI_COLL_BROADCAST,
    TUTTI_COLL_REDUCE,
    TUTTI_COLL_REDUCE_SCATTER,
    TUTTI_COLL_ALLGATHER,
    TUTTI_COLL_ALLTOALL,
    TUTTI_COLL_SEND,
    TUTTI_COLL_RECV,
    TUTTI_COLL_BARRIER,
    /* gather, scatter and the variable-size collectives (numbered after the first nine, which
     * the fingerprint's wire form already used) */
    TUTTI_COLL_ALLTOALLV,
    TUTTI_COLL_ALLGATHERV,
    TUTTI_COLL_GATHER,
    TUTTI_COLL_SCATTER,
    TUTTI_COLL_GATHERV,
    TUTTI_COLL_SCATTERV,
    TUTTI_COLL_REDUCE_SCATTERV,
    TUTTI_COLL_COUNT
} tutti_coll_t;

/*
 * A pre-multiplied sum as a call carries it once validated: the public op values are
 * tutti_op_t's and the communicator's handles (TUTTI_OP_DYNAMIC_FIRST up); a call with a handle
 * is given this op and the handle's scalar (struct tutti_op_desc), so that plans, fingerprints
 * and kernels see one value, whichever handle of whichever rank made it.
 */
#define TUTTI_OP_PREMUL ((int)TUTTI_NUM_OPS)

/** Name of a collective ("allreduce"; "unknown" out of range). */
const char *tutti__coll_name(tutti_coll_t coll);

#endif /* TUTTI_COLL_ID_H */
