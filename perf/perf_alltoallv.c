/*
 * perf_alltoallv.c - alltoallv_perf: rank i sends rank j its block of m[i][j] elements (-v: equal,
 * uniform random or Zipf-distributed blocks, perf_vcounts.c), packed in rank order at both ends.
 * Sizes as alltoall_perf (nccl-tests): size is one rank's whole send buffer, which with any skew
 * is also its whole receive buffer, count is the mean block, algbw counts the whole buffer and
 * busbw = algbw * (n-1)/n. The in-place form needs a symmetric matrix (MPI_IN_PLACE's rule, which
 * tutti follows), which skewed ones are not: that half reads N/A, as in nccl-tests' alltoallv.
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

/* Block j came from rank j: the part of its send buffer it meant for this rank. */
static size_t check(const struct perf_call *c)
{
    const struct perf_vcounts *v = c->v;
    struct perf_gen g;
    size_t esz = tutti_datatype_size(c->dt), wrong = 0, n = (size_t)c->nranks;
    perf_call_gen(c, &g);
    for (size_t j = 0; j < n; j++) {
        const size_t *row = v->m + j * n;
        size_t from = 0;
        for (int k = 0; k < c->rank; k++) {
            from += row[k];
        }
        wrong += perf_check_input(&g, (const char *)c->recv + v->rdispls[j] * esz, (int)j, from,
                                  row[c->rank]);
    }
    return wrong;
}

static tutti_status_t run(const struct perf_call *c, tutti_comm_t *comm)
{
    const struct perf_vcounts *v = c->v;
    return tutti_alltoallv(c->send, v->sendcounts, v->sdispls, c->recv, v->recvcounts, v->rdispls,
                           c->dt, comm, NULL);
}

const struct perf_coll perf_alltoallv = {
    .name = "alltoallv",
    .id = PERF_ALLTOALLV,
    .flags = PERF_COLL_NO_INPLACE | PERF_COLL_V | PERF_COLL_VMATRIX,
    .bus_factor = perf_bus_ring,
    .layout = perf_layout_alltoall,
    .fill = perf_fill_own,
    .check = check,
    .run = run,
    .call = {NULL, "tutti_alltoallv, out of place"},
};
