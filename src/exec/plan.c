/*
 * plan.c - storage of plans (lanes and a pool of steps, reused between calls) and the names of
 * step kinds. The schedules themselves are built in src/coll/.
 */
#include "exec/plan.h"

#include <stdlib.h>
#include <string.h>

static const char *const step_names[TUTTI_STEP_KIND_COUNT] = {
    [TUTTI_STEP_SEND] = "send",
    [TUTTI_STEP_RECV] = "recv",
    [TUTTI_STEP_COPY] = "copy",
    [TUTTI_STEP_RECV_REDUCE_SEND] = "recv-reduce-send",
    [TUTTI_STEP_RECV_REDUCE_COPY] = "recv-reduce-copy",
    [TUTTI_STEP_RECV_REDUCE_COPY_SEND] = "recv-reduce-copy-send",
    [TUTTI_STEP_RECV_COPY_SEND] = "recv-copy-send",
    [TUTTI_STEP_REDUCE] = "reduce",
    [TUTTI_STEP_COPY_SEND] = "copy-send",
};

const char *tutti__step_name(tutti_step_kind_t kind)
{
    return ((unsigned)kind < TUTTI_STEP_KIND_COUNT) ? step_names[kind] : "unknown";
}

long tutti__plan_add_buf(struct tutti_plan *plan, void *buf)
{
    if (plan->nbufs == plan->bufs_cap) {
        if (plan->bufs_cap >= (1u << 30)) {
            return -1;
        }
        uint32_t cap = plan->bufs_cap == 0 ? 4 : plan->bufs_cap * 2;
        char **n = realloc(plan->bufs, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        plan->bufs = n;
        plan->bufs_cap = cap;
    }
    plan->bufs[plan->nbufs] = buf;
    return (long)plan->nbufs++;
}

int tutti__plan_scratch(struct tutti_plan *plan, size_t bytes)
{
    if (bytes > plan->scratch_cap) {
        char *n = realloc(plan->scratch, bytes);
        if (n == NULL) {
            return -1;
        }
        plan->scratch = n;
        plan->scratch_cap = bytes;
    }
    return 0;
}

int tutti__plan_aux(struct tutti_plan *plan, size_t bytes)
{
    if (bytes > plan->aux_cap) {
        char *n = realloc(plan->aux, bytes);
        if (n == NULL) {
            return -1;
        }
        plan->aux = n;
        plan->aux_cap = bytes;
    }
    return 0;
}

int tutti__plan_reset(struct tutti_plan *plan, const struct tutti_op_desc *op)
{
    plan->op = *op;
    plan->nlanes = 0;
    plan->nsteps = 0;
    plan->divisor = 1;
    plan->recv_load = 1;
    plan->algo = "none";
    plan->nbufs = 0;
    plan->ncalls = 0;
    plan->cur_call = 0;
    plan->then = NULL;
    plan->then_check = NULL;
    if (tutti__plan_add_buf(plan, NULL) < 0 || tutti__plan_add_buf(plan, (void *)op->sendbuf) < 0 ||
        tutti__plan_add_buf(plan, op->recvbuf) < 0) {
        return -1;
    }
    return 0;
}

void tutti__plan_free(struct tutti_plan *plan)
{
    free(plan->pool);
    free(plan->lanes);
    free(plan->bufs);
    free(plan->scratch);
    free(plan->calls);
    free(plan->built_v);
    free(plan->aux);
    memset(plan, 0, sizeof(*plan));
}

int tutti__plan_add_lane(struct tutti_plan *plan, int send_peer, int recv_peer, int channel)
{
    if (plan->nlanes == plan->lanes_cap) {
        int cap = plan->lanes_cap == 0 ? 8 : plan->lanes_cap * 2;
        struct tutti_lane *n = realloc(plan->lanes, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        plan->lanes = n;
        plan->lanes_cap = cap;
    }
    struct tutti_lane *l = &plan->lanes[plan->nlanes];
    l->send_peer = send_peer;
    l->recv_peer = recv_peer;
    l->channel = channel;
    l->after_all = 0;
    l->nsteps = 0;
    l->steps = NULL; /* lanes index the pool by offset until the plan is complete */
    return plan->nlanes++;
}

int tutti__plan_add_step(struct tutti_plan *plan, tutti_step_kind_t kind, uint32_t src_buf,
                         size_t src_off, uint32_t dst_buf, size_t dst_off, size_t count, int flags)
{
    if (count == 0 && (flags & TUTTI_STEP_TOKEN) == 0) {
        return 0; /* every rank skips the same empty blocks, so sends and receives still pair */
    }
    if (plan->nsteps == plan->pool_cap) {
        size_t cap = plan->pool_cap == 0 ? 64 : plan->pool_cap * 2;
        struct tutti_step *n = realloc(plan->pool, cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        plan->pool = n;
        plan->pool_cap = cap;
    }
    struct tutti_lane *l = &plan->lanes[plan->nlanes - 1];
    if (l->nsteps == 0) {
        l->steps = (struct tutti_step *)(uintptr_t)plan->nsteps; /* offset, fixed in finish */
    }
    struct tutti_step *s = &plan->pool[plan->nsteps++];
    s->kind = (uint8_t)kind;
    s->final = (uint8_t)((flags & TUTTI_STEP_FINAL) != 0);
    s->swap = (uint8_t)((flags & TUTTI_STEP_SWAP) != 0);
    s->stable = (uint8_t)((flags & TUTTI_STEP_STABLE) != 0);
    s->src_buf = src_buf;
    s->dst_buf = dst_buf;
    /* A step names only the peers its kind talks to. */
    int sends = kind == TUTTI_STEP_SEND || kind == TUTTI_STEP_RECV_REDUCE_SEND ||
                kind == TUTTI_STEP_RECV_REDUCE_COPY_SEND || kind == TUTTI_STEP_RECV_COPY_SEND ||
                kind == TUTTI_STEP_COPY_SEND;
    int recvs = kind != TUTTI_STEP_SEND && kind != TUTTI_STEP_COPY && kind != TUTTI_STEP_REDUCE &&
                kind != TUTTI_STEP_COPY_SEND;
    s->send_peer = sends ? l->send_peer : -1;
    s->recv_peer = recvs ? l->recv_peer : -1;
    s->call = plan->cur_call;
    s->src_off = src_off;
    s->dst_off = dst_off;
    s->count = count;
    l->nsteps++;
    return 0;
}

void tutti__plan_set_peers(struct tutti_plan *plan, int send_peer, int recv_peer)
{
    plan->lanes[plan->nlanes - 1].send_peer = send_peer;
    plan->lanes[plan->nlanes - 1].recv_peer = recv_peer;
}

int tutti__plan_add_call(struct tutti_plan *plan, const struct tutti_op_desc *op)
{
    if (plan->ncalls == plan->calls_cap) {
        uint32_t cap = plan->calls_cap == 0 ? 8 : plan->calls_cap * 2;
        struct tutti_op_desc *n = realloc(plan->calls, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            return -1;
        }
        plan->calls = n;
        plan->calls_cap = cap;
    }
    plan->calls[plan->ncalls] = *op;
    plan->cur_call = plan->ncalls++;
    return 0;
}

/* Turn the lanes' pool offsets into pointers once the pool stopped moving. */
void tutti__plan_finish(struct tutti_plan *plan)
{
    for (int i = 0; i < plan->nlanes; i++) {
        struct tutti_lane *l = &plan->lanes[i];
        l->steps = l->nsteps == 0 ? NULL : plan->pool + (uintptr_t)l->steps;
    }
}
