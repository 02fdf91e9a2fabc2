/*
 * train_loop.c - one rank's training run: initial weights from rank 0, then for every global
 * batch its own shard's forward and backward pass with the gradient buckets launched as the
 * layers finish, the wait for the averaged gradients, and the SGD step. Around it: the checks
 * of --check, progress and epoch lines, and the test accuracy after each epoch.
 *
 * Every rank runs the same steps in the same order (the order comes from the seed), so every
 * collective is matched; a communication failure on any rank aborts its communicator, which
 * makes the others' pending calls fail at once rather than wait for their timeout.
 *
 * The model's memory is the backend's (a GPU's with --device cuda): what the checks read is
 * downloaded to host buffers, and a failed GPU operation, which surfaces after the fact, is
 * looked for after every step and evaluation and handled like a communication failure.
 */
#include "check.h"
#include "base/env.h"
#include "report.h"
#include "train.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
    const struct train_opts *o;
    const struct train_dataset *ds;
    tutti_comm_t *comm; /* NULL once aborted */
    int rank, nranks;
    struct train_gpu gpu;                 /* --device cuda: this rank's GPU and the module */
    const struct train_cuda_module *cuda; /* NULL on the CPU */
    struct train_mlp m;
    struct train_sync sync;
    int sync_up;
    struct train_replica rep; /* rank 0, while check 1 runs */
    int rep_up;
    long total_steps; /* steps this run takes: every epoch's, or --steps if fewer */
    long check1_at;   /* the step after which check 1 compares (0: not run) */
    uint32_t *perm;
    float *x; /* the inputs of the batch rows this rank needs */
    uint8_t *y;
    float *host_w, *host_ref;   /* host copies of the weights (and of the replica's) for checks */
    struct train_report report; /* rank 0 prints it; every rank keeps the sums */
    char err[600];
};

/* A failed collective: say which rank saw what, and abort so that the peers fail at once. */
static int comm_failed(struct run *r, const char *what, tutti_status_t st, const char *detail)
{
    if (detail == NULL) {
        detail = r->comm != NULL ? tutti_last_error(r->comm) : "";
    }
    fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n", TRAIN_TOOL, r->rank, what,
            tutti_status_name(st), detail[0] != '\0' ? detail : tutti_status_string(st));
    if (r->comm != NULL) {
        tutti_comm_abort(r->comm);
        r->comm = NULL;
    }
    return -1;
}

/* A backend operation failed (on a GPU: surfaced now): say which and abort like comm_failed. */
static int backend_check(struct run *r, const char *when)
{
    const char *why = r->m.be->error(r->m.bctx);
    if (why == NULL && r->rep_up) {
        why = r->rep.m.be->error(r->rep.m.bctx);
    }
    if (why == NULL) {
        return 0;
    }
    fprintf(stderr, "%s: rank %d: %s on the %s backend failed: %s\n", TRAIN_TOOL, r->rank, when,
            r->m.be->name, why);
    if (r->comm != NULL) {
        tutti_comm_abort(r->comm);
        r->comm = NULL;
    }
    return -1;
}

static int allreduce_f64(struct run *r, double *v, int n, const char *what)
{
    tutti_status_t st = tutti_allreduce(v, v, (size_t)n, TUTTI_FLOAT64, TUTTI_SUM, r->comm, NULL);
    return st == TUTTI_OK ? 0 : comm_failed(r, what, st, NULL);
}

