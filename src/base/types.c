/*
 * types.c - facts about datatypes and ops: element sizes and names, for validation, logs and the
 * perf tools.
 */
#include "tutti/coll.h"
#include "tutti/version.h"

static const struct {
    const char *name;
    size_t size;
} dt_info[TUTTI_NUM_DATATYPES] = {
    [TUTTI_INT8] = {"int8", 1},         [TUTTI_UINT8] = {"uint8", 1},
    [TUTTI_INT16] = {"int16", 2},       [TUTTI_UINT16] = {"uint16", 2},
    [TUTTI_INT32] = {"int32", 4},       [TUTTI_UINT32] = {"uint32", 4},
    [TUTTI_INT64] = {"int64", 8},       [TUTTI_UINT64] = {"uint64", 8},
    [TUTTI_FLOAT16] = {"float16", 2},   [TUTTI_BFLOAT16] = {"bfloat16", 2},
    [TUTTI_FLOAT32] = {"float32", 4},   [TUTTI_FLOAT64] = {"float64", 8},
    [TUTTI_FP8_E4M3] = {"fp8_e4m3", 1}, [TUTTI_FP8_E5M2] = {"fp8_e5m2", 1},
    [TUTTI_BOOL] = {"bool", 1},
};

static const char *const op_names[TUTTI_NUM_OPS] = {
    [TUTTI_SUM] = "sum", [TUTTI_PROD] = "prod", [TUTTI_MIN] = "min", [TUTTI_MAX] = "max",
    [TUTTI_AVG] = "avg", [TUTTI_BAND] = "band", [TUTTI_BOR] = "bor", [TUTTI_BXOR] = "bxor",
};

size_t tutti_datatype_size(tutti_datatype_t dt)
{
    return ((unsigned)dt < TUTTI_NUM_DATATYPES) ? dt_info[dt].size : 0;
}

const char *tutti_datatype_name(tutti_datatype_t dt)
{
    return ((unsigned)dt < TUTTI_NUM_DATATYPES) ? dt_info[dt].name : "unknown";
}

const char *tutti_op_name(tutti_op_t op)
{
    if ((int)op >= TUTTI_OP_DYNAMIC_FIRST) {
        return "premul_sum"; /* a communicator's handle (its validity is the caller's check) */
    }
    return ((unsigned)op < TUTTI_NUM_OPS) ? op_names[op] : "unknown";
}

int tutti_version(void)
{
    return TUTTI_VERSION_CODE;
}
