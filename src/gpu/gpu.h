/*
 * gpu.h - the GPU layer's object: one communicator's calls on CUDA streams (stream.c) and its CUDA
 * IPC all-reduce (ipc.c). comm/ holds one per communicator; the layer sees the communicator only
 * through the runner (to submit a stream's pieces and run its set-up's service collectives) and
 * the runner's fabric (rank, settings, failure state).
 */
#ifndef TUTTI_GPU_GPU_H
#define TUTTI_GPU_GPU_H

#include "run/runner.h"

struct tutti_stream_state;
struct tutti_ipc_state;

struct tutti_gpu {
    struct tutti_runner *run;          /* the communicator's runner */
    struct tutti_fabric *fab;          /* run->fab */
    struct tutti_stream_state *stream; /* stream.c: NULL until the first call on a stream */
    struct tutti_ipc_state *ipc;       /* ipc.c: NULL until the first IPC all-reduce */
};

/** Tie gpu to its runner; no CUDA is touched until a call on a stream. */
static inline void tutti__gpu_init(struct tutti_gpu *gpu, struct tutti_runner *run)
{
    gpu->run = run;
    gpu->fab = run->fab;
    gpu->stream = NULL;
    gpu->ipc = NULL;
}

#endif /* TUTTI_GPU_GPU_H */
