/*
 * perf_data.h - datatypes and ops by their nccl-tests names, and the input patterns of the perf
 * tools: values chosen so that every collective's result is exact whatever the reduction order,
 * for every datatype and op, so a check compares bits-for-value with no tolerance.
 *
 * Integers take any bit pattern (SUM and PROD wrap around, which is exact in any order; AVG uses
 * values small enough that the sum cannot wrap). Floating-point types take small integers: for
 * SUM and AVG no partial sum leaves the range where every integer is representable (16 for fp8
 * e4m3, 8 for e5m2, 256 for bf16, 2048 for fp16), for PROD they are +-1 and +-2 (powers of two
 * multiply exactly while they stay in range), for MIN and MAX and data movement anything in
 * range. AVG is then one rounding of an exact sum, computed the way tutti/types.h documents it.
 */
#ifndef TUTTI_PERF_DATA_H
#define TUTTI_PERF_DATA_H

#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

/*
 * The datatypes and ops the patterns cover, and so the perf tools run: int8 .. fp8 e5m2 and
 * sum .. avg. TUTTI_BOOL and the bitwise ops (BAND, BOR, BXOR) are not among them yet: their
 * exact results need patterns of their own, so -d all and -o all stop before them.
 */
#define PERF_NUM_DTYPES (TUTTI_FP8_E5M2 + 1)
#define PERF_NUM_OPS    (TUTTI_AVG + 1)

/*
 * -o premulsum (nccl-tests' "mulsum" is accepted too): a pre-multiplied sum made once per
 * communicator and datatype with the scalar 1 on every rank (tutti_op_create_premul_sum), so the
 * data and the check are SUM's while every element goes through the multiply of the scaled
 * input; what it measures is the pre-multiplied sum's cost against SUM's. Not part of -o all;
 * MPI has no such op (its tools skip it, saying so).
 */
#define PERF_OP_PREMUL ((tutti_op_t)TUTTI_NUM_OPS)

/** A value of any datatype: integers as 64-bit two's complement bits, floats as a double. */
typedef union {
    uint64_t u;
    double f;
} perf_val_t;

/** The pattern of one fill: what every rank puts at every index. */
struct perf_gen {
    tutti_datatype_t dt;
    tutti_op_t op;
    int nranks;
    uint64_t seed;
    int is_float;
    int64_t lo; /* values lo .. lo + span - 1 (span 0: any 64-bit pattern) */
    uint64_t span;
    int pow2; /* float PROD: values +-1, +-2 (pow2 = 1) or +-1 (pow2 = 0) */
};

/** nccl-tests' name of a datatype ("float", "half", "f8e4m3"...). */
const char *perf_dtype_name(tutti_datatype_t dt);

/** A datatype by name (nccl-tests' names and aliases such as float32, fp8_e4m3); PERF_ALL for
 *  "all"; -2 when unknown. */
int perf_dtype_parse(const char *s);

/** Name of an op as nccl-tests prints it ("sum"). */
const char *perf_op_name(tutti_op_t op);

/** An op by name, PERF_ALL for "all", -2 when unknown. */
int perf_op_parse(const char *s);

/** Ops in nccl-tests' order for -o all: sum prod max min avg. */
extern const tutti_op_t perf_op_order[PERF_NUM_OPS];

/**
 * Set up the pattern for dt and op over nranks ranks. Collectives that move data without
 * reducing it pass TUTTI_MAX, which allows the widest range of values.
 */
void perf_gen_init(struct perf_gen *g, tutti_datatype_t dt, tutti_op_t op, int nranks,
                   uint64_t seed);

/** The input of `rank` at index idx. */
perf_val_t perf_gen_input(const struct perf_gen *g, int rank, size_t idx);

/** The exact result of g->op over every rank's input at index idx. */
perf_val_t perf_gen_reduced(const struct perf_gen *g, size_t idx);

/** Element idx of a buffer of datatype dt. */
void perf_store(void *buf, size_t idx, tutti_datatype_t dt, perf_val_t v);
perf_val_t perf_load(const void *buf, size_t idx, tutti_datatype_t dt);

struct perf_call;

/** The pattern of one call (its datatype, op, ranks and seed). */
void perf_call_gen(const struct perf_call *c, struct perf_gen *g);

/** buf[i] = input(rank, first + i) for i < n. */
void perf_fill_input(const struct perf_gen *g, void *buf, int rank, size_t first, size_t n);

/** Overwrite n elements with a pattern no input has (NaN for floats), so stale data fails. */
void perf_poison(void *buf, size_t n, tutti_datatype_t dt);

/** Number of i < n with buf[i] != input(rank, first + i). */
size_t perf_check_input(const struct perf_gen *g, const void *buf, int rank, size_t first,
                        size_t n);

/** Number of i < n with buf[i] != reduced(first + i). */
size_t perf_check_reduced(const struct perf_gen *g, const void *buf, size_t first, size_t n);

#endif /* TUTTI_PERF_DATA_H */
