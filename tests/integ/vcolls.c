/*
 * vcolls.c - the checker of gather, scatter and the variable-size collectives (vcolls.h). The
 * values are colls.c's (random bits for data, exact small numbers for reductions); every rank
 * computes every peer's counts and layout from the seed, so it can say what each of its blocks
 * must hold.
 */
#include "vcolls.h"
#include "colls.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64
#define MAXR  INTEG_MAX_RANKS

static const char *const names[VCOLL_NKINDS] = {
    [VCOLL_ALLTOALLV] = "alltoallv",
    [VCOLL_ALLGATHERV] = "allgatherv",
    [VCOLL_GATHER] = "gather",
    [VCOLL_SCATTER] = "scatter",
    [VCOLL_GATHERV] = "gatherv",
    [VCOLL_SCATTERV] = "scatterv",
    [VCOLL_REDUCE_SCATTERV] = "reduce_scatterv",
};

const char *vcoll_name(enum vcoll_kind k)
{
    return (unsigned)k < VCOLL_NKINDS ? names[k] : "unknown";
}

int vcoll_has_inplace(enum vcoll_kind k)
{
    return k != VCOLL_SCATTERV && k != VCOLL_GATHERV;
}

static uint64_t mix(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t x = seed ^ (a + 1) * 0x9E3779B97F4A7C15ull ^ (b + 7) * 0xD1B54A32D192ED03ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

/* A count: a quarter of them 0, the others up to maxcount. */
static size_t draw(const struct vcoll_case *c, uint64_t a, uint64_t b)
{
    uint64_t x = mix(c->seed, a, b);
    return (x & 3) == 0 ? 0 : (size_t)((x >> 2) % (c->maxcount + 1));
}

size_t vcoll_count(const struct vcoll_case *c, int nranks, int i, int j)
{
    (void)nranks;
    switch (c->kind) {
    case VCOLL_ALLTOALLV: /* in place a block goes out where one comes in: symmetric */
        return c->inplace && i > j ? draw(c, (uint64_t)j, (uint64_t)i)
                                   : draw(c, (uint64_t)i, (uint64_t)j);
    case VCOLL_GATHER:
    case VCOLL_SCATTER:
        return draw(c, 1000, 1000) + 1; /* one count for every block */
    case VCOLL_GATHERV:
    case VCOLL_ALLGATHERV:
        return draw(c, (uint64_t)i, (uint64_t)i); /* sender i's block */
    default: /* scatterv, reduce_scatterv: receiver j's block */
        return draw(c, (uint64_t)j, (uint64_t)j);
    }
}

/* One side of a rank's blocks: counts and displacements, in a shuffled order with gaps. */
struct vlay {
    size_t cnt[MAXR], dsp[MAXR];
    size_t extent;
};

static void lay(const struct vcoll_case *c, int n, int r, int side, struct vlay *l)
{
    int order[MAXR];
    for (int j = 0; j < n; j++) {
        order[j] = j;
    }
    for (int j = n - 1; j > 0; j--) {
        int k =
            (int)(mix(c->seed ^ 0x55, (uint64_t)(r * 2 + side), (uint64_t)j) % (uint64_t)(j + 1));
        int t = order[j];
        order[j] = order[k];
        order[k] = t;
    }
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        at += mix(c->seed, (uint64_t)(r * 2 + side), 77 + (uint64_t)k) % 3; /* a gap */
        l->dsp[order[k]] = at;
        at += l->cnt[order[k]];
    }
    l->extent = at;
}

/* The layouts of rank r's send (side 0) and receive (side 1) blocks in the case. */
static void layouts(const struct vcoll_case *c, int n, int r, struct vlay *s, struct vlay *v)
{
    for (int j = 0; j < n; j++) {
        s->cnt[j] = vcoll_count(c, n, r, j);
        v->cnt[j] = vcoll_count(c, n, j, r);
    }
    lay(c, n, r, 0, s);
    lay(c, n, r, 1, v);
    if (c->kind == VCOLL_ALLTOALLV && c->inplace) {
        *s = *v; /* the send side is the receive side */
    }
    if (c->kind == VCOLL_GATHER || c->kind == VCOLL_SCATTER) {
        for (int j = 0; j < n; j++) { /* contiguous, j * count */
            s->dsp[j] = v->dsp[j] = (size_t)j * s->cnt[0];
        }
        s->extent = v->extent = (size_t)n * s->cnt[0];
    }
}

