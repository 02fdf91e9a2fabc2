/*
 * fork_gate.c - the library's background threads against fork() (see fork_gate.h). The state
 * is tutti__g.fork_gate: a count of threads inside the gate, a "fork under way" flag that
 * keeps them out, the threads that have exited but are not joined yet, and what a forked child
 * must release: the running gated threads' hooks and the listening sockets of communicators.
 */
#include "base/fork_gate.h"
#include "base/global.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

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

/*
 * The child's copies of the parent's listeners: each running gated thread's hook closes what
 * that thread owned, and every registered socket becomes /dev/null. Only system calls here (the
 * child may not allocate: another thread of the parent may have held the allocator's lock).
 * The lists are emptied: the entries are the parent's, and a later fork of the child must not
 * release the same numbers again. (The entries stay reachable, as orphans: freeing them here
 * could deadlock on an allocator lock that another thread of the parent held at the fork.)
 */
static void release_in_child(void)
{
    for (struct tutti_gated *g = GATE.live; g != NULL; g = g->next) {
        g->in_child(g->arg);
    }
    if (GATE.live != NULL) {
        struct tutti_gated *last = GATE.live;
        while (last->next != NULL) {
            last = last->next;
        }
        last->next = GATE.orphans;
        GATE.orphans = GATE.live;
        GATE.live = NULL;
    }
    int null = GATE.nfds > 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
    for (int i = 0; i < GATE.nfds && null >= 0; i++) {
        (void)dup3(null, GATE.fds[i], O_CLOEXEC);
    }
    for (int i = 0; i < GATE.nfds && null < 0; i++) {
        (void)close(GATE.fds[i]); /* no /dev/null: better a free number than a live listener */
    }
    if (null >= 0) {
        close(null);
    }
    GATE.nfds = 0;
}

/* The child has none of the parent's other threads: nobody is inside, nobody waits. */
static void after_fork_child(void)
{
    release_in_child();
    GATE.forking = 0;
    GATE.busy = 0;
    GATE.nended = 0;
    pthread_cond_init(&GATE.cond, NULL); /* forget the parent's waiters */
    pthread_mutex_unlock(&GATE.lock);
}

/* At exit (or unload), join the threads that ended: no thread of the library is left behind.
 * One still running (a bootstrap root that has not yet seen every rank close, on a loaded
 * machine) is detached: the process ends under it, and it would otherwise end unjoined after
 * this ran (TSan: a thread leak in the README example, once in a CI run). */
__attribute__((destructor)) static void join_at_exit(void)
{
    pthread_mutex_lock(&GATE.lock);
    join_ended();
    for (struct tutti_gated *g = GATE.live; g != NULL; g = g->next) {
        if (g->has_tid && !g->detached) {
            pthread_detach(g->tid);
            g->detached = 1;
        }
    }
    pthread_mutex_unlock(&GATE.lock);
}

static void register_handlers(void)
{
    (void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* Unlink a running thread's entry (the gate's lock is held). */
static void live_remove(struct tutti_gated *g)
{
    if (g->prev != NULL) {
        g->prev->next = g->next;
    } else if (GATE.live == g) {
        GATE.live = g->next;
    }
    if (g->next != NULL) {
        g->next->prev = g->prev;
    }
}

/* What a gated thread starts with: its entry, then the caller's function. */
struct gated_start {
    void *(*fn)(void *);
    void *arg;
    struct tutti_gated *entry; /* NULL without an in_child hook */
};

static void *gated_main(void *p)
{
    struct gated_start s = *(struct gated_start *)p;
    free(p);
    tutti__tls.gated = s.entry;
    if (s.entry != NULL) { /* for join_at_exit: the entry is live until this thread exits */
        pthread_mutex_lock(&GATE.lock);
        s.entry->tid = pthread_self();
        s.entry->has_tid = 1;
        pthread_mutex_unlock(&GATE.lock);
    }
    return s.fn(s.arg);
}

int tutti__fork_gate_thread_start(void *(*fn)(void *), void *arg, void (*in_child)(void *))
{
    pthread_once(&GATE.once, register_handlers);
    struct gated_start *s = calloc(1, sizeof(*s));
    struct tutti_gated *g = in_child != NULL ? calloc(1, sizeof(*g)) : NULL;
    if (s == NULL || (in_child != NULL && g == NULL)) {
        free(s);
        free(g);
        return ENOMEM;
    }
    *s = (struct gated_start){.fn = fn, .arg = arg, .entry = g};
    pthread_mutex_lock(&GATE.lock);
    while (GATE.forking) {
        pthread_cond_wait(&GATE.cond, &GATE.lock);
    }
    join_ended();
    GATE.busy++; /* on behalf of the new thread, until its first leave */
    if (g != NULL) {
        /* Listed before the thread exists: no fork can miss what it will own. */
        *g = (struct tutti_gated){.next = GATE.live, .in_child = in_child, .arg = arg};
        if (GATE.live != NULL) {
            GATE.live->prev = g;
        }
        GATE.live = g;
    }
    pthread_mutex_unlock(&GATE.lock);
    pthread_t tid;
    int err = pthread_create(&tid, NULL, gated_main, s);
    if (err != 0) {
        pthread_mutex_lock(&GATE.lock);
        if (g != NULL) {
            live_remove(g);
        }
        pthread_mutex_unlock(&GATE.lock);
        free(g);
        free(s);
        tutti__fork_gate_leave();
    }
    return err;
}

int tutti__fork_gate_fd_add(int fd)
{
    pthread_once(&GATE.once, register_handlers);
    pthread_mutex_lock(&GATE.lock);
    int ok = 1;
    if (GATE.nfds == GATE.fds_cap) {
        int cap = GATE.fds_cap + 16;
        int *n = realloc(GATE.fds, (size_t)cap * sizeof(*n));
        ok = n != NULL;
        if (ok) {
            GATE.fds = n;
            GATE.fds_cap = cap;
        }
    }
    if (ok) {
        GATE.fds[GATE.nfds++] = fd;
    }
    pthread_mutex_unlock(&GATE.lock);
    return ok ? 0 : -1;
}

void tutti__fork_gate_fd_del(int fd)
{
    pthread_mutex_lock(&GATE.lock);
    for (int i = 0; i < GATE.nfds; i++) {
        if (GATE.fds[i] == fd) {
            GATE.fds[i] = GATE.fds[--GATE.nfds];
            break;
        }
    }
    pthread_mutex_unlock(&GATE.lock);
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

/* List thread self as ended, for the next join (the gate's lock is held). */
static void remember_ended(pthread_t self)
{
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
}

void tutti__fork_gate_exit(void)
{
    pthread_t self = pthread_self();
    struct tutti_gated *g = tutti__tls.gated;
    tutti__tls.gated = NULL;
    pthread_mutex_lock(&GATE.lock);
    int detached = g != NULL && g->detached;
    if (g != NULL) {
        live_remove(g); /* what it owned is released already; a child has nothing to close */
    }
    if (!detached) { /* else detached at exit already: nobody may join it */
        remember_ended(self);
    }
    if (--GATE.busy == 0) {
        pthread_cond_broadcast(&GATE.cond);
    }
    pthread_mutex_unlock(&GATE.lock);
    free(g);
}
