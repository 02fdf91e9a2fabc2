/*
 * exec_wait.c - where a stalled plan stands, for the engine's timeouts, beats and hang
 * records: the step and peer each lane waits on, what a step still owes a peer, and the
 * sentence a timeout message carries. Read-only views of a struct tutti_exec (exec.c runs it).
 */
#include "exec/exec.h"
#include "exec/fabric.h"

#include <stdio.h>

/* The peer a stalled step waits on: its receive side if the slot is missing, else its send. */
static int step_peer(const struct tutti_step *s)
{
    return s->recv_peer >= 0 ? s->recv_peer : s->send_peer;
}

/* Index in ex->conns of the first connection whose sends are not all taken yet (shm: a frame
 * sent by reference that its receiver has not released; TCP: bytes not yet written), or -1. */
static int first_unflushed(const struct tutti_exec *ex)
{
    for (int i = 0; i < ex->nneeds; i++) {
        int done = 1;
        struct tutti_tconn *c = ex->conns[i];
        if (c != NULL && c->ops->flushed(c, &done) == TUTTI_OK && !done) {
            return i;
        }
    }
    return -1;
}

void tutti__exec_wait_point(const struct tutti_exec *ex, struct tutti_wait_point *wp)
{
    *wp = (struct tutti_wait_point){.peer = -1, .step = 0, .nsteps = 0, .channel = -1};
    if (ex->next == NULL) {
        return;
    }
    if (ex->phase == TUTTI_EXEC_FLUSH) {
        int i = first_unflushed(ex);
        if (i >= 0) {
            wp->peer = ex->needs[i].peer;
            wp->channel = ex->needs[i].channel;
        }
        return;
    }
    if (ex->phase == TUTTI_EXEC_CONNECT) {
        for (int i = 0; i < ex->nneeds; i++) {
            if (ex->conns[i] == NULL) {
                wp->peer = ex->needs[i].peer;
                wp->channel = ex->needs[i].channel;
                return;
            }
        }
        return;
    }
    for (int i = 0; i < ex->plan->nlanes; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        if (ex->next[i] < l->nsteps && step_peer(&l->steps[ex->next[i]]) >= 0) {
            wp->peer = step_peer(&l->steps[ex->next[i]]);
            wp->step = ex->next[i] + 1;
            wp->nsteps = l->nsteps;
            wp->channel = l->channel;
            return;
        }
    }
}

int tutti__exec_owes_send(const struct tutti_exec *ex, int peer, int channel)
{
    if (ex->next == NULL || ex->phase != TUTTI_EXEC_RUN) {
        return 0;
    }
    for (int i = 0; i < ex->plan->nlanes; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        for (size_t k = ex->next[i]; l->channel == channel && k < l->nsteps; k++) {
            if (l->steps[k].send_peer == peer) {
                return 1;
            }
        }
    }
    return 0;
}

int tutti__exec_waited_rank(const struct tutti_exec *ex)
{
    struct tutti_wait_point wp;
    tutti__exec_wait_point(ex, &wp);
    return wp.peer;
}

/* "connecting to rank 3 (host a, pid 7) on channel 0; ..." for the connections still missing. */
static void describe_connect(const struct tutti_exec *ex, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "connecting to");
    int listed = 0;
    for (int i = 0; i < ex->nneeds && o + 1 < len; i++) {
        if (ex->conns[i] != NULL) {
            continue;
        }
        char who[128];
        tutti__tpeer_name(ex->fab->net.targs.peers, ex->needs[i].peer, who, sizeof(who));
        int n = snprintf(buf + o, len - o, "%s %s on channel %d", listed++ ? ";" : "", who,
                         ex->needs[i].channel);
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
        int i = first_unflushed(ex);
        if (i < 0) {
            snprintf(buf, len, "handing its last sends to the transport");
            return;
        }
        char who[128];
        tutti__tpeer_name(ex->fab->net.targs.peers, ex->needs[i].peer, who, sizeof(who));
        snprintf(buf, len, "waiting for %s to take its last sends on channel %d", who,
                 ex->needs[i].channel);
        return;
    }
    for (int i = 0; i < ex->plan->nlanes && o + 1 < len; i++) {
        const struct tutti_lane *l = &ex->plan->lanes[i];
        size_t next = ex->next[i];
        if (next == l->nsteps || step_peer(&l->steps[next]) < 0) {
            continue;
        }
        const struct tutti_step *s = &l->steps[next];
        int peer = step_peer(s);
        char who[128];
        tutti__tpeer_name(ex->fab->net.targs.peers, peer, who, sizeof(who));
        int n = snprintf(buf + o, len - o, "%s%s %s for step %zu/%zu (%s) on channel %d",
                         o == 0 ? "" : "; ", peer == s->recv_peer ? "waiting on" : "sending to",
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
