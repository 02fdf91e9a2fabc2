/*
 * carried.h - a run member's sends and receives that travel in the boxes of the control pages
 * (win/win_box.c): they move before the segment's ordinary calls run and finish after them
 * (carried.c), inside run.c's segments.
 */
#ifndef TUTTI_RUN_CARRIED_H
#define TUTTI_RUN_CARRIED_H

#include "run/run.h"

/**
 * Start the member's run of sends and receives [m->next, end): the carried ones go to the end
 * of the range (each part in issue order) and move as far as they can now; the rest is left
 * for tutti__run_carried_finish. Returns how many ordinary calls stay at the start of the
 * range, or -1 (m->status says why).
 */
int tutti__run_carried_start(struct tutti_run_member *m, int end);

/**
 * Move the carried calls the member started: a solo member waits until they are done, another
 * moves them once and backs off once. 0: done (or none); 1: some still wait; -1: error
 * (m->status).
 */
int tutti__run_carried_finish(struct tutti_run_member *m);

#endif /* TUTTI_RUN_CARRIED_H */
