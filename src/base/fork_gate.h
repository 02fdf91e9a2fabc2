/*
 * fork_gate.h - fork safety for the library's own background threads (the bootstrap roots).
 *
 * A process that serves a bootstrap root (it called tutti_get_unique_id) may fork its ranks
 * next, as the perf tools, the trainer and the integration tests do. fork() copies only the
 * calling thread; whatever lock another thread holds at that moment stays held in the child
 * for ever. glibc's malloc and stdio reset their own locks in the child, but not every
 * allocator does (gcc 12's AddressSanitizer allocator does not), nor do the library's locks.
 * So a root thread works only inside the gate and waits (poll) outside it, and a fork, through
 * a pthread_atfork handler, closes the gate: it waits until no such thread is inside, and
 * joins the ones that are ending, before the process is copied. A fork then never waits
 * longer than one step of a root's work.
 *
 * Communicators' progress threads are not gated: fork while a communicator of the process is
 * in use is not supported (as with NCCL); its child must not call tutti.
 *
 * A child must not keep the parent's listening sockets either: fork() without exec() keeps
 * every descriptor, CLOEXEC or not, so a root's port would go on taking connections (into a
 * queue nobody reads) for as long as any child lives, and a rank that came after the root had
 * closed would wait for a handshake until its timeout instead of being refused at once. So the
 * child releases them: each gated thread's in_child hook closes that thread's sockets (the
 * child has no copy of the thread), and the listening sockets of communicators, registered
 * with tutti__fork_gate_fd_add, become /dev/null in the child (the number stays taken, so that
 * a close by their owner, should the child ever reach one, cannot close another descriptor).
 */
#ifndef TUTTI_FORK_GATE_H
#define TUTTI_FORK_GATE_H

#include <pthread.h>

/**
 * Start a gated thread running fn(arg). It is inside the gate from its first instruction
 * (a fork cannot copy the process while the thread is being set up) and must end with
 * tutti__fork_gate_exit(). Threads that ended before are joined first.
 * @param in_child  NULL, or what a forked child calls (in the atfork handler, so it may only
 *                  close descriptors: no locks, no allocation) with arg, while the thread
 *                  runs: the thread is then outside the gate, so what it owns is consistent.
 * @return 0, or the error number of pthread_create.
 */
int tutti__fork_gate_thread_start(void *(*fn)(void *), void *arg, void (*in_child)(void *));

/**
 * A listening socket of this process that a forked child must not keep: from now on, every
 * child gets /dev/null in its place. Thread-safe. Call tutti__fork_gate_fd_del before closing it.
 * @return 0, or -1 without memory to remember it (the child would then keep it).
 */
int tutti__fork_gate_fd_add(int fd);

/** Forget a socket given to tutti__fork_gate_fd_add (no-op for one that is not there). */
void tutti__fork_gate_fd_del(int fd);

/** The calling gated thread leaves the gate before it blocks (poll, sleep). */
void tutti__fork_gate_leave(void);

/** ... and enters it again (waiting while a fork is under way) before it works on. */
void tutti__fork_gate_enter(void);

/** A gated thread's last call: it leaves for good; the next start or fork joins it. */
void tutti__fork_gate_exit(void);

#endif /* TUTTI_FORK_GATE_H */
