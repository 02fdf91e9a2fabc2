/*
 * hold.h - a calling thread's hold on an object it entered before (a communicator, the NCCL
 * shim's communicator): how a call enters it again without a lock or a shared counter.
 *
 * Each thread that makes calls has one record of its own, in a list that only grows, with one
 * slot per kind of object. The owner of the objects keeps a removal count (a removal: an object
 * taken out of its live set, to be freed). Entering obj writes obj into the thread's slot, then
 * checks that the count has not moved since this thread last found obj live. A remover counts
 * its removal first and then looks through the slots, so either the entering thread sees the
 * count move (and takes the owner's locked way, which refuses it) or the remover sees the slot
 * (and waits for it to clear). One sequentially consistent store on entry, a plain store on
 * leaving. A thread holds at most one object of each kind: a nested entry takes the locked way.
 */
#ifndef TUTTI_HOLD_H
#define TUTTI_HOLD_H

#include <stdatomic.h>
#include <stdint.h>

enum tutti_hold_kind {
    TUTTI_HOLD_COMM, /* tutti's communicators (comm_live.c; count: live_comms.takes) */
    TUTTI_HOLD_NCCL, /* the NCCL shim's communicators (nccl/comm.c) */
    TUTTI_HOLD_KINDS
};

/** Hold obj without a lock: 1 when it is held (obj is live and stays so until tutti__unhold),
 * 0 when the caller must take the locked way. `takes` is the owner's removal count. */
int tutti__hold(enum tutti_hold_kind kind, const void *obj, const _Atomic uint64_t *takes);

/** The locked way found obj live while the owner's removal count was `takes`: the next
 * tutti__hold of obj on this thread may skip the lock. */
void tutti__hold_note(enum tutti_hold_kind kind, const void *obj, uint64_t takes);

/** Drop this thread's hold on obj: 1 if it held obj, 0 if not (nothing changes). */
int tutti__unhold(enum tutti_hold_kind kind, const void *obj);

/** Does any thread hold obj? (asked by a remover after counting its removal: a thread that
 * finds obj live from then on takes the locked way and is refused) */
int tutti__held(enum tutti_hold_kind kind, const void *obj);

/** How many records the process has made (tests: threads that exited give theirs back). */
int tutti__hold_records(void);

#endif /* TUTTI_HOLD_H */
