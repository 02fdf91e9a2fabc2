/*
 * redop.c - reduction operators: NCCL's built-in ones mapped to tutti's, and PreMulSum
 * operators (ncclRedOpCreatePreMulSum). tutti reduces with SUM, PROD, MIN, MAX and AVG only, so
 * a PreMulSum call multiplies this rank's input by the scalar into a scratch copy on the host,
 * with tutti's own element product (the same rounding as its PROD), and sums that. Host
 * buffers only: on a CUDA stream or with device buffers the call is refused, as is a scalar in
 * device memory; a host scalar may be read at creation (ncclScalarHostImmediate) or at every
 * call (ncclScalarDevice on host-visible memory, NCCL's "read while the collective runs").
 */
#include "shim.h"
#include "gpu/devops.h"
#include "kernels/kern_ops.h"

#include <stdlib.h>
#include <string.h>

static const tutti_op_t op_table[ncclNumOps] = {
    [ncclSum] = TUTTI_SUM, [ncclProd] = TUTTI_PROD, [ncclMax] = TUTTI_MAX,
    [ncclMin] = TUTTI_MIN, [ncclAvg] = TUTTI_AVG,
};

/* Does ptr point at device memory? (Never, in a process without a GPU runtime.) */
static int on_device(const void *ptr)
{
    const struct tutti_devops *dev = tutti__devops();
    int is_dev = 0;
    return ptr != NULL && dev != NULL && dev->is_device(ptr, &is_dev) == 0 && is_dev;
}

ncclResult_t shim_redop(struct ncclComm *c, ncclRedOp_t op, tutti_datatype_t dt, tutti_op_t *op_p,
                        const struct shim_redop **premul_p)
{
    *premul_p = NULL;
    if ((int)op >= 0 && op < ncclNumOps) {
        *op_p = op_table[op];
        return ncclSuccess;
    }
    int slot = (int)op - ncclNumOps;
    if (slot < 0 || slot >= SHIM_MAX_REDOPS || !c->ops[slot].used) {
        return shim_error(c, ncclInvalidArgument,
                          "reduction operator %d is neither built in nor a live operator of "
                          "this communicator",
                          (int)op);
    }
    if (c->ops[slot].dt != dt) {
        return shim_error(c, ncclInvalidArgument, "reduction operator %d was made for %s, not %s",
                          (int)op, tutti_datatype_name(c->ops[slot].dt), tutti_datatype_name(dt));
    }
    *op_p = TUTTI_SUM;
    *premul_p = &c->ops[slot];
    return ncclSuccess;
}

/* dst[i] = src[i] * k for `n` elements of dt, k in dt's own format. */
static void scale(void *dst, const void *src, size_t n, tutti_datatype_t dt, const void *k)
{
#define SCALE_(sfx, T)                                                                             \
    {                                                                                              \
        T kv;                                                                                      \
        memcpy(&kv, k, sizeof(kv));                                                                \
        for (size_t i = 0; i < n; i++) {                                                           \
            ((T *)dst)[i] = kern_prod_##sfx(((const T *)src)[i], kv);                              \
        }                                                                                          \
    }                                                                                              \
    break;
    switch (dt) {
    case TUTTI_INT8:
        SCALE_(i8, int8_t)
    case TUTTI_UINT8:
        SCALE_(u8, uint8_t)
    case TUTTI_INT16:
        SCALE_(i16, int16_t)
    case TUTTI_UINT16:
        SCALE_(u16, uint16_t)
    case TUTTI_INT32:
        SCALE_(i32, int32_t)
    case TUTTI_UINT32:
        SCALE_(u32, uint32_t)
    case TUTTI_INT64:
        SCALE_(i64, int64_t)
    case TUTTI_UINT64:
        SCALE_(u64, uint64_t)
    case TUTTI_FLOAT16:
        SCALE_(half, uint16_t)
    case TUTTI_BFLOAT16:
        SCALE_(bf16, uint16_t)
    case TUTTI_FLOAT32:
        SCALE_(f32, float)
    case TUTTI_FLOAT64:
        SCALE_(f64, double)
    case TUTTI_FP8_E4M3:
        SCALE_(e4m3, uint8_t)
    case TUTTI_FP8_E5M2:
        SCALE_(e5m2, uint8_t)
    default:
        break;
    }
#undef SCALE_
}

