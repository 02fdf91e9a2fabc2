/*
 * vcheck.c - the argument checks of gather, scatter and the variable-size collectives (their
 * count and displacement arrays, sizes that overflow, receive blocks that overlap, the in-place
 * forms, counts a rank passes twice that disagree), and the digest of a vector every rank
 * passes alike. Each error names the argument and the entry.
 */
#include "api/vcheck.h"
#include "base/check.h"
#include "comm/comm.h"
#include "exec/op.h"
#include "base/util.h"

#include <stdlib.h>

/* A required array; name it when it is NULL. */
static tutti_status_t need(struct tutti_comm *comm, const char *coll, const size_t *a,
                           const char *what)
{
    if (a == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG, "%s: %s is NULL",
                                coll, what);
    }
    return TUTTI_OK;
}

/* Every block (count, displ) of one side: its end in bytes must fit the address space. */
static tutti_status_t check_side(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                 const size_t *counts, const size_t *displs, const char *cname,
                                 const char *dname)
{
    size_t es = tutti_datatype_size(op->dt), b;
    for (int j = 0; j < comm->fab.nranks; j++) {
        size_t c = counts[j], d = displs != NULL ? displs[j] : 0;
        if (d > SIZE_MAX - c || tutti__mul_size(d + c, es, &b) != 0 || b > (SIZE_MAX >> 2)) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                    "%s: %s[%d] = %zu%s%s at %zu overflows the address space",
                                    tutti__coll_name(op->coll), cname, j, c, displs ? " and " : "",
                                    displs ? dname : "", d);
        }
    }
    return TUTTI_OK;
}

struct span {
    size_t lo, hi; /* elements */
    int rank;
};

static int by_lo(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Blocks (count > 0) laid out in rank order, each ending before the next begins: the usual
 * layout, told in one pass (no sort). */
static int ascending(const size_t *counts, const size_t *displs, int n)
{
    size_t end = 0;
    for (int j = 0; j < n; j++) {
        if (counts[j] > 0) {
            if (displs[j] < end) {
                return 0;
            }
            end = displs[j] + counts[j];
        }
    }
    return 1;
}

/* The receive blocks (count > 0) must not overlap: two writes would race. */
static tutti_status_t check_disjoint(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                     const size_t *counts, const size_t *displs)
{
    int n = comm->fab.nranks, k = 0;
    if (ascending(counts, displs, n)) {
        return TUTTI_OK;
    }
    struct span small[64];
    struct span *s = n <= 64 ? small : malloc((size_t)n * sizeof(*s));
    if (s == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "%s: no memory to check the blocks", tutti__coll_name(op->coll));
    }
    for (int j = 0; j < n; j++) {
        if (counts[j] > 0) {
            s[k++] = (struct span){displs[j], displs[j] + counts[j], j};
        }
    }
    qsort(s, (size_t)k, sizeof(*s), by_lo);
    tutti_status_t st = TUTTI_OK;
    for (int i = 1; i < k && st == TUTTI_OK; i++) {
        if (s[i].lo < s[i - 1].hi) {
            st = tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                  "%s: the receive blocks of ranks %d (elements %zu..%zu) and %d "
                                  "(%zu..%zu) overlap",
                                  tutti__coll_name(op->coll), s[i - 1].rank, s[i - 1].lo,
                                  s[i - 1].hi - 1, s[i].rank, s[i].lo, s[i].hi - 1);
        }
    }
    if (s != small) {
        free(s);
    }
    return st;
}

/* A count given twice (as a scalar and as a vector's entry) must agree. */
static tutti_status_t same_count(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                 const char *a, size_t av, const char *b, int j, size_t bv)
{
    if (av != bv) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: %s is %zu but %s[%d] is %zu", tutti__coll_name(op->coll), a,
                                av, b, j, bv);
    }
    return TUTTI_OK;
}

/* FNV-1a over the counts, folded to 32 bits, never 0 (0 means "no shared vector"). */
static uint32_t digest(const size_t *counts, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int j = 0; j < n; j++) {
        uint64_t c = counts[j];
        for (int k = 0; k < 8; k++) {
            h = (h ^ ((c >> (8 * k)) & 0xff)) * 1099511628211ull;
        }
    }
    uint32_t d = (uint32_t)(h ^ (h >> 32));
    return d != 0 ? d : 1;
}

/* Is the overlap of the two buffers an in-place form (send block `at` of the receive buffer, or
 * the reverse)? Any other overlap of their extents is refused. */
static tutti_status_t check_place(struct tutti_comm *comm, const struct tutti_op_desc *op,
                                  int in_place)
{
    size_t sl, rl;
    tutti__op_extents(&comm->fab, op, &sl, &rl);
    if (in_place || !tutti__ranges_overlap(op->sendbuf, sl, op->recvbuf, rl)) {
        return TUTTI_OK;
    }
    return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                            "%s: sendbuf and recvbuf overlap without being in place (see "
                            "tutti/coll.h for the in-place forms)",
                            tutti__coll_name(op->coll));
}

