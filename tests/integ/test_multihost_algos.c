/*
 * test_multihost_algos.c - every algorithm of the catalog forced in turn, on 2 to 4 "hosts"
 * (network namespaces on a bridge, netns.h) with 1 or 2 ranks each, results checked element by
 * element (colls.c: guard zones, untouched inputs, exact results whatever the reduction order).
 *
 * The algorithms come from the catalog itself (tutti__algos, coll/algos.c), not from a list
 * here, so one added later is covered without touching this test. Round k forces, through
 * TUTTI_ALGO (read once per process, so one job of fresh rank processes per round), the k-th
 * algorithm of every collective that has one, e.g. round 0 "allreduce:ring,broadcast:ring,...",
 * and checks each of those collectives at counts 0, 1, 7, 4099 and 70001 (float32: 4099 is four
 * 4 KiB slots and a bit, 70001 is 69 slots on 2 channels), in place and out of place. Where the
 * catalog says a forced algorithm does not apply (the one-hop ones need the count to fit one
 * slot), the call must fail with TUTTI_ERR_INVALID_USAGE and the documented message ("does not
 * apply ... (applicable: ...)") on every rank, and the comm must stay usable. The ranks print
 * how many cases each algorithm checked and how many it refused.
 *
 * Placements: 2 hosts x 1 and x 2 ranks, 3 x 1, 3 hosts with 1, 2, 1 ranks, 4 x 1, 4 x 2, and
 * two interleaved ones (rank r on host r mod H: 2 x 2 and 4 x 2), so that a schedule that
 * follows hosts and one in rank order are both exercised. Shared memory inside a host, TCP
 * across. About 60 s on 2 shared cores. Needs root and ip(8), else skipped saying why.
 */
#include "coll/coll.h"
#include "colls.h"
#include "vcolls.h"
#include "comm/comm.h"
#include "harness.h"
#include "netns.h"
#include "run/run.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct placement {
    int nhosts;
    int per_host[NETNS_MAX_HOSTS];
    int interleaved; /* rank r on host r mod nhosts (equal counts only); else in blocks */
};

static struct placement placements[] = {
    {2, {1, 1}, 0},       {2, {2, 2}, 0},       {3, {1, 1, 1}, 0}, {3, {1, 2, 1}, 0},
    {4, {1, 1, 1, 1}, 0}, {4, {2, 2, 2, 2}, 0}, {2, {2, 2}, 1},    {4, {2, 2, 2, 2}, 1},
};

static const size_t counts[] = {0, 1, 7, 4099, 70001};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* What the ranks of one round get. */
struct round {
    int round;
    int host[INTEG_MAX_RANKS];
};

/* The blockwise collective (vcolls.h) of catalog collective c, or -1. */
static int vkind_of(tutti_coll_t c)
{
    static const int kinds[TUTTI_COLL_COUNT] = {
        [TUTTI_COLL_ALLTOALLV] = VCOLL_ALLTOALLV + 1,
        [TUTTI_COLL_ALLGATHERV] = VCOLL_ALLGATHERV + 1,
        [TUTTI_COLL_GATHER] = VCOLL_GATHER + 1,
        [TUTTI_COLL_SCATTER] = VCOLL_SCATTER + 1,
        [TUTTI_COLL_GATHERV] = VCOLL_GATHERV + 1,
        [TUTTI_COLL_SCATTERV] = VCOLL_SCATTERV + 1,
        [TUTTI_COLL_REDUCE_SCATTERV] = VCOLL_REDUCE_SCATTERV + 1,
    };
    return kinds[c] - 1;
}

/*
 * The blockwise collective c forced to its algorithm a: calls whose every block fits a 4 KiB
 * slot (so the direct variants apply), counts up to 7 (tokens) and 500 elements, in place where
 * the collective has it, over every datatype in turn. Returns the mismatches, -1 on a failure.
 */
