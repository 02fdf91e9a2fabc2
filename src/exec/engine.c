/*
 * engine.c - the wait loop around tutti__exec_advance().
 *
 * Waiting policy: busy-poll for TUTTI_SPIN (a peer on another core answers within a few
 * hundred nanoseconds), then sched_yield() for TUTTI_YIELD (lets a peer that shares our core
 * run; with more ranks than cores this is where the time goes), then sleep: on the futex
 * doorbell when only shared memory is involved (peers ring it after posting, but only if we
 * said we sleep), else in poll() on the sockets. Every 1 ms of waiting, and on each wake-up,
 * the transports check for dead peers and abort notices. TUTTI_TIMEOUT without progress fails
 * the communicator with a report of what it waited for.
 */
#include "exec/engine.h"
#include "base/check.h"
#include "exec/fabric.h"
#include "exec/connect.h"
#include "base/env.h"
#include "exec/fail.h"
#include "base/util.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK_PERIOD_NS  1000000ll  /* liveness and abort-board checks while waiting */
#define MAX_SLEEP_NS     10000000ll /* wake at least this often to check deadlines */
#define MAX_POLLFDS      256
#define SPIN_CLOCK_EVERY 16u

struct waiter {
    int64_t last_progress;
    int64_t last_check;
    int64_t last_beat;    /* when beats last went out (or the wait began) */
    int64_t beat_vouched; /* the progress time they vouched for */
    int armed;            /* doorbell: we said we are about to sleep */
    int spinning;         /* the last wait_step busy-polled: poll again without reading the clock */
    uint32_t token;       /* doorbell sequence seen when arming */
    struct tutti_doorbell *db;
};

/*
 * One machine-readable line per failed operation, for `tutti-info --hang` (which reads every
 * rank's log and names the ranks behind): where this rank stood when the operation failed.
 * The keys are a stable format; new keys may be appended.
 */
static void log_hang_record(const struct tutti_exec *ex, tutti_status_t st)
{
    const struct tutti_fabric *c = ex->fab;
    struct tutti_wait_point wp;
    tutti__exec_wait_point(ex, &wp);
    tutti_warn("tutti: hang rank=%d nranks=%d comm=%016llx pid=%d status=%s coll=%s seq=%llu "
               "seq_posted=%llu seq_done=%llu waiting_on=%d step=%zu/%zu channel=%d",
               c->rank, c->nranks, (unsigned long long)c->comm_id, (int)getpid(),
               tutti_status_name(st), tutti__coll_name(ex->plan->op.coll),
               (unsigned long long)ex->seq, (unsigned long long)atomic_load(&c->state.posted),
               (unsigned long long)atomic_load(&c->state.completed), wp.peer, wp.step, wp.nsteps,
               wp.channel);
}

/* A peer's failure ended this operation: say where this rank stood (a timeout says it already). */
static void append_own_state(const struct tutti_exec *ex)
{
    struct tutti_fabric *c = ex->fab;
    struct tutti_wait_point wp;
    tutti__exec_wait_point(ex, &wp);
    char here[160];
    int n =
        snprintf(here, sizeof(here), " [rank %d: %s #%llu, operations posted %llu, completed %llu",
                 c->rank, tutti__coll_name(ex->plan->op.coll), (unsigned long long)ex->seq,
                 (unsigned long long)atomic_load(&c->state.posted),
                 (unsigned long long)atomic_load(&c->state.completed));
    if (wp.peer >= 0 && n > 0 && (size_t)n < sizeof(here)) {
        snprintf(here + n, sizeof(here) - (size_t)n, ", waiting on rank %d at step %zu/%zu]",
                 wp.peer, wp.step, wp.nsteps);
    } else if (n > 0 && (size_t)n < sizeof(here)) {
        snprintf(here + n, sizeof(here) - (size_t)n, "]");
    }
    tutti__errbuf_append(&c->err, here);
}