/* The model on this rank's device, with rank 0's initial weights (through host memory). */
static int setup_model(struct run *r)
{
    const struct train_opts *o = r->o;
    const struct train_backend_ops *be = &train_backend_cpu;
    if (o->device == TRAIN_DEVICE_CUDA) {
        if (train_cuda_open(r->rank, &r->gpu, r->err, sizeof(r->err)) != 0) {
            return -1;
        }
        r->cuda = r->gpu.mod;
        be = r->cuda->backend;
    }
    int shard_max = (o->batch + r->nranks - 1) / r->nranks;
    if (train_mlp_create(&r->m, be, o->sizes, o->nsizes, shard_max, r->err, sizeof(r->err)) != 0) {
        return -1;
    }
    r->host_w = malloc(r->m.nparams * sizeof(float));
    r->host_ref = malloc(r->m.nparams * sizeof(float));
    if (r->host_w == NULL || r->host_ref == NULL) {
        snprintf(r->err, sizeof(r->err), "no memory for host copies of the weights");
        return -1;
    }
    train_mlp_init_params(&r->m, o->seed);
    train_mlp_get_params(&r->m, r->host_w);
    tutti_status_t st =
        tutti_broadcast(r->host_w, r->host_w, r->m.nparams, TUTTI_FLOAT32, 0, r->comm, NULL);
    if (st != TUTTI_OK) {
        return comm_failed(r, "broadcast of the initial weights", st, NULL);
    }
    train_mlp_set_params(&r->m, r->host_w);
    return backend_check(r, "setting the initial weights");
}

/* Model, synchronisation and buffers. */
static int setup(struct run *r)
{
    const struct train_opts *o = r->o;
    int shard_max = (o->batch + r->nranks - 1) / r->nranks;
    int rows = r->rank == 0 && o->check ? o->batch : shard_max;
    if (setup_model(r) != 0) {
        return -1;
    }
    size_t cap = o->bucket_kb * 1024 / sizeof(float);
    if (train_sync_init(&r->sync, r->comm, &r->m, r->cuda, o->prec, cap > 0 ? cap : 1, r->err,
                        sizeof(r->err)) != 0) {
        return -1;
    }
    r->sync_up = 1;
    r->perm = malloc(r->ds->train.n * sizeof(*r->perm));
    r->x = malloc((size_t)rows * r->ds->train.dim * sizeof(float));
    r->y = malloc((size_t)rows);
    if (r->perm == NULL || r->x == NULL || r->y == NULL) {
        snprintf(r->err, sizeof(r->err), "no memory for the batch buffers");
        return -1;
    }
    long total = r->report.steps_per_epoch * o->epochs;
    r->total_steps = o->max_steps > 0 && o->max_steps < total ? o->max_steps : total;
    if (o->check) {
        r->check1_at = o->check_steps < r->total_steps ? o->check_steps : r->total_steps;
        if (r->rank == 0 &&
            train_replica_init(&r->rep, &r->m, o->batch, o->prec, r->err, sizeof(r->err)) != 0) {
            return -1;
        }
        r->rep_up = r->rank == 0;
    }
    return 0;
}

/* Check 1 after its last step: rank 0 compares, and every rank learns the verdict. */
static int check1_compare(struct run *r)
{
    struct train_check *c = &r->report.check[0];
    double verdict[2] = {0.0, 0.0}; /* max relative difference, elements that differ */
    struct train_diff d = {0};
    if (r->rank == 0) {
        train_mlp_get_params(&r->m, r->host_w);
        train_mlp_get_params(&r->rep.m, r->host_ref);
        if (backend_check(r, "check 1's download of the weights") != 0) {
            return -1;
        }
        train_compare(&r->m, r->host_w, r->host_ref, &d);
        verdict[0] = d.max_rel;
        verdict[1] = (double)d.ndiff;
        train_replica_destroy(&r->rep);
        r->rep_up = 0;
    }
    tutti_status_t st = tutti_broadcast(verdict, verdict, 2, TUTTI_FLOAT64, 0, r->comm, NULL);
    if (st != TUTTI_OK) {
        return comm_failed(r, "broadcast of check 1's result", st, NULL);
    }
    double tol = train_check1_tolerance(r->o->prec, r->nranks);
    int pass = tol == 0.0 ? verdict[1] == 0.0 : verdict[0] <= tol;
    c->result = pass ? TRAIN_CHECK_PASS : TRAIN_CHECK_FAIL;
    c->value = verdict[0];
    c->limit = tol;
    char bar[48];
    if (tol == 0.0) {
        snprintf(bar, sizeof(bar), "required: bitwise equal");
    } else {
        snprintf(bar, sizeof(bar), "allowed: %.0e", tol);
    }
    char where[32] = "";
    if (verdict[0] > 0.0) {
        snprintf(where, sizeof(where), " (layer %d %s)", d.worst_layer + 1,
                 d.worst_is_bias ? "bias" : "weights");
    }
    snprintf(c->detail, sizeof(c->detail),
             "1 rank vs %d ranks after %ld steps (%s gradients): max relative difference %.3g%s, "
             "%.0f of %zu weights differ in some bit; %s",
             r->nranks, r->check1_at, train_prec_name(r->o->prec), verdict[0], where, verdict[1],
             r->m.nparams, bar);
    return 0;
}

