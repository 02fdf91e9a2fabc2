/*
 * mlp.c - layers, forward and backward passes, initialisation and the SGD step of the trainer's
 * model, written against the backend operations only.
 */
#include "mlp.h"
#include "data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t max_z(size_t a, size_t b)
{
    return a > b ? a : b;
}

static int check_sizes(const int *sizes, int nsizes, int max_rows, char *err, size_t errlen)
{
    if (nsizes < 2 || nsizes - 1 > TRAIN_MAX_LAYERS) {
        snprintf(err, errlen, "a model needs 1 to %d layers, not %d", TRAIN_MAX_LAYERS, nsizes - 1);
        return -1;
    }
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] < 1 || sizes[i] > 65536) {
            snprintf(err, errlen, "layer width %d is not in 1..65536", sizes[i]);
            return -1;
        }
    }
    if (max_rows < 1) {
        snprintf(err, errlen, "a batch needs at least one sample");
        return -1;
    }
    return 0;
}

int train_mlp_create(struct train_mlp *m, const struct train_backend_ops *be, const int *sizes,
                     int nsizes, int max_rows, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    if (check_sizes(sizes, nsizes, max_rows, err, errlen) != 0) {
        return -1;
    }
    m->be = be;
    m->nlayers = nsizes - 1;
    m->max_rows = max_rows;
    size_t off = 0, widest = 0, scratch = 0;
    for (int l = 0; l < m->nlayers; l++) {
        struct train_layer *L = &m->layer[l];
        L->in = sizes[l];
        L->out = sizes[l + 1];
        L->w_off = off;
        L->b_off = off + (size_t)L->in * L->out;
        off = L->b_off + (size_t)L->out;
        widest = max_z(widest, max_z((size_t)L->in, (size_t)L->out));
        /* gemm packs act[l]^T (rows x in) and W^T (in x out) */
        scratch = max_z(scratch, max_z((size_t)max_rows * L->in, (size_t)L->in * L->out));
    }
    m->nparams = off;
    m->bctx = be->create(scratch);
    if (m->bctx == NULL) {
        const char *why = be->error(NULL);
        snprintf(err, errlen, "cannot set up the %s backend: %s", be->name,
                 why != NULL ? why : "out of memory");
        return -1;
    }
    int ok = 1;
    if (ok) {
        m->params = be->alloc(m->bctx, off * sizeof(float));
        m->grads = be->alloc(m->bctx, off * sizeof(float));
        m->momentum = be->alloc(m->bctx, off * sizeof(float));
        m->labels = be->alloc(m->bctx, (size_t)max_rows);
        ok = m->params != NULL && m->grads != NULL && m->momentum != NULL && m->labels != NULL;
    }
    for (int l = 0; ok && l <= m->nlayers; l++) {
        m->act[l] = be->alloc(m->bctx, (size_t)max_rows * sizes[l] * sizeof(float));
        ok = m->act[l] != NULL;
    }
    for (int i = 0; ok && i < 2; i++) {
        m->delta[i] = be->alloc(m->bctx, (size_t)max_rows * widest * sizeof(float));
        ok = m->delta[i] != NULL;
    }
    if (!ok) {
        const char *why = be->error(m->bctx);
        snprintf(err, errlen,
                 "no %s memory for a model of %zu parameters and %d-sample batches%s%s", be->name,
                 m->nparams, max_rows, why != NULL ? ": " : "", why != NULL ? why : "");
        train_mlp_destroy(m);
        return -1;
    }
    return 0;
}

void train_mlp_destroy(struct train_mlp *m)
{
    if (m->bctx == NULL) {
        return;
    }
    const struct train_backend_ops *be = m->be;
    be->free(m->bctx, m->params);
    be->free(m->bctx, m->grads);
    be->free(m->bctx, m->momentum);
    be->free(m->bctx, m->labels);
    for (int l = 0; l <= m->nlayers; l++) {
        be->free(m->bctx, m->act[l]);
    }
    be->free(m->bctx, m->delta[0]);
    be->free(m->bctx, m->delta[1]);
    be->destroy(m->bctx);
    memset(m, 0, sizeof(*m));
}

void train_mlp_init_params(struct train_mlp *m, uint64_t seed)
{
    float *host = malloc(m->nparams * sizeof(float));
    if (host == NULL) {
        fprintf(stderr, "tutti-train: no memory for %zu initial parameters\n", m->nparams);
        exit(1);
    }
    uint64_t state = seed;
    for (int l = 0; l < m->nlayers; l++) {
        const struct train_layer *L = &m->layer[l];
        float bound = (float)(1.0 / sqrt((double)L->in));
        for (size_t i = L->w_off; i < L->b_off + (size_t)L->out; i++) {
            float u = (float)(train_splitmix64(&state) >> 40) * 0x1p-24f;
            host[i] = (2.0f * u - 1.0f) * bound;
        }
    }
    train_mlp_set_params(m, host);
    free(host);
}

