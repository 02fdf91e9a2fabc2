// emul_reduce.cc - emul_reduce.h: the GPU kernels' body (kernels/cuda/reduce_body.cuh), built by
// the host C++ compiler and run thread by thread.
#include "emul_reduce.h"
#include "kernels/cuda/reduce_body.cuh"

using namespace tutti_cuda;

namespace {

// Every thread of every block, in order.
template <class Ty, int OP> void emulate(const ReduceArgs &a, int blocks)
{
    for (int b = 0; b < blocks; b++) {
        for (int t = 0; t < THREADS; t++) {
            reduce_body<Ty, OP>(a, (size_t)b, THREADS, (size_t)t, (size_t)blocks);
        }
    }
}

typedef void (*emul_fn)(const ReduceArgs &, int);

// The emulator of a datatype x op, or none where the datatype lacks the op, as the module's
// kernel table (reduce_kernels.cu) has it.
template <class Ty, int OP> constexpr emul_fn emulator_of()
{
    if constexpr (kind_supports(Ty::kind, OP)) {
        return emulate<Ty, OP>;
    } else {
        return nullptr;
    }
}

#define EMUL_ROW(dt, sfx) TUTTI_CUDA_OP_ROW(emulator_of, sfx),
const emul_fn emulators[TUTTI_NUM_DATATYPES][TUTTI_NUM_OPS] = {TUTTI_CUDA_TYPES(EMUL_ROW)};
#define EMUL_SCALE(dt, sfx) emulator_of<Ty_##sfx, OP_SCALE>(),
const emul_fn scale_emulators[TUTTI_NUM_DATATYPES] = {TUTTI_CUDA_TYPES(EMUL_SCALE)};

} // namespace

int emul_launch_shape(size_t count, tutti_datatype_t dt, int *blocks_p, int *threads_p)
{
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES) {
        return TUTTI_CUDA_ERR_INVALID_VALUE;
    }
    *blocks_p = blocks_for(aligned_work_items(count, dt), EMUL_SMS);
    *threads_p = THREADS;
    return 0;
}

int emul_reduce(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream)
{
    ReduceArgs a;
    int o = (int)op;
    int err = prepare(&a, src, nsrc, dst, ndst, count, dt, &o, divisor);

    (void)stream;
    if (err != 0 || count == 0) {
        return err;
    }
    emulators[dt][o](a, blocks_for(work_items(a), EMUL_SMS));
    return 0;
}

int emul_premul(const void *src, void *const *dst, int ndst, size_t count, tutti_datatype_t dt,
                const void *scalar, int scalar_on_device, void *stream)
{
    ReduceArgs a;
    int err = prepare_scale(&a, src, dst, ndst, count, dt, scalar, scalar_on_device);

    (void)stream;
    if (err != 0 || count == 0) {
        return err;
    }
    scale_emulators[dt](a, blocks_for(work_items(a), EMUL_SMS));
    return 0;
}
