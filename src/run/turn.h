/*
 * turn.h - the communicator's turn: the one place where operations of a communicator are
 * serialised. Whoever executes on comm (a blocking call, the progress thread, a group's end, a
 * registration) holds the turn; blocking calls take it only when nothing is queued, so
 * everything runs in issue order.
 */
#ifndef TUTTI_TURN_H
#define TUTTI_TURN_H

struct tutti_runner;

/** Wait until nothing is queued or running on runner, then hold its turn. */
void tutti__turn_take(struct tutti_runner *runner);

/** Hold comm's turn if nothing is queued or running: 1 when taken, 0 (nothing held) if not. */
int tutti__turn_try(struct tutti_runner *runner);

/** Give the turn back and wake whoever waits for it (the progress thread, other callers). */
void tutti__turn_give(struct tutti_runner *runner);

#endif /* TUTTI_TURN_H */
