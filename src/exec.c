/*
 * exec.c - runs the steps of a plan over slot FIFOs. A step runs only when every slot it needs
 * is available (the received one and the one to send), then does its data movement in one pass
 * (reduce-and-copy fused), posts and releases. Lanes are independent: one stalled lane never
 * stops another from moving.
 */
#include "exec.h"
#include "check.h"
#include "comm.h"
#include "connect.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tutti_status_t tutti__exec_init(struct tutti_exec *ex, struct tutti_comm *comm,
                                const struct tutti_plan *plan, uint64_t seq)
{
    memset(ex, 0, sizeof(*ex));
    ex->comm = comm;
    ex->plan = plan;
    ex->esize = tutti_datatype_size(plan->op.dt);
    ex->seq = seq;
    ex->phase = TUTTI_EXEC_CONNECT;
    for (int i = 0; i < plan->nlanes; i++) {
        ex->lanes_left += plan->lanes[i].nsteps > 0;
        ex->main_left += plan->lanes[i].nsteps > 0 && !plan->lanes[i].after_all;
    }
    ex->status = TUTTI_IN_PROGRESS;
    if (plan->nlanes > 0) {
        ex->lanes = calloc((size_t)plan->nlanes, sizeof(*ex->lanes));
        ex->conns = calloc((size_t)plan->nlanes * 2, sizeof(*ex->conns));
        if (ex->lanes == NULL || ex->conns == NULL) {
            tutti__exec_fini(ex);
            return tutti__set_error(comm, TUTTI_ERR_NO_MEMORY, "no memory to run a %s",
                                    tutti__coll_name(plan->op.coll));
        }
    }
    return TUTTI_OK;
}

void tutti__exec_fini(struct tutti_exec *ex)
{
    free(ex->lanes);
    free(ex->conns);
    ex->lanes = NULL;
    ex->conns = NULL;
}

static void add_conn(struct tutti_exec *ex, struct tutti_tconn *c)
{
    for (int i = 0; i < ex->nconns; i++) {
        if (ex->conns[i] == c) {
            return;
        }
    }
    ex->conns[ex->nconns++] = c;
    if (c->ops->flags & TUTTI_TRANSPORT_NEEDS_PROGRESS) {
        ex->needs_progress = 1;
    } else {
        ex->uses_doorbell = 1;
    }
}

/* Connect every (peer, channel) the lanes need. OK once all are there. */
static tutti_status_t connect_lanes(struct tutti_exec *ex)
{
    int missing = 0;
    for (int i = 0; i < ex->plan->nlanes; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        struct tutti_exec_lane *el = &ex->lanes[i];
        if (l->send_peer >= 0 && el->send == NULL) {
            TUTTI_CHECK(tutti__comm_conn(ex->comm, l->send_peer, l->channel, &el->send));
            missing += (el->send == NULL);
        }
        if (l->recv_peer >= 0 && el->recv == NULL) {
            TUTTI_CHECK(tutti__comm_conn(ex->comm, l->recv_peer, l->channel, &el->recv));
            missing += (el->recv == NULL);
        }
    }
    if (missing > 0) {
        return TUTTI_IN_PROGRESS;
    }
    for (int i = 0; i < ex->plan->nlanes; i++) {
        if (ex->lanes[i].send != NULL) {
            add_conn(ex, ex->lanes[i].send);
        }
        if (ex->lanes[i].recv != NULL) {
            add_conn(ex, ex->lanes[i].recv);
        }
    }
    return TUTTI_OK;
}

static tutti_status_t size_mismatch(struct tutti_exec *ex, int peer, size_t got, size_t want)
{
    char who[128];
    tutti__peer_str(&ex->comm->peers[peer], who, sizeof(who));
    return tutti__set_error(ex->comm, TUTTI_ERR_INVALID_USAGE,
                            "%s #%llu: received %zu bytes from %s where %zu were expected: counts, "
                            "datatypes or the order of calls differ between ranks",
                            tutti__coll_name(ex->plan->op.coll), (unsigned long long)ex->seq, got,
                            who, want);
}

