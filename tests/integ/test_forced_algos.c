/*
 * test_forced_algos.c - the algorithms that run only when TUTTI_ALGO forces them (double binary
 * trees, recursive doubling, Rabenseifner, Bruck) on real processes over real transports,
 * checked element by element like test_collectives.c (colls.c: every datatype x every op x in
 * place and out of place, guard zones, untouched inputs, non-root reduce buffers, NULL where the
 * API allows it).
 *
 * Matrix: shared memory and TCP x nranks 1..8 x three TUTTI_ALGO settings (the trees and Bruck
 * together, then rd, then rabenseifner). Slots of 4 KiB and 2 channels make counts {0, 1, 7,
 * 4099} cross chunk, channel and FIFO-wrap boundaries (4099 eight-byte elements are 8 chunks,
 * a whole FIFO); one larger count (70001) runs for float32 and int64 sums. Inputs are exact in
 * any order (colls.c), so results must match the reference exactly whatever the reduction
 * order. About 40 s on 2 shared cores.
 */
#include "colls.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>

static const size_t counts[] = {0, 1, 7, 4099, 70001};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* The collectives each TUTTI_ALGO setting forces. */
static const struct variant {
    const char *algo;
    enum coll_kind colls[6];
    int ncolls;
} variants[] = {
    {"allreduce:tree,broadcast:tree,reduce:tree,allgather:bruck,alltoall:bruck",
     {COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE, COLL_ALLGATHER, COLL_ALLTOALL},
     5},
    {"allreduce:rd", {COLL_ALLREDUCE}, 1},
    {"allreduce:rabenseifner", {COLL_ALLREDUCE}, 1},
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

struct config {
    int tcp;
    int nranks;
    int variant;
};

#define NCONFIGS (2 * 8 * NVARIANTS)
static struct config configs[NCONFIGS];

/* The large count only for a couple of cheap cases; the small ones for everything. */
static int selected(size_t count, tutti_datatype_t dt, tutti_op_t op)
{
    return count < 70001 || (op == TUTTI_SUM && (dt == TUTTI_FLOAT32 || dt == TUTTI_INT64));
}

static int forced_rank(const struct integ_ctx *ctx)
{
    const struct variant *v = &variants[*(const int *)ctx->arg];
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int bad = 0;
    size_t ncalls = 0;
    for (int k = 0; k < v->ncolls; k++) {
        enum coll_kind coll = v->colls[k];
        int nops = coll_is_reduction(coll) ? COLL_NUM_OPS : 1;
        int ninplace = coll_has_inplace(coll) ? 2 : 1;
        for (size_t ci = 0; ci < NCOUNTS; ci++) {
            for (int dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
                for (int op = 0; op < nops; op++) {
                    for (int ip = 0; ip < ninplace; ip++) {
                        if (!selected(counts[ci], (tutti_datatype_t)dt,
                                      coll_is_reduction(coll) ? (tutti_op_t)op : TUTTI_SUM) ||
                            (coll_is_reduction(coll) &&
                             !coll_op_applies((tutti_datatype_t)dt, (tutti_op_t)op))) {
                            continue;
                        }
                        struct coll_case c = {.coll = coll,
                                              .dt = (tutti_datatype_t)dt,
                                              .op = (tutti_op_t)op,
                                              .inplace = ip,
                                              .count = counts[ci]};
                        int rc = coll_check_nth(comm, ctx->nranks, c, &ncalls, 0xa160ull);
                        if (rc < 0) {
                            return 1;
                        }
                        bad |= rc;
                    }
                }
            }
        }
    }
    coll_free_buffers();
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

ParameterizedTestParameters(forced, matrix)
{
    size_t i = 0;
    for (int tcp = 0; tcp < 2; tcp++) {
        for (int n = 1; n <= 8; n++) {
            for (int v = 0; v < (int)NVARIANTS; v++) {
                configs[i++] = (struct config){tcp, n, v};
            }
        }
    }
    return cr_make_param_array(struct config, configs, NCONFIGS);
}

ParameterizedTest(struct config *cfg, forced, matrix, .timeout = 120)
{
    cr_log_info("TUTTI_ALGO=%s over %s, %d rank(s)", variants[cfg->variant].algo,
                cfg->tcp ? "tcp" : "shm", cfg->nranks);
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "60s");
    integ_setenv("TUTTI_ALGO", variants[cfg->variant].algo);
    integ_setenv("TUTTI_SHM_SLOT_SIZE", "4k");
    integ_setenv("TUTTI_TCP_SLOT_SIZE", "4k");
    integ_setenv("TUTTI_NCHANNELS", "2");
    struct integ_opts o = {
        .nranks = cfg->nranks, .deadline_s = 100, .make_id = 1, .arg = &cfg->variant};
    integ_run(&o, forced_rank);
}
