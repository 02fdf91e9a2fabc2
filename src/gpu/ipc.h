/*
 * ipc.h - all-reduce of device buffers between the ranks of one host through CUDA IPC: every
 * rank copies its input into its scratch, which the others have mapped, and the reduction
 * kernel reads all of them. Everything is on the stream; see ipc.c.
 */
#ifndef TUTTI_IPC_H
#define TUTTI_IPC_H

#include "exec/plan.h"
#include "tutti/status.h"

struct tutti_gpu;
struct tutti_ipc_state;

/** Does op (validated, on a stream) take the IPC path? Sets it up on first use (collective:
 * every rank asks at the same call). *use_p = 0 when it does not apply or cannot be set up. */
tutti_status_t tutti__ipc_wanted(struct tutti_gpu *gpu, const struct tutti_op_desc *op, int *use_p);

/** Enqueue the all-reduce op on stream; returns at once. */
tutti_status_t tutti__ipc_allreduce(struct tutti_gpu *gpu, const struct tutti_op_desc *op,
                                    void *stream);

/** Adopt a failure another rank's watchdog recorded (before reporting the fabric's health). */
void tutti__ipc_check(struct tutti_gpu *gpu);

/** A call's gate value: its sequence number (48 bits) above 16 bits of its fingerprint's hash;
 *  increasing with the sequence number for 2^48 calls. */
uint64_t tutti__ipc_gate_value(uint64_t seq, uint64_t hash);

/**
 * At destroy: wait until every rank's stream has passed its last reduction (they read this
 * rank's scratch), then unmap and free. At abort: release every waiting stream, stop, and leave
 * the memory to the process (a stream may still read it).
 */
void tutti__ipc_fini(struct tutti_gpu *gpu, int aborting);

#endif /* TUTTI_IPC_H */
