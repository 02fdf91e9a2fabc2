/*
 * test_vcollectives.c - gather, scatter and the variable-size collectives on real processes
 * over shared memory and TCP, every rank count 2..9, checked completely by vcolls.c: random
 * count vectors with zeros and displacements with gaps in shuffled order, every datatype, every
 * op of reduce_scatterv (the pre-multiplied sum and the bitwise ops included), in place and out
 * of place, blocking, asynchronous and grouped (the count arrays overwritten as soon as the call
 * returns), roots turning with every call. Counts up to 7 (tokens for the empty blocks, one frame
 * each), up to 3000 (a frame each) and, for a few datatypes, up to 300000 (blocks of many
 * chunks over several channels).
 */
#include "colls.h"
#include "harness.h"
#include "vcolls.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>

#define TEST_TIMEOUT 280
#define JOB_DEADLINE 260

struct config {
    int tcp;
    int nranks;
};

static struct config configs[16];

static struct config *all_configs(size_t *n)
{
    for (int i = 0; i < 16; i++) {
        configs[i] = (struct config){i >= 8, 2 + i % 8};
    }
    *n = 16;
    return configs;
}

/* One call of the sweep, counted into the seed so every call differs. */
static int one(tutti_comm_t *comm, int n, struct vcoll_case c, unsigned *k)
{
    c.root = (int)(*k % (unsigned)n);
    c.seed = 0x5eedull * (*k + 1) ^ ((uint64_t)c.kind << 40);
    c.form = (enum vcoll_form)(*k % VFORM_NFORMS);
    ++*k;
    return vcoll_check(comm, &c);
}

static int sweep_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int bad = 0;
    unsigned k = 0;
    for (int kind = 0; kind < VCOLL_NKINDS; kind++) {
        for (int dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
            int nops = kind == VCOLL_REDUCE_SCATTERV ? COLL_NUM_OPS : 1;
            for (int op = 0; op < nops; op++) {
                if (kind == VCOLL_REDUCE_SCATTERV &&
                    !coll_op_applies((tutti_datatype_t)dt, (tutti_op_t)op)) {
                    continue;
                }
                struct vcoll_case c = {.kind = (enum vcoll_kind)kind,
                                       .dt = (tutti_datatype_t)dt,
                                       .op = (tutti_op_t)op,
                                       .inplace = vcoll_has_inplace((enum vcoll_kind)kind) &&
                                                  ((dt + op) & 1),
                                       .maxcount = 7};
                int rc = one(comm, ctx->nranks, c, &k);
                if (rc == 0 && op == 0) {
                    c.maxcount = 3000;
                    c.inplace = vcoll_has_inplace(c.kind) && !c.inplace;
                    rc = one(comm, ctx->nranks, c, &k);
                }
                if (rc == 0 && op == 0 && (dt == TUTTI_FLOAT32 || dt == TUTTI_UINT8)) {
                    c.maxcount = 300000;
                    rc = one(comm, ctx->nranks, c, &k);
                }
                if (rc < 0) {
                    return 1; /* the call failed: the comm is not usable any more */
                }
                bad |= rc;
            }
        }
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

ParameterizedTestParameters(vcollectives, sweep)
{
    size_t n = 0;
    struct config *c = all_configs(&n);
    return cr_make_param_array(struct config, c, n);
}

ParameterizedTest(struct config *cfg, vcollectives, sweep, .timeout = TEST_TIMEOUT)
{
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "60s");
    struct integ_opts o = {.nranks = cfg->nranks, .deadline_s = JOB_DEADLINE, .make_id = 1};
    integ_run(&o, sweep_rank);
}

/* alltoallv forced to its Bruck variant (two phases: the counts all-gathered, then packed
 * rounds where every round's frame fits a slot, else pairwise): the same checks, small blocks
 * (Bruck's rounds) and large ones (the pairwise fallback), every datatype, every form. */
static int bruck_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int bad = 0;
    unsigned k = 0;
    for (int dt = 0; dt < TUTTI_NUM_DATATYPES; dt++) {
        for (int big = 0; big < 2; big++) {
            struct vcoll_case c = {.kind = VCOLL_ALLTOALLV,
                                   .dt = (tutti_datatype_t)dt,
                                   .inplace = (dt + big) & 1,
                                   .maxcount = big ? 100000 : 9};
            int rc = one(comm, ctx->nranks, c, &k);
            if (rc < 0) {
                return 1;
            }
            bad |= rc;
        }
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

ParameterizedTestParameters(vcollectives, alltoallv_bruck)
{
    size_t n = 0;
    struct config *c = all_configs(&n);
    return cr_make_param_array(struct config, c, n);
}

ParameterizedTest(struct config *cfg, vcollectives, alltoallv_bruck, .timeout = TEST_TIMEOUT)
{
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "shm");
    integ_setenv("TUTTI_TIMEOUT", "60s");
    integ_setenv("TUTTI_ALGO", "alltoallv:bruck");
    struct integ_opts o = {.nranks = cfg->nranks, .deadline_s = JOB_DEADLINE, .make_id = 1};
    integ_run(&o, bruck_rank);
}
