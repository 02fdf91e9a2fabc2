/*
 * test_tree.c - the double binary trees of topology/tree.c: for every n up to 300, both trees
 * are trees over all n ranks (one root, parent and child links agree, every rank reached once
 * from the root), shallow, and complementary (every rank interior in exactly one tree). With
 * ranks grouped by host: the same, plus a chain per host and one cross-host link into each
 * host.
 */
#include "topology/tree.h"
#include "../topo/check.h"

#include <criterion/criterion.h>
#include <stdlib.h>

#define MAXN 300

static struct tutti_tree_node nodes[2][MAXN];

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n) {
        k++;
    }
    return k;
}

Test(tree, double_binary_tree_for_every_n_up_to_300)
{
    for (int n = 1; n <= MAXN; n++) {
        for (int t = 0; t < 2; t++) {
            for (int r = 0; r < n; r++) {
                tutti__dtree_node(n, r, t, &nodes[t][r]);
            }
            int d = check_tree(nodes[t], n, t, "flat");
            cr_assert_leq(d, ceil_log2(n) + 2, "n=%d tree %d: depth %d > ceil(log2 n) + 2", n, t,
                          d);
            cr_assert_eq(nodes[t][tutti__dtree_root(n, t)].parent, -1,
                         "n=%d tree %d: tutti__dtree_root says %d, which has a parent", n, t,
                         tutti__dtree_root(n, t));
        }
        for (int r = 0; r < n; r++) {
            int interior = (nodes[0][r].nchildren > 0) + (nodes[1][r].nchildren > 0);
            /* At most one tree (the load of forwarding is shared); for n >= 2 exactly one: the
             * leaves of one tree are the interior nodes of the other. */
            cr_assert_eq(interior, n >= 2 ? 1 : 0, "n=%d rank %d is interior in %d trees", n, r,
                         interior);
        }
    }
}

Test(tree, the_two_roots_differ)
{
    for (int n = 2; n <= MAXN; n++) {
        cr_assert_neq(tutti__dtree_root(n, 0), tutti__dtree_root(n, 1), "n=%d", n);
    }
}

/* Host layouts: blocks of k consecutive ranks, round-robin over k hosts, and random. */
static void layout(int n, int kind, int k, int *host)
{
    unsigned s = (unsigned)(n * 31 + k);
    for (int r = 0; r < n; r++) {
        s = s * 1103515245u + 12345u;
        host[r] = kind == 0 ? r / k : kind == 1 ? r % k : (int)((s >> 16) % (unsigned)k) * 7 + 100;
    }
}

Test(tree, chain_per_host_and_one_cross_link_into_each_host)
{
    int host[MAXN];
    for (int n = 1; n <= 70; n++) {
        for (int kind = 0; kind < 3; kind++) {
            for (int k = 1; k <= 6; k++) {
                layout(n, kind, k, host);
                for (int t = 0; t < 2; t++) {
                    for (int r = 0; r < n; r++) {
                        cr_assert_eq(tutti__dtree_hosts_node(n, host, r, t, &nodes[t][r]), 0);
                    }
                    check_tree(nodes[t], n, t, "hosts");
                    for (int r = 0; r < n; r++) {
                        /* Ranks of a host: at most one intra-host child (a chain), and the
                         * host's ranks are entered from outside exactly once (its head). */
                        int local_children = 0;
                        for (int c = 0; c < nodes[t][r].nchildren; c++) {
                            local_children += host[nodes[t][r].child[c]] == host[r];
                        }
                        cr_assert_leq(local_children, 1, "n=%d rank %d: %d local children", n, r,
                                      local_children);
                    }
                    for (int r = 0; r < n; r++) {
                        int entries = 0, first = 1;
                        for (int q = 0; q < n; q++) {
                            if (host[q] != host[r]) {
                                continue;
                            }
                            first &= q >= r;
                            int p = nodes[t][q].parent;
                            entries += p < 0 || host[p] != host[q];
                        }
                        if (first) {
                            cr_assert_eq(entries, 1,
                                         "n=%d layout %d/%d tree %d: host of rank %d entered %d "
                                         "times",
                                         n, kind, k, t, r, entries);
                        }
                    }
                }
            }
        }
    }
}

Test(tree, hosts_of_one_rank_each_give_the_flat_trees)
{
    int host[MAXN];
    for (int n = 1; n <= 40; n++) {
        for (int r = 0; r < n; r++) {
            host[r] = 1000 - r;
        }
        for (int t = 0; t < 2; t++) {
            for (int r = 0; r < n; r++) {
                struct tutti_tree_node a, b;
                tutti__dtree_node(n, r, t, &a);
                cr_assert_eq(tutti__dtree_hosts_node(n, host, r, t, &b), 0);
                cr_assert(a.parent == b.parent && a.nchildren == b.nchildren &&
                              a.child[0] == b.child[0] && a.child[1] == b.child[1],
                          "n=%d tree %d rank %d differs", n, t, r);
            }
        }
    }
}
