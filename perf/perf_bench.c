/*
 * perf_bench.c - the benchmark loop every tool shares, as nccl-tests runs it: for each datatype,
 * op and root, warm up at the largest and the smallest size, then for each size time the
 * out-of-place and the in-place form. One timing: fill the inputs, one untimed call, a barrier,
 * then -n iterations of -m calls under CLOCK_MONOTONIC; each rank's time per call is combined
 * over ranks as -a says (default: the average). Then -c checks: fresh inputs, one call, every
 * output element compared with its exact value, wrong elements summed over ranks. Gather,
 * scatter and the v collectives get their count vectors for each size from perf_vcounts.c.
 */
#include "perf_data.h"
#include "perf_device.h"
#include "perf_iters.h"
#include "perf_report.h"
#include "perf_vcounts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct bench {
    const struct perf_coll *coll;
    const struct perf_opts *o;
    struct perf_backend *be;
    const char *tool;
    char *sendbuf, *recvbuf;      /* max_bytes each, reused for every size */
    struct perf_device dev;       /* --memory device: the twins the calls run on */
    int vform;                    /* the collective's v form runs (perf_vform) */
    struct perf_vcounts vc;       /* its counts, remade for each call's size */
    uint64_t seed;                /* bumped before each fill */
    struct perf_row *rows;        /* rank 0: every row, for the JSON */
    struct perf_rank_info *ranks; /* rank 0: every rank's pid and host */
    size_t nrows, cap;
    int errors;
    double bw_sum;
    int bw_count;
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Buffers and layout of one call of `bytes` bytes (nccl-tests' setupArgs). */
static void setup_call(struct bench *b, size_t bytes, tutti_datatype_t dt, tutti_op_t op, int root,
                       int in_place, struct perf_call *c)
{
    size_t esz = tutti_datatype_size(dt);
    memset(c, 0, sizeof(*c));
    b->coll->layout(bytes / esz, b->be->nranks, &c->lay);
    c->dt = dt;
    c->op = (b->coll->flags & PERF_COLL_REDUCES) ? op : TUTTI_MAX;
    c->root = root;
    c->rank = b->be->rank;
    c->nranks = b->be->nranks;
    c->in_place = in_place;
    c->send = b->sendbuf;
    c->recv = b->recvbuf;
    if (in_place) {
        c->send = b->recvbuf + c->lay.send_off * (size_t)c->rank * esz;
        c->recv = b->recvbuf + c->lay.recv_off * (size_t)c->rank * esz;
    }
    if (b->vform) {
        perf_vcall(&b->vc, b->coll, b->o->skew, b->o->zipf_s, c);
    }
}

/* The call as it runs: on the device twins with --memory device (same offsets). */
static struct perf_call as_run(const struct bench *b, const struct perf_call *c)
{
    struct perf_call d = *c;
    if (b->o->device) {
        const char *s = c->send;
        int in_recv = s >= b->recvbuf && s < b->recvbuf + b->dev.bytes; /* in place */
        d.send = in_recv ? b->dev.recv + (s - b->recvbuf) : b->dev.send + (s - b->sendbuf);
        d.recv = b->dev.recv + ((char *)c->recv - b->recvbuf);
    }
    return d;
}

/* Fresh inputs (and, on the device, copied up). */
static int fill(struct bench *b, struct perf_call *c)
{
    c->seed = ++b->seed;
    b->coll->fill(c);
    return b->o->device ? perf_dev_upload(&b->dev, b->sendbuf, b->recvbuf) : 0;
}

/* One call; on the device it is complete (synchronized) on return. */
static int run_one(struct bench *b, const struct perf_call *c)
{
    struct perf_call d = as_run(b, c);
    if (b->be->run(b->be, b->coll, &d) != 0) {
        return -1;
    }
    return b->o->device ? perf_dev_sync(&b->dev) : 0;
}

/* -n iterations of -m calls, each group of -m aggregated like nccl-tests' group calls; on the
 * device they are all complete on return. */
static int run_iters(struct bench *b, const struct perf_call *hc, int iters)
{
    struct perf_backend *be = b->be;
    struct perf_call dc = as_run(b, hc);
    const struct perf_call *c = &dc;
    for (int i = 0; i < iters; i++) {
        if (b->o->agg_iters > 1 && be->group_start(be) != 0) {
            return -1;
        }
        for (int a = 0; a < b->o->agg_iters; a++) {
            if (be->run(be, b->coll, c) != 0) {
                return -1;
            }
        }
        if (b->o->agg_iters > 1 && be->group_end(be) != 0) {
            return -1;
        }
    }
    return b->o->device ? perf_dev_sync(&b->dev) : 0;
}

/* -I 1 (with a JSON file to keep them): the iterations one by one, each timed per call. */
static int run_iters_each(struct bench *b, const struct perf_call *c, double *each)
{
    for (int i = 0; i < b->o->iters; i++) {
        double t = now_us();
        if (run_iters(b, c, 1) != 0) {
            return -1;
        }
        each[i] = (now_us() - t) / b->o->agg_iters;
    }
    return 0;
}

/* Per-call time in microseconds, combined over ranks as -a says; with -I 1 and a JSON file,
 * rank 0 also gets the per-iteration record in *iters_p. */
static int timed(struct bench *b, struct perf_call *c, double *us_p, struct perf_iters **iters_p)
{
    struct perf_backend *be = b->be;
    if (b->o->check > 0 && fill(b, c) != 0) {
        return -1;
    }
    if (run_one(b, c) != 0 || be->barrier(be) != 0) {
        return -1;
    }
    double *each = NULL;
    if (b->o->per_iter && b->o->json_path != NULL &&
        (each = malloc((size_t)b->o->iters * sizeof(double))) == NULL) {
        fprintf(stderr, "%s: out of memory for %d per-iteration times\n", b->tool, b->o->iters);
        return -1;
    }
    double t0 = now_us();
    int rc = each != NULL ? run_iters_each(b, c, each) : run_iters(b, c, b->o->iters);
    double us = (now_us() - t0) / ((double)b->o->iters * b->o->agg_iters);
    if (rc == 0 && each != NULL) {
        rc = perf_iters_collect(be, each, b->o->iters, iters_p);
    }
    free(each);
    if (rc != 0) {
        return -1;
    }
    static const int modes[] = {PERF_RED_BCAST0, PERF_RED_SUM, PERF_RED_MIN, PERF_RED_MAX};
    if (be->reduce_f64(be, &us, modes[b->o->average]) != 0) {
        return -1;
    }
    *us_p = b->o->average == PERF_AVG_MEAN ? us / be->nranks : us;
    return 0;
}

/* The hidden --debug-corrupt: flip the lowest bit of the first output element. */
static void corrupt(const struct bench *b, const struct perf_call *c)
{
    int owner = (b->coll->flags & PERF_COLL_ROOT_ONLY) ? c->root : 0;
    if (b->o->corrupt && c->rank == owner && c->lay.recv_count > 0) {
        *(unsigned char *)c->recv ^= 1;
    }
}

/* -c checks; wrong elements summed over ranks (stops at the first check with any). */
static int checked(struct bench *b, struct perf_call *c, long long *wrong_p)
{
    int64_t wrong = 0;
    for (int k = 0; k < b->o->check && wrong == 0; k++) {
        if (fill(b, c) != 0 || run_one(b, c) != 0 ||
            (b->o->device && perf_dev_download_recv(&b->dev, b->recvbuf) != 0)) {
            return -1;
        }
        corrupt(b, c);
        wrong = (int64_t)b->coll->check(c);
        if (b->be->sum_i64(b->be, &wrong) != 0) {
            return -1;
        }
    }
    *wrong_p = b->o->check > 0 ? (long long)wrong : -1;
    return 0;
}

/* One half of a row: time it, then check it. */
static int bench_half(struct bench *b, struct perf_call *c, size_t bytes, struct perf_half *h)
{
    memset(h, 0, sizeof(*h));
    if ((c->in_place && (b->coll->flags & PERF_COLL_NO_INPLACE)) ||
        (b->o->halves & (c->in_place ? PERF_HALF_IN : PERF_HALF_OUT)) == 0) {
        return 0;
    }
    if (timed(b, c, &h->time_us, &h->iters) != 0 || checked(b, c, &h->wrong) != 0) {
        return -1;
    }
    h->valid = 1;
    h->algbw = h->time_us > 0 ? (double)bytes / 1e3 / h->time_us : 0; /* GB/s, as nccl-tests */
    h->busbw = h->algbw * b->coll->bus_factor(b->be->nranks);
    b->errors += h->wrong > 0;
    b->bw_sum += h->busbw;
    b->bw_count++;
    return 0;
}

/* Rank 0 keeps every row for the JSON. */
static int keep_row(struct bench *b, const struct perf_row *row)
{
    if (b->nrows == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        struct perf_row *r = realloc(b->rows, cap * sizeof(*r));
        if (r == NULL) {
            fprintf(stderr, "%s: out of memory for the results\n", b->tool);
            return -1;
        }
        b->rows = r;
        b->cap = cap;
    }
    b->rows[b->nrows++] = *row;
    return 0;
}

/* One size: both halves, printed as one row on rank 0. */
static int bench_size(struct bench *b, size_t size, tutti_datatype_t dt, tutti_op_t op, int root)
{
    struct perf_call c;
    struct perf_row row;
    int r0 = b->be->rank == 0;
    setup_call(b, size, dt, op, root, 0, &c);
    size_t esz = tutti_datatype_size(dt);
    size_t send = c.lay.send_count * esz, recv = c.lay.recv_count * esz;
    row =
        (struct perf_row){.bytes = send > recv ? send : recv,
                          .count = c.lay.param_count,
                          .type = perf_dtype_name(dt),
                          .redop = (b->coll->flags & PERF_COLL_REDUCES) ? perf_op_name(op) : "none",
                          .root = root,
                          .vform = c.v != NULL,
                          .moved = c.v != NULL ? c.v->moved * esz : 0,
                          .padded = c.v != NULL ? c.v->max_block * (size_t)c.nranks * esz : 0};
    if (r0) {
        perf_out_row_start(&row);
    }
    for (int in_place = 0; in_place < 2; in_place++) {
        setup_call(b, size, dt, op, root, in_place, &c);
        if (bench_half(b, &c, row.bytes, &row.half[in_place]) != 0) {
            if (r0) {
                perf_out_row_end(&row);
            }
            perf_iters_free(row.half[0].iters);
            perf_iters_free(in_place ? row.half[1].iters : NULL);
            return -1;
        }
        if (r0) {
            perf_out_half(&row.half[in_place]);
        }
    }
    if (r0) {
        perf_out_row_end(&row);
        if (keep_row(b, &row) != 0) {
            perf_iters_free(row.half[0].iters);
            perf_iters_free(row.half[1].iters);
            return -1;
        }
    }
    return 0;
}

/* nccl-tests' TimeTest: barrier, warm-up at the largest then the smallest size, every size. */
static int time_test(struct bench *b, tutti_datatype_t dt, tutti_op_t op, int root)
{
    const struct perf_opts *o = b->o;
    struct perf_call c;
    if (b->be->barrier(b->be) != 0) {
        return -1;
    }
    setup_call(b, o->max_bytes, dt, op, root, 0, &c);
    if (run_iters(b, &c, o->warmup) != 0) {
        return -1;
    }
    setup_call(b, o->min_bytes, dt, op, root, 0, &c);
    if (run_iters(b, &c, o->warmup) != 0) {
        return -1;
    }
    for (size_t size = o->min_bytes; size <= o->max_bytes;) {
        if (bench_size(b, size, dt, op, root) != 0) {
            return -1;
        }
        size_t next = o->step_factor > 1 ? size * (size_t)o->step_factor : size + o->step_bytes;
        if (next <= size) { /* overflow, or a zero step at maxbytes */
            break;
        }
        size = next;
    }
    return 0;
}

/* Every datatype x op x root the options ask for. */
static int run_all(struct bench *b)
{
    const struct perf_opts *o = b->o;
    unsigned fl = b->coll->flags;
    int nops = ((fl & PERF_COLL_REDUCES) && o->op == PERF_ALL) ? PERF_NUM_OPS : 1;
    int r_lo = (fl & PERF_COLL_ROOTED) ? (o->root == PERF_ALL ? 0 : o->root) : -1;
    int r_hi = (fl & PERF_COLL_ROOTED) ? (o->root == PERF_ALL ? b->be->nranks - 1 : o->root) : -1;
    for (int t = 0; t < PERF_NUM_DTYPES; t++) {
        if (o->dtype != PERF_ALL && o->dtype != t) {
            continue;
        }
        for (int k = 0; k < nops; k++) {
            tutti_op_t op =
                nops > 1 ? perf_op_order[k] : (tutti_op_t)(o->op == PERF_ALL ? TUTTI_SUM : o->op);
            if (!b->be->supports(b->be, b->coll, t, op)) {
                char msg[128];
                snprintf(msg, sizeof(msg), "%s %s: skipped, %s has no such datatype or op",
                         perf_dtype_name(t), perf_op_name(op), b->be->lib);
                if (b->be->rank == 0) {
                    perf_out_note(msg);
                }
                continue;
            }
            for (int root = r_lo; root <= r_hi; root++) {
                if (time_test(b, t, op, root) != 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

static int alloc_buffers(struct bench *b)
{
    size_t bytes = (b->o->max_bytes + 4095) & ~(size_t)4095;
    bytes = bytes ? bytes : 4096;
    if (b->o->reg == 2) {
        b->sendbuf = b->be->mem_alloc(b->be, bytes);
        b->recvbuf = b->be->mem_alloc(b->be, bytes);
    } else {
        b->sendbuf = aligned_alloc(4096, bytes);
        b->recvbuf = aligned_alloc(4096, bytes);
    }
    if (b->sendbuf == NULL || b->recvbuf == NULL) {
        fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes\n", b->tool, b->be->rank,
                bytes);
        return -1;
    }
    memset(b->sendbuf, 0, bytes); /* fault the pages in before anything is timed */
    memset(b->recvbuf, 0, bytes);
    if (b->o->device) {
        return perf_dev_alloc(&b->dev, bytes, b->tool, b->be->rank) == 0 &&
                       perf_dev_upload(&b->dev, b->sendbuf, b->recvbuf) == 0
                   ? 0
                   : -1;
    }
    return 0;
}

/* The header lines of a v-capable collective: the call timed, the block sizes and what the
 * last two columns mean. */
static void vlines(const struct bench *b, const char *call, char *buf, size_t len)
{
    int k = 0;
    if (call != NULL) {
        k = snprintf(buf, len, "# call: %s\n", call);
    }
    if (b->vform && k >= 0 && (size_t)k < len) {
        char s[32] = "";
        if (b->o->skew == PERF_SKEW_ZIPF) {
            snprintf(s, sizeof(s), " (s %.2f)", b->o->zipf_s);
        }
        snprintf(buf + k, len - (size_t)k,
                 "# blocks: -v %s%s, each rank's counts summing to the size (perf/README.md);\n"
                 "# moved: the bytes of rank 0's blocks; padded: nranks x the largest block of "
                 "any rank\n",
                 perf_skew_name(b->o->skew), s);
    }
}

/* Rank 0 prints the header with every rank's pid and host. */
static int header(struct bench *b)
{
    struct perf_rank_info mine = {.pid = (int)getpid()}, *all = NULL;
    gethostname(mine.host, sizeof(mine.host) - 1);
    if (b->be->rank == 0 && (all = calloc((size_t)b->be->nranks, sizeof(*all))) == NULL) {
        return -1;
    }
    int rc = b->be->gather_info(b->be, &mine, all);
    if (rc == 0 && b->be->rank == 0) {
        char extra[512] = "";
        vlines(b, b->be->call_name != NULL ? b->be->call_name(b->coll, b->vform) : NULL, extra,
               sizeof(extra));
        perf_out_header(b->tool, b->be, b->o, all, extra, b->vform);
    }
    b->ranks = all; /* for the JSON's "devices" */
    return rc;
}

int perf_bench_run(const struct perf_coll *coll, const struct perf_opts *o, struct perf_backend *be,
                   const char *tool)
{
    struct bench b = {.coll = coll, .o = o, .be = be, .tool = tool, .seed = 1000};
    if ((coll->flags & PERF_COLL_ROOTED) && o->root >= be->nranks) {
        if (be->rank == 0) {
            fprintf(stderr, "%s: root %d out of range: %d ranks\n", tool, o->root, be->nranks);
        }
        return PERF_EXIT_USAGE;
    }
    if (o->reg && (be->register_buffers == NULL || be->mem_alloc == NULL || o->device)) {
        if (be->rank == 0) {
            fprintf(stderr, "%s: --register %d takes host buffers and tutti's tools\n", tool,
                    o->reg);
        }
        return PERF_EXIT_USAGE;
    }
    if (o->device && strcmp(be->lib, "tutti") != 0) {
        if (be->rank == 0) {
            fprintf(stderr,
                    "%s: --memory device is for tutti's tools only (%s is not asked "
                    "to take device pointers)\n",
                    tool, be->lib);
        }
        return PERF_EXIT_USAGE;
    }
    if (o->skew != PERF_SKEW_NONE && !(coll->flags & (PERF_COLL_V | PERF_COLL_V_SKEW))) {
        if (be->rank == 0) {
            fprintf(stderr, "%s: -v applies to gather, scatter and the v collectives only\n", tool);
        }
        return PERF_EXIT_USAGE;
    }
    b.vform = perf_vform(coll, o->skew);
    if (b.vform && perf_vcounts_alloc(&b.vc, be->nranks, be->rank) != 0) {
        fprintf(stderr, "%s: rank %d: no memory for the counts of %d ranks\n", tool, be->rank,
                be->nranks);
        return PERF_EXIT_FAIL;
    }
    int rc = alloc_buffers(&b) == 0 && header(&b) == 0 ? 0 : -1;
    size_t bytes = (o->max_bytes + 4095) & ~(size_t)4095;
    if (rc == 0 && o->reg) {
        rc = be->register_buffers(be, b.sendbuf, b.recvbuf, bytes ? bytes : 4096, o->reg);
    }
    rc = rc == 0 ? run_all(&b) : rc;
    if (o->reg && rc == 0) {
        rc = be->register_buffers(be, b.sendbuf, b.recvbuf, 0, o->reg);
    }
    struct perf_summary s = {.tool = tool,
                             .coll = coll->name,
                             .opts = o,
                             .be = be,
                             .ranks = b.ranks,
                             .rows = b.rows,
                             .nrows = b.nrows,
                             .errors = b.errors,
                             .avg_busbw = b.bw_count ? b.bw_sum / b.bw_count : 0,
                             .error = rc != 0 ? "a call failed (see the messages above)" : NULL,
                             .call = be->call_name != NULL ? be->call_name(coll, b.vform) : NULL};
    if (be->rank == 0) {
        if (rc == 0) {
            perf_out_footer(&s);
        }
        if (o->json_path != NULL && perf_json_write(o->json_path, &s) != 0) {
            rc = -1;
        }
    }
    for (size_t i = 0; i < b.nrows; i++) {
        perf_iters_free(b.rows[i].half[0].iters);
        perf_iters_free(b.rows[i].half[1].iters);
    }
    free(b.rows);
    free(b.ranks);
    if (o->reg == 2) {
        be->mem_free(be, b.sendbuf);
        be->mem_free(be, b.recvbuf);
    } else {
        free(b.sendbuf);
        free(b.recvbuf);
    }
    if (b.vform) {
        perf_vcounts_free(&b.vc);
    }
    if (o->device) {
        perf_dev_free(&b.dev);
    }
    return rc != 0 || b.errors != 0 ? PERF_EXIT_FAIL : PERF_EXIT_OK;
}
