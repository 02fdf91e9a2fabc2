/*
 * trees.c - what the tree algorithms share: the double binary tree of topology/tree.c seen
 * from this rank (re-rooted for broadcast and reduce), and the walk over the parts of the data.
 *
 * The data is cut into 2 * nch parts; part 2c + t travels over tree t on channel 2c + t (a
 * message of at most one chunk goes whole over tree 0 on channel 0). The two trees never share a
 * channel: a rank may talk to the same peer in both (n = 2: each is the
 * other's parent once), and each (peer, channel, direction) must belong to one lane for its
 * frames to arrive in the order of that lane's steps.
 */
#include "coll/coll.h"
#include "topology/tree.h"
#include "base/util.h"

static int map_rank(int v, int shift, int n)
{
    return v < 0 ? -1 : tutti__mod(v + shift, n);
}

int tutti__coll_tree(const struct tutti_plan_params *pp, int root, int t,
                     struct tutti_tree_node *node_p)
{
    int n = pp->nranks;
    const struct tutti_layout *l = pp->layout;
    if (root < 0 && l != NULL && l->nhosts > 1 && l->nhosts < n) {
        /* Unrooted (all-reduce) on several hosts: a chain within each host, one rank per host
         * on the trees between hosts. */
        return tutti__dtree_hosts_node(n, l->host, pp->rank, t, node_p);
    }
    int shift = root >= 0 ? root : 0; /* rooted: virtual rank 0 is the root */
    int v = tutti__mod(pp->rank - shift, n), r1 = tutti__dtree_root(n, 1);
    struct tutti_tree_node nd;
    tutti__dtree_node(n, v, t, &nd);
    if (root >= 0 && t == 1 && n > 1) {
        /*
         * Re-root tree 1 at virtual rank 0, where tree 0 starts: 0 (a leaf of tree 1, being
         * interior in tree 0) leaves its place and becomes the root, with tree 1's root as its
         * only child. Depth grows by one; rank 0 forwards nothing, it only sends (or receives).
         */
        if (v == 0) {
            nd.parent = -1;
            nd.nchildren = 1;
            nd.child[0] = r1;
            nd.child[1] = -1;
        } else if (v == r1) {
            nd.parent = 0;
        }
        for (int c = 0; c < nd.nchildren && v != 0; c++) {
            if (nd.child[c] == 0) {
                nd.child[c] = nd.child[1 - c];
                nd.child[1] = -1;
                nd.nchildren--;
                break;
            }
        }
    }
    node_p->parent = map_rank(nd.parent, shift, n);
    node_p->nchildren = nd.nchildren;
    node_p->child[0] = map_rank(nd.child[0], shift, n);
    node_p->child[1] = map_rank(nd.child[1], shift, n);
    return 0;
}

int tutti__coll_tree_parts(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    /* Halves of one chunk would double the messages and save nothing: one tree, one channel. */
    if (op->count <= pp->chunk_elems) {
        return 1;
    }
    return 2 * TUTTI_MIN(pp->nchannels, TUTTI_MAX_CHANNELS / 2);
}

int tutti__coll_tree_walk(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan, int root, tutti_tree_part_fn fn)
{
    if (pp->nranks == 1) {
        return tutti__plan_add_lane(plan, -1, -1, 0) < 0
                   ? -1
                   : tutti__coll_copy(plan, TUTTI_BUF_SEND, 0, TUTTI_BUF_RECV, 0, op->count);
    }
    int nparts = tutti__coll_tree_parts(op, pp);
    for (int ch = 0; 2 * ch < nparts; ch++) {
        for (int t = 0; t < 2 && 2 * ch + t < nparts; t++) {
            struct tutti_tree_part part = {.channel = 2 * ch + t};
            tutti__split_even(op->count, nparts, part.channel, &part.off, &part.len);
            if (part.len == 0) {
                continue;
            }
            if (tutti__coll_tree(pp, root, t, &part.node) != 0 || fn(op, pp, plan, &part) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

int tutti__coll_tree_down(struct tutti_plan *plan, const struct tutti_tree_node *nd, size_t off,
                          size_t len)
{
    int rc;
    tutti__plan_set_peers(plan, nd->child[0], nd->parent);
    if (nd->nchildren == 0) {
        return tutti__plan_add_step(plan, TUTTI_STEP_RECV, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV, off,
                                    len, 0);
    }
    rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_COPY_SEND, TUTTI_BUF_NONE, 0, TUTTI_BUF_RECV,
                              off, len, TUTTI_STEP_STABLE);
    if (rc == 0 && nd->nchildren == 2) {
        tutti__plan_set_peers(plan, nd->child[1], -1);
        rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_RECV, off, TUTTI_BUF_NONE, 0,
                                  len, TUTTI_STEP_STABLE);
    }
    return rc;
}
