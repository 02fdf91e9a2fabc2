/*
 * perf_device.c - the device twins of perf_device.h, over the GPU module.
 */
#include "perf_device.h"
#include "kernels/cuda/tutti_cuda.h"

#include <stdio.h>

static const tutti_cuda_module_t *M(const struct perf_device *d)
{
    return d->mod;
}

static int cuda_ok(const struct perf_device *d, int err, const char *what)
{
    if (err != 0) {
        fprintf(stderr, "device memory: %s: %s\n", what, M(d)->error_string(err));
        return -1;
    }
    return 0;
}

int perf_dev_alloc(struct perf_device *d, size_t bytes, const char *tool, int rank)
{
    const tutti_cuda_module_t *mod = NULL;
    if (tutti__cuda_module(&mod) != TUTTI_OK) {
        fprintf(stderr, "%s: rank %d: --memory device: no GPU module: %s\n", tool, rank,
                tutti__cuda_why());
        return -1;
    }
    int n = 0, err = mod->device_count(&n);
    if (n == 0) {
        fprintf(stderr, "%s: rank %d: --memory device: no CUDA device: %s\n", tool, rank,
                err != 0 ? mod->error_string(err) : "cudaGetDeviceCount found none");
        return -1;
    }
    d->mod = mod;
    d->bytes = bytes;
    void *s = NULL, *r = NULL;
    if (cuda_ok(d, mod->malloc(&s, bytes), "cudaMalloc") != 0 ||
        cuda_ok(d, mod->malloc(&r, bytes), "cudaMalloc") != 0) {
        return -1;
    }
    d->send = s;
    d->recv = r;
    return 0;
}

void perf_dev_free(struct perf_device *d)
{
    if (d->mod != NULL) {
        (void)M(d)->free(d->send);
        (void)M(d)->free(d->recv);
    }
}

int perf_dev_upload(struct perf_device *d, const char *hsend, const char *hrecv)
{
    if (cuda_ok(d, M(d)->memcpy(d->send, hsend, d->bytes, TUTTI_CUDA_H2D), "copy up") != 0) {
        return -1;
    }
    return cuda_ok(d, M(d)->memcpy(d->recv, hrecv, d->bytes, TUTTI_CUDA_H2D), "copy up");
}

int perf_dev_download_recv(struct perf_device *d, char *hrecv)
{
    if (perf_dev_sync(d) != 0) {
        return -1;
    }
    return cuda_ok(d, M(d)->memcpy(hrecv, d->recv, d->bytes, TUTTI_CUDA_D2H), "copy down");
}

int perf_dev_sync(struct perf_device *d)
{
    return cuda_ok(d, M(d)->synchronize(), "cudaDeviceSynchronize");
}
