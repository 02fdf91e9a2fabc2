/*
 * broadcast_tree.c - broadcast over the double binary tree re-rooted at the root (trees.c):
 * half of the data goes down each tree, chunk by chunk, so a rank that forwards in one tree
 * only receives in the other. log2(n) hops instead of the chain's n - 1.
 */
#include "coll/coll.h"

static int part(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                struct tutti_plan *plan, const struct tutti_tree_part *pt)
{
    (void)op;
    const struct tutti_tree_node *nd = &pt->node;
    int root = nd->parent < 0;
    if (tutti__plan_add_lane(plan, nd->child[0], nd->parent, pt->channel) < 0) {
        return -1;
    }
    for (size_t lo = 0; lo < pt->len; lo += pp->chunk_elems) {
        size_t off = pt->off + lo, len = tutti__chunk(pt->len - lo, pp);
        if (!root) {
            if (tutti__coll_tree_down(plan, nd, off, len) != 0) {
                return -1;
            }
            continue;
        }
        /* The root: its input to the first child (and to its own output, in the same pass),
         * then to the second. The input is never written, so it travels by reference. */
        tutti__plan_set_peers(plan, nd->child[0], -1);
        int rc = tutti__coll_send_copy(plan, TUTTI_BUF_SEND, off, TUTTI_BUF_RECV, off, len);
        if (rc == 0 && nd->nchildren == 2) {
            tutti__plan_set_peers(plan, nd->child[1], -1);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0,
                                      len, TUTTI_STEP_STABLE);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__broadcast_tree(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    return tutti__coll_tree_walk(op, pp, plan, op->root, part);
}
