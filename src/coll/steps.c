/*
 * steps.c - the step helpers every algorithm of coll/ builds its lanes with: open a channel's
 * lane, a copy or a send-and-copy that knows the in-place forms, whether two buffer offsets are
 * one place, whether a send reads input that stays put. Kept apart from the catalog (algos.c),
 * which calls the algorithms: the algorithms call these and nothing above them.
 */
#include "coll/coll.h"
#include "exec/op.h"
#include "base/util.h"

void tutti__coll_channel_share(size_t total, size_t chunk, int nchannels, int ch, size_t *off_p,
                               size_t *len_p)
{
    size_t chunks = (total + chunk - 1) / (chunk > 0 ? chunk : 1);
    int used = (int)TUTTI_MAX((size_t)1, TUTTI_MIN(chunks, (size_t)nchannels));
    if (ch >= used) {
        *off_p = total;
        *len_p = 0;
        return;
    }
    tutti__split_even(total, used, ch, off_p, len_p);
}

int tutti__coll_open_lane(struct tutti_plan *plan, size_t total, const struct tutti_plan_params *pp,
                          int ch, int send_peer, int recv_peer, size_t *off_p, size_t *len_p)
{
    tutti__coll_channel_share(total, pp->chunk_elems, pp->nchannels, ch, off_p, len_p);
    if (*len_p == 0) {
        return 0;
    }
    return tutti__plan_add_lane(plan, send_peer, recv_peer, ch) < 0 ? -1 : 1;
}

int tutti__ring_copy_alone(struct tutti_plan *plan, size_t off, size_t len, const void *arg)
{
    (void)arg;
    return tutti__coll_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, off, len);
}

struct tutti_ring_walk
tutti__ring_around(const struct tutti_plan_params *pp, size_t total,
                   int (*chunk)(struct tutti_plan *, size_t, size_t, const void *),
                   int (*alone)(struct tutti_plan *, size_t, size_t, const void *), const void *arg)
{
    int n = pp->nranks, pos = tutti__ring_pos(pp, pp->rank);
    struct tutti_ring_walk w = {total,
                                pp->chunk_elems,
                                n > 1 ? tutti__ring_rank(pp, pos + 1) : -1,
                                n > 1 ? tutti__ring_rank(pp, pos - 1) : -1,
                                chunk,
                                alone,
                                arg};
    return w;
}

int tutti__ring_walk(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                     const struct tutti_ring_walk *w)
{
    for (int ch = 0; ch < pp->nchannels; ch++) {
        size_t choff, chlen;
        int open = tutti__coll_open_lane(plan, w->total, pp, ch, w->next, w->prev, &choff, &chlen);
        if (open < 0) {
            return -1;
        }
        if (open == 0) {
            continue;
        }
        if (pp->nranks == 1) {
            if (w->alone != NULL && w->alone(plan, choff, chlen, w->arg) != 0) {
                return -1;
            }
            continue;
        }
        for (size_t lo = 0; lo < chlen; lo += w->stride) {
            size_t len = chlen - lo < w->stride ? chlen - lo : w->stride;
            if (w->chunk(plan, choff + lo, len, w->arg) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

int tutti__coll_same_place(const struct tutti_plan *plan, uint32_t a, size_t off, uint32_t b,
                           size_t boff)
{
    size_t es = tutti_datatype_size(plan->op.dt);
    const char *pa = plan->bufs[a], *pb = plan->bufs[b];
    return pa != NULL && pb != NULL && pa + off * es == pb + boff * es;
}

int tutti__coll_copy(struct tutti_plan *plan, uint32_t src_buf, size_t src_off, uint32_t dst_buf,
                     size_t dst_off, size_t count)
{
    /* A pre-multiplied sum's copy of the input is where the input is scaled, a bool
     * reduction's where it is made 0 or 1 (exec.c): kept in place too, as that work on the
     * input where it lies. */
    int transforms = ((int)plan->op.op == TUTTI_OP_PREMUL || plan->op.dt == TUTTI_BOOL) &&
                     tutti__coll_reduces(plan->op.coll);
    if (tutti__coll_same_place(plan, src_buf, src_off, dst_buf, dst_off) &&
        !(transforms && src_buf == TUTTI_BUF_SEND)) {
        return 0;
    }
    return tutti__plan_add_step(plan, TUTTI_STEP_COPY, src_buf, src_off, dst_buf, dst_off, count,
                                0);
}

int tutti__coll_send_copy(struct tutti_plan *plan, uint32_t src_buf, size_t src_off,
                          uint32_t dst_buf, size_t dst_off, size_t count)
{
    int in_place = tutti__coll_same_place(plan, src_buf, src_off, dst_buf, dst_off);
    return tutti__plan_add_step(plan, in_place ? TUTTI_STEP_SEND : TUTTI_STEP_COPY_SEND, src_buf,
                                src_off, in_place ? TUTTI_BUF_NONE : dst_buf,
                                in_place ? 0 : dst_off, count, TUTTI_STEP_STABLE);
}

int tutti__coll_input_stable(const struct tutti_plan *plan, uint32_t src_buf, size_t off)
{
    return src_buf == TUTTI_BUF_SEND &&
           !tutti__coll_same_place(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, off);
}
