/*
 * tutti_perf.c - the tutti side of the perf tools: how ranks start and the backend that runs
 * the benchmark loop over a tutti communicator.
 *
 * Ranks: with -N the tool forks that many local ranks, which join through a unique id made
 * before the fork (the parent serves the bootstrap root and waits). Without -N, under a launcher
 * (TUTTI_RANK, torchrun, mpirun, srun) every process is one rank of tutti_comm_init_env();
 * otherwise the tool forks one rank, like nccl-tests' single-GPU default.
 * A failing call aborts the communicator, so the other ranks fail at once instead of waiting.
 */
#include "tutti_perf.h"
#include "perf_data.h"
#include "base/env.h"
#include "tools/local_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tutti_ctx {
    tutti_comm_t *comm; /* NULL once aborted */
    const char *tool;
    void *reg[2];           /* --register 1: the buffers' registrations */
    tutti_window_t *win[2]; /* --register 2: their windows; 3: win[0], over aside */
    void *aside;            /* --register 3: a block of its own, registered beside the buffers */
    /* -o premulsum: the op made for each datatype on first use (0: not yet) */
    tutti_op_t premul[TUTTI_NUM_DATATYPES];
};

/* Report a failed call with tutti's message, then abort so the peers fail too. */
static int failed(struct perf_backend *be, const char *what, tutti_status_t st)
{
    struct tutti_ctx *t = be->ctx;
    const char *msg = t->comm != NULL ? tutti_last_error(t->comm) : "";
    if (msg[0] == '\0') {
        msg = tutti_last_error(NULL);
    }
    fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n", t->tool, be->rank, what,
            tutti_status_name(st), msg[0] != '\0' ? msg : tutti_status_string(st));
    if (t->comm != NULL) {
        tutti_comm_abort(t->comm);
        t->comm = NULL;
    }
    return -1;
}

/* Calls after an abort fail without touching the freed communicator. */
#define COMM_OR_FAIL(be, what)                                                                     \
    do {                                                                                           \
        if (((struct tutti_ctx *)(be)->ctx)->comm == NULL) {                                       \
            return failed((be), (what), TUTTI_ERR_ABORTED);                                        \
        }                                                                                          \
    } while (0)

static int supports(struct perf_backend *be, const struct perf_coll *coll, tutti_datatype_t dt,
                    tutti_op_t op)
{
    (void)be, (void)coll, (void)dt, (void)op;
    return 1;
}

/* 1 as one element of dt, in buf (8 bytes). */
static void one_of(tutti_datatype_t dt, void *buf)
{
    uint64_t bits = 1; /* the integer types */
    double d = 1.0;
    float f = 1.0f;
    switch (dt) {
    case TUTTI_FLOAT16:
        bits = 0x3C00; /* sign 0, exponent 15 (the bias), mantissa 0 */
        break;
    case TUTTI_BFLOAT16:
        bits = 0x3F80; /* the top half of float32's 1.0 */
        break;
    case TUTTI_FP8_E4M3:
        bits = 0x38; /* exponent 7 (the bias) */
        break;
    case TUTTI_FP8_E5M2:
        bits = 0x3C; /* exponent 15 (the bias) */
        break;
    default:
        break;
    }
    memset(buf, 0, 8);
    if (dt == TUTTI_FLOAT32) {
        memcpy(buf, &f, sizeof(f));
    } else if (dt == TUTTI_FLOAT64) {
        memcpy(buf, &d, sizeof(d));
    } else {
        memcpy(buf, &bits, tutti_datatype_size(dt)); /* little-endian: the low bytes */
    }
}

/* The op to call tutti with: -o premulsum's is made once per datatype (scalar 1). */
static tutti_status_t op_of(struct tutti_ctx *t, const struct perf_call *c, tutti_op_t *op_p)
{
    *op_p = c->op;
    if (c->op != PERF_OP_PREMUL) {
        return TUTTI_OK;
    }
    if (t->premul[c->dt] == 0) {
        uint64_t one;
        one_of(c->dt, &one);
        tutti_status_t st = tutti_op_create_premul_sum(&one, c->dt, TUTTI_SCALAR_HOST_IMMEDIATE,
                                                       t->comm, &t->premul[c->dt]);
        if (st != TUTTI_OK) {
            return st;
        }
    }
    *op_p = t->premul[c->dt];
    return TUTTI_OK;
}

static int run(struct perf_backend *be, const struct perf_coll *coll, const struct perf_call *c)
{
    COMM_OR_FAIL(be, coll->name);
    struct perf_call call = *c;
    tutti_status_t st = op_of(be->ctx, c, &call.op);
    st = st == TUTTI_OK ? coll->run(&call, ((struct tutti_ctx *)be->ctx)->comm) : st;
    if (st != TUTTI_OK) {
        char what[160];
        snprintf(what, sizeof(what), "%s (%s%s%s, count %zu, root %d, %s)", coll->name,
                 tutti_datatype_name(c->dt), (coll->flags & PERF_COLL_REDUCES) ? " " : "",
                 (coll->flags & PERF_COLL_REDUCES) ? perf_op_name(c->op) : "", c->lay.param_count,
                 c->root, c->in_place ? "in place" : "out of place");
        return failed(be, what, st);
    }
    return 0;
}