/* Run one step if its slots are available: OK (done), IN_PROGRESS (not yet) or an error. */
static tutti_status_t run_step(struct tutti_exec *ex, struct tutti_exec_lane *el,
                               const struct tutti_step *s)
{
    const struct tutti_plan *p = ex->plan;
    size_t bytes = s->count * ex->esize;
    const char *src = s->src_buf != TUTTI_BUF_NONE ? p->bufs[s->src_buf] + s->src_off * ex->esize
                                                    : NULL;
    char *dst = s->dst_buf != TUTTI_BUF_NONE ? p->bufs[s->dst_buf] + s->dst_off * ex->esize : NULL;
    int divisor = s->final ? p->divisor : 1;
    const void *rslot = NULL;
    void *sslot = NULL;
    size_t rlen = 0, scap = 0;
    tutti_status_t st;

    if (s->kind == TUTTI_STEP_COPY) {
        tutti__copy2(dst, NULL, src, bytes);
        return TUTTI_OK;
    }
    if (s->kind != TUTTI_STEP_SEND) {
        st = el->recv->ops->recv_peek(el->recv, &rslot, &rlen);
        if (st != TUTTI_OK) {
            return st;
        }
        if (rlen != bytes) {
            return size_mismatch(ex, el->recv->peer, rlen, bytes);
        }
    }
    if (s->kind == TUTTI_STEP_SEND || s->kind == TUTTI_STEP_RECV_REDUCE_SEND ||
        s->kind == TUTTI_STEP_RECV_REDUCE_COPY_SEND || s->kind == TUTTI_STEP_RECV_COPY_SEND) {
        st = el->send->ops->send_acquire(el->send, &sslot, &scap);
        if (st != TUTTI_OK) {
            return st;
        }
    }
    switch ((tutti_step_kind_t)s->kind) {
    case TUTTI_STEP_SEND:
        tutti__copy2(sslot, NULL, src, bytes);
        break;
    case TUTTI_STEP_RECV:
        tutti__copy2(dst, NULL, rslot, bytes);
        break;
    case TUTTI_STEP_RECV_REDUCE_SEND:
        tutti__reduce(sslot, NULL, rslot, src, s->count, p->op.dt, p->op.op, divisor);
        break;
    case TUTTI_STEP_RECV_REDUCE_COPY:
        tutti__reduce(dst, NULL, rslot, src, s->count, p->op.dt, p->op.op, divisor);
        break;
    case TUTTI_STEP_RECV_REDUCE_COPY_SEND:
        tutti__reduce(dst, sslot, rslot, src, s->count, p->op.dt, p->op.op, divisor);
        break;
    case TUTTI_STEP_RECV_COPY_SEND:
        tutti__copy2(dst, sslot, rslot, bytes);
        break;
    default:
        return tutti__set_error(ex->comm, TUTTI_ERR_INTERNAL, "bad step kind %d", s->kind);
    }
    if (sslot != NULL) {
        TUTTI_CHECK(el->send->ops->send_post(el->send, bytes));
    }
    if (rslot != NULL) {
        TUTTI_CHECK(el->recv->ops->recv_release(el->recv));
    }
    return TUTTI_OK;
}

static tutti_status_t run_lanes(struct tutti_exec *ex, int *progress_p)
{
    for (int i = 0; i < ex->plan->nlanes; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        struct tutti_exec_lane *el = &ex->lanes[i];
        if (el->next == l->nsteps || (l->after_all && ex->main_left > 0)) {
            continue;
        }
        while (el->next < l->nsteps) {
            tutti_status_t st = run_step(ex, el, &l->steps[el->next]);
            if (st == TUTTI_IN_PROGRESS) {
                break;
            }
            if (st != TUTTI_OK) {
                return st;
            }
            el->next++;
            *progress_p = 1;
        }
        if (el->next == l->nsteps) {
            ex->lanes_left--;
            ex->main_left -= !l->after_all;
        }
    }
    return TUTTI_OK;
}

static tutti_status_t progress_conns(struct tutti_exec *ex, int *progress_p)
{
    for (int i = 0; ex->needs_progress && i < ex->nconns; i++) {
        struct tutti_tconn *c = ex->conns[i];
        int moved = 0;
        TUTTI_CHECK(c->ops->progress(c, &moved));
        *progress_p |= moved;
    }
    return TUTTI_OK;
}

