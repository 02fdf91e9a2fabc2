/*
 * reduce_tree.c - reduce over the double binary tree re-rooted at the root (trees.c): half of
 * the data goes up each tree, chunk by chunk; each rank adds its children's partial results to
 * its own input and sends the sum to its parent; the root writes the result (dividing for AVG).
 *
 * A rank other than the root must not write its output (NCCL leaves it undefined and callers
 * may pass NULL), so a rank with two children adds the first child's chunk into scratch memory
 * of one chunk per part: the next step sends it on before the lane takes the next chunk.
 */
#include "coll/coll.h"
#include "base/util.h"

/* Elements of scratch per part: a chunk, or the whole message when it is smaller. */
static size_t stride(const struct tutti_op_desc *op, const struct tutti_plan_params *pp)
{
    return op->count < pp->chunk_elems ? op->count : pp->chunk_elems;
}

static int part(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                struct tutti_plan *plan, const struct tutti_tree_part *pt)
{
    const struct tutti_tree_node *nd = &pt->node;
    int root = nd->parent < 0, two = nd->nchildren == 2;
    uint32_t acc = root ? TUTTI_BUF_RECV : plan->nbufs - 1; /* scratch is the last buffer */
    size_t acc_base = root ? 0 : (size_t)pt->channel * stride(op, pp);
    if (tutti__plan_add_lane(plan, nd->parent, nd->child[0], pt->channel) < 0) {
        return -1;
    }
    for (size_t lo = 0; lo < pt->len; lo += pp->chunk_elems) {
        size_t off = pt->off + lo, len = tutti__chunk(pt->len - lo, pp);
        size_t acc_off = root ? off : acc_base;
        int rc = 0;
        uint32_t src = TUTTI_BUF_SEND;
        size_t src_off = off;
        if (nd->nchildren == 0) { /* a leaf: its input, never written here, by reference */
            rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0,
                                      len, TUTTI_STEP_STABLE);
        } else if (two) {
            tutti__plan_set_peers(plan, -1, nd->child[0]);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off, acc,
                                      acc_off, len, 0);
            src = acc;
            src_off = acc_off;
        }
        if (nd->nchildren > 0) {
            tutti__plan_set_peers(plan, nd->parent, nd->child[two]);
            rc |= root ? tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, src, src_off,
                                              TUTTI_BUF_RECV, off, len, TUTTI_STEP_FINAL)
                       : tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, src, src_off,
                                              TUTTI_BUF_NONE, 0, len, 0);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int tutti__reduce_tree(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                       struct tutti_plan *plan)
{
    plan->divisor = (op->op == TUTTI_AVG) ? pp->nranks : 1;
    /* Scratch for the parts where this rank has two children: a stride per part. */
    int nparts = tutti__coll_tree_parts(op, pp), two = 0;
    for (int t = 0; t < 2 && pp->nranks > 1; t++) {
        struct tutti_tree_node nd;
        if (tutti__coll_tree(pp, op->root, t, &nd) != 0) {
            return -1;
        }
        two |= nd.parent >= 0 && nd.nchildren == 2;
    }
    size_t bytes = (size_t)nparts * stride(op, pp) * tutti_datatype_size(op->dt);
    if (two && bytes > 0) {
        if (tutti__plan_scratch(plan, bytes) != 0 || tutti__plan_add_buf(plan, plan->scratch) < 0) {
            return -1;
        }
    }
    return tutti__coll_tree_walk(op, pp, plan, op->root, part);
}
