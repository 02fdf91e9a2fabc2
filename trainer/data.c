/*
 * data.c - loads the two IDX files of one half of Fashion-MNIST and checks they belong
 * together; turns samples into float inputs; and draws each epoch's order from the seed.
 */
#include "data.h"
#include "idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int train_data_load(const char *dir, const char *prefix, size_t limit, struct train_data *d_p,
                    char *err, size_t errlen)
{
    char ipath[4096], lpath[4096];
    snprintf(ipath, sizeof(ipath), "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(lpath, sizeof(lpath), "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    struct train_idx img, lab;
    if (train_idx_read(ipath, 3, limit, &img, err, errlen) != 0) {
        return -1;
    }
    if (train_idx_read(lpath, 1, limit, &lab, err, errlen) != 0) {
        train_idx_free(&img);
        return -1;
    }
    int ret = 0;
    if (img.dims[0] != lab.dims[0]) {
        snprintf(err, errlen, "%s holds %u images but %s holds %u labels", ipath,
                 (unsigned)img.dims[0], lpath, (unsigned)lab.dims[0]);
        ret = -1;
    }
    for (size_t i = 0; ret == 0 && i < lab.count; i++) {
        if (lab.data[i] >= 10) {
            snprintf(err, errlen, "%s: label %u of sample %zu is not a class 0..9", lpath,
                     lab.data[i], i);
            ret = -1;
        }
    }
    if (ret != 0) {
        train_idx_free(&img);
        train_idx_free(&lab);
        return -1;
    }
    d_p->n = lab.count;
    d_p->dim = (size_t)img.dims[1] * img.dims[2];
    d_p->nclasses = 10;
    d_p->pixels = img.data;
    d_p->labels = lab.data;
    return 0;
}

void train_data_free(struct train_data *d)
{
    free(d->pixels);
    free(d->labels);
    memset(d, 0, sizeof(*d));
}

void train_data_batch(const struct train_data *d, const uint32_t *idx, size_t count, float *x,
                      uint8_t *y)
{
    const float scale = 1.0f / 255.0f;
    for (size_t s = 0; s < count; s++) {
        const uint8_t *p = d->pixels + (size_t)idx[s] * d->dim;
        float *row = x + s * d->dim;
        for (size_t i = 0; i < d->dim; i++) {
            row[i] = (float)p[i] * scale;
        }
        y[s] = d->labels[idx[s]];
    }
}

uint64_t train_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void train_shuffle(uint64_t seed, int epoch, uint32_t *perm, size_t n)
{
    /* One stream per (seed, epoch); the multiply-high maps 64 random bits onto 0..i. */
    uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(epoch + 1));
    for (size_t i = 0; i < n; i++) {
        perm[i] = (uint32_t)i;
    }
    for (size_t i = n; i > 1; i--) {
        uint64_t r = train_splitmix64(&state);
        size_t j = (size_t)(((unsigned __int128)r * i) >> 64);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}
