/*
 * devops.c - chooses the GPU runtime of the stream-ordered path: an installed one (tests), else
 * the CUDA module once the process has loaded the CUDA driver and the module sees a device.
 * Device memory cannot exist in a process without libcuda, so host-only programs never load the
 * module (nor the CUDA runtime inside it). The CUDA side is a thin adapter from the module's
 * table (kernels/cuda/tutti_cuda.h) to struct tutti_devops.
 */
#include "gpu/devops.h"
#include "kernels/cuda/tutti_cuda.h"
#include "base/util.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Written once (pthread_once) and read-only afterwards: the module of this process. */
static const tutti_cuda_module_t *mod;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static char detect_why[1400];
static _Atomic(const struct tutti_devops *) installed;
static _Atomic int64_t driver_absent_at; /* when libcuda was last found absent (0: never) */

static int is_libcuda(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    if (info->dlpi_name != NULL && strstr(info->dlpi_name, "/libcuda.so") != NULL) {
        *(int *)found = 1;
        return 1;
    }
    return 0;
}

/* Has this process loaded the CUDA driver? A walk of the loaded objects (~0.2 us), asked again
 * while the answer is no (a program may initialise CUDA late) at most every 100 ms, the clock
 * read at every 16th call of a thread (a read costs 20-25 ns on the 2-core VM, a tenth of a
 * small carried call). */
static int driver_loaded(void)
{
    static _Thread_local unsigned calls;
    int64_t then = atomic_load_explicit(&driver_absent_at, memory_order_relaxed);
    if (then != 0 && (++calls & 15u) != 0) {
        return 0;
    }
    int64_t now = tutti__now_ns();
    if (then != 0 && now - then < 100000000) {
        return 0;
    }
    int found = 0;
    dl_iterate_phdr(is_libcuda, &found);
    atomic_store(&driver_absent_at, found ? 0 : now);
    return found;
}

static int cuda_is_device(const void *ptr, int *dev_p)
{
    tutti_cuda_mem_t kind = TUTTI_CUDA_MEM_HOST;
    int device = -1;
    int err = mod->pointer_kind(ptr, &kind, &device);
    if (err == 0) {
        *dev_p = (kind == TUTTI_CUDA_MEM_DEVICE || kind == TUTTI_CUDA_MEM_MANAGED);
    }
    return err;
}

static int cuda_capturing(void *stream, int *capturing_p)
{
    return mod->stream_capturing(stream, capturing_p);
}

static int cuda_host_alloc(void **ptr_p, size_t bytes)
{
    return mod->host_alloc(ptr_p, bytes);
}

static int cuda_host_free(void *ptr)
{
    return mod->host_free(ptr);
}

static int cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    return mod->copy_async(dst, src, bytes, stream);
}

static int cuda_host_func(void *stream, void (*fn)(void *), void *arg)
{
    return mod->host_func(stream, fn, arg);
}

static int cuda_wait_geq(void *stream, const volatile uint64_t *word, uint64_t value)
{
    return mod->wait_geq(stream, word, value);
}

static int cuda_dev_alloc(void **ptr_p, size_t bytes)
{
    return mod->malloc(ptr_p, bytes);
}

static int cuda_dev_free(void *ptr)
{
    return mod->free(ptr);
}

static int cuda_ipc_export(void *ptr, struct tutti_ipc_handle *h)
{
    return mod->ipc_get_handle(ptr, h->bytes);
}

static int cuda_ipc_import(const struct tutti_ipc_handle *h, void **ptr_p)
{
    return mod->ipc_open(h->bytes, ptr_p);
}

static int cuda_ipc_close(void *ptr)
{
    return mod->ipc_close(ptr);
}

static int cuda_host_register(void *ptr, size_t bytes)
{
    return mod->host_register(ptr, bytes);
}

static int cuda_host_unregister(void *ptr)
{
    return mod->host_unregister(ptr);
}

static int cuda_write_value(void *stream, volatile uint64_t *word, uint64_t value)
{
    return mod->write_value(stream, word, value);
}

static int cuda_reduce(const void *const *src, int nsrc, void *dst, size_t count,
                       tutti_datatype_t dt, tutti_op_t op, int divisor, void *stream)
{
    void *const dsts[1] = {dst};
    return mod->reduce(src, nsrc, dsts, 1, count, dt, op, divisor, stream);
}

static const char *cuda_error_string(int err)
{
    return mod->error_string(err);
}

static int cuda_get_device(int *device_p)
{
    return mod->get_device(device_p);
}

static int cuda_set_device(int device)
{
    return mod->set_device(device);
}

static const struct tutti_devops cuda_ops = {
    .name = "cuda",
    .is_device = cuda_is_device,
    .capturing = cuda_capturing,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .copy_async = cuda_copy_async,
    .host_func = cuda_host_func,
    .wait_geq = cuda_wait_geq,
    .error_string = cuda_error_string,
    .dev_alloc = cuda_dev_alloc,
    .dev_free = cuda_dev_free,
    .ipc_export = cuda_ipc_export,
    .ipc_import = cuda_ipc_import,
    .ipc_close = cuda_ipc_close,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .write_value = cuda_write_value,
    .reduce = cuda_reduce,
    .get_device = cuda_get_device,
    .set_device = cuda_set_device,
};

static void detect(void)
{
    const tutti_cuda_module_t *m = NULL;
    if (tutti__cuda_module(&m) != TUTTI_OK) {
        snprintf(detect_why, sizeof(detect_why), "no GPU module: %s", tutti__cuda_why());
        return;
    }
    int n = 0;
    int err = m->device_count(&n);
    if (err != 0 || n == 0) {
        snprintf(detect_why, sizeof(detect_why), "no CUDA device: %s",
                 err != 0 ? m->error_string(err) : "cudaGetDeviceCount found 0");
        return;
    }
    mod = m;
}

const struct tutti_devops *tutti__devops(void)
{
    const struct tutti_devops *ops = atomic_load(&installed);
    if (ops != NULL) {
        return ops;
    }
    if (!driver_loaded()) {
        return NULL;
    }
    pthread_once(&detect_once, detect);
    return mod != NULL ? &cuda_ops : NULL;
}

const char *tutti__devops_why(void)
{
    if (atomic_load(&installed) != NULL) {
        return "";
    }
    if (!driver_loaded()) {
        return "the CUDA driver (libcuda.so) is not loaded in this process";
    }
    pthread_once(&detect_once, detect);
    return mod != NULL ? "" : detect_why;
}

void tutti__devops_install(const struct tutti_devops *ops)
{
    atomic_store(&installed, ops);
}
