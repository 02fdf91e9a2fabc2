/*
 * perf_vcounts.c - the count vectors of gather, scatter and the variable-size collectives (see
 * perf_vcounts.h): -v parsing, the shares (equal, uniform random, Zipf), their rounding to whole
 * elements that sum exactly to the total, alltoallv's doubly stochastic matrix, this rank's
 * arguments with their prefix sums, and the layouts and checks the v collectives share.
 *
 * Everything is a pure function of (skew, total, nranks, root): no call-to-call state, so every
 * rank, every launch, and tutti's and MPI's tools derive the same counts for one size.
 */
#include "perf_vcounts.h"
#include "perf_data.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int perf_skew_parse(const char *s, int *skew_p, double *zipf_s_p)
{
    *zipf_s_p = 1.0;
    if (strcmp(s, "none") == 0 || strcmp(s, "uniform") == 0 || strcmp(s, "zipf") == 0) {
        *skew_p = s[0] == 'n' ? PERF_SKEW_NONE : s[0] == 'u' ? PERF_SKEW_UNIFORM : PERF_SKEW_ZIPF;
        return 0;
    }
    char *end;
    if (strncmp(s, "zipf:", 5) == 0) {
        double e = strtod(s + 5, &end);
        if (end != s + 5 && *end == '\0' && e > 0 && e <= 10) {
            *skew_p = PERF_SKEW_ZIPF;
            *zipf_s_p = e;
            return 0;
        }
    }
    return -1;
}

const char *perf_skew_name(int skew)
{
    return skew == PERF_SKEW_UNIFORM ? "uniform" : skew == PERF_SKEW_ZIPF ? "zipf" : "none";
}

int perf_vform(const struct perf_coll *coll, int skew)
{
    return (coll->flags & PERF_COLL_V) != 0 ||
           ((coll->flags & PERF_COLL_V_SKEW) != 0 && skew != PERF_SKEW_NONE);
}

int perf_vcounts_alloc(struct perf_vcounts *vc, int nranks, int rank)
{
    size_t n = (size_t)nranks;
    memset(vc, 0, sizeof(*vc));
    vc->nranks = nranks;
    vc->rank = rank;
    vc->m = malloc((n * n + 5 * n) * sizeof(size_t));
    int *ints = malloc(4 * n * sizeof(int));
    vc->w = malloc(n * sizeof(double));
    if (vc->m == NULL || ints == NULL || vc->w == NULL) {
        free(vc->m);
        free(ints);
        free(vc->w);
        vc->m = NULL;
        return -1;
    }
    size_t *a = vc->m + n * n;
    vc->c = a + 4 * n;
    vc->sendcounts = a, vc->sdispls = a + n, vc->recvcounts = a + 2 * n, vc->rdispls = a + 3 * n;
    vc->isendcounts = ints, vc->isdispls = ints + n, vc->irecvcounts = ints + 2 * n;
    vc->irdispls = ints + 3 * n;
    return 0;
}

void perf_vcounts_free(struct perf_vcounts *vc)
{
    free(vc->m);
    free(vc->isendcounts);
    free(vc->w);
    memset(vc, 0, sizeof(*vc));
}

/* splitmix64: the random numbers of the uniform skew, the same on every rank. */
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* A number in (0, 1] from (key, i). */
static double unit(uint64_t key, uint64_t i)
{
    return (double)((mix(key ^ mix(i)) >> 11) + 1) / 9007199254740992.0; /* 2^53 */
}

/*
 * out[k] = total x w[k] / sum(w), rounded down, then the elements rounding left over one each
 * from k = 0 on, so that the counts sum to total exactly (w NULL: equal shares). The doubles are
 * computed the same way on every rank (the same code in every tool), so the counts agree bit
 * for bit.
 */
static void apportion(size_t total, const double *w, int n, size_t *out)
{
    double sum = 0;
    size_t given = 0;
    for (int k = 0; w != NULL && k < n; k++) {
        sum += w[k];
    }
    for (int k = 0; k < n; k++) {
        if (w == NULL) { /* -v none: equal blocks, in integers */
            out[k] = total / (size_t)n;
            given += out[k];
            continue;
        }
        double share = (double)total * (w[k] / sum);
        out[k] = share >= (double)total ? total : (size_t)share;
        given += out[k];
    }
    for (int k = 0; given > total; k = (k + 1) % n) { /* rounding up somewhere: take back */
        if (out[k] > 0) {
            out[k]--, given--;
        }
    }
    for (int k = 0; given < total; k = (k + 1) % n) {
        out[k]++, given++;
    }
}

/* The shares of n blocks: Zipf's 1/(k+1)^s, largest first, or uniform random ones. */
static void shares(int skew, double zipf_s, uint64_t key, int n, double *w)
{
    for (int k = 0; k < n; k++) {
        w[k] = skew == PERF_SKEW_ZIPF      ? 1.0 / pow((double)(k + 1), zipf_s)
               : skew == PERF_SKEW_UNIFORM ? unit(key, (uint64_t)k)
                                           : 1.0;
    }
}

/*
 * alltoallv's matrix. Zipf: rank i's block for rank i+1+k is share k, so each rank's largest
 * block goes to the next rank and its own (a local copy) is the smallest: a circulant matrix,
 * every row and column a rotation of the same counts. Uniform: a random mix of nranks random
 * permutations with random weights (Birkhoff), so the blocks are random but every rank still
 * sends and receives exactly total elements.
 */
