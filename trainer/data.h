/*
 * data.h - the Fashion-MNIST data set (train or test half) in memory, the order in which an
 * epoch visits it, and how a global batch is split between ranks.
 *
 * Every rank derives the same order from the seed alone (splitmix64, Fisher-Yates), so the
 * ranks never exchange indices: rank r of N takes samples [r*B/N, (r+1)*B/N) of each global
 * batch of B samples, which covers the batch exactly once also when N does not divide B.
 */
#ifndef TRAIN_DATA_H
#define TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

/** Where Debian's dataset-fashion-mnist package puts the files. */
#define TRAIN_DATA_DIR "/usr/share/datasets/fashion-mnist"

/** One half of the data set: n images of rows x cols bytes and their labels (0..nclasses-1). */
struct train_data {
    size_t n;
    size_t dim; /* pixels per image */
    int nclasses;
    uint8_t *pixels; /* n x dim */
    uint8_t *labels; /* n */
};

/**
 * Load <dir>/<prefix>-images-idx3-ubyte.gz and <dir>/<prefix>-labels-idx1-ubyte.gz (prefix
 * "train" or "t10k"), at most `limit` samples (0: all). The two files must agree on the count
 * and every label must be below 10.
 * @return 0, or -1 with a message naming the file and the problem in err.
 */
int train_data_load(const char *dir, const char *prefix, size_t limit, struct train_data *d_p,
                    char *err, size_t errlen);

void train_data_free(struct train_data *d);

/** Inputs of the samples idx[0..count): pixel / 255 as float, row after row; and their labels. */
void train_data_batch(const struct train_data *d, const uint32_t *idx, size_t count, float *x,
                      uint8_t *y);

/** The next value of a splitmix64 stream (also how initial weights are drawn). */
uint64_t train_splitmix64(uint64_t *state);

/** The order of epoch `epoch` (0-based): a permutation of 0..n-1 that depends only on seed. */
void train_shuffle(uint64_t seed, int epoch, uint32_t *perm, size_t n);

/** The first sample of rank r's shard of a batch of b samples over nranks ranks. */
static inline size_t train_shard_begin(size_t b, int r, int nranks)
{
    return b * (size_t)r / (size_t)nranks;
}

#endif /* TRAIN_DATA_H */
