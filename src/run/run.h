/*
 * run.h - the one path from operations to results: plan, execute, wait, complete. Blocking
 * calls, the progress thread (request.c) and group ends (group.c) all run through it; the
 * caller holds the communicator's turn (turn.h).
 */
#ifndef TUTTI_RUN_H
#define TUTTI_RUN_H

#include "exec/exec.h"
#include "exec/plan.h"
#include "tutti/status.h"

#include <stdint.h>

struct tutti_runner;

/**
 * One communicator's part of a run of several calls. Its calls run in segments: a collective,
 * or a run of sends and receives merged into one plan so that pairs cannot deadlock.
 */
struct tutti_run_member {
    struct tutti_runner *runner;
    const struct tutti_op_desc **ops; /* its calls in order */
    int nops;
    int next;              /* first call of the next segment */
    tutti_status_t status; /* set TUTTI_OK to run; the first error stops the member */
    /* Where its segments are planned and run: the communicator's own storage (group_plan,
     * exec), set by whoever took its turn; its capacity stays between groups. */
    struct tutti_plan *plan;
    struct tutti_exec *ex;
    uint8_t barrier_byte;
    /* The carried sends and receives of the segment that runs (ops[box_from, box_to), moved
     * to the end of it), which finish once its ordinary calls have run (win/win_box.c). */
    int box_from, box_to;
    uint64_t box_seq;
    int solo; /* the run's only member: it waits for its carried calls (else polls them) */
    const struct tutti_op_desc *lead; /* a led collective of its that waits (win/win_lead.c) */
    uint64_t lead_seq;
};

/** The plan parameters of op on comm (rank, channels, chunk, tuner settings, its memo). */
void tutti__run_plan_params(struct tutti_runner *runner, const struct tutti_op_desc *op,
                            struct tutti_plan_params *pp);

/** Run one operation now, planned into plan (its storage, kept between calls). */
tutti_status_t tutti__run_op(struct tutti_runner *runner, const struct tutti_op_desc *op,
                             struct tutti_plan *plan);

/**
 * Run the members' calls segment after segment, every member's k-th segment together (one
 * thread drives several communicators of the same job). A member's status says how it ended;
 * the caller frees each member's plan.
 */
void tutti__run_members(struct tutti_run_member **ms, int nm);

/** Run n sends and receives of one group when every one travels in the boxes (win/win.h):
 * 1 and their status in *st_p, or 0 (none ran) to take the general path (carried.c). */
int tutti__run_carried(struct tutti_runner *runner, const struct tutti_op_desc *const *ops, int n,
                       tutti_status_t *st_p);

/** Run n calls of one communicator as a group (a stream batch). */
tutti_status_t tutti__run_batch(struct tutti_runner *runner, const struct tutti_op_desc *ops,
                                int n);

#endif /* TUTTI_RUN_H */
