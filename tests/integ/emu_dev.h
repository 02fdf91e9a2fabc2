/*
 * emu_dev.h - an emulated GPU for the stream path (src/gpu/devops.h), so device-buffer collectives
 * run where no GPU is. "Device memory" is a PROT_NONE mapping that only the emulated copy engine
 * reaches (through a second, writable mapping of the same shared memory object, which is also
 * what an IPC handle names, so other processes map it): a library that touched a
 * device pointer from the CPU would crash the test. Each stream is a thread that runs its
 * operations in order; waits poll the pinned word like a GPU's stream-memory wait.
 */
#ifndef TUTTI_TESTS_EMU_DEV_H
#define TUTTI_TESTS_EMU_DEV_H

#include <stddef.h>

typedef struct emu_stream emu_stream_t;

/** Install the emulator as tutti's GPU runtime (call in each rank before its communicator);
 * it first removes device memory left in /dev/shm by processes that are gone. */
void emu_dev_install(void);

/** Device memory of `bytes` (never NULL: aborts on failure) and its release. */
void *emu_dev_malloc(size_t bytes);
void emu_dev_free(void *dev);

/** Synchronous copies between host memory and device memory (as cudaMemcpy). */
void emu_dev_upload(void *dev, const void *host, size_t bytes);
void emu_dev_download(void *host, const void *dev, size_t bytes);

/** The host-writable view of device memory p (p itself for host memory): what an emulated
 * kernel (emu_stream_run) reads and writes. */
void *emu_dev_view(const void *p, size_t bytes);

/** Streams (NULL in the other calls = the default stream). */
emu_stream_t *emu_stream_create(void);
void emu_stream_destroy(emu_stream_t *s);
/** Wait until everything enqueued so far has run; 0, or -1 after timeout_ms. */
int emu_stream_sync(emu_stream_t *s, int timeout_ms);
/** Enqueue fn(arg), an emulated kernel or stream operation (not counted by emu_host_funcs). */
void emu_stream_run(emu_stream_t *s, void (*fn)(void *), void *arg);
/** Enqueue a stop: the stream halts there until emu_stream_release. */
void emu_stream_hold(emu_stream_t *s);
void emu_stream_release(emu_stream_t *s);
/** Make the stream report that it is being captured into a graph (1) or not (0). */
void emu_stream_set_capturing(emu_stream_t *s, int capturing);

/** Host functions enqueued on any stream so far, and pinned blocks not yet freed. */
long emu_host_funcs(void);
long emu_pinned_live(void);
/** Reductions enqueued (the CUDA IPC path's kernel launches). */
long emu_reduces(void);

#endif /* TUTTI_TESTS_EMU_DEV_H */