static int group_start(struct perf_backend *be)
{
    tutti_status_t st = tutti_group_start();
    return st == TUTTI_OK ? 0 : failed(be, "tutti_group_start", st);
}

static int group_end(struct perf_backend *be)
{
    tutti_status_t st = tutti_group_end();
    return st == TUTTI_OK ? 0 : failed(be, "tutti_group_end", st);
}

static int barrier(struct perf_backend *be)
{
    COMM_OR_FAIL(be, "tutti_barrier");
    tutti_status_t st = tutti_barrier(((struct tutti_ctx *)be->ctx)->comm, NULL);
    return st == TUTTI_OK ? 0 : failed(be, "tutti_barrier", st);
}

static int reduce_f64(struct perf_backend *be, double *v, int mode)
{
    COMM_OR_FAIL(be, "time reduction");
    tutti_comm_t *comm = ((struct tutti_ctx *)be->ctx)->comm;
    tutti_op_t op = mode == PERF_RED_MIN ? TUTTI_MIN : mode == PERF_RED_MAX ? TUTTI_MAX : TUTTI_SUM;
    tutti_status_t st = mode == PERF_RED_BCAST0
                            ? tutti_broadcast(v, v, 1, TUTTI_FLOAT64, 0, comm, NULL)
                            : tutti_allreduce(v, v, 1, TUTTI_FLOAT64, op, comm, NULL);
    return st == TUTTI_OK ? 0 : failed(be, "time reduction", st);
}

