/*
 * boot_root.h - the bootstrap root's private state, shared by its two halves: boot_root.c (the
 * thread, its rounds of requests and its end) and boot_join.c (how a connection becomes a rank:
 * admission against strangers, the handshake, the hello).
 */
#ifndef TUTTI_BOOT_ROOT_H
#define TUTTI_BOOT_ROOT_H

#include "comm/boot_wire.h"
#include "comm/bootstrap.h"
#include "net/admit.h"

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* A connection to the root: a handshake in progress, then a rank. */
struct root_client {
    int fd;
    int rank;                    /* -1 until authenticated */
    struct tutti_admit_slot adm; /* when and from where it was accepted */
    uint32_t pid;
    char addr[80];
    struct tutti_hs hs;
    uint8_t hdr_raw[BOOT_HDR_BYTES]; /* request header being read */
    struct boot_hdr hdr;             /* ... and decoded */
    size_t hdr_done;
    uint8_t *payload;
    size_t pay_done;
    int ready;     /* a whole request is in */
    short revents; /* what the root's last poll() said of fd (root_wait) */
    int fresh;     /* placed since: read it once whatever poll() said (bytes may be buffered) */
};

/* The state of one root thread (owned by it; read by a forked child's hook). */
struct root {
    int lfd;
    uint8_t secret[TUTTI_SECRET_BYTES];
    uint64_t job_id;
    int64_t timeout_ns;
    int nranks; /* 0 until the first rank arrives */
    struct root_client **by_rank;
    int nbye;
    struct root_client **pending; /* accepted, not yet authenticated */
    int npending, pending_cap;
    struct tutti_admit_log alog; /* strangers refused and evicted */
    int64_t hs_timeout_ns;       /* a connection's handshake deadline (TUTTI_HANDSHAKE_TIMEOUT) */
    int64_t hs_seen_ns;          /* the slowest recent handshake that passed (tutti__admit_learn) */
    int64_t accept_after;        /* out of descriptors: look at the listener again then */
    int64_t round_start;         /* when the current round started waiting */
    int64_t first_ns; /* when the first rank joined: the set-up's deadline counts from it */
    int quiet_warned; /* the current round's ranks missing were warned about */
    int min_nranks;   /* the smallest size a rank claimed (below nranks on a mismatch) */
    int failed;       /* the set-up failed: verdict says why, told who has it */
    int tree;         /* the ranks exchange over their tree now (boot_tree.c) */
    uint64_t msgs_in, bytes_in, msgs_out, bytes_out; /* with the ranks, for the closing line */
    struct boot_error verdict;
    uint8_t *told;      /* [nranks] */
    struct pollfd *fds; /* root_wait's poll set, grown as needed */
    int fds_cap;
    struct tutti_boot_root_watch *watch; /* the starter's handle on our end, or NULL */
};

/* The root's limits on strangers (net/admit.h): TUTTI_BOOT_MAX_HANDSHAKES in all, and a share
 * per address that a host's ranks, all younger than a second, never reach as strangers do. */
#define BOOT_MAX_PER_ADDR 64

/* boot_root.c */

/** Send one message to a client, best effort, within the root's timeout. */
void tutti__root_send(struct root *rt, struct root_client *c, uint32_t type, const void *p,
                      size_t len);

/** Tell every connected rank that the set-up failed, and why; keep the verdict for late ranks. */
void tutti__root_fail_all(struct root *rt, tutti_status_t st, int culprit, const char *reason);

/** Close and free a client. */
void tutti__root_client_free(struct root_client *c);

/* boot_join.c */

/** Accept what the listen queue holds, as far as the admission policy leaves room. */
void tutti__root_accept(struct root *rt);

/** Whether to watch the listener now; else *ms_p gets when to look again (root_wait's poll). */
int tutti__root_may_accept(struct root *rt, int *ms_p);

/** Move handshakes forward and place who passed; -1 when the set-up has failed. */
int tutti__root_handshakes(struct root *rt);

#endif /* TUTTI_BOOT_ROOT_H */
