/*
 * tree.h - double binary trees (NCCL's layout): two binary trees over the same ranks in which
 * every rank is interior (has children) in at most one tree, so a rank forwards data in one
 * tree and only sends or receives its own in the other. Pure functions of (n, rank, tree),
 * unit-tested for every n up to 300 in tests/unit/test_tree.c.
 */
#ifndef TUTTI_TOPO_TREE_H
#define TUTTI_TOPO_TREE_H

/* A rank's place in one tree: its parent and its children (ranks), -1 where there is none. */
struct tutti_tree_node {
    int parent;
    int nchildren;
    int child[2];
};

/**
 * Node `rank` of tree t (0 or 1) of the double binary tree over n ranks (n >= 1).
 *
 * Tree 0 is the in-order binary tree over 0..n-1 whose interior nodes are the even ranks (rank
 * r with lowest set bit b has children r - b/2 and r + b/2, or a deeper one when that is past
 * the end); its root is rank 0. Tree 1 is tree 0 mirrored (rank r -> n-1-r): for even n its
 * interior nodes are the odd ranks. For odd n, the mirror of tree 0 over n+1 ranks without its
 * root (rank n, which had a single child): again only odd ranks are interior. Depth at most
 * ceil(log2(n + 1)).
 */
void tutti__dtree_node(int n, int rank, int t, struct tutti_tree_node *node_p);

/** The root of tree t over n ranks. */
int tutti__dtree_root(int n, int t);

/**
 * As tutti__dtree_node, with ranks grouped by host: host[r] is any id of rank r's host (equal
 * ids: same host). The ranks of one host form a chain (tree 0: in rank order, tree 1: reversed,
 * so different ranks carry the cross-host links of the two trees); the chain's head links to its
 * parent host, its tail takes the child hosts. Across hosts, tree t is the double binary tree
 * over the hosts (numbered in order of their first rank), so one rank per host talks across.
 * Every rank has at most two children. Returns 0, or -1 when out of memory or rank is not in
 * 0..n-1.
 */
int tutti__dtree_hosts_node(int n, const int *host, int rank, int t,
                            struct tutti_tree_node *node_p);

#endif /* TUTTI_TOPO_TREE_H */