static int sum_i64(struct perf_backend *be, int64_t *v)
{
    COMM_OR_FAIL(be, "#wrong sum");
    tutti_comm_t *comm = ((struct tutti_ctx *)be->ctx)->comm;
    tutti_status_t st = tutti_allreduce(v, v, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    return st == TUTTI_OK ? 0 : failed(be, "#wrong sum", st);
}

static int gather_info(struct perf_backend *be, const struct perf_rank_info *mine,
                       struct perf_rank_info *all)
{
    COMM_OR_FAIL(be, "rank info all-gather");
    struct perf_rank_info *tmp = calloc((size_t)be->nranks, sizeof(*tmp));
    if (tmp == NULL) {
        return failed(be, "rank info all-gather", TUTTI_ERR_NO_MEMORY);
    }
    tutti_status_t st = tutti_allgather(mine, tmp, sizeof(*mine), TUTTI_UINT8,
                                        ((struct tutti_ctx *)be->ctx)->comm, NULL);
    if (st == TUTTI_OK && all != NULL) {
        memcpy(all, tmp, (size_t)be->nranks * sizeof(*tmp));
    }
    free(tmp);
    return st == TUTTI_OK ? 0 : failed(be, "rank info all-gather", st);
}

static int gather_f64(struct perf_backend *be, const double *mine, int n, double *all)
{
    COMM_OR_FAIL(be, "per-iteration times all-gather");
    double *tmp = malloc((size_t)be->nranks * (size_t)n * sizeof(double));
    if (tmp == NULL) {
        return failed(be, "per-iteration times all-gather", TUTTI_ERR_NO_MEMORY);
    }
    tutti_status_t st = tutti_allgather(mine, tmp, (size_t)n, TUTTI_FLOAT64,
                                        ((struct tutti_ctx *)be->ctx)->comm, NULL);
    if (st == TUTTI_OK && all != NULL) {
        memcpy(all, tmp, (size_t)be->nranks * (size_t)n * sizeof(double));
    }
    free(tmp);
    return st == TUTTI_OK ? 0 : failed(be, "per-iteration times all-gather", st);
}

static int register_buffers(struct perf_backend *be, void *send, void *recv, size_t bytes,
                            int how)
{
    COMM_OR_FAIL(be, "tutti_comm_register");
    struct tutti_ctx *t = be->ctx;
    if (how == 3) { /* a window the calls do not use: what it costs them */
        tutti_status_t st = TUTTI_OK;
        if (bytes > 0) {
            st = tutti_mem_alloc(&t->aside, 4096);
            st = st == TUTTI_OK ? tutti_comm_window_register(t->comm, t->aside, 4096, &t->win[0])
                                : st;
        } else {
            st = tutti_comm_window_deregister(t->comm, t->win[0]);
            (void)tutti_mem_free(t->aside);
        }
        return st == TUTTI_OK ? 0 : failed(be, "a window beside the buffers (--register 3)", st);
    }
    void *buf[2] = {send, recv};
    const char *what = how == 2 ? (bytes > 0 ? "tutti_comm_window_register"
                                             : "tutti_comm_window_deregister")
                                : (bytes > 0 ? "tutti_comm_register" : "tutti_comm_deregister");
    for (int i = 0; i < 2; i++) {
        tutti_status_t st;
        if (how == 2) {
            st = bytes > 0 ? tutti_comm_window_register(t->comm, buf[i], bytes, &t->win[i])
                           : tutti_comm_window_deregister(t->comm, t->win[i]);
        } else {
            st = bytes > 0 ? tutti_comm_register(t->comm, buf[i], bytes, &t->reg[i])
                           : tutti_comm_deregister(t->comm, t->reg[i]);
        }
        if (st != TUTTI_OK) {
            return failed(be, what, st);
        }
    }
    return 0;
}

static void *mem_alloc(struct perf_backend *be, size_t bytes)
{
    void *p = NULL;
    if (tutti_mem_alloc(&p, bytes) != TUTTI_OK) {
        fprintf(stderr, "%s: rank %d: tutti_mem_alloc: %s\n", ((struct tutti_ctx *)be->ctx)->tool,
                be->rank, tutti_last_error(NULL));
        return NULL;
    }
    return p;
}

static void mem_free(struct perf_backend *be, void *p)
{
    (void)be;
    (void)tutti_mem_free(p);
}

static const char *call_name(const struct perf_coll *coll, int vform)
{
    return coll->call[vform != 0];
}

/* Run the benchmark on a communicator, then free it. */
static int bench_comm(const struct perf_coll *coll, const struct perf_opts *o, const char *tool,
                      tutti_comm_t *comm)
{
    struct tutti_ctx t = {.comm = comm, .tool = tool};
    struct perf_backend be = {.lib = "tutti",
                              .version = TUTTI_VERSION_STRING,
                              .transport = tutti__env()->TRANSPORT,
                              .ctx = &t,
                              .supports = supports,
                              .run = run,
                              .group_start = group_start,
                              .group_end = group_end,
                              .barrier = barrier,
                              .reduce_f64 = reduce_f64,
                              .sum_i64 = sum_i64,
                              .gather_info = gather_info,
                              .gather_f64 = gather_f64,
                              .register_buffers = register_buffers,
                              .mem_alloc = mem_alloc,
                              .mem_free = mem_free,
                              .call_name = call_name};
    tutti_comm_rank(comm, &be.rank);
    tutti_comm_size(comm, &be.nranks);
    int rc = perf_bench_run(coll, o, &be, tool);
    if (t.comm != NULL) {
        tutti_status_t st = tutti_comm_destroy(t.comm);
        if (st != TUTTI_OK) {
            fprintf(stderr, "%s: rank %d: tutti_comm_destroy failed: %s\n", tool, be.rank,
                    tutti_status_name(st));
            rc = rc != 0 ? rc : PERF_EXIT_FAIL;
        }
    }
    return rc;
}

struct rank_args {
    const struct perf_coll *coll;
    const struct perf_opts *o;
    const char *tool;
};

static int rank_main(void *arg, tutti_comm_t *comm)
{
    const struct rank_args *a = arg;
    return bench_comm(a->coll, a->o, a->tool, comm);
}

/* --print-env: tutti's variables (the one table in src/base/env.h) with defaults, ranges and help. */
static void print_env(void)
{
    static const char *const types[] = {"string", "int", "size", "duration"};
    int n = 0;
    const struct tutti_env_desc *t = tutti__env_table(&n);
    for (int i = 0; i < n; i++) {
        char name[64], range[48] = "";
        snprintf(name, sizeof(name), "TUTTI_%s", t[i].name);
        if (t[i].lo[0] != '\0') {
            snprintf(range, sizeof(range), ", range %s to %s", t[i].lo, t[i].hi);
        }
        const char *now = tutti__env_foreign(name);
        printf("%-22s %-8s default \"%s\"%s%s%s%s\n    %s\n", name, types[t[i].type], t[i].def,
               range, now != NULL ? ", set to \"" : "", now != NULL ? now : "",
               now != NULL ? "\"" : "", t[i].help);
    }
}

int tutti_perf_main(const struct perf_coll *coll, int argc, char **argv)
{
    char tool[64];
    struct perf_opts o;
    snprintf(tool, sizeof(tool), "%s_perf", coll->name);
    int rc = perf_args_parse(argc, argv, tool, 0, &o);
    if (rc != 0) {
        return rc > 0 ? PERF_EXIT_OK : PERF_EXIT_USAGE;
    }
    if (o.print_env) {
        print_env();
        return PERF_EXIT_OK;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct rank_args args = {.coll = coll, .o = &o, .tool = tool};
    if (o.nranks == 0 && local_ranks_under_launcher()) {
        return local_ranks_run_launched(tool, rank_main, &args);
    }
    /* -N ranks forked on this host; the parent only serves the bootstrap root and waits */
    o.nranks = o.nranks > 0 ? o.nranks : 1;
    struct local_ranks_opts lo = {.tool = tool, .nranks = o.nranks, .bind = o.bind};
    return local_ranks_run(&lo, rank_main, &args);
}
