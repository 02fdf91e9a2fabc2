/*
 * kern_ref.h - the independent reference that test_kernels.c checks the reduction kernels
 * against: random elements with special values mixed in, raw element access, exact per-element
 * results of every datatype x op, and the narrow float formats (float16, bfloat16, fp8) decoded
 * and rounded with frexp/ldexp/nearbyint, independent of kernels/kern_ops.h.
 */
#ifndef TUTTI_TEST_KERN_REF_H
#define TUTTI_TEST_KERN_REF_H

#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

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
uint64_t get_raw(const void *buf, size_t i, size_t size);
void put_raw(void *buf, size_t i, size_t size, uint64_t v);
int ref_is_nan(const fmt_t *f, uint32_t v);
double ref_max_finite(const fmt_t *f);
double ref_decode(const fmt_t *f, uint32_t v);
uint32_t ref_from_float(const fmt_t *f, float x);
uint64_t ref_elem(tutti_datatype_t dt, tutti_op_t op, uint64_t a, uint64_t b, int div);
uint64_t ref_div_elem(tutti_datatype_t dt, uint64_t x, int div);
int raw_is_nan(tutti_datatype_t dt, uint64_t v);
int same_result(tutti_datatype_t dt, tutti_op_t op, uint64_t want, uint64_t got);

#endif
