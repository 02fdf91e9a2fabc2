/*
 * devops.h - what the stream-ordered path (stream.c) needs from a GPU runtime: is a pointer
 * device memory, is a stream being captured, pinned host memory, and three stream operations
 * (an asynchronous copy, a host function, a wait until a 64-bit word in pinned memory reaches a
 * value). The CUDA implementation forwards to the GPU module (kernels/cuda/tutti_cuda.h); tests
 * install an emulated device (tests/common/emu_dev.c) so the same path runs where no GPU is.
 */
#ifndef TUTTI_DEVOPS_H
#define TUTTI_DEVOPS_H

#include "tutti/types.h"

#include <stddef.h>
#include <stdint.h>

/** An opaque IPC handle (cudaIpcMemHandle_t is 64 bytes). */
struct tutti_ipc_handle {
    uint8_t bytes[64];
};

/* Every function returns 0 on success, else a runtime status (a cudaError_t for CUDA) that
 * `error_string` turns into words. Streams are opaque (cudaStream_t; NULL = the default). */
struct tutti_devops {
    const char *name; /* "cuda" or "emulated" */
    /** *dev_p = 1 for device or managed memory, 0 for host memory (pinned or not). */
    int (*is_device)(const void *ptr, int *dev_p);
    /** *capturing_p = 1 while the stream is being captured into a graph. */
    int (*capturing)(void *stream, int *capturing_p);
    /** Pinned host memory the device can read and write (and wait on). */
    int (*host_alloc)(void **ptr_p, size_t bytes);
    int (*host_free)(void *ptr);
    /** Enqueue a copy of `bytes` (either direction) on the stream. */
    int (*copy_async)(void *dst, const void *src, size_t bytes, void *stream);
    /** Enqueue fn(arg) on the stream; fn must not call the runtime. */
    int (*host_func)(void *stream, void (*fn)(void *), void *arg);
    /** Enqueue a wait until *word >= value (word in memory from host_alloc). */
    int (*wait_geq)(void *stream, const volatile uint64_t *word, uint64_t value);
    const char *(*error_string)(int err);

    /* ---- the CUDA IPC path (ipc.c); NULL members: not offered ---- */
    /** Device memory of the current device. */
    int (*dev_alloc)(void **ptr_p, size_t bytes);
    int (*dev_free)(void *ptr);
    /** A handle other processes of this host open to map ptr's allocation (64 bytes). */
    int (*ipc_export)(void *ptr, struct tutti_ipc_handle *h);
    int (*ipc_import)(const struct tutti_ipc_handle *h, void **ptr_p);
    int (*ipc_close)(void *ptr);
    /** Make host memory (a shared mapping) usable by the device and by stream waits/writes. */
    int (*host_register)(void *ptr, size_t bytes);
    int (*host_unregister)(void *ptr);
    /** Enqueue *word = value (after the stream's earlier work is visible, system-wide). */
    int (*write_value)(void *stream, volatile uint64_t *word, uint64_t value);
    /** Enqueue dst = src[0] op ... op src[nsrc-1] (the module's reduce, one destination). */
    int (*reduce)(const void *const *src, int nsrc, void *dst, size_t count, tutti_datatype_t dt,
                  tutti_op_t op, int divisor, void *stream);

    /* ---- the NCCL shim (src/nccl/); NULL members: not offered ---- */
    /** The calling thread's current device, and making another one current. */
    int (*get_device)(int *device_p);
    int (*set_device)(int device);
};

/**
 * The runtime the stream path uses: one installed with tutti__devops_install, else CUDA when
 * the GPU module loads and sees a GPU, else NULL (tutti__devops_why says why).
 */
const struct tutti_devops *tutti__devops(void);

/** Why tutti__devops() is NULL ("no GPU module: ...", "no CUDA device: ..."). */
const char *tutti__devops_why(void);

/** Use `ops` from now on (NULL: back to detection). For tests; call before any communicator. */
void tutti__devops_install(const struct tutti_devops *ops);

#endif /* TUTTI_DEVOPS_H */
