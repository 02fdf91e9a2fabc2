/*
 * handle.h - the process's live handles: every communicator and request the library has handed
 * out and not yet taken back. A public call looks its handle up here before it reads it, so a
 * handle that was destroyed, aborted or freed (or never made by tutti) is refused with
 * TUTTI_ERR_INVALID_USAGE instead of read: a double destroy, a call after destroy, a double
 * tutti_request_free. What this cannot tell apart is a freed handle whose memory now holds a new
 * one of the same kind (include/tutti/comm.h and docs/SECURITY.md say so).
 */
#ifndef TUTTI_HANDLE_H
#define TUTTI_HANDLE_H

#include "tutti/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/** A set of live pointers of one kind: open addressing, under its own lock. */
struct tutti_handle_set {
    pthread_mutex_t lock;
    uintptr_t *slots;       /* 0: empty; 1: removed (a tombstone); else a live pointer */
    size_t cap;             /* a power of two, or 0 */
    size_t used;            /* live pointers */
    size_t tombs;           /* tombstones */
    _Atomic uint64_t takes; /* removals so far: a pointer found while this was k is still in
                             * the set while it is still k (base/hold.c reads it unlocked) */
};

#define TUTTI_HANDLE_SET_INIT                                                                      \
    {                                                                                              \
        .lock = PTHREAD_MUTEX_INITIALIZER                                                          \
    }

/* The functions ending in _locked need the set's lock held (tutti__handle_lock). */
void tutti__handle_lock(struct tutti_handle_set *s);
void tutti__handle_unlock(struct tutti_handle_set *s);

/** Is p in the set? */
int tutti__handle_find_locked(const struct tutti_handle_set *s, const void *p);

/** Add p (not NULL, not yet in the set). @return TUTTI_OK; TUTTI_ERR_NO_MEMORY (logged). */
tutti_status_t tutti__handle_add(struct tutti_handle_set *s, const void *p);

/** Remove p: 1 if it was there, 0 if not (then nothing changes). */
int tutti__handle_take(struct tutti_handle_set *s, const void *p);

/** How many pointers were ever taken out (sequentially consistent, no lock; under the lock
 * it cannot change). */
uint64_t tutti__handle_takes(const struct tutti_handle_set *s);

/** Is p in the set? (takes the lock) */
int tutti__handle_live(struct tutti_handle_set *s, const void *p);

#endif /* TUTTI_HANDLE_H */
