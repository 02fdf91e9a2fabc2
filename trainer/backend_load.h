/*
 * backend_load.h - where tutti-train computes (--device): the CPU backend built in, or a GPU
 * through the module libtutti-train-cuda.so (cuda/train_cuda.h), which this opens on first
 * use the way libtutti opens its own GPU module (kernels/cuda_load.c), so the trainer links
 * no CUDA library and says why a GPU is unavailable instead of failing to start.
 */
#ifndef TRAIN_BACKEND_LOAD_H
#define TRAIN_BACKEND_LOAD_H

#include "cuda/train_cuda.h"

#include <stddef.h>

enum train_device { TRAIN_DEVICE_CPU, TRAIN_DEVICE_CUDA };

/** "cpu", "cuda". */
const char *train_device_name(enum train_device d);

/** Parse "cpu" or "cuda"; 0 or -1. */
int train_device_parse(const char *s, enum train_device *d_p);

/**
 * The GPU module, opened on the first call (thread-safe; later calls give the same answer):
 * $TUTTI_TRAIN_CUDA_MODULE when set (and nothing else), else beside the executable (the build
 * tree puts it beside tutti-train), else the library directory tutti was installed to, else
 * the dynamic loader's search. Its table must have this build's ABI and at least its size.
 * @return 0 and *mod_p; -1 with why: built without CUDA, or every place tried and what
 *         dlopen said there.
 */
int train_cuda_module(const struct train_cuda_module **mod_p, char *why, size_t len);

/**
 * Use mod instead of the module a file would give (an emulated GPU in the tests), from now
 * on; call before any other function here and before the ranks fork. Not thread-safe.
 */
void train_cuda_install(const struct train_cuda_module *mod);

/** Where the module was loaded from ("" until it was). */
const char *train_cuda_module_path(void);

/**
 * Can --device cuda run here? Asked in a child process, since a process must not fork once it
 * has initialised CUDA and tutti-train forks its ranks later: the module loads, a GPU is
 * visible, and tutti's stream path can use it (libtutti finds its own GPU module). A child that
 * does not answer within 60 s is killed.
 * @return 0 with a description in info ("1 GPU: NVIDIA H100 80GB HBM3"); -1 with the reason in
 *         info, one line.
 */
int train_cuda_probe(char *info, size_t len);

/** What train_cuda_open found. */
struct train_gpu {
    const struct train_cuda_module *mod;
    int device, count; /* this rank's GPU, of count visible */
    char name[128];
};

/**
 * Rank `rank`'s GPU: rank % (visible GPUs) made current on the calling thread, and tutti's
 * stream path ready to take its memory (libtutti notices the CUDA driver at most 100 ms after
 * it was loaded: this waits up to a second for it).
 * @return 0 with *gpu filled; -1 with why.
 */
int train_cuda_open(int rank, struct train_gpu *gpu, char *why, size_t len);

#endif /* TRAIN_BACKEND_LOAD_H */