/* The colls.c case whose generator gives this call's values. */
static struct coll_case values_of(const struct vcoll_case *c)
{
    int reduce = c->kind == VCOLL_REDUCE_SCATTERV;
    return (struct coll_case){.coll = reduce ? COLL_REDUCE_SCATTER : COLL_ALLGATHER,
                              .dt = c->dt,
                              .op = c->op,
                              .seed = c->seed};
}

/* A buffer with guards: [GUARD][len][GUARD]; payload pointer, or NULL (reported). */
static uint8_t *gbuf(size_t len)
{
    uint8_t *m = malloc(len + 2 * GUARD);
    if (m == NULL) {
        integ_fail("no memory for a %zu-byte buffer", len);
        return NULL;
    }
    for (size_t j = 0; j < len + 2 * GUARD; j++) {
        m[j] = (uint8_t)(0xA5 ^ j * 29);
    }
    return m + GUARD;
}

static int guards_ok(const uint8_t *p, size_t len)
{
    const uint8_t *m = p - GUARD;
    for (size_t j = 0; j < GUARD; j++) {
        if (m[j] != (uint8_t)(0xA5 ^ j * 29) ||
            m[GUARD + len + j] != (uint8_t)(0xA5 ^ (GUARD + len + j) * 29)) {
            return 0;
        }
    }
    return 1;
}

struct vcall {
    const struct vcoll_case *c;
    tutti_comm_t *comm;
    int rank, n;
    size_t es;
    struct coll_case vc;
    struct vlay s, v;                  /* this rank's layouts */
    uint8_t *send, *recv, *exp, *snap; /* payload pointers (send may point into recv) */
    size_t slen, rlen;                 /* bytes */
    size_t counts[4][MAXR];            /* what the call is given (overwritten after it) */
};

static void describe(const struct vcall *k, char *out, size_t len)
{
    static const char *const forms[] = {"blocking", "async", "group"};
    const struct vcoll_case *c = k->c;
    snprintf(out, len, "%s %s%s%s %s maxcount %zu root %d seed %llx (%s)", vcoll_name(c->kind),
             tutti_datatype_name(c->dt), c->kind == VCOLL_REDUCE_SCATTERV ? " " : "",
             c->kind == VCOLL_REDUCE_SCATTERV ? coll_op_name(c->op) : "",
             c->inplace ? "in-place" : "out-of-place", c->maxcount, c->root,
             (unsigned long long)c->seed, forms[c->form]);
}

/* The offset of block b in reduce_scatterv's input: the counts before b. */
static size_t rs_off(const struct vcall *k, int b)
{
    size_t off = 0;
    for (int j = 0; j < b; j++) {
        off += vcoll_count(k->c, k->n, 0, j);
    }
    return off;
}

static uint8_t junk(size_t j)
{
    return (uint8_t)(0x3C + j * 7);
}

static void junk_fill(uint8_t *p, size_t len)
{
    for (size_t j = 0; j < len; j++) {
        p[j] = junk(j);
    }
}

/* This rank's buffers, inputs and expected output (exp, rlen bytes) for the case. */
static int prepare(struct vcall *k)
{
    const struct vcoll_case *c = k->c;
    int n = k->n, r = k->rank, root = c->root == r;
    size_t es = k->es, own = vcoll_count(c, n, r, r), total = 0;
    layouts(c, n, r, &k->s, &k->v);
    for (int j = 0; j < n; j++) {
        total += vcoll_count(c, n, 0, j); /* reduce_scatterv's blocks */
    }
    size_t sl = 0, rl = 0;
    switch (c->kind) {
    case VCOLL_ALLTOALLV:
        sl = k->s.extent;
        rl = k->v.extent;
        break;
    case VCOLL_ALLGATHERV:
        sl = vcoll_count(c, n, r, 0);
        rl = k->v.extent;
        break;
    case VCOLL_GATHER:
    case VCOLL_GATHERV:
        sl = vcoll_count(c, n, r, 0);
        rl = root ? k->v.extent : 0;
        break;
    case VCOLL_SCATTER:
    case VCOLL_SCATTERV:
        sl = root ? k->s.extent : 0;
        rl = vcoll_count(c, n, 0, r);
        break;
    default:
        sl = total;
        rl = own;
        break;
    }
    k->slen = sl * es;
    k->rlen = rl * es;
    k->recv = gbuf(k->rlen);
    k->send = gbuf(k->slen);
    k->exp = malloc(k->rlen + 1);
    k->snap = malloc(k->slen + 1);
    if (k->recv == NULL || k->send == NULL || k->exp == NULL || k->snap == NULL) {
        return -1;
    }
    junk_fill(k->recv, k->rlen);
    junk_fill(k->exp, k->rlen);
    coll_input(&k->vc, n, r, k->send, sl, 0);
    if (c->inplace) { /* the input where the in-place form keeps it */
        switch (c->kind) {
        case VCOLL_ALLTOALLV:
            coll_input(&k->vc, n, r, k->recv, rl, 0);
            memcpy(k->exp, k->recv, k->rlen); /* the gaps keep it */
            break;
        case VCOLL_ALLGATHERV:
        case VCOLL_GATHER:
            if (rl > 0) {
                memcpy(k->recv + k->v.dsp[r] * es, k->send, sl * es);
            }
            break;
        default:
            break; /* scatter and reduce_scatterv: the output lies in the input */
        }
    }
    memcpy(k->snap, k->send, k->slen);
    return 0;
}

