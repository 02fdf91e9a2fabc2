/*
 * mlp.h - a multilayer perceptron: dense layers with ReLU between them, softmax cross-entropy
 * on the last, SGD with momentum. All arithmetic goes through a backend (backend.h).
 *
 * The parameters live in one flat vector, layer after layer, each as W (in x out, row-major)
 * then b (out); the gradients and the momentum have the same layout. So a bucket of gradients
 * is a contiguous range, and a checksum or a comparison covers the model in one pass.
 */
#ifndef TRAIN_MLP_H
#define TRAIN_MLP_H

#include "backend.h"

#include <stddef.h>
#include <stdint.h>

#define TRAIN_MAX_LAYERS 8

struct train_layer {
    int in, out;
    size_t w_off, b_off; /* where W and b start in the flat vectors */
};

struct train_mlp {
    const struct train_backend_ops *be;
    void *bctx;
    int nlayers;
    struct train_layer layer[TRAIN_MAX_LAYERS];
    size_t nparams;
    int max_rows;                     /* the most samples one call may take */
    float *params, *grads, *momentum; /* backend memory, nparams floats each */
    float *act[TRAIN_MAX_LAYERS + 1]; /* act[0]: inputs; act[l + 1]: output of layer l */
    float *delta[2];                  /* gradient w.r.t. a layer's output (two, in turn) */
    uint8_t *labels;                  /* backend copy of the labels of the loaded samples */
    int rows;                         /* samples loaded */
};

/** Called once a layer's gradients are complete (layers come last to first). */
typedef void (*train_grad_hook)(void *arg, int layer);

/**
 * Make a model of nsizes - 1 layers: sizes[0] inputs, sizes[nsizes - 1] classes.
 * @return 0, or -1 with the reason in err (bad sizes, out of memory).
 */
int train_mlp_create(struct train_mlp *m, const struct train_backend_ops *be, const int *sizes,
                     int nsizes, int max_rows, char *err, size_t errlen);

void train_mlp_destroy(struct train_mlp *m);

/**
 * Initial parameters, drawn as PyTorch's nn.Linear does (W and b uniform in +-1/sqrt(in)) from
 * a splitmix64 stream of the seed: each layer's W in storage order, then its b; u = (r >> 40)
 * 2^-24, value = (2u - 1) bound in float. Momentum is zeroed.
 */
void train_mlp_init_params(struct train_mlp *m, uint64_t seed);

/** Copy parameters from host memory (nparams floats) and zero the momentum. */
void train_mlp_set_params(struct train_mlp *m, const float *host);

/** Copy the parameters to host memory (nparams floats). */
void train_mlp_get_params(const struct train_mlp *m, float *host);

/** Copy the gradients to host memory, and back from it (nparams floats). */
void train_mlp_get_grads(const struct train_mlp *m, float *host);
void train_mlp_set_grads(struct train_mlp *m, const float *host);

/** Load `rows` samples (rows <= max_rows): inputs rows x sizes[0] floats and their labels. */
void train_mlp_load(struct train_mlp *m, const float *x, const uint8_t *y, int rows);

/**
 * Forward and backward pass over the loaded samples: grads = scale x the sum over samples of
 * the gradient of their losses (zero for no samples). hook (may be NULL) runs as each layer's
 * gradients are complete. *loss_p gets the sum of the losses, *correct_p the samples whose
 * prediction was right.
 */
void train_mlp_backprop(struct train_mlp *m, float scale, train_grad_hook hook, void *arg,
                        double *loss_p, int *correct_p);

/** Forward pass only over the loaded samples: sum of losses and correct predictions. */
void train_mlp_evaluate(struct train_mlp *m, double *loss_p, int *correct_p);

/** One SGD step with momentum on the whole parameter vector, using grads. */
void train_mlp_sgd(struct train_mlp *m, float lr, float momentum);

/** Learning-rate schedules over a run (--lr-schedule). */
enum train_lr_schedule {
    TRAIN_LR_COSINE, /* lr (1 + cos(pi k / total)) / 2 for step k = 0 .. total - 1 */
    TRAIN_LR_STEP,   /* lr, lr / 10 from half the steps, lr / 100 from three quarters */
    TRAIN_LR_NONE,   /* lr throughout */
};

const char *train_lr_schedule_name(enum train_lr_schedule s);

/** "cosine", "step" or "none". @return 0, or -1 for another name. */
int train_lr_schedule_parse(const char *name, enum train_lr_schedule *s_p);

/**
 * The learning rate of step k (0-based) of a run of total steps, from the base rate lr. A pure
 * function of its arguments, so every rank (and check 1's replica) applies the same rate at
 * the same step; computed in double and rounded once to float.
 */
float train_lr_at(enum train_lr_schedule s, float lr, long k, long total);

#endif /* TRAIN_MLP_H */