static tutti_status_t fail_exec_blaming(struct tutti_exec *ex, tutti_status_t st, int culprit)
{
    ex->status = st;
    if (tutti__status_is_fatal(st)) {
        log_hang_record(ex, st);
    }
    if (st == TUTTI_ERR_REMOTE && tutti__fabric_health(ex->fab) == TUTTI_OK) {
        append_own_state(ex);
    }
    if (tutti__status_is_fatal(st)) {
        tutti__fabric_fail(ex->fab, st, culprit);
    }
    return st;
}

static tutti_status_t fail_exec(struct tutti_exec *ex, tutti_status_t st)
{
    int culprit = (st == TUTTI_ERR_TIMEOUT) ? tutti__exec_waited_rank(ex) : -1;
    return fail_exec_blaming(ex, st, culprit);
}

/*
 * "rank 1 (host h, pid 7) has not started it (posted 2, completed 2); " for the local peers
 * whose published counters show they never posted operation ex->seq. Returns the first such
 * rank, or -1 (none, or no peer's counters are visible: ranks on other hosts, TCP only).
 */
static int describe_behind(struct tutti_exec *ex, char *buf, size_t len)
{
    struct tutti_fabric *c = ex->fab;
    size_t o = 0;
    int first = -1;
    buf[0] = '\0';
    for (int r = 0; r < c->nranks && o + 1 < len; r++) {
        const struct tutti_seq_board *b = r == c->rank ? NULL : tutti__fabric_seq_board(c, r);
        uint64_t posted = b != NULL ? atomic_load_explicit(&b->posted, memory_order_relaxed) : 0;
        if (b == NULL || posted >= ex->seq) {
            continue;
        }
        char who[128];
        tutti__tpeer_name(c->net.targs.peers, r, who, sizeof(who));
        int n =
            snprintf(buf + o, len - o, "%s has not started it (posted %llu, completed %llu); ", who,
                     (unsigned long long)posted,
                     (unsigned long long)atomic_load_explicit(&b->completed, memory_order_relaxed));
        if (n < 0) {
            break;
        }
        o += (size_t)n;
        first = first < 0 ? r : first;
    }
    if (o >= len) {
        buf[len - 1] = '\0';
    }
    return first;
}

static tutti_status_t timeout_exec(struct tutti_exec *ex, int64_t idle_ns)
{
    char what[400], behind[300];
    tutti__exec_describe_wait(ex, what, sizeof(what));
    int late = describe_behind(ex, behind, sizeof(behind));
    struct tutti_fabric *c = ex->fab;
    /* Who is to blame comes first: notices to other ranks carry only the start of this. */
    tutti__set_error(tutti__fabric_err(c), TUTTI_ERR_TIMEOUT,
                     "%s #%llu: %srank %d was %s, without progress for %.1f s (TUTTI_TIMEOUT); "
                     "operations posted %llu, completed %llu",
                     tutti__coll_name(ex->plan->op.coll), (unsigned long long)ex->seq, behind,
                     c->rank, what, (double)idle_ns / 1e9,
                     (unsigned long long)atomic_load(&c->state.posted),
                     (unsigned long long)atomic_load(&c->state.completed));
    return fail_exec_blaming(ex, TUTTI_ERR_TIMEOUT, late >= 0 ? late : tutti__exec_waited_rank(ex));
}

