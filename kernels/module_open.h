/*
 * module_open.h - how tutti's programs open a GPU module: libtutti its libtutti-cuda.so
 * (kernels/cuda_load.c), tutti-train its libtutti-train-cuda.so (trainer/backend_load.c).
 * Each module exports one constant table whose first members are `size_t size; int abi;`:
 * dlopen the file, look the table up, and take it only when it carries the caller's ABI
 * number and is at least as large as the caller's struct (members are only ever appended).
 */
#ifndef TUTTI_KERNELS_MODULE_OPEN_H
#define TUTTI_KERNELS_MODULE_OPEN_H

#include <stddef.h>

/** The first members of every module table. */
struct tutti_module_header {
    size_t size;
    int abi;
};

/**
 * Open path (RTLD_NOW | RTLD_LOCAL) and return its table `symbol`; a module taken is never
 * closed. Else NULL, with what went wrong appended to tried ("; " between places): dlerror's
 * text, which names the file, or that the file holds no such table of that ABI and size.
 * Thread-safe as dlopen is; tried belongs to the caller.
 */
const void *tutti__module_open(const char *path, const char *symbol, size_t min_size, int abi,
                               char *tried, size_t tried_len);

#endif /* TUTTI_KERNELS_MODULE_OPEN_H */