static void make_matrix(struct perf_vcounts *vc, int skew, double zipf_s, uint64_t key, double *w,
                        size_t *c)
{
    int n = vc->nranks;
    shares(skew, zipf_s, key, n, w);
    apportion(vc->total, skew == PERF_SKEW_NONE ? NULL : w, n, c);
    if (skew != PERF_SKEW_UNIFORM) {
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                vc->m[(size_t)i * n + j] = c[(j - i - 1 + 2 * n) % n];
            }
        }
        return;
    }
    int *perm = vc->isendcounts; /* scratch until derive() writes the int copies */
    memset(vc->m, 0, (size_t)n * n * sizeof(size_t));
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < n; i++) {
            perm[i] = i;
        }
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            uint64_t r = mix(key ^ mix(((uint64_t)k << 32) | (uint64_t)i));
            int j = (int)(r % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int i = 0; i < n; i++) {
            vc->m[(size_t)i * n + perm[i]] += c[k];
        }
    }
}

/* A vector collective's blocks: Zipf's largest goes to the rank after the root (rank 0 without
 * a root), the root's own the smallest; uniform ones are random. */
static void make_vector(struct perf_vcounts *vc, int skew, double zipf_s, uint64_t key, int root,
                        double *w, size_t *c)
{
    int n = vc->nranks, anchor = root >= 0 ? root : n - 1;
    shares(skew, zipf_s, key, n, w);
    apportion(vc->total, skew == PERF_SKEW_NONE ? NULL : w, n, c);
    for (int j = 0; j < n; j++) {
        vc->m[j] = c[(j - anchor - 1 + 2 * n) % n];
    }
}

/* Prefix sums; the int copies; whether every value fits MPI's int. */
static void derive(struct perf_vcounts *vc)
{
    int n = vc->nranks;
    size_t so = 0, ro = 0;
    vc->fits_int = vc->total <= INT_MAX;
    vc->moved = 0;
    for (int j = 0; j < n; j++) {
        vc->sdispls[j] = so, vc->rdispls[j] = ro;
        so += vc->sendcounts[j], ro += vc->recvcounts[j];
        vc->moved += vc->matrix ? vc->sendcounts[j] : vc->recvcounts[j];
        const size_t *from[4] = {vc->sendcounts, vc->sdispls, vc->recvcounts, vc->rdispls};
        int *to[4] = {vc->isendcounts, vc->isdispls, vc->irecvcounts, vc->irdispls};
        for (int a = 0; a < 4; a++) {
            to[a][j] = from[a][j] <= INT_MAX ? (int)from[a][j] : -1;
        }
    }
}

static void vcounts_make(struct perf_vcounts *vc, int matrix, int skew, double zipf_s, size_t total,
                         int root)
{
    int n = vc->nranks, me = vc->rank;
    uint64_t key = mix(0x7475747469ull ^ ((uint64_t)skew << 56) ^ mix(total) ^ (uint64_t)n);
    vc->matrix = matrix;
    vc->total = total;
    if (matrix) {
        make_matrix(vc, skew, zipf_s, key, vc->w, vc->c);
    } else {
        make_vector(vc, skew, zipf_s, key, root, vc->w, vc->c);
    }
    size_t entries = matrix ? (size_t)n * n : (size_t)n;
    vc->max_block = 0;
    for (size_t e = 0; e < entries; e++) {
        vc->max_block = vc->m[e] > vc->max_block ? vc->m[e] : vc->max_block;
    }
    for (int j = 0; j < n; j++) {
        vc->sendcounts[j] = matrix ? vc->m[(size_t)me * n + j] : vc->m[j];
        vc->recvcounts[j] = matrix ? vc->m[(size_t)j * n + me] : vc->m[j];
    }
    derive(vc);
}

void perf_vcall(struct perf_vcounts *vc, const struct perf_coll *coll, int skew, double zipf_s,
                struct perf_call *c)
{
    c->v = NULL;
    if (!perf_vform(coll, skew)) {
        return;
    }
    vcounts_make(vc, (coll->flags & PERF_COLL_VMATRIX) != 0, skew, zipf_s,
                 c->lay.param_count * (size_t)c->nranks, c->root);
    c->v = vc;
    if (coll->vsetup != NULL) {
        coll->vsetup(c);
    }
}

void perf_vblock(const struct perf_call *c, int rank, size_t *off_p, size_t *count_p)
{
    const struct perf_vcounts *v = c->v;
    *off_p = v != NULL ? v->rdispls[rank] : (size_t)rank * c->lay.param_count;
    *count_p = v != NULL ? v->m[rank] : c->lay.param_count;
}

void perf_vsetup_gathered(struct perf_call *c)
{
    size_t off, n;
    perf_vblock(c, c->rank, &off, &n);
    c->lay.send_count = n;
    if (c->in_place) {
        c->send = (char *)c->recv + off * tutti_datatype_size(c->dt);
    }
}

void perf_vsetup_scattered(struct perf_call *c)
{
    size_t off, n;
    perf_vblock(c, c->rank, &off, &n);
    c->lay.recv_count = n;
    if (c->in_place) {
        c->recv = (char *)c->send + off * tutti_datatype_size(c->dt);
    }
}

size_t perf_check_gathered(const struct perf_call *c)
{
    struct perf_gen g;
    size_t esz = tutti_datatype_size(c->dt), wrong = 0;
    perf_call_gen(c, &g);
    for (int r = 0; r < c->nranks; r++) {
        size_t off, n;
        perf_vblock(c, r, &off, &n);
        wrong += perf_check_input(&g, (const char *)c->recv + off * esz, r, 0, n);
    }
    return wrong;
}
