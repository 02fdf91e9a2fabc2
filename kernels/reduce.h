/*
 * reduce.h - CPU reduction and copy kernels used by the engine (private to the library).
 *
 * Semantics, the same for every datatype x op (tutti/types.h documents them for users):
 * - integers: two's-complement wrap-around for SUM and PROD; AVG divides the final sum by the
 *   divisor and truncates toward zero (C division).
 * - float32/float64: IEEE arithmetic in the type itself.
 * - float16, bfloat16, fp8 e4m3, fp8 e5m2: each step converts both operands to float32, applies
 *   the op in float32 and rounds the result back to the type with round-to-nearest-even. This is
 *   exactly the correctly rounded result of the op in the narrow type. FP8 conversion saturates
 *   to the largest finite value (CUDA's __NV_SATFINITE: +-448 for e4m3, +-57344 for e5m2; an
 *   infinity also becomes the largest finite value), and NaN stays NaN.
 * - MIN/MAX: if either operand is NaN the result is NaN; -0.0 < +0.0 is not distinguished
 *   (the first operand wins on equality). The result is one of the operands bit for bit (a NaN
 *   operand, the first if both are); the narrow types are compared by value, not re-encoded.
 * - AVG: identical to SUM except where `divisor` > 1, where the summed value is divided by
 *   divisor (float types: one IEEE division, in float32 for the narrow types, then rounded).
 *
 * Every destination may alias a source exactly (in-place); partial overlaps are not allowed.
 */
#ifndef TUTTI_KERNELS_REDUCE_H
#define TUTTI_KERNELS_REDUCE_H

#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

/**
 * dst0[i] = op(a[i], b[i]) for i < n elements, and the same value into dst1[i] when dst1 is not
 * NULL (reduce and copy fused: one pass over the inputs). With op == TUTTI_AVG and divisor > 1 the
 * result is divided by divisor; divisor is ignored for the other ops.
 */
void tutti__reduce(void *dst0, void *dst1, const void *a, const void *b, size_t n,
                   tutti_datatype_t dt, tutti_op_t op, int divisor);

/** dst0 = src and dst1 = src (dst1 may be NULL), `bytes` bytes, one read of src. */
void tutti__copy2(void *dst0, void *dst1, const void *src, size_t bytes);

/**
 * dst = src, `bytes` bytes, with non-temporal stores for the bulk (dst == src: nothing). For
 * large results not read again soon; ends with a store fence.
 */
void tutti__copy_nt(void *dst, const void *src, size_t bytes);

/** dst[i] = src[i] / divisor, for AVG with a single rank or where the division is separate. */
void tutti__reduce_div(void *dst, const void *src, size_t n, tutti_datatype_t dt, int divisor);

/** Which SIMD flavour the runtime dispatch picked ("avx512", "avx2", "generic"). */
const char *tutti__reduce_isa(void);

/* ---- scalar conversions, exact and portable; used by kernels, tests and the trainer ---- */
float tutti__half_to_float(uint16_t h);
uint16_t tutti__float_to_half(float f); /* round to nearest even, overflow -> inf */
float tutti__bf16_to_float(uint16_t h);
uint16_t tutti__float_to_bf16(float f); /* round to nearest even, NaN stays NaN */
float tutti__e4m3_to_float(uint8_t v);
uint8_t tutti__float_to_e4m3(float f); /* RNE, saturate to +-448, NaN -> 0x7f (CUDA) */
float tutti__e5m2_to_float(uint8_t v);
uint8_t tutti__float_to_e5m2(float f); /* RNE, saturate to +-57344, NaN -> quiet NaN */

#endif /* TUTTI_KERNELS_REDUCE_H */
