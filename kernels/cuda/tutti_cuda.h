/*
 * tutti_cuda.h - the interface of the GPU module, libtutti-cuda.so (kernels/cuda/), and of the
 * loader in libtutti that opens it (kernels/cuda_load.c).
 *
 * The module is built by nvcc only where CUDA is found, linked with the static CUDA runtime, and
 * exports exactly one symbol: TUTTI_CUDA_MODULE_SYMBOL, a constant table of the functions below.
 * libtutti never links a CUDA library; it dlopens the module the first time GPU work is asked
 * for (tutti__cuda_module), so it runs unchanged where CUDA or the GPU driver is absent.
 *
 * This header is valid C11 and CUDA C++ and includes no CUDA header: every CUDA status crosses
 * it as an int holding a cudaError_t value (0 = cudaSuccess), every stream as a void *
 * (cudaStream_t; NULL = the legacy default stream).
 */
#ifndef TUTTI_KERNELS_CUDA_TUTTI_CUDA_H
#define TUTTI_KERNELS_CUDA_TUTTI_CUDA_H

#include "tutti/status.h"
#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The file the loader looks for, and the one symbol it exports. */
#define TUTTI_CUDA_MODULE_FILE   "libtutti-cuda.so"
#define TUTTI_CUDA_MODULE_SYMBOL "tutti__cuda_module_v1"
/** Bumped whenever the table below changes incompatibly; the loader refuses other versions. */
#define TUTTI_CUDA_ABI 1

/** Most sources and destinations of one tutti__cuda_reduce call. */
#define TUTTI_CUDA_MAX_SRC 8
#define TUTTI_CUDA_MAX_DST 2

/** cudaErrorInvalidValue, cudaErrorInsufficientDriver and cudaErrorNoDevice, as ints. */
#define TUTTI_CUDA_ERR_INVALID_VALUE       1
#define TUTTI_CUDA_ERR_INSUFFICIENT_DRIVER 35
#define TUTTI_CUDA_ERR_NO_DEVICE           100

/** Where a pointer points (cudaPointerAttributes.type, plus the case of no CUDA at all). */
typedef enum {
    TUTTI_CUDA_MEM_HOST = 0,    /**< ordinary host memory, unknown to CUDA (or no driver) */
    TUTTI_CUDA_MEM_PINNED = 1,  /**< host memory registered with or allocated by CUDA */
    TUTTI_CUDA_MEM_DEVICE = 2,  /**< device memory */
    TUTTI_CUDA_MEM_MANAGED = 3, /**< managed (unified) memory */
} tutti_cuda_mem_t;

/** Copy directions of the module's memcpy (cudaMemcpyKind values). */
typedef enum {
    TUTTI_CUDA_H2D = 1,
    TUTTI_CUDA_D2H = 2,
    TUTTI_CUDA_D2D = 3,
} tutti_cuda_copy_t;

/*
 * The module's table. `size` is sizeof the table the module was built with and `abi` its
 * TUTTI_CUDA_ABI; members are only ever appended. Every function returns a cudaError_t value
 * (0 on success) and sets its outputs only on success; all are thread-safe, and none blocks
 * except synchronize and the synchronous memcpy.
 */