static int vcheck_forced(tutti_comm_t *comm, tutti_coll_t c, const struct tutti_algo *a,
                         uint64_t *k)
{
    static const tutti_datatype_t dts[] = {TUTTI_FLOAT32, TUTTI_INT64, TUTTI_BFLOAT16, TUTTI_UINT8,
                                           TUTTI_FLOAT64};
    int bad = 0, kind = vkind_of(c), n = 0;
    (void)tutti_comm_size(comm, &n);
    for (int i = 0; i < 6; i++, (*k)++) {
        struct vcoll_case vc = {.kind = (enum vcoll_kind)kind,
                                .dt = dts[*k % 5],
                                .op = TUTTI_SUM,
                                .inplace = vcoll_has_inplace((enum vcoll_kind)kind) && (i & 1),
                                .maxcount = i < 3 ? 7 : 500,
                                .root = (int)(*k % (uint64_t)n),
                                .seed = 0x7a1ull ^ (*k * 0x9E3779B97F4A7C15ull),
                                .form = (enum vcoll_form)(i % VFORM_NFORMS)};
        int rc = vcoll_check(comm, &vc);
        if (rc < 0) {
            integ_fail("%s forced to %s: the call failed (above)", vcoll_name(vc.kind), a->name);
            return -1;
        }
        bad |= rc;
    }
    return bad;
}

/* The checked collective (colls.h) that runs catalog collective c; -1: covered by another (a
 * receive pairs with the send of COLL_SENDRECV) or blockwise (vcheck_forced). */
static int kind_of(tutti_coll_t c)
{
    static const int kinds[TUTTI_COLL_COUNT] = {
        [TUTTI_COLL_ALLREDUCE] = COLL_ALLREDUCE, [TUTTI_COLL_BROADCAST] = COLL_BROADCAST,
        [TUTTI_COLL_REDUCE] = COLL_REDUCE,       [TUTTI_COLL_REDUCE_SCATTER] = COLL_REDUCE_SCATTER,
        [TUTTI_COLL_ALLGATHER] = COLL_ALLGATHER, [TUTTI_COLL_ALLTOALL] = COLL_ALLTOALL,
        [TUTTI_COLL_SEND] = COLL_SENDRECV,       [TUTTI_COLL_RECV] = -1,
        [TUTTI_COLL_BARRIER] = COLL_BARRIER,
    };
    return c < TUTTI_COLL_ALLTOALLV ? kinds[c] : -1;
}

/* TUTTI_ALGO for round k ("" when no collective has k + 1 algorithms). */
static void round_spec(int k, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        int n = 0;
        const struct tutti_algo *a = tutti__algos((tutti_coll_t)c, &n);
        if (k < n && o + 1 < len) {
            int w = snprintf(buf + o, len - o, "%s%s:%s", o ? "," : "",
                             tutti__coll_name((tutti_coll_t)c), a[k].name);
            o += w > 0 ? (size_t)w : 0;
        }
    }
    cr_assert(o + 1 < len, "TUTTI_ALGO for round %d is too long", k);
}

/* One call of collective c that tutti must refuse: TUTTI_ERR_INVALID_USAGE, and the message
 * names the algorithm and lists the applicable ones. */
