/*
 * op.c - facts about one operation (op.h): its extents on a rank, its blocks, and which kind of
 * collective it is.
 */
#include "exec/op.h"
#include "exec/fabric.h"
#include "tutti/coll.h"

#include <stdlib.h>
#include <string.h>

int tutti__coll_is_blockwise(tutti_coll_t c)
{
    return c == TUTTI_COLL_ALLTOALLV || c == TUTTI_COLL_ALLGATHERV || c == TUTTI_COLL_GATHER ||
           c == TUTTI_COLL_SCATTER || c == TUTTI_COLL_GATHERV || c == TUTTI_COLL_SCATTERV ||
           c == TUTTI_COLL_REDUCE_SCATTERV;
}

int tutti__coll_reduces(tutti_coll_t c)
{
    return c == TUTTI_COLL_ALLREDUCE || c == TUTTI_COLL_REDUCE || c == TUTTI_COLL_REDUCE_SCATTER ||
           c == TUTTI_COLL_REDUCE_SCATTERV;
}

int tutti__coll_rooted(tutti_coll_t c)
{
    return c == TUTTI_COLL_BROADCAST || c == TUTTI_COLL_REDUCE || c == TUTTI_COLL_GATHER ||
           c == TUTTI_COLL_SCATTER || c == TUTTI_COLL_GATHERV || c == TUTTI_COLL_SCATTERV;
}

size_t tutti__op_scount(const struct tutti_op_desc *op, int j)
{
    switch (op->coll) {
    case TUTTI_COLL_ALLTOALLV:
        return op->v->scounts[j];
    case TUTTI_COLL_SCATTERV:
        return op->v != NULL && op->v->scounts != NULL ? op->v->scounts[j] : op->count;
    case TUTTI_COLL_REDUCE_SCATTERV:
        return op->v->rcounts[j];
    default:
        return op->count;
    }
}

size_t tutti__op_sdispl(const struct tutti_op_desc *op, int j)
{
    switch (op->coll) {
    case TUTTI_COLL_ALLTOALLV:
        return op->v->sdispls[j];
    case TUTTI_COLL_SCATTER:
        return (size_t)j * op->count;
    case TUTTI_COLL_SCATTERV:
        return op->v != NULL && op->v->sdispls != NULL ? op->v->sdispls[j] : 0;
    case TUTTI_COLL_REDUCE_SCATTERV:
        return tutti__op_rs_offset(op, j);
    default:
        return 0;
    }
}

size_t tutti__op_rcount(const struct tutti_op_desc *op, int j)
{
    switch (op->coll) {
    case TUTTI_COLL_ALLTOALLV:
    case TUTTI_COLL_ALLGATHERV:
    case TUTTI_COLL_REDUCE_SCATTERV:
        return op->v->rcounts[j];
    case TUTTI_COLL_GATHERV:
        return op->v != NULL && op->v->rcounts != NULL ? op->v->rcounts[j] : op->count;
    default:
        return op->count;
    }
}

size_t tutti__op_rdispl(const struct tutti_op_desc *op, int j)
{
    switch (op->coll) {
    case TUTTI_COLL_ALLTOALLV:
    case TUTTI_COLL_ALLGATHERV:
        return op->v->rdispls[j];
    case TUTTI_COLL_GATHER:
        return (size_t)j * op->count;
    case TUTTI_COLL_GATHERV:
        return op->v != NULL && op->v->rdispls != NULL ? op->v->rdispls[j] : 0;
    default:
        return 0;
    }
}

size_t tutti__op_rs_offset(const struct tutti_op_desc *op, int j)
{
    size_t off = 0;
    for (int i = 0; i < j; i++) {
        off += op->v->rcounts[i];
    }
    return off;
}

/* The end of the furthest block of n (elements), reading count/displ j for each j < n. */
static size_t span(const struct tutti_op_desc *op, int n, int recv)
{
    size_t end = 0;
    for (int j = 0; j < n; j++) {
        size_t c = recv ? tutti__op_rcount(op, j) : tutti__op_scount(op, j);
        size_t d = recv ? tutti__op_rdispl(op, j) : tutti__op_sdispl(op, j);
        if (c > 0 && d + c > end) {
            end = d + c;
        }
    }
    return end;
}

int tutti__op_recv_gaps(const struct tutti_op_desc *op, int rank, int nranks)
{
    if (!tutti__coll_is_blockwise(op->coll)) {
        return 0;
    }
    size_t sl, rl, es = tutti_datatype_size(op->dt), sum = 0;
    tutti__op_extents_of(op, rank, nranks, &sl, &rl);
    int many =
        op->coll == TUTTI_COLL_ALLTOALLV || op->coll == TUTTI_COLL_ALLGATHERV ||
        ((op->coll == TUTTI_COLL_GATHER || op->coll == TUTTI_COLL_GATHERV) && op->root == rank);
    if (!many) {
        return 0; /* one block at 0 */
    }
    for (int j = 0; j < nranks; j++) {
        sum += tutti__op_rcount(op, j);
    }
    return sum * es != rl;
}

