/*
 * emul_reduce.h - the GPU reduction and premul kernels run on the CPU (emul_reduce.cc): the body of
 * kernels/cuda/reduce_body.cuh executed for every block and thread of the grid, one thread after
 * the other, on host memory. Exact for these kernels, whose threads share nothing; it tests the
 * work split and the fold where no GPU is available. The grid is what the launcher would pick on
 * a GPU with EMUL_SMS multiprocessors (few, so that the grid-stride loops wrap soon).
 */
#ifndef TUTTI_TEST_EMUL_REDUCE_H
#define TUTTI_TEST_EMUL_REDUCE_H

#include "kernels/cuda/tutti_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EMUL_SMS 2

/* As the module's reduce, premul and launch_shape (tutti_cuda.h), on host memory (a "device"
 * scalar too, read when the kernel body runs); stream is unused. */
int emul_reduce(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream);
int emul_premul(const void *src, void *const *dst, int ndst, size_t count, tutti_datatype_t dt,
                const void *scalar, int scalar_on_device, void *stream);
int emul_launch_shape(size_t count, tutti_datatype_t dt, int *blocks_p, int *threads_p);

#ifdef __cplusplus
}
#endif
#endif
