/*
 * stream.h - collectives on device buffers and CUDA streams (NCCL semantics): the call is queued
 * in issue order and returns at once; the stream copies device data into pinned host memory,
 * lets the operation run (a host function), waits for it (a wait on a pinned word), and copies
 * the results back. See stream.c.
 */
#ifndef TUTTI_STREAM_H
#define TUTTI_STREAM_H

#include "exec/plan.h"
#include "tutti/status.h"

struct tutti_gpu;
struct tutti_stream_state;

/**
 * Does op belong on the stream path: a stream was given, or a buffer is device memory?
 * Sets *use_p; returns an error (naming the call) when it does but cannot: no GPU runtime, or
 * the stream is being captured into a graph.
 */
tutti_status_t tutti__stream_wanted(struct tutti_gpu *gpu, const struct tutti_op_desc *op,
                                    void *stream, int *use_p);

/** Enqueue n validated calls of the communicator on stream as one batch (n > 1: a group). Returns
 * at once. */
tutti_status_t tutti__stream_enqueue(struct tutti_gpu *gpu, const struct tutti_op_desc *ops, int n,
                                     void *stream);

/**
 * At destroy or abort, after the queue drained: release every stream waiting on the communicator.
 * Destroy then waits until the streams have passed their last host function and frees the pinned
 * memory; abort does not wait (batches still on streams keep what they use, and leak their
 * pinned blocks).
 */
void tutti__stream_fini(struct tutti_gpu *gpu, int aborting);

/** Bytes of pinned host memory the stream path holds (its staging cache), or 0. */
size_t tutti__stream_pinned(const struct tutti_gpu *gpu);

#endif /* TUTTI_STREAM_H */