ncclResult_t shim_premul(struct ncclComm *c, const struct shim_redop *pm, const void *src,
                         size_t count, void *stream, const char *what, void **scaled_p)
{
    size_t esize = tutti_datatype_size(pm->dt);
    *scaled_p = NULL;
    if (stream != NULL || on_device(src)) {
        return shim_error(c, ncclInvalidUsage,
                          "%s: a PreMulSum operator on %s is not supported by tutti (it scales "
                          "the input on the host); use host buffers without a stream",
                          what, stream != NULL ? "a CUDA stream" : "device memory");
    }
    if (count == 0) {
        return ncclSuccess;
    }
    if (src == NULL) {
        return shim_error(c, ncclInvalidArgument, "%s: sendbuff is NULL with count %zu", what,
                          count);
    }
    if (count > SIZE_MAX / esize) {
        return shim_error(c, ncclInvalidArgument, "%s: count %zu overflows", what, count);
    }
    void *out = malloc(count * esize);
    if (out == NULL) {
        return shim_error(c, ncclSystemError, "%s: no memory to scale %zu bytes", what,
                          count * esize);
    }
    unsigned char k[8];
    memcpy(k, pm->residence == ncclScalarDevice ? pm->scalar_ptr : (const void *)pm->scalar, esize);
    scale(out, src, count, pm->dt, k);
    *scaled_p = out;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, RedOpCreatePreMulSum, ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm)
{
    struct ncclComm *c;
    tutti_datatype_t dt = TUTTI_INT8;
    ncclResult_t r = shim_enter(comm, "ncclRedOpCreatePreMulSum", &c);
    if (r != ncclSuccess) {
        return r;
    }
    r = shim_dtype(c, datatype, &dt);
    if (r == ncclSuccess && (op == NULL || scalar == NULL)) {
        r = shim_error(c, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %s is NULL",
                       op == NULL ? "op" : "scalar");
    }
    if (r == ncclSuccess && residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclRedOpCreatePreMulSum: residence %d is not an ncclScalarResidence_t",
                       (int)residence);
    }
    if (r == ncclSuccess && on_device(scalar)) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclRedOpCreatePreMulSum: the scalar is in device memory, which tutti "
                       "cannot read in stream order; pass a host scalar");
    }
    if (r != ncclSuccess) {
        shim_leave(c);
        return r;
    }
    pthread_mutex_lock(&c->lock);
    int slot = 0;
    while (slot < SHIM_MAX_REDOPS && c->ops[slot].used) {
        slot++;
    }
    if (slot < SHIM_MAX_REDOPS) {
        struct shim_redop *o = &c->ops[slot];
        o->used = 1;
        o->dt = dt;
        o->residence = residence;
        o->scalar_ptr = scalar;
        memcpy(o->scalar, scalar, tutti_datatype_size(dt));
        *op = (ncclRedOp_t)(ncclNumOps + slot);
    }
    pthread_mutex_unlock(&c->lock);
    if (slot == SHIM_MAX_REDOPS) {
        r = shim_error(c, ncclInvalidUsage,
                       "ncclRedOpCreatePreMulSum: %d operators are alive on this communicator; "
                       "destroy some with ncclRedOpDestroy",
                       SHIM_MAX_REDOPS);
    }
    shim_leave(c);
    return r;
}

NCCL_API(ncclResult_t, RedOpDestroy, ncclRedOp_t op, ncclComm_t comm)
{
    struct ncclComm *c;
    ncclResult_t r = shim_enter(comm, "ncclRedOpDestroy", &c);
    if (r != ncclSuccess) {
        return r;
    }
    int slot = (int)op - ncclNumOps;
    pthread_mutex_lock(&c->lock);
    int live = slot >= 0 && slot < SHIM_MAX_REDOPS && c->ops[slot].used;
    if (live) {
        c->ops[slot].used = 0;
    }
    pthread_mutex_unlock(&c->lock);
    if (!live) {
        r = shim_error(c, ncclInvalidArgument,
                       "ncclRedOpDestroy: operator %d was not made by ncclRedOpCreatePreMulSum "
                       "on this communicator (or was destroyed)",
                       (int)op);
    }
    shim_leave(c);
    return r;
}
