/*
 * tree.c - double binary trees over ranks, flat or with a chain per host (see tree.h). The
 * binary tree is NCCL's: in-order over 0..n-1, the node r whose lowest set bit is b has children
 * r - b/2 and r + b/2, so odd ranks are leaves and even ranks interior. Its complement puts the
 * interior nodes on the odd ranks by mirroring, which for odd n needs one phantom rank (see
 * tutti__dtree_node). Nothing here allocates except the host grouping.
 */
#include "topology/tree.h"

#include <stdlib.h>

/* Node r of the in-order binary tree over n ranks rooted at 0 (NCCL's getBtree). */
static void btree(int n, int r, int *up_p, int *d0_p, int *d1_p)
{
    int bit = 1;
    while (bit < n && (bit & r) == 0) {
        bit <<= 1;
    }
    if (r == 0) { /* the root: a single child, the middle of the range */
        *up_p = -1;
        *d0_p = n > 1 ? bit >> 1 : -1;
        *d1_p = -1;
        return;
    }
    int up = (r ^ bit) | (bit << 1);
    *up_p = up < n ? up : (r ^ bit);
    int low = bit >> 1;
    *d0_p = low == 0 ? -1 : r - low;
    /* The right child, or the first existing node down its left spine. */
    int d1 = low == 0 ? -1 : r + low;
    while (d1 >= n) {
        low >>= 1;
        d1 = low == 0 ? -1 : r + low;
    }
    *d1_p = d1;
}

static void set_node(struct tutti_tree_node *node, int parent, int a, int b)
{
    node->parent = parent;
    node->nchildren = 0;
    node->child[0] = node->child[1] = -1;
    if (a >= 0) {
        node->child[node->nchildren++] = a;
    }
    if (b >= 0) {
        node->child[node->nchildren++] = b;
    }
}

void tutti__dtree_node(int n, int rank, int t, struct tutti_tree_node *node_p)
{
    int up, d0, d1;
    if (t == 0) {
        btree(n, rank, &up, &d0, &d1);
        set_node(node_p, up, d0, d1);
        return;
    }
    /*
     * Mirror over m ranks: m = n for even n. For odd n, mirroring over n ranks would keep the
     * even ranks interior (n-1 is even), so mirror over n+1 ranks instead: the phantom rank n is
     * the mirror of tree 0's root, which has a single child, and dropping it leaves a tree over
     * 0..n-1 whose interior nodes are odd.
     */
    int m = (n % 2 == 0) ? n : n + 1;
    btree(m, m - 1 - rank, &up, &d0, &d1);
    up = up < 0 ? -1 : m - 1 - up;
    set_node(node_p, up >= n ? -1 : up, d0 < 0 ? -1 : m - 1 - d0, d1 < 0 ? -1 : m - 1 - d1);
}

int tutti__dtree_root(int n, int t)
{
    if (t == 0 || n % 2 == 0) {
        return t == 0 ? 0 : n - 1;
    }
    int up, d0, d1;
    btree(n + 1, 0, &up, &d0, &d1); /* the phantom root's only child becomes the root */
    return d0 < 0 ? 0 : n - d0;
}

/*
 * hidx[r] = index of rank r's host, hosts numbered in order of their first rank; returns the
 * number of hosts, or -1 when out of memory.
 */
static int number_hosts(int n, const int *host, int *hidx)
{
    int *ids = malloc((size_t)n * sizeof(*ids));
    if (ids == NULL) {
        return -1;
    }
    int nh = 0;
    for (int r = 0; r < n; r++) {
        int h = 0;
        while (h < nh && ids[h] != host[r]) {
            h++;
        }
        if (h == nh) {
            ids[nh++] = host[r];
        }
        hidx[r] = h;
    }
    free(ids);
    return nh;
}

/* The rank at position pos of host h's chain in tree t (t = 1: reversed), or -1. */
static int chain_at(int n, const int *hidx, int h, int t, int pos)
{
    for (int k = 0; k < n; k++) {
        int r = t == 0 ? k : n - 1 - k;
        if (hidx[r] == h && pos-- == 0) {
            return r;
        }
    }
    return -1;
}

/* Ranks on host h. */
static int chain_len(int n, const int *hidx, int h)
{
    int len = 0;
    for (int r = 0; r < n; r++) {
        len += hidx[r] == h;
    }
    return len;
}

int tutti__dtree_hosts_node(int n, const int *host, int rank, int t, struct tutti_tree_node *node_p)
{
    if (n < 1 || rank < 0 || rank >= n) {
        return -1;
    }
    int *hidx = calloc((size_t)n, sizeof(*hidx));
    int nh = hidx != NULL ? number_hosts(n, host, hidx) : -1;
    if (nh < 0) {
        free(hidx);
        return -1;
    }
    int h = hidx[rank], len = chain_len(n, hidx, h), pos = 0;
    while (chain_at(n, hidx, h, t, pos) != rank) {
        pos++;
    }
    struct tutti_tree_node hn;
    tutti__dtree_node(nh, h, t, &hn);
    int parent = -1, a = -1, b = -1;
    if (pos > 0) {
        parent = chain_at(n, hidx, h, t, pos - 1);
    } else if (hn.parent >= 0) { /* the head: to the tail of the parent host */
        parent = chain_at(n, hidx, hn.parent, t, chain_len(n, hidx, hn.parent) - 1);
    }
    if (pos < len - 1) {
        a = chain_at(n, hidx, h, t, pos + 1);
    } else { /* the tail: the heads of the child hosts */
        a = hn.nchildren > 0 ? chain_at(n, hidx, hn.child[0], t, 0) : -1;
        b = hn.nchildren > 1 ? chain_at(n, hidx, hn.child[1], t, 0) : -1;
    }
    set_node(node_p, parent, a, b);
    free(hidx);
    return 0;
}