/* Check 2 after a step: every rank's weights hash alike. */
static int check2_step(struct run *r, long step)
{
    struct train_check *c = &r->report.check[1];
    char msg[300];
    train_mlp_get_params(&r->m, r->host_w);
    if (backend_check(r, "check 2's download of the weights") != 0) {
        return -1;
    }
    int same = train_check_identical(r->comm, r->nranks, r->host_w, r->m.nparams, msg, sizeof(msg));
    if (same < 0) {
        return comm_failed(r, "check 2", TUTTI_ERR_REMOTE, msg);
    }
    if (c->result == TRAIN_CHECK_NOT_RUN) {
        c->result = TRAIN_CHECK_PASS;
    }
    c->value = (double)step;
    if (same == 0 && c->result == TRAIN_CHECK_PASS) {
        c->result = TRAIN_CHECK_FAIL;
        snprintf(c->detail, sizeof(c->detail), "after step %ld: %s", step, msg);
    } else if (c->result == TRAIN_CHECK_PASS) {
        snprintf(c->detail, sizeof(c->detail),
                 "weights bitwise identical on all %d ranks after each of %ld steps", r->nranks,
                 step);
    }
    return 0;
}

struct hook_arg {
    struct run *r;
    int corrupt_pre; /* add 1 to this rank's first gradient of the last layer before sending */
};

/* *p += 1 in the backend's memory, in the order of its operations (for --debug-corrupt). */
static void add_one(struct train_mlp *m, float *p)
{
    float v;
    m->be->download(m->bctx, &v, p, sizeof(v));
    v += 1.0f;
    m->be->upload(m->bctx, p, &v, sizeof(v));
}

static void on_layer_ready(void *arg, int layer)
{
    struct hook_arg *h = arg;
    if (h->corrupt_pre && layer == h->r->m.nlayers - 1) {
        add_one(&h->r->m, h->r->m.grads + h->r->m.layer[layer].w_off);
    }
    train_sync_layer_ready(&h->r->sync, layer);
}