/* What this rank's output must hold. */
static void expect(struct vcall *k)
{
    const struct vcoll_case *c = k->c;
    int n = k->n, r = k->rank;
    size_t es = k->es;
    struct vlay ps, pv;
    switch (c->kind) {
    case VCOLL_ALLTOALLV:
        for (int j = 0; j < n; j++) {
            layouts(c, n, j, &ps, &pv);
            coll_input(&k->vc, n, j, k->exp + k->v.dsp[j] * es, k->v.cnt[j], ps.dsp[r]);
        }
        break;
    case VCOLL_ALLGATHERV:
    case VCOLL_GATHER:
    case VCOLL_GATHERV:
        for (int j = 0; j < n && k->rlen > 0; j++) {
            coll_input(&k->vc, n, j, k->exp + k->v.dsp[j] * es, k->v.cnt[j], 0);
        }
        break;
    case VCOLL_SCATTER:
    case VCOLL_SCATTERV:
        layouts(c, n, c->root, &ps, &pv);
        coll_input(&k->vc, n, c->root, k->exp, k->v.cnt[c->root], ps.dsp[r]);
        break;
    default:
        coll_reduced(&k->vc, n, k->exp, k->rlen / es, rs_off(k, r));
        break;
    }
}

/* The arrays the call is given, from the layouts. */
static void arrays(struct vcall *k)
{
    for (int j = 0; j < k->n; j++) {
        k->counts[0][j] = k->s.cnt[j];
        k->counts[1][j] = k->s.dsp[j];
        k->counts[2][j] = k->v.cnt[j];
        k->counts[3][j] = k->v.dsp[j];
    }
}

/* Issue the call (its asynchronous form into *req when the case says so). */
static tutti_status_t issue(struct vcall *k, tutti_op_t op, tutti_request_t **req)
{
    const struct vcoll_case *c = k->c;
    int r = k->rank, in = c->inplace, root = c->root == r;
    size_t es = k->es, *sc = k->counts[0], *sd = k->counts[1], *rc = k->counts[2],
           *rd = k->counts[3];
    void *send = k->slen > 0 ? k->send : NULL, *recv = k->rlen > 0 ? k->recv : NULL;
    int as = c->form == VFORM_ASYNC;
    switch (c->kind) {
    case VCOLL_ALLTOALLV:
        send = in ? recv : send;
        return as ? tutti_ialltoallv(send, in ? NULL : sc, in ? NULL : sd, recv, rc, rd, c->dt,
                                     k->comm, req)
                  : tutti_alltoallv(send, in ? NULL : sc, in ? NULL : sd, recv, rc, rd, c->dt,
                                    k->comm, NULL);
    case VCOLL_ALLGATHERV:
        send = in ? k->recv + rd[r] * es : send;
        return as ? tutti_iallgatherv(send, rc[r], recv, rc, rd, c->dt, k->comm, req)
                  : tutti_allgatherv(send, rc[r], recv, rc, rd, c->dt, k->comm, NULL);
    case VCOLL_GATHER:
        send = in && root ? k->recv + rd[r] * es : send;
        return as ? tutti_igather(send, recv, sc[0], c->dt, c->root, k->comm, req)
                  : tutti_gather(send, recv, sc[0], c->dt, c->root, k->comm, NULL);
    case VCOLL_GATHERV:
        return as ? tutti_igatherv(send, sc[r], recv, root ? rc : NULL, root ? rd : NULL, c->dt,
                                   c->root, k->comm, req)
                  : tutti_gatherv(send, sc[r], recv, root ? rc : NULL, root ? rd : NULL, c->dt,
                                  c->root, k->comm, NULL);
    case VCOLL_SCATTER:
        recv = in && root ? k->send + sd[r] * es : recv;
        return as ? tutti_iscatter(send, recv, rc[0], c->dt, c->root, k->comm, req)
                  : tutti_scatter(send, recv, rc[0], c->dt, c->root, k->comm, NULL);
    case VCOLL_SCATTERV:
        return as ? tutti_iscatterv(send, root ? sc : NULL, root ? sd : NULL, recv, rc[c->root],
                                    c->dt, c->root, k->comm, req)
                  : tutti_scatterv(send, root ? sc : NULL, root ? sd : NULL, recv, rc[c->root],
                                   c->dt, c->root, k->comm, NULL);
    default: {
        size_t rcs[MAXR];
        for (int j = 0; j < k->n; j++) {
            rcs[j] = vcoll_count(c, k->n, 0, j);
        }
        memcpy(k->counts[0], rcs, sizeof(size_t) * (size_t)k->n);
        recv = in ? k->send + rs_off(k, r) * es : recv;
        return as ? tutti_ireduce_scatterv(send, recv, k->counts[0], c->dt, op, k->comm, req)
                  : tutti_reduce_scatterv(send, recv, k->counts[0], c->dt, op, k->comm, NULL);
    }
    }
}