/* Periodic checks of one exec's communicator: abort requested, failed elsewhere, dead peers. */
static tutti_status_t check_comm(struct tutti_exec *ex)
{
    struct tutti_fabric *c = ex->fab;
    if (atomic_load_explicit(&c->state.aborting, memory_order_relaxed)) {
        tutti__set_error(tutti__fabric_err(c), TUTTI_ERR_ABORTED,
                         "%s #%llu aborted by tutti_comm_abort",
                         tutti__coll_name(ex->plan->op.coll), (unsigned long long)ex->seq);
        return fail_exec(ex, TUTTI_ERR_ABORTED);
    }
    tutti_status_t health = tutti__fabric_health(c);
    if (health != TUTTI_OK) {
        ex->status = health; /* another thread or plan failed it; the message is stored */
        return health;
    }
    tutti_status_t st = tutti__fabric_check(c);
    if (st != TUTTI_OK) {
        return fail_exec(ex, st);
    }
    st = tutti__exec_check_foreign(ex);
    if (st < 0) {
        return fail_exec(ex, st);
    }
    if (c->watch != NULL && ex->plan != NULL) {
        st = c->watch(c->watch_arg, ex);
        if (st < 0) {
            return fail_exec(ex, st);
        }
    }
    return TUTTI_OK;
}

/* Sleep until a doorbell ring, socket activity or max_ns. */
static void sleep_once(struct tutti_exec **exs, int n, struct waiter *w, int64_t max_ns)
{
    struct pollfd fds[MAX_POLLFDS];
    int nfds = 0, shm = 0;
    for (int i = 0; i < n; i++) {
        struct tutti_exec *ex = exs[i];
        if (ex->status != TUTTI_IN_PROGRESS) {
            continue;
        }
        shm |= ex->uses_doorbell || ex->phase == TUTTI_EXEC_CONNECT;
        if (ex->fab->state.wakefd >= 0 && nfds < MAX_POLLFDS) {
            fds[nfds++] = (struct pollfd){.fd = ex->fab->state.wakefd, .events = POLLIN};
        }
        for (int k = 0; ex->needs_progress && k < ex->nneeds; k++) {
            struct tutti_tconn *c = ex->conns[k];
            nfds += c->ops->pollfds(c, fds + nfds, MAX_POLLFDS - nfds);
        }
    }
    int any_sockets = 0;
    for (int i = 0; i < n; i++) {
        any_sockets |= exs[i]->status == TUTTI_IN_PROGRESS && exs[i]->needs_progress;
    }
    if (w->armed && !any_sockets) {
        struct timespec ts = {0, (long)TUTTI_MIN(max_ns, MAX_SLEEP_NS)};
        syscall(SYS_futex, &w->db->seq, FUTEX_WAIT, w->token, &ts, NULL, 0);
    } else {
        /* Sockets: poll them; with shared memory in the same plan, wake often to look at it. */
        int64_t ns = shm ? 200000 : TUTTI_MIN(max_ns, MAX_SLEEP_NS);
        int ms = (int)((ns + 999999) / 1000000);
        if (poll(fds, (nfds_t)nfds, ms) > 0) {
            for (int i = 0; i < nfds; i++) {
                uint64_t v;
                if ((fds[i].revents & POLLIN) != 0 && fds[i].fd == exs[0]->fab->state.wakefd) {
                    ssize_t r = read(fds[i].fd, &v, sizeof(v));
                    (void)r;
                }
            }
        }
    }
    if (w->armed) {
        __atomic_store_n(&w->db->sleeping, 0, __ATOMIC_RELAXED);
        w->armed = 0;
    }
}

