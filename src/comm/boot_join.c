/*
 * boot_join.c - how a connection to the bootstrap root becomes a rank: admission against
 * strangers (net/admit.h: a short deadline, a share per address, the oldest evicted when the
 * table is full, refusals summed up in the log), the handshake, then the authenticated hello,
 * which places the rank or, when it cannot be part of any set-up (another number of ranks, a rank
 * taken), fails the set-up for every rank. After a failure, a rank that joins gets the verdict.
 */
#include "comm/boot_root.h"
#include "base/check.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The admission policy, with a minimum age of 4 x the slowest recent handshake of the job's
 * own ranks (never beyond a handshake's own deadline): 512 ranks sharing 2 cores take seconds
 * each, and must not be evicted as strangers. */
static struct tutti_admit_cfg admit_cfg(const struct root *rt)
{
    return (struct tutti_admit_cfg){
        .max_total = TUTTI_BOOT_MAX_HANDSHAKES,
        .max_per_addr = BOOT_MAX_PER_ADDR,
        .min_age_ns = TUTTI_MIN(4 * rt->hs_seen_ns, rt->hs_timeout_ns),
    };
}

#define BOOT_ACCEPT_BATCH 64 /* connections accepted per look at the listener */

static const struct tutti_admit_slot *pending_slot(const void *table, int i)
{
    return &((struct root_client *const *)table)[i]->adm;
}

/* A rank that joins after the set-up failed gets the verdict. */
static void tell_late(struct root *rt, struct root_client *c, const struct boot_hello *h)
{
    tutti__root_send(rt, c, BOOT_REP_ERROR, &rt->verdict, sizeof(rt->verdict));
    if (h->rank >= 0 && h->rank < rt->nranks) {
        rt->told[h->rank] = 1;
    }
    tutti_debug(TUTTI_SUBSYS_BOOT,
                "bootstrap root: told rank %d (pid %u, %s) that the set-up failed", h->rank, h->pid,
                c->addr);
}

/*
 * Authenticated: place the client by the rank its hello claims, or refuse it. Returns 0 when
 * placed, -1 when refused, -2 when refused and the whole set-up fails: a rank that holds the
 * secret but disagrees on nranks is a misconfigured job, which no rank can complete, so every
 * rank is told at once instead of waiting for the timeout.
 */
static int place_client(struct root *rt, struct root_client *c)
{
    struct boot_hello h;
    memcpy(&h, c->hs.payload, sizeof(h));
    if (rt->failed) {
        tell_late(rt, c, &h);
        return -1;
    }
    char why[200] = "";
    int verdict = tutti__boot_hello_check(&h, rt->nranks, why, sizeof(why));
    int fatal = verdict == -2;
    if (verdict == 0 && rt->nranks != 0 && rt->by_rank[h.rank] != NULL) {
        /* Two processes hold this job's secret and claim one rank: no set-up can complete. */
        snprintf(why, sizeof(why),
                 "rank %d joined twice (pid %u, then pid %u from %s): two processes were "
                 "started as rank %d",
                 h.rank, rt->by_rank[h.rank]->pid, h.pid, c->addr, h.rank);
        fatal = 1;
    }
    if (why[0] != '\0') {
        struct boot_error e = {(int32_t)htonl((uint32_t)TUTTI_ERR_INVALID_USAGE), -1, {0}};
        snprintf(e.reason, sizeof(e.reason), "refused by the root: %s", why);
        tutti_warn("bootstrap root refused %s: %s", c->addr, why);
        tutti__root_send(rt, c, BOOT_REP_ERROR, &e, sizeof(e));
        if (fatal) {
            rt->min_nranks = TUTTI_MIN(rt->min_nranks, TUTTI_MAX(h.nranks, 1));
            if (h.rank >= 0 && h.rank < rt->nranks) {
                rt->told[h.rank] = 1;
            }
            tutti__root_fail_all(rt, TUTTI_ERR_REMOTE, h.rank, why);
            return -2;
        }
        return -1;
    }
    if (rt->nranks == 0) {
        rt->by_rank = calloc((size_t)h.nranks, sizeof(*rt->by_rank));
        rt->told = calloc((size_t)h.nranks, 1);
        if (rt->by_rank == NULL || rt->told == NULL) {
            free(rt->by_rank);
            free(rt->told);
            rt->by_rank = NULL;
            rt->told = NULL;
            return -1;
        }
        rt->nranks = h.nranks;
        rt->min_nranks = h.nranks;
        rt->round_start = rt->first_ns = tutti__now_ns();
    }
    c->rank = h.rank;
    c->pid = h.pid;
    c->fresh = 1;
    rt->by_rank[h.rank] = c;
    tutti_debug(TUTTI_SUBSYS_BOOT, "bootstrap root: rank %d joined from %s", h.rank, c->addr);
    return 0;
}

/* Close pending handshake i, and say why (summed up under a flood). */
static void evict(struct root *rt, int i, enum tutti_admit_why why, const char *detail)
{
    struct root_client *c = rt->pending[i];
    tutti__admit_closed(&rt->alog, why, c->addr, detail, tutti__now_ns());
    rt->pending[i] = rt->pending[--rt->npending];
    tutti__root_client_free(c);
}

int tutti__root_may_accept(struct root *rt, int *ms_p)
{
    int64_t now = tutti__now_ns(), wait = 0;
    struct tutti_admit_cfg cfg = admit_cfg(rt);
    if (now < rt->accept_after) {
        wait = rt->accept_after - now;
    } else if (tutti__admit_room(rt->pending, rt->npending, pending_slot, &cfg, now, &wait) != -2) {
        return 1;
    }
    /* Full (or out of descriptors): the queue may stay readable, so wake when that can change.
     */
    *ms_p = (int)TUTTI_MAX(0, TUTTI_MIN(wait / 1000000 + 1, *ms_p));
    return 0;
}

/* Out of descriptors: close the oldest handshake if it has had its chance, else wait a little.
 */
static int starved(struct root *rt, int err, int64_t now)
{
    int64_t wait = 0;
    int o = tutti__admit_room(rt->pending, rt->npending, pending_slot,
                              &(struct tutti_admit_cfg){.max_total = 0}, now, &wait);
    if (rt->npending > 0 && o >= 0) {
        evict(rt, o, TUTTI_ADMIT_FULL, "closed: out of descriptors");
        return 1;
    }
    tutti_warn_once("bootstrap root: accept: %s (RLIMIT_NOFILE): connections wait in the listen "
                    "queue",
                    strerror(err));
    rt->accept_after = now + (rt->npending > 0 ? wait : 100 * 1000000ll);
    return 0;
}

/* A new client for an accepted connection, in the pending table; 0, or -1 without memory. */
static int add_pending(struct root *rt, int fd, const union tutti_sockaddr *from, uint64_t addr,
                       int64_t now)
{
    if (rt->npending == rt->pending_cap) {
        int cap = rt->pending_cap + 16;
        struct root_client **n = realloc(rt->pending, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        rt->pending = n;
        rt->pending_cap = cap;
    }
    struct root_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return -1;
    }
    c->fd = fd;
    c->rank = -1;
    c->adm = (struct tutti_admit_slot){.since_ns = now, .addr = addr};
    tutti__sockaddr_str(from, c->addr, sizeof(c->addr));
    tutti__hs_init_accept(&c->hs, fd, rt->secret, rt->job_id, now + rt->hs_timeout_ns);
    rt->pending[rt->npending++] = c;
    return 0;
}

void tutti__root_accept(struct root *rt)
{
    for (int k = 0; k < BOOT_ACCEPT_BATCH; k++) {
        int64_t now = tutti__now_ns(), wait;
        if (now < rt->accept_after) {
            return;
        }
        struct tutti_admit_cfg cfg = admit_cfg(rt);
        int room = tutti__admit_room(rt->pending, rt->npending, pending_slot, &cfg, now, &wait);
        int fd;
        union tutti_sockaddr from;
        tutti_status_t st =
            room == -2 ? TUTTI_IN_PROGRESS : tutti__sock_accept(rt->lfd, &fd, &from);
        if (st == TUTTI_ERR_NO_MEMORY && starved(rt, errno, now)) {
            continue;
        }
        if (st != TUTTI_OK) {
            return;
        }
        if (room >= 0) {
            evict(rt, room, TUTTI_ADMIT_FULL,
                  "too many handshakes in progress; the oldest is closed");
        }
        uint64_t addr = tutti__admit_addr_key(&from);
        int victim =
            tutti__admit_addr_victim(rt->pending, rt->npending, pending_slot, addr, &cfg, now);
        if (victim >= 0) {
            evict(rt, victim, TUTTI_ADMIT_ADDR, "too many handshakes from its address");
        }
        if (add_pending(rt, fd, &from, addr, now) != 0) {
            close(fd);
            return;
        }
    }
}

int tutti__root_handshakes(struct root *rt)
{
    for (int i = 0; i < rt->npending;) {
        struct root_client *c = rt->pending[i];
        tutti_status_t st = tutti__hs_progress(&c->hs);
        if (st == TUTTI_IN_PROGRESS) {
            i++;
            continue;
        }
        if (st != TUTTI_OK && st != TUTTI_ERR_AUTH && st != TUTTI_ERR_TIMEOUT && c->hs.done == 0) {
            /* Closed before sending a byte: tutti_comm_shrink's liveness probe, or a scan. */
            tutti_debug(TUTTI_SUBSYS_BOOT, "bootstrap root: %s closed before the handshake",
                        c->addr);
            rt->pending[i] = rt->pending[--rt->npending];
            tutti__root_client_free(c);
            continue;
        }
        if (st != TUTTI_OK) {
            evict(rt, i,
                  st == TUTTI_ERR_AUTH      ? TUTTI_ADMIT_AUTH
                  : st == TUTTI_ERR_TIMEOUT ? TUTTI_ADMIT_DEADLINE
                                            : TUTTI_ADMIT_OTHER,
                  st == TUTTI_ERR_AUTH ? "authentication failed (wrong secret or another job)"
                                       : tutti_status_string(st));
            continue;
        }
        rt->pending[i] = rt->pending[--rt->npending];
        rt->hs_seen_ns = tutti__admit_learn(rt->hs_seen_ns, tutti__now_ns() - c->adm.since_ns);
        int placed = place_client(rt, c);
        if (placed != 0) {
            tutti__root_client_free(c);
        }
        if (placed == -2) {
            return -1;
        }
    }
    tutti__admit_flush(&rt->alog, tutti__now_ns(), 0);
    return 0;
}
