/*
 * check.h - the trainer's built-in validation (--check).
 *
 * Check 1, 1 rank vs N ranks: rank 0 also trains a single-process replica on the same global
 * batches; after K steps its weights must match the data-parallel ones (max relative difference
 * per tensor <= 1e-5 in fp32; bitwise equal in the deterministic mode; for bf16/fp16 see
 * train_check1_tolerance). Check 2, ranks agree:
 * after every step each rank hashes its weights and the hashes are all-gathered; any rank whose
 * hash differs from rank 0's is named. (Check 3, the test accuracy a full run ends at, lives
 * in the training loop.)
 */
#ifndef TRAIN_CHECK_H
#define TRAIN_CHECK_H

#include "mlp.h"
#include "sync.h"
#include "tutti.h"

#include <stddef.h>
#include <stdint.h>

/** A 64-bit hash of a byte range (four interleaved multiply-xorshift lanes over 8-byte words). */
uint64_t train_hash(const void *p, size_t bytes);

/**
 * Check 2 for one step: all-gather every rank's hash of params and compare with rank 0's.
 * @return 1 when all agree; 0 when some differ (msg names them); -1 when the all-gather failed
 *         (msg has tutti's error).
 */
int train_check_identical(tutti_comm_t *comm, int nranks, const float *params, size_t n, char *msg,
                          size_t msglen);

/** The single-process reference of check 1. */
struct train_replica {
    struct train_mlp m;
    enum train_prec prec;
    float *g;      /* host copy of one shard's gradients, then of the total */
    float *part;   /* sum of the shards' gradients, decoded from the wire (bf16, fp16) */
    void *wire;    /* one shard's gradients on the wire (bf16, fp16, fixed) */
    int64_t *qsum; /* sum of the shards' fixed-point gradients */
};

/**
 * A replica of `model` (same layers and current parameters) that takes global batches of up
 * to max_batch samples. @return 0, or -1 with the reason in err.
 */
int train_replica_init(struct train_replica *r, const struct train_mlp *model, int max_batch,
                       enum train_prec prec, char *err, size_t errlen);

void train_replica_destroy(struct train_replica *r);

/**
 * One step on a whole global batch of b samples. fp32: the gradient of the full batch, as one
 * process computes it without any sharding. bf16/fp16/fixed: the gradient as nranks shards are
 * formed and converted to the wire (each shard rounded to the wire type, summed, the sum
 * rounded), which the data-parallel ranks compute up to the order of the sum.
 */
void train_replica_step(struct train_replica *r, const float *x, const uint8_t *y, int b,
                        int nranks, float lr, float momentum);

/** How far params is from the reference: worst relative difference over tensors. */
struct train_diff {
    double max_rel; /* max over tensors of max|a - ref| / max|ref| */
    int worst_layer;
    int worst_is_bias;
    size_t ndiff; /* elements whose bits differ */
};

void train_compare(const struct train_mlp *m, const float *params, const float *ref,
                   struct train_diff *d);

/**
 * The tolerance of check 1 for a wire precision and rank count (0: the weights must be bitwise
 * equal): 1e-5 in fp32, bitwise in the deterministic mode and for bf16/fp16 on up to 2 ranks,
 * 5e-2 for bf16/fp16 on more ranks (see check.c).
 */
double train_check1_tolerance(enum train_prec p, int nranks);

#endif /* TRAIN_CHECK_H */
