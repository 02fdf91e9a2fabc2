/*
 * tutti/types.h - the value types of the API: datatypes, reduction ops, the unique id and the
 * opaque handles. Numbering of datatypes and ops is part of the ABI: never renumber.
 */
#ifndef TUTTI_TYPES_H
#define TUTTI_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque communicator: a group of ranks that run collectives together. */
typedef struct tutti_comm tutti_comm_t;

/** Opaque request of an asynchronous host operation (see tutti/coll.h, tutti_iallreduce). */
typedef struct tutti_request tutti_request_t;

/**
 * Bytes that identify one communicator being created: the root's address, a 128-bit random
 * secret and a version. Made by tutti_get_unique_id() on one process and handed to every rank
 * out of band (MPI_Bcast, a file, the launcher). Treat it as a password: whoever holds it can
 * join the job.
 */
typedef struct {
    char internal[128];
} tutti_unique_id_t;

/** Element types. Sizes: 1 byte for int8/uint8/fp8, 2 for 16-bit, 4 for 32-bit, 8 for 64-bit. */
typedef enum {
    TUTTI_INT8 = 0,
    TUTTI_UINT8 = 1,
    TUTTI_INT16 = 2,
    TUTTI_UINT16 = 3,
    TUTTI_INT32 = 4,
    TUTTI_UINT32 = 5,
    TUTTI_INT64 = 6,
    TUTTI_UINT64 = 7,
    TUTTI_FLOAT16 = 8,  /**< IEEE 754 binary16 */
    TUTTI_BFLOAT16 = 9, /**< bfloat16: the top half of a binary32 */
    TUTTI_FLOAT32 = 10,
    TUTTI_FLOAT64 = 11,
    TUTTI_FP8_E4M3 = 12, /**< OCP FP8 E4M3 ("FN": no infinities, max 448) */
    TUTTI_FP8_E5M2 = 13, /**< OCP FP8 E5M2 (IEEE-like, has infinities) */
    TUTTI_BOOL = 14,     /**< one byte: 0 is false, any other value true; results are 0 or 1 */
    TUTTI_NUM_DATATYPES
} tutti_datatype_t;

/**
 * Reduction operations. Floating-point reductions of 16-bit and 8-bit types compute each step in
 * binary32 and round the result to the element type (round to nearest even; FP8 saturates to the
 * largest finite value, NaN stays NaN). MIN and MAX propagate NaN. AVG sums, then divides the
 * total once by the number of ranks; integer AVG truncates toward zero like NCCL.
 *
 * The bitwise ops apply to the integer types and TUTTI_BOOL only (a floating-point type is
 * refused with TUTTI_ERR_INVALID_ARG). On TUTTI_BOOL every op is logical and every result 0 or
 * 1: SUM, MAX and BOR are "or", PROD, MIN and BAND "and" (as torch maps SUM and PROD for
 * bool), BXOR "exclusive or" (true where an odd number of ranks had true); AVG is refused.
 *
 * Besides these values, a pre-multiplied sum made by tutti_op_create_premul_sum() is an op of
 * its communicator (values from TUTTI_OP_DYNAMIC_FIRST up).
 */
typedef enum {
    TUTTI_SUM = 0,
    TUTTI_PROD = 1,
    TUTTI_MIN = 2,
    TUTTI_MAX = 3,
    TUTTI_AVG = 4,
    TUTTI_BAND = 5, /**< bitwise and */
    TUTTI_BOR = 6,  /**< bitwise or */
    TUTTI_BXOR = 7, /**< bitwise exclusive or */
    TUTTI_NUM_OPS
} tutti_op_t;

/** The first value of the ops a communicator makes (tutti_op_create_premul_sum). */
#define TUTTI_OP_DYNAMIC_FIRST 0x10000

/**
 * Where the scalar of a pre-multiplied sum lives (tutti_op_create_premul_sum); the values are
 * NCCL's ncclScalarResidence_t.
 */
typedef enum {
    /** scalar points to memory read by each call when it runs: device memory for calls on a
     *  stream or on device buffers, host memory for host calls */
    TUTTI_SCALAR_DEVICE = 0,
    /** the value is read once, when the op is made */
    TUTTI_SCALAR_HOST_IMMEDIATE = 1,
} tutti_scalar_residence_t;

/** color for tutti_comm_split(): the calling rank joins no new communicator. */
#define TUTTI_SPLIT_NOCOLOR (-1)

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_TYPES_H */
