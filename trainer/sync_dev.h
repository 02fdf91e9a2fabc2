/*
 * sync_dev.h - the GPU side of the gradient sync (sync_dev.c), for sync.c only: gradients in
 * device memory, each bucket's conversion and all-reduce enqueued on a communication stream
 * after the compute stream's event for its layers, and the events the waiter thread follows.
 * Each function that fails returns the status and writes what failed in msg.
 */
#ifndef TRAIN_SYNC_DEV_H
#define TRAIN_SYNC_DEV_H

#include "sync.h"

#include <stddef.h>

/** Where bucket elements from `off` travel: the wire buffer, or the gradients themselves. */
static inline void *train_sync_buf(const struct train_sync *s, size_t off)
{
    return s->wire == NULL ? (void *)(s->grads + off)
                           : (void *)((char *)s->wire + off * train_wire_size(s->prec));
}

/** The wire buffer in device memory, the communication stream and the buckets' events. */
int train_sync_dev_init(struct train_sync *s, char *err, size_t errlen);

/** Release what train_sync_dev_init made (the waiter thread has stopped). */
void train_sync_dev_destroy(struct train_sync *s);

/** Enqueue bucket i: after its layers, encode, tutti_allreduce on the stream, decode. */
tutti_status_t train_sync_dev_launch(struct train_sync *s, int i, char *msg, size_t len);

/**
 * The waiter thread's part for bucket i: wait until its layers are computed (stamps
 * t_launch) and until it is reduced and converted back; then the communicator's error.
 */
tutti_status_t train_sync_dev_complete(struct train_sync *s, int i, char *msg, size_t len);

/**
 * train_sync_finish's first part: the compute stream (the SGD step next) waits for the last
 * launched bucket, and the calling thread for the end of the backward pass (so that what it
 * waits for afterwards is communication alone).
 */
tutti_status_t train_sync_dev_backward_done(struct train_sync *s, int launched, char *msg,
                                            size_t len);

/** The waiter thread's start: make the gradients' device current on it. */
tutti_status_t train_sync_dev_thread_init(struct train_sync *s, char *msg, size_t len);

#endif /* TRAIN_SYNC_DEV_H */