void train_mlp_set_params(struct train_mlp *m, const float *host)
{
    m->be->upload(m->bctx, m->params, host, m->nparams * sizeof(float));
    float *zero = calloc(m->nparams, sizeof(float));
    if (zero == NULL) {
        fprintf(stderr, "tutti-train: no memory to reset the momentum\n");
        exit(1);
    }
    m->be->upload(m->bctx, m->momentum, zero, m->nparams * sizeof(float));
    free(zero);
}

void train_mlp_get_params(const struct train_mlp *m, float *host)
{
    m->be->download(m->bctx, host, m->params, m->nparams * sizeof(float));
}

void train_mlp_get_grads(const struct train_mlp *m, float *host)
{
    m->be->download(m->bctx, host, m->grads, m->nparams * sizeof(float));
}

void train_mlp_set_grads(struct train_mlp *m, const float *host)
{
    m->be->upload(m->bctx, m->grads, host, m->nparams * sizeof(float));
}

void train_mlp_load(struct train_mlp *m, const float *x, const uint8_t *y, int rows)
{
    m->rows = rows;
    m->be->upload(m->bctx, m->act[0], x, (size_t)rows * m->layer[0].in * sizeof(float));
    m->be->upload(m->bctx, m->labels, y, (size_t)rows);
}

/* act[l + 1] = act[l] W + b, ReLU on every layer but the last (the logits). */
static void forward(struct train_mlp *m)
{
    for (int l = 0; l < m->nlayers; l++) {
        const struct train_layer *L = &m->layer[l];
        m->be->gemm(m->bctx, 0, 0, m->rows, L->out, L->in, m->act[l], m->params + L->w_off,
                    m->act[l + 1], 0);
        m->be->bias_act(m->bctx, m->act[l + 1], m->params + L->b_off, m->rows, L->out,
                        l + 1 < m->nlayers);
    }
}

void train_mlp_evaluate(struct train_mlp *m, double *loss_p, int *correct_p)
{
    forward(m);
    const struct train_layer *last = &m->layer[m->nlayers - 1];
    *loss_p = m->be->softmax_xent(m->bctx, m->act[m->nlayers], m->labels, m->rows, last->out, 0.0f,
                                  NULL, correct_p);
}

void train_mlp_backprop(struct train_mlp *m, float scale, train_grad_hook hook, void *arg,
                        double *loss_p, int *correct_p)
{
    const struct train_backend_ops *be = m->be;
    forward(m);
    int cur = 0;
    const struct train_layer *last = &m->layer[m->nlayers - 1];
    *loss_p = be->softmax_xent(m->bctx, m->act[m->nlayers], m->labels, m->rows, last->out, scale,
                               m->delta[cur], correct_p);
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const struct train_layer *L = &m->layer[l];
        /* dW = act[l]^T delta, db = column sums of delta: sums over the samples */
        be->gemm(m->bctx, 1, 0, L->in, L->out, m->rows, m->act[l], m->delta[cur],
                 m->grads + L->w_off, 0);
        be->col_sum(m->bctx, m->delta[cur], m->rows, L->out, m->grads + L->b_off);
        if (hook != NULL) {
            hook(arg, l);
        }
        if (l > 0) {
            /* the gradient w.r.t. this layer's input, through the previous layer's ReLU */
            be->gemm(m->bctx, 0, 1, m->rows, L->in, L->out, m->delta[cur], m->params + L->w_off,
                     m->delta[1 - cur], 0);
            be->relu_backward(m->bctx, m->delta[1 - cur], m->act[l], (size_t)m->rows * L->in);
            cur = 1 - cur;
        }
    }
}

void train_mlp_sgd(struct train_mlp *m, float lr, float momentum)
{
    m->be->sgd(m->bctx, m->params, m->momentum, m->grads, m->nparams, lr, momentum);
}

const char *train_lr_schedule_name(enum train_lr_schedule s)
{
    static const char *const names[] = {"cosine", "step", "none"};
    return (unsigned)s <= TRAIN_LR_NONE ? names[s] : "unknown";
}

int train_lr_schedule_parse(const char *name, enum train_lr_schedule *s_p)
{
    for (int i = TRAIN_LR_COSINE; i <= TRAIN_LR_NONE; i++) {
        if (strcmp(name, train_lr_schedule_name((enum train_lr_schedule)i)) == 0) {
            *s_p = (enum train_lr_schedule)i;
            return 0;
        }
    }
    return -1;
}

float train_lr_at(enum train_lr_schedule s, float lr, long k, long total)
{
    double f = 1.0;
    if (total > 0 && s == TRAIN_LR_COSINE) {
        f = 0.5 * (1.0 + cos(M_PI * (double)k / (double)total));
    } else if (total > 0 && s == TRAIN_LR_STEP) {
        f = 4 * k >= 3 * total ? 0.01 : 2 * k >= total ? 0.1 : 1.0;
    }
    return (float)((double)lr * f);
}
