/*
 * cuda_internal.h - what the GPU module's files share (kernels/cuda/, compiled by nvcc only):
 * the launchers of the reduction and premul kernels (reduce_kernels.cu) and the stream operations
 * (stream_ops.cu), which module.cu puts in the table.
 */
#ifndef TUTTI_KERNELS_CUDA_CUDA_INTERNAL_H
#define TUTTI_KERNELS_CUDA_CUDA_INTERNAL_H

#include "kernels/cuda/tutti_cuda.h"

/* The table's reduce and launch_shape (tutti_cuda.h documents them). */
int tutti__cuda_reduce(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                       tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream);
int tutti__cuda_launch_shape(size_t count, tutti_datatype_t dt, int *blocks_p, int *threads_p);
/* The table's premul (reduce_kernels.cu too). */
int tutti__cuda_premul(const void *src, void *const *dst, int ndst, size_t count,
                       tutti_datatype_t dt, const void *scalar, int scalar_on_device, void *stream);

/* The table's stream operations (stream_ops.cu). */
int tutti__cuda_stream_capturing(void *stream, int *capturing_p);
int tutti__cuda_host_alloc(void **ptr_p, size_t bytes);
int tutti__cuda_host_free(void *ptr);
int tutti__cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream);
int tutti__cuda_host_func(void *stream, void (*fn)(void *), void *arg);
int tutti__cuda_wait_geq(void *stream, const volatile uint64_t *word, uint64_t value);
int tutti__cuda_ipc_get_handle(void *ptr, unsigned char handle[64]);
int tutti__cuda_ipc_open(const unsigned char handle[64], void **ptr_p);
int tutti__cuda_ipc_close(void *ptr);
int tutti__cuda_host_register(void *ptr, size_t bytes);
int tutti__cuda_host_unregister(void *ptr);
int tutti__cuda_write_value(void *stream, volatile uint64_t *word, uint64_t value);
int tutti__cuda_stream_create(void **stream_p);
int tutti__cuda_stream_destroy(void *stream);
int tutti__cuda_stream_synchronize(void *stream);
int tutti__cuda_capture_begin(void *stream);
int tutti__cuda_capture_end(void *stream);

#endif /* TUTTI_KERNELS_CUDA_CUDA_INTERNAL_H */
