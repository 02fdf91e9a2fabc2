/*
 * perf_device.h - device buffers for the perf tools (--memory device): the benchmark keeps its
 * host buffers for filling and checking, and runs the calls on device twins (GPU module,
 * kernels/cuda/tutti_cuda.h), copying inputs up before and results down after, outside the
 * timed loop. The calls go to tutti's stream path (the default stream); the timed loop ends
 * with a device synchronize, as nccl-tests' does with its stream.
 */
#ifndef TUTTI_PERF_DEVICE_H
#define TUTTI_PERF_DEVICE_H

#include <stddef.h>

struct perf_device {
    const void *mod; /* the module's table */
    char *send, *recv; /* device twins of the bench's sendbuf and recvbuf */
    size_t bytes;
};

/** Allocate both twins; 0, or -1 after printing why (no module, no GPU, no memory). */
int perf_dev_alloc(struct perf_device *d, size_t bytes, const char *tool, int rank);
void perf_dev_free(struct perf_device *d);

/** Copy the host buffers up (whole), or recv down; wait for the device. 0 or -1 (printed). */
int perf_dev_upload(struct perf_device *d, const char *hsend, const char *hrecv);
int perf_dev_download_recv(struct perf_device *d, char *hrecv);
int perf_dev_sync(struct perf_device *d);

#endif /* TUTTI_PERF_DEVICE_H */
