/*
 * test_collectives.c - every collective on real processes over real transports, checked
 * element by element against an independent reference (colls.c).
 *
 * Each collective is a ParameterizedTest over the 12 configurations (shared memory, TCP) x
 * nranks {1, 2, 3, 4, 5, 8}: the test process makes a unique id, forks the ranks, and each rank
 * runs the collective's sweep: every datatype x every op (reductions) x in-place and
 * out-of-place (where NCCL defines in-place) x counts {0, 1, 7, 4099, 1M+3}. Roots of broadcast
 * and reduce rotate with every call, so every root is used. Every rank checks its whole output,
 * the guard zones around every buffer, that out-of-place inputs are unchanged, and that a
 * non-root's reduce buffer is untouched. A NULL buffer where the API allows one (non-root) is
 * exercised on every other call.
 *
 * Budget (principled reduction): the small counts run the full product. At 1M+3 elements each
 * datatype runs once per collective, and twice for the reductions: with SUM and with an op that
 * rotates with the datatype (PROD, MIN, MAX, AVG in turn: every op meets several datatypes at
 * 1M+3); in-place and out-of-place alternate with the datatype: 140 calls at 1M+3 per
 * configuration instead of the full product's 504. Those calls dominate the run time (the
 * reference costs O(nranks) per element on every rank, so O(nranks^2) per configuration): the
 * whole file took 2.5 to 4 minutes on 2 shared cores, where the full product would take about
 * 3.5 times as long, beyond the suite's 10 minutes. The large count is the one that crosses
 * slot, chunk and channel boundaries and wraps the FIFOs; 4099 already takes every datatype x op
 * through every per-element code path.
 *
 * Also: all-reduce results are bitwise identical on every rank for random float32/bfloat16
 * inputs whose sums depend on the order (each rank all-gathers a hash of its output); and the
 * barrier holds every rank until the last one arrived (counted in shared memory).
 */
#include "colls.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIG_COUNT    ((size_t)(1u << 20) + 3)
#define TEST_TIMEOUT 290 /* Criterion's limit per test, s */
#define JOB_DEADLINE 270 /* the harness kills the ranks before that, and says "hang" */

static const size_t counts[] = {0, 1, 7, 4099, BIG_COUNT};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

struct config {
    int tcp;
    int nranks;
};

