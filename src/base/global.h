/*
 * global.h - the process-wide mutable state of the library, all of it.
 *
 * Everything that outlives one call and is not owned by a communicator lives in tutti__g (one per
 * process) or tutti__tls (one per thread), both defined in global.c. Any other file-scope static
 * in the library must carry a comment saying why it is not here.
 */
#ifndef TUTTI_GLOBAL_H
#define TUTTI_GLOBAL_H

#include "base/env.h"
#include "base/handle.h"
#include "base/hold.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

struct tutti_group_op;
struct tutti_hold;

/* A running gated thread (fork_gate.c): what a forked child, which has no copy of the thread,
 * calls to release the thread's resources (its sockets). */
struct tutti_gated {
    struct tutti_gated *prev, *next;
    void (*in_child)(void *arg);
    void *arg;
    pthread_t tid; /* set by the thread itself once it runs (has_tid) */
    int has_tid;
    int detached; /* detached at the process's exit while it still ran: nobody joins it */
};

struct tutti_global {
    struct tutti_env env; /* parsed once by env.c */
    int env_ready;
    char env_problem[440]; /* env.c: malformed and out-of-range values; "" when none */

    int log_ready;            /* log.c: set once the config below is final */
    FILE *log_file;           /* stderr or TUTTI_LOG_FILE */
    pthread_mutex_t log_lock; /* serialises the log init */
    char hostname[64];

    /* comm.c, request.c: the handles given out and not yet taken back (handle.h) */
    struct tutti_handle_set live_comms;
    struct tutti_handle_set live_reqs;
    uint64_t comm_serial; /* the last communicator's serial, under live_comms.lock */

    /* hold.c: each calling thread's hold on the objects it is inside */
    struct {
        pthread_once_t once;               /* makes key */
        pthread_key_t key;                 /* gives a thread's record back when it exits */
        int key_ok;                        /* pthread_key_create succeeded */
        _Atomic(struct tutti_hold *) head; /* every record ever made (never freed) */
    } holds;

    struct { /* fork_gate.c: the library's threads against fork() */
        pthread_mutex_t lock;
        pthread_cond_t cond; /* busy reached 0, or a fork ended */
        pthread_once_t once; /* registers the atfork handlers */
        int busy;            /* gated threads inside the gate */
        int forking;         /* a fork is under way: nobody enters */
        pthread_t *ended;    /* gated threads that have exited, not yet joined */
        int nended, ended_cap;
        struct tutti_gated *live;    /* running gated threads with something a child releases */
        struct tutti_gated *orphans; /* in a child: the parent's entries, kept, never run again */
        int *fds;                    /* listening sockets a forked child must not keep */
        int nfds, fds_cap;
    } fork_gate;
};

/** Per-thread state. */
struct tutti_tls {
    char last_error[512]; /* tutti_last_error(NULL) */
    char comm_error[512]; /* copy handed out by tutti_last_error(comm) */
    int rank;             /* rank of the comm being served, for log prefixes; -1 outside */
    int group_depth;      /* tutti_group_start nesting */
    struct tutti_group_op *group_ops; /* operations recorded in the open group */
    int group_nops, group_cap;
    int group_status;          /* first error met while recording */
    struct tutti_gated *gated; /* fork_gate.c: this thread's entry, if it is a gated thread */
    struct tutti_hold *hold;   /* hold.c: this thread's record, or NULL */
    /* per kind (hold.h): the object this thread last found live, and its owner's removal
     * count at that time */
    const void *hold_obj[TUTTI_HOLD_KINDS];
    uint64_t hold_takes[TUTTI_HOLD_KINDS];
};

extern struct tutti_global tutti__g;
extern __thread struct tutti_tls tutti__tls;

#endif /* TUTTI_GLOBAL_H */
