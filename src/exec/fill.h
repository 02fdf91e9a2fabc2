/*
 * fill.h - how the engine writes a send slot: through the caches or streamed past them
 * (struct tutti_fill_clock, transports/transport.h), chosen per connection by timing the writes
 * of large frames (fill.c).
 */
#ifndef TUTTI_EXEC_FILL_H
#define TUTTI_EXEC_FILL_H

#include "transports/transport.h"

#include <stddef.h>
#include <stdint.h>

/** Frames of at least this many bytes are timed (smaller ones follow the clock's choice). */
#define TUTTI_FILL_TIMED_MIN (32 * 1024)

/** Whether the next timed frame is streamed (1) or written through the caches (0). */
int tutti__fill_pick(struct tutti_fill_clock *c);

/** A timed frame of `bytes` bytes took ns nanoseconds, streamed or not: update the choice. */
void tutti__fill_note(struct tutti_fill_clock *c, int streamed, size_t bytes, int64_t ns);

#endif /* TUTTI_EXEC_FILL_H */
