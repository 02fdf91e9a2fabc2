/*
 * admit.h - which unauthenticated connections a listener keeps: the policy the bootstrap root
 * and the TCP transport share against strangers (docs/SECURITY.md).
 *
 * A connection is a stranger until its handshake proves the job's secret, which one of the job's
 * ranks does within a round trip of being accepted. A stranger costs a descriptor and a slot, so
 * a listener bounds both and evicts:
 *   - each handshake has a short deadline (TUTTI_HANDSHAKE_TIMEOUT, never above the
 *     listener's TUTTI_TIMEOUT), enforced by the handshake itself;
 *   - at most max_total handshakes at once: when full, the oldest one is closed once it has
 *     waited the minimum age (TUTTI_ADMIT_MIN_AGE_NS, or more where the listener has seen its
 *     own ranks take longer: tutti__admit_learn); until then new connections wait in the
 *     kernel's listen queue;
 *   - at most max_per_addr from one remote address (its IP): a newcomer beyond that closes the
 *     oldest one from the same address, once that has waited TUTTI_ADMIT_MIN_AGE_NS. So a flood
 *     from one place evicts itself first, and a burst of real ranks from one host, all younger
 *     than that, is never cut.
 * A rank whose handshake is closed anyway connects again (boot_client.c, tcp_conn.c): limits
 * apply to strangers, never to the job's own ranks.
 *
 * Refusals and evictions are logged by a tutti_admit_log: the first few of each 10 s window in
 * full, the rest summed up in one warning when the window ends, so that a flood cannot flood the
 * log. The functions are pure (time is an argument) and unit-tested (tests/unit/test_admit.c).
 */
#ifndef TUTTI_ADMIT_H
#define TUTTI_ADMIT_H

#include "net/sock.h"

#include <stdint.h>

#define TUTTI_ADMIT_MIN_AGE_NS (1000ll * 1000000ll)  /* see above */
#define TUTTI_ADMIT_WINDOW_NS  (10ll * 1000000000ll) /* a log window */
#define TUTTI_ADMIT_SHOWN      3                     /* refusals logged in full per window */

struct tutti_admit_cfg {
    int max_total;      /* handshakes in progress at most */
    int max_per_addr;   /* from one address, once older ones can go */
    int64_t min_age_ns; /* an age below which nothing is evicted; TUTTI_ADMIT_MIN_AGE_NS at least */
};

/** The age below which cfg's listener evicts no handshake. */
int64_t tutti__admit_min_age(const struct tutti_admit_cfg *cfg);

/**
 * A listener on a loaded host learns how long its own ranks take: seen_ns, the slowest recent
 * handshake that passed (it decays by a sixteenth with each one that passes), after one that
 * took took_ns. Only a handshake that proved the secret counts, so strangers cannot raise it;
 * ranks that share 2 cores with 500 others take seconds, and a listener whose min_age_ns is
 * a few times this one evicts none of them.
 */
int64_t tutti__admit_learn(int64_t seen_ns, int64_t took_ns);

/* What the policy knows of one handshake in progress. */
struct tutti_admit_slot {
    int64_t since_ns; /* accepted at (tutti__now_ns) */
    uint64_t addr;    /* tutti__admit_addr_key of the remote address */
};

/* The slot of entry i of a caller's table of handshakes (whatever its layout). */
typedef const struct tutti_admit_slot *(*tutti_admit_at_fn)(const void *table, int i);

/** A key for a remote address: its IP, without the port. */
uint64_t tutti__admit_addr_key(const union tutti_sockaddr *a);

/**
 * Before accepting one more connection into a table of n handshakes.
 * @return -1: there is room; i >= 0: close handshake i (the oldest) first; -2: no room now,
 *         leave connections in the kernel's queue and look again in *wait_ns_p (set only then).
 */
int tutti__admit_room(const void *table, int n, tutti_admit_at_fn at,
                      const struct tutti_admit_cfg *cfg, int64_t now, int64_t *wait_ns_p);

/**
 * After accepting a connection from addr (not yet in the table).
 * @return the index of the handshake to close (the oldest from addr, when addr already holds
 *         max_per_addr and that one has waited TUTTI_ADMIT_MIN_AGE_NS), or -1.
 */
int tutti__admit_addr_victim(const void *table, int n, tutti_admit_at_fn at, uint64_t addr,
                             const struct tutti_admit_cfg *cfg, int64_t now);

/* Why a stranger's connection was closed (for the summary). */
enum tutti_admit_why {
    TUTTI_ADMIT_AUTH,     /* authentication failed: wrong secret, another job, garbage */
    TUTTI_ADMIT_DEADLINE, /* no complete handshake before its deadline */
    TUTTI_ADMIT_ADDR,     /* too many handshakes from its address */
    TUTTI_ADMIT_FULL,     /* the table was full and it was the oldest */
    TUTTI_ADMIT_OTHER,    /* closed or reset during the handshake, and the like */
    TUTTI_ADMIT_NWHY
};

/* A listener's log of closed strangers. Zero it, then set `who` (the prefix of every line). */
struct tutti_admit_log {
    char who[48];       /* "tcp: rank 3", "bootstrap root" */
    int64_t window_end; /* 0: no window open */
    int shown;          /* lines in full in this window */
    long hidden[TUTTI_ADMIT_NWHY];
    char last_from[80];
};

/**
 * A stranger's connection from `from` was closed for `why` (details: its text). Logged in full
 * while the window has shown fewer than TUTTI_ADMIT_SHOWN, else counted for the summary.
 */
void tutti__admit_closed(struct tutti_admit_log *l, enum tutti_admit_why why, const char *from,
                         const char *detail, int64_t now);

/** Log the window's summary if one is due (its end has passed, or `force`: the listener closes). */
void tutti__admit_flush(struct tutti_admit_log *l, int64_t now, int force);

#endif /* TUTTI_ADMIT_H */
