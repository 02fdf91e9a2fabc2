/*
 * allreduce_tree.c - double binary tree all-reduce (NCCL's tree algorithm): half of the data is
 * reduced up tree 0 and broadcast back down it, the other half over tree 1, whose interior ranks
 * are tree 0's leaves (topology/tree.c), chunk by chunk. Latency grows with log2(n) instead of
 * the ring's 2(n - 1) hops.
 *
 * A rank other than the root runs two lanes per part: "up" (receive from the children, reduce
 * with its own input, send to the parent) and "down" (receive the result from the parent, store
 * it and forward it to the children). They run concurrently, which pipelines the chunks: the
 * result of chunk i comes down while chunk i+1 goes up. The down lane writes chunk i of the
 * output only after the root had the up lane's chunk i, so its writes never race the up lane
 * using the output as its accumulator. The root reduces and turns each chunk around in one lane.
 * Each element is reduced at the root only and copied everywhere: results are bitwise identical.
 */
#include "coll/coll.h"

/* Up lane of a rank below the root: the children's partial sums and its own go to the parent. */
static int up_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                   const struct tutti_tree_part *pt)
{
    const struct tutti_tree_node *nd = &pt->node;
    if (tutti__plan_add_lane(plan, nd->parent, -1, pt->channel) < 0) {
        return -1;
    }
    for (size_t lo = 0; lo < pt->len; lo += pp->chunk_elems) {
        size_t off = pt->off + lo, len = tutti__chunk(pt->len - lo, pp);
        int rc = 0;
        if (nd->nchildren == 0) {
            int stable = tutti__coll_input_stable(plan, TUTTI_BUF_SEND, off);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_SEND, off, TUTTI_BUF_NONE, 0,
                                      len, stable ? TUTTI_STEP_STABLE : 0);
        } else if (nd->nchildren == 1) {
            tutti__plan_set_peers(plan, nd->parent, nd->child[0]);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_SEND, off,
                                      TUTTI_BUF_NONE, 0, len, 0);
        } else {
            /* The output holds the partial sum until the result comes down. */
            tutti__plan_set_peers(plan, -1, nd->child[0]);
            rc = tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off,
                                      TUTTI_BUF_RECV, off, len, 0);
            tutti__plan_set_peers(plan, nd->parent, nd->child[1]);
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_SEND, TUTTI_BUF_RECV, off,
                                       TUTTI_BUF_NONE, 0, len, 0);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

/* Down lane: the result from the parent into the output and on to the children. */
static int down_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                     const struct tutti_tree_part *pt)
{
    const struct tutti_tree_node *nd = &pt->node;
    if (tutti__plan_add_lane(plan, nd->child[0], nd->parent, pt->channel) < 0) {
        return -1;
    }
    for (size_t lo = 0; lo < pt->len; lo += pp->chunk_elems) {
        size_t off = pt->off + lo, len = tutti__chunk(pt->len - lo, pp);
        if (tutti__coll_tree_down(plan, nd, off, len) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The root: reduce each chunk from its children and its own input, then send it back down. */
static int root_lane(struct tutti_plan *plan, const struct tutti_plan_params *pp,
                     const struct tutti_tree_part *pt)
{
    const struct tutti_tree_node *nd = &pt->node;
    int two = nd->nchildren == 2;
    if (tutti__plan_add_lane(plan, -1, -1, pt->channel) < 0) {
        return -1;
    }
    for (size_t lo = 0; lo < pt->len; lo += pp->chunk_elems) {
        size_t off = pt->off + lo, len = tutti__chunk(pt->len - lo, pp);
        int rc = 0;
        uint32_t acc = TUTTI_BUF_SEND;
        if (two) {
            tutti__plan_set_peers(plan, -1, nd->child[0]);
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY, TUTTI_BUF_SEND, off,
                                       TUTTI_BUF_RECV, off, len, 0);
            acc = TUTTI_BUF_RECV;
        }
        tutti__plan_set_peers(plan, nd->child[0], nd->child[two]);
        rc |= tutti__plan_add_step(plan, TUTTI_STEP_RECV_REDUCE_COPY_SEND, acc, off, TUTTI_BUF_RECV,
                                   off, len, TUTTI_STEP_FINAL | TUTTI_STEP_STABLE);
        if (two) {
            tutti__plan_set_peers(plan, nd->child[1], -1);
            rc |= tutti__plan_add_step(plan, TUTTI_STEP_SEND, TUTTI_BUF_RECV, off, TUTTI_BUF_NONE,
                                       0, len, TUTTI_STEP_STABLE);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

static int part(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                struct tutti_plan *plan, const struct tutti_tree_part *pt)
{
    (void)op;
    if (pt->node.parent < 0) {
        return root_lane(plan, pp, pt);
    }
    return up_lane(plan, pp, pt) != 0 ? -1 : down_lane(plan, pp, pt);
}

int tutti__allreduce_tree(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    plan->divisor = (op->op == TUTTI_AVG) ? pp->nranks : 1;
    return tutti__coll_tree_walk(op, pp, plan, -1, part);
}
