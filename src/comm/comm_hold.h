/*
 * comm_hold.h - a calling thread's hold on a communicator: how a call enters a communicator it
 * entered before without the live set's lock or a shared counter (comm_live.c uses it).
 *
 * Each thread that makes calls has one record of its own, in a list that only grows. Entering
 * comm writes comm into the record, then checks that nothing left the live set since this thread
 * last found comm in it (the set's removal count is unchanged). Removing a communicator counts
 * as a removal first and then looks through the records, so either the entering thread sees the
 * count move (and takes the locked way, which refuses it) or the remover sees the record (and
 * waits for it to clear). One sequentially consistent store on entry, a plain store on leaving.
 */
#ifndef TUTTI_COMM_HOLD_H
#define TUTTI_COMM_HOLD_H

#include <stdint.h>

/** Hold comm without the lock: 1 when it is held (comm is live and stays so until
 * tutti__comm_unhold), 0 when the caller must take the locked way. */
int tutti__comm_hold(const void *comm);

/** The locked way found comm live while the live set had made `takes` removals: the next
 * tutti__comm_hold of comm on this thread may skip the lock. */
void tutti__comm_hold_note(const void *comm, uint64_t takes);

/** Drop this thread's hold on comm: 1 if it held comm, 0 if not (nothing changes). */
int tutti__comm_unhold(const void *comm);

/** Does any thread hold comm? (after comm was taken out of the live set: a thread that finds
 * it live from now on takes the locked way and is refused) */
int tutti__comm_held(const void *comm);

/** How many records the process has made (tests: threads that exited give theirs back). */
int tutti__comm_hold_records(void);

#endif /* TUTTI_COMM_HOLD_H */