typedef struct tutti_cuda_module {
    size_t size;
    int abi;
    /** "CUDA 13.0, sm_80 sm_90 compute_90": the toolkit and code the module carries. */
    const char *build;

    /** CUDA's name and message of a status ("cudaErrorInsufficientDriver", "CUDA driver ..."). */
    const char *(*error_name)(int err);
    const char *(*error_string)(int err);

    /**
     * Number of visible GPUs. Without a usable driver cudaGetDeviceCount fails (35,
     * cudaErrorInsufficientDriver; 100 without a device) and leaves its output untouched: this
     * sets *count_p to 0 then and returns that status, so the count is always defined.
     */
    int (*device_count)(int *count_p);

    /** CUDA runtime version the module was linked with, and the driver's (0: no driver). */
    int (*runtime_version)(int *version_p);
    int (*driver_version)(int *version_p);

    /**
     * Kind of memory ptr points at, and its device (-1 for host memory). Host memory CUDA does
     * not know, and every pointer when there is no driver, is TUTTI_CUDA_MEM_HOST with status 0:
     * that answer is what the caller needs (it is not device memory).
     */
    int (*pointer_kind)(const void *ptr, tutti_cuda_mem_t *kind_p, int *device_p);

    /**
     * dst[j][i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i] for every j < ndst, i < count,
     * in one pass, enqueued on `stream` (returns at once). The fold runs left to right with
     * exactly the CPU's scalar ops (kernels/kern_ops.h) and rounding, so the bits equal those of
     * tutti__reduce applied source by source:
     * - AVG with divisor > 1 sums and divides in the last step (kern_avg_*); with nsrc == 1 it
     *   is src[0] / divisor (kern_div_*, as tutti__reduce_div); divisor <= 1 makes it SUM.
     * - nsrc == 1 and any other op: a copy of src[0]; for TUTTI_BOOL every byte made 0 or 1 (a
     *   result of bool is 0 or 1 whatever nonzero bytes the source held).
     * A datatype x op that tutti__reduce_supported refuses (bitwise ops of float types, AVG of
     * TUTTI_BOOL) returns TUTTI_CUDA_ERR_INVALID_VALUE. A destination may be one of the sources
     * exactly (in place); partial overlaps are not allowed. 1 <= nsrc <= TUTTI_CUDA_MAX_SRC, 1 <=
     * ndst <= TUTTI_CUDA_MAX_DST; count 0 does nothing. Device (or managed) pointers of the current
     * device. Returns TUTTI_CUDA_ERR_INVALID_VALUE for a bad argument, else the launch status.
     */
    int (*reduce)(const void *const *src, int nsrc, void *const *dst, int ndst, size_t count,
                  tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream);

    /* ---- plain wrappers, for tests and perf tools that do not link CUDA themselves ---- */
    int (*malloc)(void **ptr_p, size_t bytes);
    int (*free)(void *ptr);
    int (*memcpy)(void *dst, const void *src, size_t bytes, tutti_cuda_copy_t dir);
    /** cudaMemcpyAsync(..., cudaMemcpyDeviceToDevice, stream): the bandwidth baseline. */
    int (*memcpy_d2d_async)(void *dst, const void *src, size_t bytes, void *stream);
    int (*synchronize)(void);
    /** Multiprocessors of the current device and the grid tutti__cuda_reduce would launch. */
    int (*launch_shape)(size_t count, tutti_datatype_t dt, int *blocks_p, int *threads_p);

    /* ---- stream operations of libtutti's stream-ordered path (src/gpu/stream.c) ---- */
    /** *capturing_p = 1 while the stream is being captured into a CUDA graph. */
    int (*stream_capturing)(void *stream, int *capturing_p);
    /** Pinned, mapped, portable host memory (cudaHostAlloc) and its release. */
    int (*host_alloc)(void **ptr_p, size_t bytes);
    int (*host_free)(void *ptr);
    /** cudaMemcpyAsync with cudaMemcpyDefault (the direction from the pointers). */
    int (*copy_async)(void *dst, const void *src, size_t bytes, void *stream);
    /** cudaLaunchHostFunc: fn(arg) in stream order; fn must not call CUDA. */
    int (*host_func)(void *stream, void (*fn)(void *), void *arg);
    /** The stream waits until *word >= value (cuStreamWaitValue64, GEQ); word is pinned or
     * registered host memory, or device memory. */
    int (*wait_geq)(void *stream, const volatile uint64_t *word, uint64_t value);

    /* ---- the CUDA IPC path (src/gpu/ipc.c) ---- */
    /** cudaIpcGetMemHandle into 64 bytes; cudaIpcOpenMemHandle (lazy peer access); close. */
    int (*ipc_get_handle)(void *ptr, unsigned char handle[64]);
    int (*ipc_open)(const unsigned char handle[64], void **ptr_p);
    int (*ipc_close)(void *ptr);
    /** cudaHostRegister (portable, mapped) of shared host memory, and unregister. */
    int (*host_register)(void *ptr, size_t bytes);
    int (*host_unregister)(void *ptr);
    /** The stream writes *word = value (cuStreamWriteValue64, with a system-wide fence before);
     * word is device memory or registered host memory. */
    int (*write_value)(void *stream, volatile uint64_t *word, uint64_t value);

    /* ---- the NCCL shim (src/nccl/): a communicator's device ---- */
    /** cudaGetDevice and cudaSetDevice: the calling thread's current device. */
    int (*get_device)(int *device_p);
    int (*set_device)(int device);

    /* ---- streams and graph capture, for tests and tools ---- */
    /** cudaStreamCreateWithFlags(cudaStreamNonBlocking), its destroy and synchronize. */
    int (*stream_create)(void **stream_p);
    int (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream);
    /** cudaStreamBeginCapture in relaxed mode (other threads' CUDA calls stay legal), and
     * cudaStreamEndCapture, which also destroys the graph made. */
    int (*capture_begin)(void *stream);
    int (*capture_end)(void *stream);

    /* ---- the pre-multiplied sum (tutti_op_create_premul_sum) ---- */
    /**
     * dst[j][i] = round_dt(scalar * src[i]) for j < ndst (1 or 2), count elements, on stream;
     * scalar is a host pointer read at the call when scalar_on_device is 0, else a device pointer
     * read by the kernel when it runs. Same bits as tutti__scale (kern_prod_* with the scalar
     * first; NaN payloads aside, as for reduce). Every datatype but TUTTI_BOOL; a destination
     * may be src exactly. TUTTI_CUDA_ERR_INVALID_VALUE for a bad argument (NULL scalar, BOOL),
     * else the launch status; count 0 does nothing.
     */
    int (*premul)(const void *src, void *const *dst, int ndst, size_t count, tutti_datatype_t dt,
                  const void *scalar, int scalar_on_device, void *stream);
} tutti_cuda_module_t;

/* ---- the loader, in libtutti (kernels/cuda_load.c) ---- */

/**
 * The GPU module, opened on the first call (thread-safe; later calls return the same answer).
 * It is looked for at $TUTTI_CUDA_MODULE when set, else next to the object holding libtutti's
 * code (libtutti.so's directory), else in the library directory tutti was installed to, else by
 * the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache).
 * Returns TUTTI_OK and *mod_p, or TUTTI_ERR_UNSUPPORTED with a message (tutti_last_error(NULL)
 * and tutti__cuda_why()) saying what was missing: not built, not found, or not loadable.
 */
tutti_status_t tutti__cuda_module(const tutti_cuda_module_t **mod_p);

/** Why the module is not available ("" while it is), or where it was loaded from. */
const char *tutti__cuda_why(void);
const char *tutti__cuda_path(void);

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_KERNELS_CUDA_TUTTI_CUDA_H */
