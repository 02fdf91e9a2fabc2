/*
 * boot.h - the interface of the out-of-band channel that builds a communicator (comm/bootstrap.h
 * has its implementations): an all-gather of fixed-size records and "sync" rounds in which the
 * ranks agree on a status. exec/connect.c takes one to agree on the transports; it does not know
 * which implementation it is given.
 */
#ifndef TUTTI_EXEC_BOOT_H
#define TUTTI_EXEC_BOOT_H

#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_boot;

struct tutti_boot_ops {
    /** all[r * size .. ] = rank r's `mine`, for every rank. */
    tutti_status_t (*allgather)(struct tutti_boot *b, const void *mine, void *all, size_t size);
    /** Agree on the worst status (most negative) and the lowest rank that reported it. */
    tutti_status_t (*sync)(struct tutti_boot *b, tutti_status_t mine, tutti_status_t *agreed_p,
                           int *culprit_p);
    /**
     * Leave and free. ok != 0: this rank finished its set-up; ok == 0: it gives up, and the
     * other ranks are told it left early.
     */
    void (*close)(struct tutti_boot *b, int ok);
};

struct tutti_boot {
    const struct tutti_boot_ops *ops;
    /* A sync ended the set-up with a failure that every rank learned of: each leaves as one
     * that finished (close(b, 1)), so the root knows nobody is left to tell. */
    int failed_together;
    /* How long joining took (the rendezvous: connect, handshake), for init's phase times; 0
     * where there is nothing to join (a parent communicator's collectives). */
    int64_t join_ns;
    /* Its calls are collectives of a parent that the other children's set-ups share (a
     * split): every child must make the same calls, whatever its own size and place. */
    int lockstep;
};

#endif /* TUTTI_EXEC_BOOT_H */
