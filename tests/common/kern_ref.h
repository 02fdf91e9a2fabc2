/*
 * kern_ref.h - the independent reference that test_kernels.c checks the reduction kernels
 * against: random elements with special values mixed in, raw element access, exact per-element
 * results of every datatype x op (bool and the bitwise ops included) and of the pre-multiplied
 * sum, and the narrow float formats (float16, bfloat16, fp8) decoded and rounded with
 * frexp/ldexp/nearbyint, independent of kernels/kern_ops.h.
 */
#ifndef TUTTI_TEST_KERN_REF_H
#define TUTTI_TEST_KERN_REF_H

#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

/* Every datatype but bool, X(name, datatype): one test per datatype. */
#define REF_NUMBER_TYPES(X)                                                                        \
    X(int8, TUTTI_INT8)                                                                            \
    X(uint8, TUTTI_UINT8)                                                                          \
    X(int16, TUTTI_INT16)                                                                          \
    X(uint16, TUTTI_UINT16)                                                                        \
    X(int32, TUTTI_INT32)                                                                          \
    X(uint32, TUTTI_UINT32)                                                                        \
    X(int64, TUTTI_INT64)                                                                          \
    X(uint64, TUTTI_UINT64)                                                                        \
    X(float16, TUTTI_FLOAT16)                                                                      \
    X(bfloat16, TUTTI_BFLOAT16)                                                                    \
    X(float32, TUTTI_FLOAT32)                                                                      \
    X(float64, TUTTI_FLOAT64)                                                                      \
    X(fp8_e4m3, TUTTI_FP8_E4M3)                                                                    \
    X(fp8_e5m2, TUTTI_FP8_E5M2)

/* ---- narrow float formats ---- */

typedef struct {
    int bits;  /* 16 or 8 */
    int mbits; /* mantissa field */
    int ebits; /* exponent field */
    int bias;
    int has_inf;  /* top exponent = inf/NaN; else (e4m3) only S.1111.111 is NaN */
    int saturate; /* overflow and inf -> largest finite (fp8) */
} fmt_t;

extern const fmt_t fmt_half, fmt_bf16, fmt_e4m3, fmt_e5m2;

uint64_t next_rand(uint64_t *s);
uint32_t f32_bits(float f);
float bits_f32(uint32_t u);
uint64_t f64_bits(double d);
uint64_t gen_elem(tutti_datatype_t dt, uint64_t *s);
/* Scalars of the pre-multiplied sum: for k < GEN_SCALAR_SPECIALS the k-th special one of dt (0,
 * -0, 1, -1, 1/2, 1/3, infinities, NaN, subnormal, extremes; the integers' limits), after that a
 * random element. Not for TUTTI_BOOL. */
#define GEN_SCALAR_SPECIALS 12
uint64_t gen_scalar(tutti_datatype_t dt, int k, uint64_t *s);
uint64_t get_raw(const void *buf, size_t i, size_t size);
void put_raw(void *buf, size_t i, size_t size, uint64_t v);
int ref_is_nan(const fmt_t *f, uint32_t v);
double ref_max_finite(const fmt_t *f);
double ref_decode(const fmt_t *f, uint32_t v);
uint32_t ref_from_float(const fmt_t *f, float x);
uint64_t ref_elem(tutti_datatype_t dt, tutti_op_t op, uint64_t a, uint64_t b, int div);
uint64_t ref_div_elem(tutti_datatype_t dt, uint64_t x, int div);
/* tutti__scale's and tutti__reduce_premul's element: scalar * x rounded (PROD, the scalar
 * first), and acc + that (SUM). */
uint64_t ref_scale_elem(tutti_datatype_t dt, uint64_t scalar, uint64_t x);
uint64_t ref_premul_elem(tutti_datatype_t dt, uint64_t acc, uint64_t own, uint64_t scalar);
int raw_is_nan(tutti_datatype_t dt, uint64_t v);
int same_result(tutti_datatype_t dt, tutti_op_t op, uint64_t want, uint64_t got);

#endif
