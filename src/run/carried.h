/*
 * carried.h - a run member's calls that travel in the control pages inside run.c's segments
 * (carried.c): sends and receives in the boxes (win/win_box.c), which move before the segment's
 * ordinary calls run and finish after them, and led broadcasts and reduces (win/win_lead.c).
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

/** Post the member's collective op if it is led: 1 (its part may wait: m->lead), 0 (not led:
 * the ordinary path), -1 (error, m->status). */
int tutti__run_lead_start(struct tutti_run_member *m, const struct tutti_op_desc *op);

/** Complete the member's led collective that waits, as tutti__run_carried_finish does its
 * messages: 0 done (or none), 1 still waits, -1 error (m->status). */
int tutti__run_lead_finish(struct tutti_run_member *m);

#endif /* TUTTI_RUN_CARRIED_H */