/* The call in the case's form; the arrays are overwritten as soon as it returns. */
static tutti_status_t run_call(struct vcall *k, tutti_op_t op)
{
    tutti_request_t *req = NULL;
    int group = k->c->form == VFORM_GROUP;
    tutti_status_t st = group ? tutti_group_start() : TUTTI_OK;
    st = st == TUTTI_OK ? issue(k, op, &req) : st;
    memset(k->counts, 0xA7, sizeof(k->counts)); /* the library must have kept its own copy */
    if (group) {
        tutti_status_t end = tutti_group_end();
        st = st == TUTTI_OK ? end : st;
    }
    if (st == TUTTI_OK && req != NULL) {
        st = tutti_wait(req);
        (void)tutti_request_free(req);
    }
    return st;
}

int vcoll_check(tutti_comm_t *comm, const struct vcoll_case *c)
{
    struct vcall k = {.c = c, .comm = comm, .es = tutti_datatype_size(c->dt)};
    char desc[200];
    if (tutti_comm_rank(comm, &k.rank) != TUTTI_OK || tutti_comm_size(comm, &k.n) != TUTTI_OK) {
        return integ_fail("tutti_comm_rank/size failed");
    }
    k.vc = values_of(c);
    describe(&k, desc, sizeof(desc));
    int rc = -1;
    tutti_op_t op = TUTTI_SUM;
    int made = 0;
    if (prepare(&k) != 0 ||
        (c->kind == VCOLL_REDUCE_SCATTERV && coll_op_get(comm, &k.vc, k.rank, &op, &made) != 0)) {
        goto out;
    }
    arrays(&k);
    tutti_status_t st = run_call(&k, op);
    if (made) {
        (void)tutti_op_destroy(op, comm);
    }
    if (st != TUTTI_OK) {
        integ_fail("%s: the call returned %s: %s", desc, tutti_status_name(st),
                   tutti_last_error(comm));
        goto out;
    }
    expect(&k);
    rc = 0;
    if (!guards_ok(k.send, k.slen) || !guards_ok(k.recv, k.rlen)) {
        rc = integ_fail("%s: a byte around a buffer was overwritten", desc);
    }
    const uint8_t *out = k.recv;
    size_t olen = k.rlen;
    if (c->inplace && c->kind == VCOLL_REDUCE_SCATTERV) {
        out = k.send + rs_off(&k, k.rank) * k.es;
    } else if (c->inplace && c->kind == VCOLL_SCATTER && c->root == k.rank) {
        out = k.send + k.s.dsp[k.rank] * k.es;
    }
    rc |= coll_compare(&k.vc, desc, out, k.exp, olen / k.es);
    int send_kept = !c->inplace || (c->kind == VCOLL_SCATTER && c->root != k.rank) ||
                    (c->kind == VCOLL_GATHER && c->root != k.rank);
    if (send_kept && memcmp(k.send, k.snap, k.slen) != 0) {
        rc |= integ_fail("%s: the input changed", desc);
    }
out:
    if (k.send != NULL) {
        free(k.send - GUARD);
    }
    if (k.recv != NULL) {
        free(k.recv - GUARD);
    }
    free(k.exp);
    free(k.snap);
    return rc;
}
