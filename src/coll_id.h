/*
 * coll_id.h - which collective an operation is (base layer): the one id that the plans of src/
 * and the cost model of topology/tune.h both speak of. Its name table is plan.c's
 * (tutti__coll_name, plan.h).
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
    TUTTI_COLL_COUNT
} tutti_coll_t;

#endif /* TUTTI_COLL_ID_H */