/* One global batch of b samples starting at perm[first]: this rank's shard, synced, applied. */
static int step(struct run *r, long gstep, size_t first, int b, struct train_span *span)
{
    const struct train_opts *o = r->o;
    const struct train_data *d = &r->ds->train;
    size_t lo = train_shard_begin((size_t)b, r->rank, r->nranks);
    size_t hi = train_shard_begin((size_t)b, r->rank + 1, r->nranks);
    int replica = r->rep_up && gstep <= r->check1_at;
    /* rank 0 checking: all b rows (its shard is a part of them), else only the shard */
    size_t from = replica ? 0 : lo, rows = replica ? (size_t)b : hi - lo;
    train_data_batch(d, r->perm + first + from, rows, r->x, r->y);
    if (o->die_step == gstep && o->die_rank == r->rank) {
        fprintf(stderr, "%s: rank %d: --debug-die-at: killing myself at step %ld\n", TRAIN_TOOL,
                r->rank, gstep);
        raise(SIGKILL);
    }
    int corrupt = o->corrupt_step == gstep && o->corrupt_rank == r->rank;
    struct hook_arg h = {.r = r, .corrupt_pre = corrupt && o->corrupt_pre};
    double t0 = train_now(), loss;
    int correct;
    train_mlp_load(&r->m, r->x + (lo - from) * d->dim, r->y + (lo - from), (int)(hi - lo));
    train_mlp_backprop(&r->m, 1.0f / (float)b, on_layer_ready, &h, &loss, &correct);
    struct train_sync_stats ss;
    tutti_status_t st = train_sync_finish(&r->sync, &ss);
    if (st != TUTTI_OK) {
        char what[64];
        snprintf(what, sizeof(what), "gradient sync at step %ld", gstep);
        return comm_failed(r, what, st, r->sync.error);
    }
    if (corrupt && !o->corrupt_pre) {
        add_one(&r->m, r->m.grads); /* after the sum: this rank alone drifts */
    }
    /* the schedule depends on the step alone: every rank and the replica use the same rate */
    float lr = train_lr_at(o->lr_schedule, o->lr, gstep - 1, r->total_steps);
    train_mlp_sgd(&r->m, lr, o->momentum);
    double t1 = train_now();
    span->steps++;
    span->samples += b;
    span->loss_sum += loss;
    span->step_s += t1 - t0;
    span->comm_s += ss.comm_s;
    span->exposed_s += ss.exposed_s;
    if (replica) {
        train_replica_step(&r->rep, r->x, r->y, b, r->nranks, lr, o->momentum);
    }
    if (backend_check(r, "a training step") != 0) {
        return -1;
    }
    if (o->check && gstep == r->check1_at && check1_compare(r) != 0) {
        return -1;
    }
    return o->check ? check2_step(r, gstep) : 0;
}

/* Test accuracy: each rank evaluates its share of the test set, the counts are summed. */
static int evaluate(struct run *r, struct train_epoch *e)
{
    const struct train_data *t = &r->ds->test;
    size_t lo = train_shard_begin(t->n, r->rank, r->nranks);
    size_t hi = train_shard_begin(t->n, r->rank + 1, r->nranks);
    double sums[2] = {0.0, 0.0}; /* correct, loss */
    uint32_t idx[256];
    for (size_t i = lo; i < hi;) {
        size_t n = hi - i < (size_t)r->m.max_rows ? hi - i : (size_t)r->m.max_rows;
        n = n < 256 ? n : 256;
        for (size_t k = 0; k < n; k++) {
            idx[k] = (uint32_t)(i + k);
        }
        train_data_batch(t, idx, n, r->x, r->y);
        train_mlp_load(&r->m, r->x, r->y, (int)n);
        double loss;
        int correct;
        train_mlp_evaluate(&r->m, &loss, &correct);
        sums[0] += correct;
        sums[1] += loss;
        i += n;
    }
    if (backend_check(r, "the evaluation") != 0) {
        return -1;
    }
    if (allreduce_f64(r, sums, 2, "test accuracy sum") != 0) {
        return -1;
    }
    e->test_n = t->n;
    e->test_acc = sums[0] / (double)t->n;
    e->test_loss = sums[1] / (double)t->n;
    return 0;
}

/*
 * Make a span's numbers global: the loss summed over ranks, the times averaged over ranks (a
 * rank that waits for a slower one shows it as communication; the mean is the fair figure).
 */
static int globalize(struct run *r, struct train_span *s, const char *what)
{
    double v[4] = {s->loss_sum, s->step_s, s->comm_s, s->exposed_s};
    if (allreduce_f64(r, v, 4, what) != 0) {
        return -1;
    }
    s->loss_sum = v[0];
    s->step_s = v[1] / r->nranks;
    s->comm_s = v[2] / r->nranks;
    s->exposed_s = v[3] / r->nranks;
    return 0;
}

/* A progress line for the steps since the last one. */
static int progress(struct run *r, int epoch, long in_epoch, struct train_span *span,
                    double *span_start)
{
    if (globalize(r, span, "progress sums") != 0) {
        return -1;
    }
    span->wall_s = train_now() - *span_start;
    if (r->rank == 0 && !r->o->quiet) {
        train_report_progress(&r->report, epoch, in_epoch, span);
    }
    memset(span, 0, sizeof(*span));
    *span_start = train_now();
    return 0;
}