static struct config configs[] = {
    {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {0, 8}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 8},
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

struct sweep_arg {
    enum coll_kind coll;
};

/* Which cases run at BIG_COUNT: see the file header. */
static int big_selected(enum coll_kind coll, tutti_datatype_t dt, tutti_op_t op, int inplace)
{
    int want_inplace = coll_has_inplace(coll) ? (int)dt & 1 : 0;
    if (inplace != want_inplace) {
        return 0;
    }
    if (!coll_is_reduction(coll)) {
        return 1;
    }
    /* SUM, and an op other than SUM that turns with the datatype among those that apply */
    tutti_op_t rotating = coll_op_rotate(dt, 1 + (unsigned)dt);
    rotating = rotating == TUTTI_SUM ? coll_op_rotate(dt, 2 + (unsigned)dt) : rotating;
    return op == TUTTI_SUM || op == rotating;
}

static uint64_t case_seed(enum coll_kind coll, size_t n)
{
    return ((uint64_t)coll << 56) ^ (n * 0x9E3779B97F4A7C15ull) ^ 0x1234567ull;
}

/* One rank of a sweep; counts the mismatches and stops at the first failed call. */
static int sweep_rank(const struct integ_ctx *ctx)
{
    const struct sweep_arg *a = ctx->arg;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int nops = coll_is_reduction(a->coll) ? COLL_NUM_OPS : 1;
    int ninplace = coll_has_inplace(a->coll) ? 2 : 1;
    int bad = 0;
    size_t ncalls = 0;
    for (size_t ci = 0; ci < NCOUNTS; ci++) {
        for (int dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
            for (int op = 0; op < nops; op++) {
                for (int ip = 0; ip < ninplace; ip++) {
                    if ((counts[ci] == BIG_COUNT &&
                         !big_selected(a->coll, (tutti_datatype_t)dt, (tutti_op_t)op, ip)) ||
                        (coll_is_reduction(a->coll) &&
                         !coll_op_applies((tutti_datatype_t)dt, (tutti_op_t)op))) {
                        continue;
                    }
                    struct coll_case c = {
                        .coll = a->coll,
                        .dt = (tutti_datatype_t)dt,
                        .op = (tutti_op_t)op,
                        .inplace = ip,
                        .count = counts[ci],
                        .root = (int)(ncalls % (size_t)ctx->nranks),
                        .seed = case_seed(a->coll, ncalls),
                    };
                    ncalls++;
                    int rc = coll_check(comm, &c);
                    if (rc < 0) {
                        return 1; /* the call failed: the comm is not usable any more */
                    }
                    bad |= rc;
                }
            }
        }
    }
    coll_free_buffers();
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

static void set_transport(const struct config *cfg)
{
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "shm");
    /* A stall becomes an error naming whom a rank waited for, well before the deadline. */
    integ_setenv("TUTTI_TIMEOUT", "60s");
}

static void run_sweep(const struct config *cfg, enum coll_kind coll)
{
    set_transport(cfg);
    struct sweep_arg a = {coll};
    struct integ_opts o = {
        .nranks = cfg->nranks, .deadline_s = JOB_DEADLINE, .make_id = 1, .arg = &a};
    integ_run(&o, sweep_rank);
}

#define COLL_MATRIX(suite, kind)                                                                   \
    ParameterizedTestParameters(suite, matrix)                                                     \
    {                                                                                              \
        return cr_make_param_array(struct config, configs, NCONFIGS);                              \
    }                                                                                              \
    ParameterizedTest(struct config *cfg, suite, matrix, .timeout = TEST_TIMEOUT)                  \
    {                                                                                              \
        cr_log_info("%s over %s, %d rank(s)", #suite, cfg->tcp ? "tcp" : "shm", cfg->nranks);      \
        run_sweep(cfg, kind);                                                                      \
    }

COLL_MATRIX(allreduce, COLL_ALLREDUCE)
COLL_MATRIX(broadcast, COLL_BROADCAST)
COLL_MATRIX(reduce, COLL_REDUCE)
COLL_MATRIX(reduce_scatter, COLL_REDUCE_SCATTER)
COLL_MATRIX(allgather, COLL_ALLGATHER)
COLL_MATRIX(alltoall, COLL_ALLTOALL)
COLL_MATRIX(sendrecv, COLL_SENDRECV)

/* ---------------------------------------------------------------- barrier */

#define BARRIER_ROUNDS 20

/* Round k: one rank (k % nranks) arrives late; nobody may leave before it has arrived. */
static int barrier_rank(const struct integ_ctx *ctx)
{
    _Atomic int *arrived = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    for (int k = 0; k < BARRIER_ROUNDS; k++) {
        if (k % ctx->nranks == ctx->rank) {
            /* Late on purpose, so that a barrier that lets ranks through early is caught. */
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        atomic_fetch_add(&arrived[k], 1);
        ICHECK_OK(tutti_barrier(comm, NULL));
        int seen = atomic_load(&arrived[k]);
        ICHECK(seen == ctx->nranks, "barrier round %d: left it when %d of %d ranks had arrived", k,
               seen, ctx->nranks);
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

ParameterizedTestParameters(barrier, matrix)
{
    return cr_make_param_array(struct config, configs, NCONFIGS);
}

ParameterizedTest(struct config *cfg, barrier, matrix, .timeout = 60)
{
    set_transport(cfg);
    integ_run_ranks(cfg->nranks, barrier_rank, NULL, BARRIER_ROUNDS * sizeof(_Atomic int));
}

/* ---------------------------------------------------------------- bitwise identity */

/*
 * Random float32 and bfloat16 values of mixed magnitudes: the rounded sum depends on the order
 * of the additions, so only an implementation that reduces each element once and distributes
 * that result gives every rank the same bits. Each rank all-gathers the hash of its output.
 */
static int identical_rank(const struct integ_ctx *ctx)
{
    static const tutti_datatype_t dts[] = {TUTTI_FLOAT32, TUTTI_BFLOAT16};
    static const tutti_op_t ops[] = {TUTTI_SUM, TUTTI_AVG};
    static const size_t ns[] = {4099, BIG_COUNT};
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    uint64_t hashes[INTEG_MAX_RANKS];
    void *in = malloc(BIG_COUNT * 4), *out = malloc(BIG_COUNT * 4);
    ICHECK(in != NULL && out != NULL, "out of memory");
    int bad = 0;
    for (size_t d = 0; d < 2; d++) {
        for (size_t o = 0; o < 2; o++) {
            for (size_t k = 0; k < 2; k++) {
                uint64_t seed = 77 + 10 * d + 3 * o + k;
                coll_fill_random_float(dts[d], in, ns[k], seed, ctx->rank);
                ICHECK_OK(tutti_allreduce(in, out, ns[k], dts[d], ops[o], comm, NULL));
                uint64_t h = coll_hash(out, ns[k] * tutti_datatype_size(dts[d]));
                ICHECK_OK(tutti_allgather(&h, hashes, 1, TUTTI_UINT64, comm, NULL));
                for (int r = 0; r < ctx->nranks; r++) {
                    if (hashes[r] != hashes[0]) {
                        bad = integ_fail("allreduce %s %s count %zu: output of rank %d (hash "
                                         "%016llx) differs from rank 0's (%016llx)",
                                         tutti_datatype_name(dts[d]), tutti_op_name(ops[o]), ns[k],
                                         r, (unsigned long long)hashes[r],
                                         (unsigned long long)hashes[0]);
                        break;
                    }
                }
            }
        }
    }
    free(in);
    free(out);
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

ParameterizedTestParameters(allreduce_identical, matrix)
{
    return cr_make_param_array(struct config, configs, NCONFIGS);
}

ParameterizedTest(struct config *cfg, allreduce_identical, matrix, .timeout = 120)
{
    set_transport(cfg);
    struct integ_opts o = {.nranks = cfg->nranks, .deadline_s = 100, .make_id = 1};
    integ_run(&o, identical_rank);
}