static tutti_status_t check_alltoallv(struct tutti_comm *comm, struct tutti_op_desc *op,
                                      struct tutti_vcounts *v, int *in_place_p)
{
    const char *c = "alltoallv";
    TUTTI_CHECK(need(comm, c, v->rcounts, "recvcounts"));
    TUTTI_CHECK(need(comm, c, v->rdispls, "rdispls"));
    *in_place_p = op->sendbuf == op->recvbuf && op->sendbuf != NULL;
    if (*in_place_p) {
        v->scounts = v->rcounts; /* MPI_IN_PLACE: the send side is the receive side */
        v->sdispls = v->rdispls;
    }
    TUTTI_CHECK(need(comm, c, v->scounts, "sendcounts"));
    TUTTI_CHECK(need(comm, c, v->sdispls, "sdispls"));
    TUTTI_CHECK(check_side(comm, op, v->scounts, v->sdispls, "sendcounts", "sdispls"));
    TUTTI_CHECK(check_side(comm, op, v->rcounts, v->rdispls, "recvcounts", "rdispls"));
    TUTTI_CHECK(check_disjoint(comm, op, v->rcounts, v->rdispls));
    int me = comm->fab.rank;
    return same_count(comm, op, "sendcounts[rank]", v->scounts[me], "recvcounts", me,
                      v->rcounts[me]);
}

static tutti_status_t check_vectors(struct tutti_comm *comm, struct tutti_op_desc *op,
                                    struct tutti_vcounts *v, int *in_place_p)
{
    const char *c = tutti__coll_name(op->coll);
    int me = comm->fab.rank, root = op->root == me;
    size_t es = tutti_datatype_size(op->dt);
    uintptr_t s = (uintptr_t)op->sendbuf, r = (uintptr_t)op->recvbuf;
    switch (op->coll) {
    case TUTTI_COLL_ALLGATHERV:
        TUTTI_CHECK(need(comm, c, v->rcounts, "recvcounts"));
        TUTTI_CHECK(need(comm, c, v->rdispls, "displs"));
        TUTTI_CHECK(check_side(comm, op, v->rcounts, v->rdispls, "recvcounts", "displs"));
        TUTTI_CHECK(check_disjoint(comm, op, v->rcounts, v->rdispls));
        TUTTI_CHECK(same_count(comm, op, "sendcount", op->count, "recvcounts", me, v->rcounts[me]));
        v->digest = digest(v->rcounts, comm->fab.nranks);
        *in_place_p = s == r + v->rdispls[me] * es;
        return TUTTI_OK;
    case TUTTI_COLL_GATHERV:
        v->scounts = v->sdispls = NULL;
        if (!root) {
            v->rcounts = v->rdispls = NULL; /* read at the root only */
            return TUTTI_OK;
        }
        TUTTI_CHECK(need(comm, c, v->rcounts, "recvcounts"));
        TUTTI_CHECK(need(comm, c, v->rdispls, "displs"));
        TUTTI_CHECK(check_side(comm, op, v->rcounts, v->rdispls, "recvcounts", "displs"));
        TUTTI_CHECK(check_disjoint(comm, op, v->rcounts, v->rdispls));
        TUTTI_CHECK(same_count(comm, op, "sendcount", op->count, "recvcounts", me, v->rcounts[me]));
        *in_place_p = s == r + v->rdispls[me] * es;
        return TUTTI_OK;
    case TUTTI_COLL_SCATTERV:
        v->rcounts = v->rdispls = NULL;
        if (!root) {
            v->scounts = v->sdispls = NULL;
            return TUTTI_OK;
        }
        TUTTI_CHECK(need(comm, c, v->scounts, "sendcounts"));
        TUTTI_CHECK(need(comm, c, v->sdispls, "displs"));
        TUTTI_CHECK(check_side(comm, op, v->scounts, v->sdispls, "sendcounts", "displs"));
        TUTTI_CHECK(same_count(comm, op, "recvcount", op->count, "sendcounts", me, v->scounts[me]));
        *in_place_p = r == s + v->sdispls[me] * es;
        return TUTTI_OK;
    case TUTTI_COLL_REDUCE_SCATTERV:
        v->scounts = v->sdispls = v->rdispls = NULL;
        TUTTI_CHECK(need(comm, c, v->rcounts, "recvcounts"));
        size_t total = 0, at = 0, b;
        for (int j = 0; j < comm->fab.nranks; j++) {
            if (j == me) {
                at = total;
            }
            if (v->rcounts[j] > SIZE_MAX - total) {
                total = SIZE_MAX;
                break;
            }
            total += v->rcounts[j];
        }
        if (total == SIZE_MAX || tutti__mul_size(total, es, &b) != 0 || b > (SIZE_MAX >> 2)) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                    "%s: the recvcounts sum to more than the address space", c);
        }
        v->digest = digest(v->rcounts, comm->fab.nranks);
        *in_place_p = r == s + at * es;
        return TUTTI_OK;
    default:
        return check_alltoallv(comm, op, v, in_place_p);
    }
}

tutti_status_t tutti__vcheck(struct tutti_comm *comm, struct tutti_op_desc *op,
                             struct tutti_vcounts *v)
{
    const char *c = tutti__coll_name(op->coll);
    int in_place = 0;
    if (op->coll == TUTTI_COLL_GATHER || op->coll == TUTTI_COLL_SCATTER) {
        size_t es = tutti_datatype_size(op->dt), b, total;
        if (tutti__mul_size(op->count, es, &b) != 0 ||
            tutti__mul_size(b, (size_t)comm->fab.nranks, &total) != 0 || total > (SIZE_MAX >> 2)) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                    "%s: count %zu of %s overflows the address space", c, op->count,
                                    tutti_datatype_name(op->dt));
        }
        uintptr_t s = (uintptr_t)op->sendbuf, r = (uintptr_t)op->recvbuf;
        uintptr_t mine = (uintptr_t)comm->fab.rank * b;
        in_place = op->root == comm->fab.rank &&
                   (op->coll == TUTTI_COLL_GATHER ? s == r + mine : r == s + mine);
        return check_place(comm, op, in_place);
    }
    if (v == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INTERNAL, "%s without counts", c);
    }
    TUTTI_CHECK(check_vectors(comm, op, v, &in_place));
    return check_place(comm, op, in_place);
}