static void add_span(struct train_span *to, const struct train_span *s)
{
    to->steps += s->steps;
    to->samples += s->samples;
    to->loss_sum += s->loss_sum;
    to->step_s += s->step_s;
    to->comm_s += s->comm_s;
    to->exposed_s += s->exposed_s;
    to->wall_s += s->wall_s;
}

/* One epoch (or its part up to --steps), then the test accuracy. */
static int run_epoch(struct run *r, int ep, long *gstep, struct train_epoch *e)
{
    const struct train_opts *o = r->o;
    size_t n = r->ds->train.n;
    long per = r->report.steps_per_epoch;
    int every = o->log_every > 0 ? o->log_every : (int)(per / 10 > 0 ? per / 10 : 1);
    struct train_span span = {0}, whole = {0};
    double t0 = train_now(), span_start = t0;
    train_shuffle(o->seed, ep, r->perm, n);
    long s = 0;
    while (s < per && (o->max_steps == 0 || *gstep < o->max_steps)) {
        size_t first = (size_t)s * (size_t)o->batch;
        int b = (int)(n - first < (size_t)o->batch ? n - first : (size_t)o->batch);
        struct train_span one = {0};
        if (step(r, ++*gstep, first, b, &one) != 0) {
            return -1;
        }
        add_span(&span, &one);
        add_span(&whole, &one);
        s++;
        int last = s == per || *gstep == o->max_steps;
        if ((s % every == 0 || last) && progress(r, ep + 1, s, &span, &span_start) != 0) {
            return -1;
        }
    }
    whole.wall_s = train_now() - t0;
    if (globalize(r, &whole, "epoch sums") != 0) {
        return -1;
    }
    add_span(&r->report.total, &whole);
    e->epoch = ep + 1;
    e->steps = s;
    e->train_loss = whole.samples > 0 ? whole.loss_sum / whole.samples : 0.0;
    e->time_s = whole.wall_s;
    return evaluate(r, e);
}

/*
 * Check 3: a full run ends at the target test accuracy, measured after its last epoch (the
 * weights it hands over); the best epoch is reported beside it. The default cosine schedule
 * lets the rate fall to 0, so the last iterate is the settled one rather than a point on
 * plain SGD's noisy path.
 */
static void check3(struct run *r)
{
    struct train_check *c = &r->report.check[2];
    const struct train_opts *o = r->o;
    const struct train_report *rp = &r->report;
    if (rp->nepochs == 0) {
        return;
    }
    int best = 0, last = rp->nepochs - 1;
    for (int i = 0; i < rp->nepochs; i++) {
        best = rp->epochs[i].test_acc > rp->epochs[best].test_acc ? i : best;
    }
    double final = rp->epochs[last].test_acc;
    c->value = final;
    c->limit = o->target_acc;
    if (o->limit > 0 || o->max_steps > 0 || o->test_limit > 0) {
        snprintf(c->detail, sizeof(c->detail),
                 "not run: --limit, --test-limit or --steps train or test on part of the data "
                 "(final test accuracy %.2f%%)",
                 100.0 * final);
        return;
    }
    c->result = final >= o->target_acc ? TRAIN_CHECK_PASS : TRAIN_CHECK_FAIL;
    snprintf(c->detail, sizeof(c->detail),
             "final test accuracy %.2f%% %s %.2f%% after %d epoch%s (best %.2f%% after epoch %d)",
             100.0 * final, final >= o->target_acc ? ">=" : "<", 100.0 * o->target_acc, rp->nepochs,
             rp->nepochs == 1 ? "" : "s", 100.0 * rp->epochs[best].test_acc, best + 1);
}

