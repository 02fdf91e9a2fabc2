/*
 * one_gpu.c - libtutti-one-gpu.so, an LD_PRELOAD library that makes one GPU look like
 * ONE_GPU_RANKS GPUs to a program linked with the shared CUDA runtime, so that a tool
 * which gives each rank a device of its own (nccl-tests: thread t of -t N uses device t) runs N
 * ranks that share GPU 0. NCCL refuses two ranks on one GPU; tutti does not, and this is how
 * scripts/gpu_check.sh runs nccl-tests with 2 ranks on a one-GPU machine.
 *
 * cudaGetDeviceCount reports max(real count, ONE_GPU_RANKS); every call that names a
 * device (cudaSetDevice, cudaGetDeviceProperties, cudaDeviceGetAttribute) gets that ordinal
 * modulo the real count. Nothing else changes. Used by the GPU check only; never installed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* CUDA's signatures, with its types as opaque pointers and ints (no CUDA header needed). */
typedef int (*count_fn)(int *);
typedef int (*set_fn)(int);
typedef int (*props_fn)(void *, int);
typedef int (*attr_fn)(int *, int, int);

static void *next(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (fn == NULL) {
        fprintf(stderr, "libtutti-one-gpu: %s not found: is the CUDA runtime linked shared?\n",
                name);
        abort();
    }
    return fn;
}

static int real_count(void)
{
    int n = 0;
    if (((count_fn)next("cudaGetDeviceCount"))(&n) != 0 || n < 1) {
        return 1;
    }
    return n;
}

int cudaGetDeviceCount(int *count)
{
    int st = ((count_fn)next("cudaGetDeviceCount"))(count);
    const char *want = getenv("ONE_GPU_RANKS");
    int n = want != NULL ? atoi(want) : 0;
    if (st == 0 && n > *count) {
        *count = n;
    }
    return st;
}

int cudaSetDevice(int device)
{
    return ((set_fn)next("cudaSetDevice"))(device % real_count());
}

int cudaGetDeviceProperties(void *prop, int device)
{
    return ((props_fn)next("cudaGetDeviceProperties"))(prop, device % real_count());
}

/* CUDA 12 and later: the header maps cudaGetDeviceProperties to this name. */
int cudaGetDeviceProperties_v2(void *prop, int device)
{
    return ((props_fn)next("cudaGetDeviceProperties_v2"))(prop, device % real_count());
}

int cudaDeviceGetAttribute(int *value, int attr, int device)
{
    return ((attr_fn)next("cudaDeviceGetAttribute"))(value, attr, device % real_count());
}