/* Announce that we are going to sleep; the caller re-checks every FIFO before sleeping. */
static int arm_doorbell(struct tutti_exec **exs, int n, struct waiter *w)
{
    w->db = NULL;
    for (int i = 0; i < n && w->db == NULL; i++) {
        if (exs[i]->status == TUTTI_IN_PROGRESS) {
            w->db = exs[i]->fab->net.doorbell;
        }
    }
    if (w->db == NULL) {
        return 0;
    }
    w->token = __atomic_load_n(&w->db->seq, __ATOMIC_ACQUIRE);
    __atomic_store_n(&w->db->sleeping, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    w->armed = 1;
    return 1;
}

/* One pass over every exec; returns how many are still running. */
static int advance_all(struct tutti_exec **exs, int n, int *progress_p)
{
    int pending = 0;
    for (int i = 0; i < n; i++) {
        struct tutti_exec *ex = exs[i];
        if (ex->status != TUTTI_IN_PROGRESS) {
            continue;
        }
        int p = 0;
        tutti_status_t st = tutti__exec_advance(ex, &p);
        *progress_p |= p;
        if (st == TUTTI_IN_PROGRESS) {
            pending++;
        } else if (st == TUTTI_OK) {
            ex->status = TUTTI_OK;
        } else {
            fail_exec(ex, st);
        }
    }
    return pending;
}

/*
 * Progress vouched for by the peer ex waits on: the time it last moved data, or saw the peer
 * it waits on in turn do so. A local peer publishes it on its seq board (whatever operation
 * it is in: one still moving data towards an earlier one will come); a remote one sends beats
 * while it still owes this rank data in the operation (send_beats). A rank that waits on a
 * peer which is busy receiving over a slow link must not time out while the data still moves.
 * Vouching only passes on times of real data movement (or of a wait's start), never
 * refreshes them, so ranks that wait on each other cannot keep each other alive. INT64_MIN
 * when nothing is known.
 */
static int64_t vouched_progress(struct tutti_exec *ex)
{
    struct tutti_fabric *c = ex->fab;
    int r = tutti__exec_waited_rank(ex);
    if (r < 0 || r >= c->nranks || r == c->rank) {
        return INT64_MIN;
    }
    int64_t seen = INT64_MIN;
    const struct tutti_seq_board *b = tutti__fabric_seq_board(c, r);
    if (b != NULL) {
        seen = atomic_load_explicit(&b->fresh, memory_order_relaxed);
    }
    for (int i = 0; i < ex->nneeds; i++) {
        if (ex->conns[i] != NULL && ex->conns[i]->peer == r && ex->conns[i]->vouched != 0) {
            seen = TUTTI_MAX(seen, ex->conns[i]->vouched);
        }
    }
    return seen;
}

/* Vouch to the remote peers the running execs still send to that data moved age_ns ago. */
static void send_beats(struct tutti_exec **exs, int n, int64_t age_ns)
{
    for (int i = 0; i < n; i++) {
        struct tutti_exec *ex = exs[i];
        for (int k = 0; ex->status == TUTTI_IN_PROGRESS && k < ex->nneeds; k++) {
            struct tutti_tconn *c = ex->conns[k];
            if (c != NULL && c->ops->beat != NULL &&
                tutti__exec_owes_send(ex, c->peer, c->channel)) {
                (void)c->ops->beat(c, age_ns); /* a failed connection says so on its next use */
            }
        }
    }
}

/* Tell local peers when this rank last made (or vouched for) progress. */
static void publish_fresh(struct tutti_exec **exs, int n, int64_t t)
{
    for (int i = 0; i < n; i++) {
        struct tutti_seq_board *b = exs[i]->fab->net.board;
        if (exs[i]->status == TUTTI_IN_PROGRESS && b != NULL) {
            atomic_store_explicit(&b->fresh, t, memory_order_relaxed);
        }
    }
}

/* Nothing moved: decide how to wait. Returns the number of execs still running. */
static int wait_step(struct tutti_exec **exs, int n, struct waiter *w, int64_t now)
{
    const struct tutti_env *env = tutti__env();
    int64_t idle = now - w->last_progress;
    int pending = 0;
    for (int i = 0; i < n; i++) {
        struct tutti_exec *ex = exs[i];
        if (ex->status != TUTTI_IN_PROGRESS) {
            continue;
        }
        _Atomic int64_t *checked = &ex->fab->state.checked;
        if (atomic_load_explicit(&ex->fab->state.aborting, memory_order_relaxed) ||
            now - w->last_check > CHECK_PERIOD_NS ||
            now - atomic_load_explicit(checked, memory_order_relaxed) > CHECK_PERIOD_NS) {
            atomic_store_explicit(checked, now, memory_order_relaxed);
            (void)check_comm(ex);
        }
        if (ex->status == TUTTI_IN_PROGRESS && idle > ex->fab->cfg.timeout_ns) {
            int64_t seen = vouched_progress(ex);
            if (seen > w->last_progress && now - seen <= ex->fab->cfg.timeout_ns) {
                w->last_progress = seen; /* the peer moves: wait on, and vouch for it in turn */
                idle = now - seen;
                publish_fresh(exs, n, seen);
            } else {
                timeout_exec(ex, idle);
            }
        }
        pending += ex->status == TUTTI_IN_PROGRESS;
    }
    if (now - w->last_check > CHECK_PERIOD_NS) {
        w->last_check = now;
        publish_fresh(exs, n, w->last_progress);
    }
    /* Beats, a quarter of the timeout apart, only when there is news to vouch for: a wait
     * shorter than that sends none. */
    int64_t beat_every = exs[0]->fab->cfg.timeout_ns / 4;
    if (now - w->last_beat > beat_every && w->last_progress > w->beat_vouched) {
        w->last_beat = now;
        w->beat_vouched = w->last_progress;
        send_beats(exs, n, now - w->last_progress);
    }
    if (pending == 0) {
        return 0;
    }
    int oversub = exs[0]->fab->cfg.oversubscribed;
    int64_t spin = oversub ? 0 : env->SPIN; /* a waiting rank may hold the CPU its peer needs */
    w->spinning = idle < spin;
    if (w->spinning) {
        tutti__cpu_relax();
    } else if (idle < spin + env->YIELD) {
        sched_yield();
    } else if (!w->armed && arm_doorbell(exs, n, w)) {
        /* armed: the caller advances once more before the sleep (lost-wake-up protocol) */
    } else {
        sleep_once(exs, n, w, exs[0]->fab->cfg.timeout_ns - idle);
        w->last_check = 0; /* check right after waking */
    }
    return pending;
}

tutti_status_t tutti__engine_run(struct tutti_exec **exs, int n)
{
    struct waiter w = {0};
    /* The clock is read only once waiting starts: an operation whose peers are ready reads it
     * never. stale: progress was made since the clock was last read. */
    int stale = 1;
    unsigned idle_polls = 0;
    for (;;) {
        int progress = 0;
        int pending = advance_all(exs, n, &progress);
        if (pending == 0) {
            break;
        }
        if (progress) {
            stale = 1;
            idle_polls = 0;
            if (w.armed) {
                __atomic_store_n(&w.db->sleeping, 0, __ATOMIC_RELAXED);
                w.armed = 0;
            }
            continue;
        }
        /* Busy-polling: one pause (~25 ns on AMD, ~40 on Intel) between polls, and the clock
         * (~30 ns, more in a VM) read only every SPIN_CLOCK_EVERY polls, so a posted message is
         * seen within a few tens of nanoseconds. After progress too: a peer that answers within
         * those polls (a ping-pong of small messages) costs no clock read at all; the wait's
         * start is then taken a few polls late, which only lengthens the spin by as much. */
        if ((stale || w.spinning) && (++idle_polls % SPIN_CLOCK_EVERY) != 0) {
            tutti__cpu_relax();
            continue;
        }
        int64_t now = tutti__now_ns();
        if (stale) {
            stale = 0;
            w.last_progress = now;
            w.last_check = w.last_check == 0 ? now : w.last_check;
            w.last_beat = w.last_beat == 0 ? now : w.last_beat;
            w.spinning = 1;
            continue;
        }
        if (wait_step(exs, n, &w, now) == 0) {
            break;
        }
    }
    if (w.armed) {
        __atomic_store_n(&w.db->sleeping, 0, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < n; i++) {
        if (exs[i]->status < 0) {
            return exs[i]->status;
        }
    }
    return TUTTI_OK;
}