/* The extents of gather, scatter and the variable-size collectives, in elements. */
static void blockwise_extents(const struct tutti_op_desc *op, int rank, int nranks, size_t *s_p,
                              size_t *r_p)
{
    int root = op->root == rank;
    switch (op->coll) {
    case TUTTI_COLL_ALLTOALLV:
        *s_p = span(op, nranks, 0);
        *r_p = span(op, nranks, 1);
        break;
    case TUTTI_COLL_ALLGATHERV:
        *s_p = op->count;
        *r_p = span(op, nranks, 1);
        break;
    case TUTTI_COLL_GATHER:
    case TUTTI_COLL_GATHERV:
        *s_p = op->count;
        *r_p = root ? span(op, nranks, 1) : 0;
        break;
    case TUTTI_COLL_SCATTER:
    case TUTTI_COLL_SCATTERV:
        *s_p = root ? span(op, nranks, 0) : 0;
        *r_p = op->count;
        break;
    case TUTTI_COLL_REDUCE_SCATTERV:
        *s_p = tutti__op_rs_offset(op, nranks);
        *r_p = op->v->rcounts[rank];
        break;
    default:
        *s_p = *r_p = 0;
        break;
    }
}

void tutti__op_extents_of(const struct tutti_op_desc *op, int rank, int nranks,
                          size_t *send_bytes_p, size_t *recv_bytes_p)
{
    size_t es = tutti_datatype_size(op->dt);
    size_t b = op->count * es;
    size_t n = (size_t)nranks;
    size_t s = b, r = b;
    switch (op->coll) {
    case TUTTI_COLL_REDUCE_SCATTER:
        s = b * n;
        break;
    case TUTTI_COLL_ALLGATHER:
        r = b * n;
        break;
    case TUTTI_COLL_ALLTOALL:
        s = r = b * n;
        break;
    case TUTTI_COLL_BROADCAST:
        s = (op->root == rank) ? b : 0;
        break;
    case TUTTI_COLL_REDUCE:
        r = (op->root == rank) ? b : 0;
        break;
    case TUTTI_COLL_SEND:
        r = 0;
        break;
    case TUTTI_COLL_RECV:
        s = 0;
        break;
    case TUTTI_COLL_BARRIER:
        s = r = 0;
        break;
    default:
        if (tutti__coll_is_blockwise(op->coll)) {
            blockwise_extents(op, rank, nranks, &s, &r);
            s *= es;
            r *= es;
        }
        break;
    }
    *send_bytes_p = s;
    *recv_bytes_p = r;
}

void tutti__op_extents(const struct tutti_fabric *fab, const struct tutti_op_desc *op,
                       size_t *send_bytes_p, size_t *recv_bytes_p)
{
    tutti__op_extents_of(op, fab->rank, fab->nranks, send_bytes_p, recv_bytes_p);
}

void tutti__op_bind_barrier(struct tutti_op_desc *op, uint8_t *byte)
{
    if (op->coll == TUTTI_COLL_BARRIER) {
        op->sendbuf = byte;
        op->recvbuf = byte;
    }
}

struct tutti_vcounts *tutti__vcounts_dup(const struct tutti_vcounts *v, int nranks)
{
    const size_t *src[4] = {v->scounts, v->sdispls, v->rcounts, v->rdispls};
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        n += src[i] != NULL ? (size_t)nranks : 0;
    }
    struct tutti_vcounts *c = malloc(sizeof(*c) + n * sizeof(size_t));
    if (c == NULL) {
        return NULL;
    }
    size_t *at = (size_t *)(c + 1);
    const size_t *dst[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        if (src[i] == NULL) {
            continue;
        }
        /* in place, alltoallv's send arrays are its receive arrays: keep them one */
        int same = i >= 2 ? -1 : (src[i] == src[i + 2] ? i + 2 : -1);
        if (same < 0) {
            for (int j = 0; j < nranks; j++) {
                at[j] = src[i][j];
            }
            dst[i] = at;
            at += nranks;
        }
    }
    c->scounts = dst[0];
    c->sdispls = dst[1];
    c->rcounts = dst[2];
    c->rdispls = dst[3];
    c->scounts = v->scounts == v->rcounts && v->scounts != NULL ? c->rcounts : c->scounts;
    c->sdispls = v->sdispls == v->rdispls && v->sdispls != NULL ? c->rdispls : c->sdispls;
    c->digest = v->digest;
    return c;
}

struct tutti_vcounts *tutti__op_own_counts(struct tutti_op_desc *op, int nranks, int *failed_p)
{
    *failed_p = 0;
    if (op->v == NULL) {
        return NULL;
    }
    struct tutti_vcounts *c = tutti__vcounts_dup(op->v, nranks);
    if (c == NULL) {
        *failed_p = 1;
        return NULL;
    }
    op->v = c;
    return c;
}

/* Equal arrays of n entries, or both NULL. */
static int same_array(const size_t *a, const size_t *b, int n)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return memcmp(a, b, (size_t)n * sizeof(*a)) == 0;
}

int tutti__vcounts_same(const struct tutti_vcounts *a, const struct tutti_vcounts *b, int nranks)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return a->digest == b->digest && same_array(a->scounts, b->scounts, nranks) &&
           same_array(a->sdispls, b->sdispls, nranks) &&
           same_array(a->rcounts, b->rcounts, nranks) && same_array(a->rdispls, b->rdispls, nranks);
}
