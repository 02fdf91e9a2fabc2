/*
 * coll_id.c - the collectives' names (coll_id.h), for messages, fingerprints and reports.
 */
#include "base/coll_id.h"

static const char *const coll_names[TUTTI_COLL_COUNT] = {
    [TUTTI_COLL_ALLREDUCE] = "allreduce",
    [TUTTI_COLL_BROADCAST] = "broadcast",
    [TUTTI_COLL_REDUCE] = "reduce",
    [TUTTI_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [TUTTI_COLL_ALLGATHER] = "allgather",
    [TUTTI_COLL_ALLTOALL] = "alltoall",
    [TUTTI_COLL_SEND] = "send",
    [TUTTI_COLL_RECV] = "recv",
    [TUTTI_COLL_BARRIER] = "barrier",
    [TUTTI_COLL_ALLTOALLV] = "alltoallv",
    [TUTTI_COLL_ALLGATHERV] = "allgatherv",
    [TUTTI_COLL_GATHER] = "gather",
    [TUTTI_COLL_SCATTER] = "scatter",
    [TUTTI_COLL_GATHERV] = "gatherv",
    [TUTTI_COLL_SCATTERV] = "scatterv",
    [TUTTI_COLL_REDUCE_SCATTERV] = "reduce_scatterv",
};

const char *tutti__coll_name(tutti_coll_t coll)
{
    return ((unsigned)coll < TUTTI_COLL_COUNT) ? coll_names[coll] : "unknown";
}
