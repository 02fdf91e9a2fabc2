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
 * - BAND, BOR, BXOR: bitwise on the integer types (two's complement bits); none for the float
 *   types.
 * - TUTTI_BOOL: any nonzero byte is true and every result is exactly 0 or 1: SUM, MAX, BOR are
 *   "or", PROD, MIN, BAND "and", BXOR "exclusive or"; no AVG, division or scaling.
 * A combination tutti__reduce_supported refuses, and BOOL given to tutti__reduce_div,
 * tutti__scale or tutti__reduce_premul, writes nothing (the library never asks for one).
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

/**
 * 1 when built-in op applies to dt: the bitwise ops to the integer types and TUTTI_BOOL only,
 * AVG to everything but TUTTI_BOOL, the others to every type; 0 otherwise (and for values out
 * of range).
 */
int tutti__reduce_supported(tutti_datatype_t dt, tutti_op_t op);

/** dst0 = src and dst1 = src (dst1 may be NULL), `bytes` bytes, one read of src. */
void tutti__copy2(void *dst0, void *dst1, const void *src, size_t bytes);

/**
 * dst = src, `bytes` bytes, with non-temporal stores for the bulk (dst == src: nothing). For
 * large results not read again soon; ends with a store fence.
 */
void tutti__copy_nt(void *dst, const void *src, size_t bytes);

/** dst[i] = src[i] / divisor, for AVG with a single rank or where the division is separate. */
void tutti__reduce_div(void *dst, const void *src, size_t n, tutti_datatype_t dt, int divisor);

/*
 * The pre-multiplied sum (NCCL's ncclRedOpCreatePreMulSum): each rank's input times a scalar,
 * the product rounded to the datatype, then summed. The product is kern_prod_* with the scalar
 * first: integers wrap (two's complement), float32/float64 multiply in the type, the narrow
 * float types decode both to float32, multiply there (exact for these widths) and round back
 * like SUM does (round to nearest even; fp8 saturates, NaN stays NaN).
 */

/* dst0[i] = round_dt(scalar * src[i]), and the same into dst1 when not NULL; scalar points to
 * one element of dt (unaligned is fine). dst may equal src (in place). Every dt but BOOL. */
void tutti__scale(void *dst0, void *dst1, const void *src, size_t n, tutti_datatype_t dt,
                  const void *scalar);

/* dst0[i] = acc[i] + round_dt(scalar * own[i]) with TUTTI_SUM's semantics for dt (and into
 * dst1 when not NULL): bit for bit tutti__scale(own) followed by tutti__reduce(SUM, acc, .),
 * in one pass. dst may alias acc or own exactly. Every dt but BOOL. */
void tutti__reduce_premul(void *dst0, void *dst1, const void *acc, const void *own, size_t n,
                          tutti_datatype_t dt, const void *scalar);

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
