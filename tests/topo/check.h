/*
 * check.h - checks shared by the topology tests (Criterion asserts): lay ranks on a machine,
 * check that a ring is a permutation and count its links by kind, check that a tree over n
 * ranks is one tree. Used by tests/unit/test_topo.c, test_topo_hwloc.c and test_tree.c.
 */
#ifndef TUTTI_TOPO_CHECK_H
#define TUTTI_TOPO_CHECK_H

#include "topology/topo.h"
#include "topology/tree.h"

#include <criterion/criterion.h>

#define TOPO_CHECK_MAXN 300 /* ranks, at most, in a tree check */

/* n ranks on hosts of per_host ranks each, rank r on GPU gpu_of[r % per_host] of t. */
static inline void views(const struct tutti_topo *t, int n, int per_host, const int *gpu_of,
                         struct tutti_topo_rank *v, int *host)
{
    for (int r = 0; r < n; r++) {
        int local = r % per_host;
        tutti__topo_rank_view(t, gpu_of != NULL ? gpu_of[local] : local, &v[r]);
        host[r] = r / per_host * per_host;
    }
}

static inline void assert_permutation(const int *order, int n)
{
    char seen[256] = {0};
    cr_assert(n <= 256);
    for (int i = 0; i < n; i++) {
        cr_assert(order[i] >= 0 && order[i] < n && !seen[order[i]], "position %d: rank %d", i,
                  order[i]);
        seen[order[i]] = 1;
    }
}

/* Are ranks a and b next to each other in the ring? */
static inline int adjacent(const int *order, int n, int a, int b)
{
    for (int i = 0; i < n; i++) {
        int nx = order[(i + 1) % n];
        if ((order[i] == a && nx == b) || (order[i] == b && nx == a)) {
            return 1;
        }
    }
    return 0;
}

static inline int count_links(const struct tutti_topo_rank *v, const int *host, const int *order,
                              int n, tutti_link_t kind)
{
    int c = 0;
    for (int i = 0; i < n; i++) {
        c += tutti__topo_rank_link(v, host, order[i], order[(i + 1) % n]) == kind;
    }
    return c;
}

/*
 * Check that nd[0..n) (tree t) form one tree: a single root, children that name their parent,
 * every rank reached exactly once. Returns its depth (edges from the root to the deepest rank).
 */
static inline int check_tree(const struct tutti_tree_node *nd, int n, int t, const char *what)
{
    int root = -1;
    for (int r = 0; r < n; r++) {
        cr_assert(nd[r].nchildren >= 0 && nd[r].nchildren <= 2,
                  "%s n=%d tree %d rank %d: %d children", what, n, t, r, nd[r].nchildren);
        if (nd[r].parent < 0) {
            cr_assert_eq(root, -1, "%s n=%d tree %d: two roots, %d and %d", what, n, t, root, r);
            root = r;
        } else {
            int p = nd[r].parent, found = 0;
            cr_assert(p < n && p != r, "%s n=%d tree %d rank %d: parent %d", what, n, t, r, p);
            for (int c = 0; c < nd[p].nchildren; c++) {
                found += nd[p].child[c] == r;
            }
            cr_assert_eq(found, 1,
                         "%s n=%d tree %d: rank %d names parent %d, which lists it %d times", what,
                         n, t, r, p, found);
        }
        for (int c = 0; c < nd[r].nchildren; c++) {
            int k = nd[r].child[c];
            cr_assert(k >= 0 && k < n && nd[k].parent == r,
                      "%s n=%d tree %d: rank %d lists child %d, whose parent is %d", what, n, t, r,
                      k, k >= 0 && k < n ? nd[k].parent : -2);
        }
    }
    cr_assert_geq(root, 0, "%s n=%d tree %d: no root", what, n, t);
    /* Breadth-first from the root: every rank once. */
    cr_assert(n >= 1 && n <= TOPO_CHECK_MAXN, "%s: n=%d", what, n);
    int queue[TOPO_CHECK_MAXN], depth[TOPO_CHECK_MAXN], seen[TOPO_CHECK_MAXN] = {0};
    int head = 0, tail = 0, maxd = 0;
    queue[tail++] = root;
    depth[root] = 0;
    seen[root] = 1;
    while (head < tail) {
        int r = queue[head++];
        maxd = depth[r] > maxd ? depth[r] : maxd;
        for (int c = 0; c < nd[r].nchildren; c++) {
            int k = nd[r].child[c];
            cr_assert(!seen[k], "%s n=%d tree %d: rank %d reached twice", what, n, t, k);
            seen[k] = 1;
            depth[k] = depth[r] + 1;
            queue[tail++] = k;
        }
    }
    cr_assert_eq(tail, n, "%s n=%d tree %d: %d of %d ranks reachable from root %d", what, n, t,
                 tail, n, root);
    return maxd;
}

#endif /* TUTTI_TOPO_CHECK_H */
