/*
 * proc.h - a process's identity that survives pid reuse, and whether that process still runs.
 * tutti leaves names behind that a later job may meet (the one-host rendezvous file, shared
 * memory segments); each records its owner's identity, so that one left by a process that has
 * ended (killed, OOM-killed) is told apart from one of a live job and replaced.
 */
#ifndef TUTTI_PROC_H
#define TUTTI_PROC_H

#include <stdint.h>

/* Who a process is: its pid, when it started (so that a reused pid is not taken for it) and the
 * pid namespace in which that pid means it. Plain data, stored in files and segments as is. */
struct tutti_proc_id {
    uint32_t pid;
    uint32_t reserved; /* 0 */
    uint64_t start;    /* start time, clock ticks after boot (/proc/<pid>/stat field 22) */
    uint64_t pidns;    /* inode of its pid namespace (/proc/self/ns/pid) */
};

/** This process's identity. */
void tutti__proc_self(struct tutti_proc_id *id_p);

/**
 * Does the process still run?
 * @return 1: yes; 0: it has ended (no such pid, a zombie, or the pid now belongs to a process
 *         that started at another time); -1: cannot tell (another pid namespace, pid 0, or /proc
 *         unreadable): treat it as alive.
 */
int tutti__proc_alive(const struct tutti_proc_id *id);

#endif /* TUTTI_PROC_H */
