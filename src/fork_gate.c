/*
 * fork_gate.c - the library's background threads against fork() (see fork_gate.h). The state
 * is tutti__g.fork_gate: a count of threads inside the gate, a "fork under way" flag that
 * keeps them out, and the threads that have exited but are not joined yet.
 */
#include "fork_gate.h"
#include "global.h"

#include <stdlib.h>

#define GATE (tutti__g.fork_gate)

/* Join the gated threads that have exited (the gate's lock is held; they no longer take it). */
static void join_ended(void)
{
    for (int i = 0; i < GATE.nended; i++) {
        pthread_join(GATE.ended[i], NULL);
    }
    GATE.nended = 0;
}

/* Before fork(): wait until no gated thread works; the lock stays held across the fork. */
static void before_fork(void)
{
    pthread_mutex_lock(&GATE.lock);
    GATE.forking = 1;
    while (GATE.busy > 0) {
        pthread_cond_wait(&GATE.cond, &GATE.lock);
    }
    join_ended();
}

static void after_fork_parent(void)
{
    GATE.forking = 0;
    pthread_cond_broadcast(&GATE.cond);
    pthread_mutex_unlock(&GATE.lock);
}

/* The child has none of the parent's other threads: nobody is inside, nobody waits. */
static void after_fork_child(void)
{
    GATE.forking = 0;
    GATE.busy = 0;
    GATE.nended = 0;
    pthread_cond_init(&GATE.cond, NULL); /* forget the parent's waiters */
    pthread_mutex_unlock(&GATE.lock);
}

/* At exit (or unload), join the threads that ended: no thread of the library is left behind. */
__attribute__((destructor)) static void join_at_exit(void)
{
    pthread_mutex_lock(&GATE.lock);
    join_ended();
    pthread_mutex_unlock(&GATE.lock);
}

static void register_handlers(void)
{
    (void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

int tutti__fork_gate_thread_start(void *(*fn)(void *), void *arg)
{
    pthread_once(&GATE.once, register_handlers);
    pthread_mutex_lock(&GATE.lock);
    while (GATE.forking) {
        pthread_cond_wait(&GATE.cond, &GATE.lock);
    }
    join_ended();
    GATE.busy++; /* on behalf of the new thread, until its first leave */
    pthread_mutex_unlock(&GATE.lock);
    pthread_t tid;
    int err = pthread_create(&tid, NULL, fn, arg);
    if (err != 0) {
        tutti__fork_gate_leave();
    }
    return err;
}

void tutti__fork_gate_leave(void)
{
    pthread_mutex_lock(&GATE.lock);
    if (--GATE.busy == 0) {
        pthread_cond_broadcast(&GATE.cond);
    }
    pthread_mutex_unlock(&GATE.lock);
}

void tutti__fork_gate_enter(void)
{
    pthread_mutex_lock(&GATE.lock);
    while (GATE.forking) {
        pthread_cond_wait(&GATE.cond, &GATE.lock);
    }
    GATE.busy++;
    pthread_mutex_unlock(&GATE.lock);
}

void tutti__fork_gate_exit(void)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&GATE.lock);
    if (GATE.nended == GATE.ended_cap) {
        int cap = GATE.ended_cap + 8;
        pthread_t *n = realloc(GATE.ended, (size_t)cap * sizeof(*n));
        if (n != NULL) {
            GATE.ended = n;
            GATE.ended_cap = cap;
        }
    }
    if (GATE.nended < GATE.ended_cap) {
        GATE.ended[GATE.nended++] = self;
    } else {
        pthread_detach(self); /* no memory to remember it: nobody will join it */
    }
    if (--GATE.busy == 0) {
        pthread_cond_broadcast(&GATE.cond);
    }
    pthread_mutex_unlock(&GATE.lock);
}