tutti_status_t tutti__exec_advance(struct tutti_exec *ex, int *progress_p)
{
    *progress_p = 0;
    if (ex->phase == TUTTI_EXEC_CONNECT) {
        tutti_status_t st = connect_lanes(ex);
        if (st != TUTTI_OK) {
            return st;
        }
        ex->phase = TUTTI_EXEC_RUN;
        *progress_p = 1;
    }
    if (ex->phase == TUTTI_EXEC_RUN) {
        TUTTI_CHECK(progress_conns(ex, progress_p));
        TUTTI_CHECK(run_lanes(ex, progress_p));
        if (ex->lanes_left > 0) {
            return TUTTI_IN_PROGRESS;
        }
        ex->phase = TUTTI_EXEC_FLUSH;
    }
    if (ex->phase == TUTTI_EXEC_FLUSH) {
        for (int i = 0; i < ex->nconns; i++) {
            int done = 0;
            TUTTI_CHECK(ex->conns[i]->ops->flushed(ex->conns[i], &done));
            if (!done) {
                TUTTI_CHECK(progress_conns(ex, progress_p));
                return TUTTI_IN_PROGRESS;
            }
        }
        ex->phase = TUTTI_EXEC_DONE;
    }
    return TUTTI_OK;
}

/* Peer of the i-th connection the plan still lacks (lanes in order, send before receive). */
static int missing_peer(const struct tutti_exec *ex, int i, int *channel_p)
{
    for (int k = 0; k < ex->plan->nlanes; k++) {
        const struct tutti_lane *l = &ex->plan->lanes[k];
        int peers[2] = {ex->lanes[k].send == NULL ? l->send_peer : -1,
                        ex->lanes[k].recv == NULL ? l->recv_peer : -1};
        for (int d = 0; d < 2; d++) {
            if (peers[d] >= 0 && i-- == 0) {
                *channel_p = l->channel;
                return peers[d];
            }
        }
    }
    return -1;
}

int tutti__exec_waited_rank(const struct tutti_exec *ex)
{
    int channel;
    if (ex->lanes == NULL) {
        return -1;
    }
    if (ex->phase == TUTTI_EXEC_CONNECT) {
        return missing_peer(ex, 0, &channel);
    }
    for (int i = 0; i < ex->plan->nlanes; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        if (ex->lanes[i].next == l->nsteps) {
            continue;
        }
        const struct tutti_step *s = &l->steps[ex->lanes[i].next];
        return s->kind == TUTTI_STEP_SEND ? l->send_peer : l->recv_peer;
    }
    return -1;
}

/* "connecting to rank 3 (host a, pid 7) on channel 0; ..." for the connections still missing. */
static void describe_connect(const struct tutti_exec *ex, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "connecting to");
    int channel, peer, listed = 0;
    for (int i = 0; (peer = missing_peer(ex, i, &channel)) >= 0 && o + 1 < len; i++) {
        int seen = 0, ch;
        for (int k = 0; k < i && !seen; k++) {
            seen = missing_peer(ex, k, &ch) == peer && ch == channel;
        }
        if (seen) {
            continue; /* the same (peer, channel) in both directions */
        }
        char who[128];
        tutti__peer_str(&ex->comm->peers[peer], who, sizeof(who));
        int n =
            snprintf(buf + o, len - o, "%s %s on channel %d", listed++ ? ";" : "", who, channel);
        if (n < 0) {
            break;
        }
        o += (size_t)n;
    }
    if (listed == 0) {
        snprintf(buf, len, "connecting to its peers");
    }
}

void tutti__exec_describe_wait(const struct tutti_exec *ex, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    if (ex->phase == TUTTI_EXEC_CONNECT) {
        describe_connect(ex, buf, len);
        return;
    }
    if (ex->phase == TUTTI_EXEC_FLUSH) {
        snprintf(buf, len, "handing its last sends to the transport");
        return;
    }
    for (int i = 0; i < ex->plan->nlanes && o + 1 < len; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        size_t next = ex->lanes[i].next;
        if (next == l->nsteps) {
            continue;
        }
        const struct tutti_step *s = &l->steps[next];
        int peer = s->kind == TUTTI_STEP_SEND ? l->send_peer : l->recv_peer;
        char who[128];
        tutti__peer_str(&ex->comm->peers[peer], who, sizeof(who));
        int n = snprintf(buf + o, len - o, "%s%s %s for step %zu/%zu (%s) on channel %d",
                         o == 0 ? "" : "; ", s->kind == TUTTI_STEP_SEND ? "sending to" : "waiting on",
                         who, next + 1, l->nsteps, tutti__step_name(s->kind), l->channel);
        if (n < 0) {
            break;
        }
        o += (size_t)n;
        if (o >= len) {
            break;
        }
    }
}
