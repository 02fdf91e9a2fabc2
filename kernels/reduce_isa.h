/*
 * reduce_isa.h - the tables of element loops behind tutti__reduce, tutti__reduce_div,
 * tutti__scale and tutti__reduce_premul, one table per instruction set (private to the kernels
 * and their tests).
 *
 * reduce_loops.h is compiled once per instruction set (reduce_generic.c, reduce_avx2.c,
 * reduce_avx512.c); each compilation exports one table. reduce_cpu.c picks a table at the first
 * call from what the CPU supports, and tests can force one to compare the paths bit for bit.
 */
#ifndef TUTTI_KERNELS_REDUCE_ISA_H
#define TUTTI_KERNELS_REDUCE_ISA_H

#include "tutti/types.h"

#include <stddef.h>

/*
 * dst0[i] = op(a[i], b[i]), and into dst1[i] too when dst1 is not NULL; divisor > 1 (AVG loops
 * only: the dispatcher sends AVG with divisor <= 1 to the SUM loop).
 */
typedef void (*tutti_kern_reduce_fn)(void *dst0, void *dst1, const void *a, const void *b, size_t n,
                                     int divisor);

/* dst[i] = src[i] / divisor, divisor > 1. */
typedef void (*tutti_kern_div_fn)(void *dst, const void *src, size_t n, int divisor);

/* dst0[i] = scalar * src[i] rounded to the type (kern_prod_* with the scalar first), and into
 * dst1[i] too when dst1 is not NULL; scalar points to one element, at any alignment. */
typedef void (*tutti_kern_scale_fn)(void *dst0, void *dst1, const void *src, size_t n,
                                    const void *scalar);

/* dst0[i] = acc[i] + (scalar * own[i]), the product rounded to the type first
 * (kern_sum_*(acc, kern_prod_*(scalar, own))), and into dst1[i] too when dst1 is not NULL. */
typedef void (*tutti_kern_premul_fn)(void *dst0, void *dst1, const void *acc, const void *own,
                                     size_t n, const void *scalar);

/* A NULL entry is a combination the datatype does not support (tutti__reduce_supported, and no
 * division, scaling or pre-multiplied sum of TUTTI_BOOL). */
typedef struct {
    const char *name; /* "generic", "avx2" or "avx512" */
    tutti_kern_reduce_fn reduce[TUTTI_NUM_DATATYPES][TUTTI_NUM_OPS];
    tutti_kern_div_fn div[TUTTI_NUM_DATATYPES];
    tutti_kern_scale_fn scale[TUTTI_NUM_DATATYPES];
    tutti_kern_premul_fn premul[TUTTI_NUM_DATATYPES];
} tutti_kern_table_t;

extern const tutti_kern_table_t tutti__kern_generic;
#if defined(__x86_64__)
#define TUTTI_KERN_HAVE_X86 1
extern const tutti_kern_table_t tutti__kern_avx2;   /* AVX2 + F16C */
extern const tutti_kern_table_t tutti__kern_avx512; /* AVX-512 F/BW/VL + F16C */
#endif

/**
 * Tests only: make the following calls use the named table ("generic", "avx2", "avx512"), or the
 * one the CPU detection picks for "auto". Returns 0, or -1 when the name is unknown or the CPU
 * cannot run that table (the choice is then left as it was). Not thread-safe against calls that
 * are running kernels at the same time.
 */
int tutti__reduce_force_isa(const char *name);

#endif /* TUTTI_KERNELS_REDUCE_ISA_H */