static int check_refused(tutti_comm_t *comm, const struct coll_case *cs, const char *algo)
{
    size_t es = tutti_datatype_size(cs->dt), n = cs->count;
    char *in = calloc(n * INTEG_MAX_RANKS + 1, es), *out = calloc(n * INTEG_MAX_RANKS + 1, es);
    ICHECK(in != NULL && out != NULL, "no memory for %zu elements", n * INTEG_MAX_RANKS);
    tutti_status_t st = TUTTI_ERR_INTERNAL;
    tutti_op_t op = TUTTI_SUM;
    int made = 0, rank = 0;
    (void)tutti_comm_rank(comm, &rank);
    if (coll_is_reduction(cs->coll) && coll_op_get(comm, cs, rank, &op, &made) != 0) {
        return 1;
    }
    switch (cs->coll) {
    case COLL_ALLREDUCE:
        st = tutti_allreduce(in, out, n, cs->dt, op, comm, NULL);
        break;
    case COLL_BROADCAST:
        st = tutti_broadcast(in, out, n, cs->dt, cs->root, comm, NULL);
        break;
    case COLL_REDUCE:
        st = tutti_reduce(in, out, n, cs->dt, op, cs->root, comm, NULL);
        break;
    case COLL_REDUCE_SCATTER:
        st = tutti_reduce_scatter(in, out, n, cs->dt, op, comm, NULL);
        break;
    case COLL_ALLGATHER:
        st = tutti_allgather(in, out, n, cs->dt, comm, NULL);
        break;
    case COLL_ALLTOALL:
        st = tutti_alltoall(in, out, n, cs->dt, comm, NULL);
        break;
    default:
        break; /* the others have no algorithm that can fail to apply today */
    }
    if (made) {
        (void)tutti_op_destroy(op, comm);
    }
    free(in);
    free(out);
    const char *msg = tutti_last_error(comm);
    ICHECK(st == TUTTI_ERR_INVALID_USAGE,
           "%s:%s does not apply to %zu elements of %s, but the call returned %s (%s)",
           coll_name(cs->coll), algo, n, tutti_datatype_name(cs->dt), tutti_status_name(st), msg);
    ICHECK(integ_contains(msg, algo) && integ_contains(msg, "does not apply") &&
               integ_contains(msg, "(applicable: "),
           "%s:%s refused at %zu elements with the message '%s', not the documented one",
           coll_name(cs->coll), algo, n, msg);
    return 0;
}

/* Does the forced algorithm a apply to the case, as the library will judge it? */
static int applies(tutti_comm_t *comm, tutti_coll_t c, const struct coll_case *cs,
                   const struct tutti_algo *a)
{
    struct tutti_op_desc op = {.coll = c,
                               .count = cs->coll == COLL_BARRIER ? 0 : cs->count,
                               .dt = cs->coll == COLL_BARRIER ? TUTTI_UINT8 : cs->dt,
                               .op = cs->op,
                               .root = cs->root,
                               .peer = -1};
    struct tutti_plan_params pp;
    tutti__run_plan_params(&comm->run, &op, &pp);
    return a->applies(&op, &pp);
}

