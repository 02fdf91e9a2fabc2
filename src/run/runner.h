/*
 * runner.h - what run/ owns of a communicator (struct tutti_runner, issue 37): the turn and the
 * asynchronous queue, the plan storage of blocking calls and of groups, the tuner's memo, and
 * the fabric it runs on. The communicator (comm/comm.h) holds one.
 */
#ifndef TUTTI_RUN_RUNNER_H
#define TUTTI_RUN_RUNNER_H

#include "coll/coll.h"
#include "exec/fabric.h"
#include "exec/plan.h"

#include <pthread.h>
#include <stdatomic.h>

struct tutti_request;
struct tutti_winset;

/* request.c: the asynchronous queue and its progress thread; turn.c: the turn it keeps. */
struct tutti_comm_queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct tutti_request *head, *tail;
    pthread_t worker;
    int worker_started;
    /* The turn is held (a caller, a group's end, or the worker running a request): taken by a
     * compare-and-swap from 0, with or without the lock (turn.c). */
    _Atomic int busy;
    _Atomic int queued;   /* requests in the list (changed under the lock) */
    _Atomic int sleepers; /* callers waiting on cond for the turn (changed under the lock) */
    int stop;
};

struct tutti_runner {
    struct tutti_fabric *fab; /* the communicator's fabric */
    struct tutti_comm_queue queue;
    struct tutti_plan plan;       /* storage for blocking calls, under the turn */
    struct tutti_plan group_plan; /* storage for a group's segments, under the turn */
    struct tutti_tune_memo tune;  /* coll/tuned.c: the cost model's answers, under the turn */
    struct tutti_winset *win;     /* win/win.h: the windows, from the first registration */
};

#endif /* TUTTI_RUN_RUNNER_H */
