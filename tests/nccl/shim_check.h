/*
 * shim_check.h - the checks of the shim's test programs (shim_test.c, shim_stream_test.c): on
 * a failed condition, print the rank (g_rank, which each program defines), the place and the
 * message, and return 1 from the calling function; NCCLOK adds the call's result and
 * ncclGetLastError of `comm` (NULL: the thread's).
 */
#ifndef TUTTI_TESTS_NCCL_SHIM_CHECK_H
#define TUTTI_TESTS_NCCL_SHIM_CHECK_H

#include <stdio.h>

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define NCCLOK_ON(comm, call)                                                                      \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        CHECK(r_ == ncclSuccess, "%s -> %d (%s): %s", #call, (int)r_, ncclGetErrorString(r_),      \
              ncclGetLastError(comm));                                                             \
    } while (0)

#endif /* TUTTI_TESTS_NCCL_SHIM_CHECK_H */