static int round_rank(const struct integ_ctx *ctx)
{
    static const tutti_datatype_t dts[] = {TUTTI_FLOAT32, TUTTI_INT32, TUTTI_BFLOAT16,
                                           TUTTI_FLOAT64, TUTTI_UINT8};
    const struct round *rd = ctx->arg;
    tutti_comm_t *comm = NULL;
    if (netns_comm_init(ctx, rd->host, 0, &comm) != 0) {
        return 1;
    }
    int bad = 0;
    uint64_t k = 0;
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        int n = 0, kind = kind_of((tutti_coll_t)c);
        const struct tutti_algo *a = tutti__algos((tutti_coll_t)c, &n);
        if (rd->round >= n) {
            continue;
        }
        a += rd->round;
        if (vkind_of((tutti_coll_t)c) >= 0) {
            int rc = vcheck_forced(comm, (tutti_coll_t)c, a, &k);
            if (rc < 0) {
                return 1;
            }
            bad |= rc;
            if (ctx->rank == 0) {
                fprintf(stderr, "  %s:%s on %d ranks: 6 cases checked\n",
                        tutti__coll_name((tutti_coll_t)c), a->name, ctx->nranks);
            }
            continue;
        }
        if (kind < 0) {
            continue;
        }
        int checked = 0, refused = 0;
        for (size_t ci = 0; ci < NCOUNTS; ci++) {
            for (int ip = 0; ip < (coll_has_inplace((enum coll_kind)kind) ? 2 : 1); ip++, k++) {
                struct coll_case cs = {
                    .coll = (enum coll_kind)kind,
                    /* float32 at the large count: its 4 KiB slots hold 1024 elements */
                    .dt = ci + 1 == NCOUNTS ? TUTTI_FLOAT32 : dts[(ci + (size_t)c) % 5],
                    .op = coll_op_rotate(
                        ci + 1 == NCOUNTS ? TUTTI_FLOAT32 : dts[(ci + (size_t)c) % 5], (unsigned)k),
                    .inplace = ip,
                    .count = counts[ci],
                    .root = (int)(k % (uint64_t)ctx->nranks),
                    .seed = 0x6057ull ^ (k * 0x9E3779B97F4A7C15ull),
                };
                if (applies(comm, (tutti_coll_t)c, &cs, a)) {
                    int rc = coll_check(comm, &cs);
                    if (rc < 0) {
                        return integ_fail("%s forced to %s: the call failed (above)",
                                          coll_name(cs.coll), a->name);
                    }
                    bad |= rc;
                    checked++;
                } else {
                    if (check_refused(comm, &cs, a->name) != 0) {
                        return 1;
                    }
                    refused++;
                }
            }
        }
        if (ctx->rank == 0) {
            fprintf(stderr, "  %s:%s on %d ranks: %d cases checked, %d refused (does not apply)\n",
                    tutti__coll_name((tutti_coll_t)c), a->name, ctx->nranks, checked, refused);
        }
    }
    coll_free_buffers();
    ICHECK_OKC(tutti_barrier(comm, NULL), comm); /* usable after every refusal */
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

ParameterizedTestParameters(multihost_algos, every_algorithm_forced)
{
    return cr_make_param_array(struct placement, placements,
                               sizeof(placements) / sizeof(placements[0]));
}

static void teardown(void)
{
    netns_teardown();
}

ParameterizedTest(struct placement *pl, multihost_algos, every_algorithm_forced, .fini = teardown,
                  .timeout = 280)
{
    struct round rd = {0};
    int nranks = 0;
    char where[128] = "";
    for (int h = 0; h < pl->nhosts; h++) {
        nranks += pl->per_host[h];
        snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%d", h ? "," : "",
                 pl->per_host[h]);
    }
    for (int r = 0, h = 0, used = 0; r < nranks; r++) {
        if (pl->interleaved) {
            rd.host[r] = r % pl->nhosts;
            continue;
        }
        while (used == pl->per_host[h]) {
            h++;
            used = 0;
        }
        rd.host[r] = h;
        used++;
    }
    netns_setup(pl->nhosts);
    integ_setenv("TUTTI_TRANSPORT", "auto");
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_setenv("TUTTI_SOCKET_IFNAME", NULL);
    integ_setenv("TUTTI_TUNER", NULL);
    integ_setenv("TUTTI_LOG_LEVEL", "error"); /* the refusals are warnings */
    integ_setenv("TUTTI_SHM_SLOT_SIZE", "4k");
    integ_setenv("TUTTI_TCP_SLOT_SIZE", "4k");
    integ_setenv("TUTTI_NCHANNELS", "2");
    char spec[512];
    for (rd.round = 0;; rd.round++) {
        round_spec(rd.round, spec, sizeof(spec));
        if (spec[0] == '\0') {
            break;
        }
        fprintf(stderr, "%d hosts with %s ranks%s, round %d: TUTTI_ALGO=%s\n", pl->nhosts, where,
                pl->interleaved ? " (interleaved)" : "", rd.round, spec);
        integ_setenv("TUTTI_ALGO", spec);
        struct integ_opts o = {
            .nranks = nranks,
            .deadline_s = 120,
            .shared_bytes = sizeof(struct netns_shared),
            .arg = &rd,
        };
        integ_run(&o, round_rank);
    }
    cr_assert(rd.round >= 2, "the catalog has one algorithm per collective only?");
}