static int train_epochs(struct run *r)
{
    const struct train_opts *o = r->o;
    long gstep = 0;
    for (int ep = 0; ep < o->epochs && (o->max_steps == 0 || gstep < o->max_steps); ep++) {
        struct train_epoch e = {0};
        if (run_epoch(r, ep, &gstep, &e) != 0) {
            return -1;
        }
        if (r->report.nepochs < TRAIN_MAX_EPOCHS_REPORTED) {
            r->report.epochs[r->report.nepochs++] = e;
        }
        if (r->rank == 0) {
            train_report_epoch(&r->report, &e);
        }
    }
    return 0;
}

static void teardown(struct run *r)
{
    if (r->sync_up) {
        if (r->comm == NULL) { /* aborted: that undid the gradients' window with the rest */
            r->sync.win = NULL;
        }
        train_sync_destroy(&r->sync);
    }
    if (r->rep_up) {
        train_replica_destroy(&r->rep);
    }
    train_mlp_destroy(&r->m);
    free(r->perm);
    free(r->x);
    free(r->y);
    free(r->host_w);
    free(r->host_ref);
    if (r->comm != NULL) {
        tutti_status_t st = tutti_comm_destroy(r->comm);
        if (st != TUTTI_OK) {
            fprintf(stderr, "%s: rank %d: tutti_comm_destroy failed: %s\n", TRAIN_TOOL, r->rank,
                    tutti_status_name(st));
        }
    }
}

static void report_init(struct run *r)
{
    struct train_report *rp = &r->report;
    rp->o = r->o;
    rp->nranks = r->nranks;
    rp->transport = tutti__env()->TRANSPORT; /* -t or the environment, as tutti read it */
    rp->ntrain = r->ds->train.n;
    rp->ntest = r->ds->test.n;
    rp->steps_per_epoch = (long)((r->ds->train.n + (size_t)r->o->batch - 1) / (size_t)r->o->batch);
    for (int i = 0; i < 3; i++) {
        rp->check[i].result = TRAIN_CHECK_NOT_RUN;
        snprintf(rp->check[i].detail, sizeof(rp->check[i].detail), "not run (no --check)");
    }
}

int train_rank_run(const struct train_opts *o, const struct train_dataset *ds, tutti_comm_t *comm)
{
    struct run *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        fprintf(stderr, "%s: no memory\n", TRAIN_TOOL);
        tutti_comm_abort(comm);
        return TRAIN_EXIT_FAIL;
    }
    r->o = o;
    r->ds = ds;
    r->comm = comm;
    tutti_comm_rank(comm, &r->rank);
    tutti_comm_size(comm, &r->nranks);
    report_init(r);
    int ret = setup(r);
    if (ret != 0 && r->err[0] != '\0') {
        fprintf(stderr, "%s: rank %d: %s\n", TRAIN_TOOL, r->rank, r->err);
        if (r->comm != NULL) {
            tutti_comm_abort(r->comm);
            r->comm = NULL;
        }
    }
    if (ret == 0) {
        if (r->cuda != NULL) {
            snprintf(r->report.gpu, sizeof(r->report.gpu),
                     "rank r on GPU r mod %d (%d visible; rank 0 on GPU %d, %s); module %s (%s)",
                     r->gpu.count, r->gpu.count, r->gpu.device, r->gpu.name,
                     train_cuda_module_path(), r->cuda->build);
        }
        r->report.nparams = r->m.nparams;
        r->report.nbuckets = r->sync.nbuckets;
        if (r->rank == 0) {
            train_report_header(&r->report);
        }
        ret = train_epochs(r);
    }
    int fail = ret != 0;
    if (ret == 0) {
        if (o->check) {
            check3(r);
        }
        for (int i = 0; i < 3; i++) {
            fail |= r->report.check[i].result == TRAIN_CHECK_FAIL;
        }
        if (r->rank == 0) {
            train_report_summary(&r->report);
            if (o->json_path != NULL && train_report_json(&r->report, o->json_path) != 0) {
                fail = 1;
            }
        }
    }
    teardown(r);
    free(r);
    return fail ? TRAIN_EXIT_FAIL : TRAIN_EXIT_OK;
}
