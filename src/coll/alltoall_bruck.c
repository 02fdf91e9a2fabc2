/*
 * alltoall_bruck.c - Bruck's all-to-all, for small messages: ceil(log2 n) rounds instead of
 * n - 1 exchanges. Rank r first rotates its blocks in scratch memory (position j holds the
 * block for rank r+j); in the round for bit b every block whose position has bit b set moves
 * to rank r + b (packed into one message, unpacked at the same positions there), so a block at
 * position j travels j ranks in all and arrives at its destination d at position j = d - s from
 * its source s. A final pass puts position j at block r - j of the output.
 *
 * Scratch memory: 3 * nranks * count elements (rotated blocks, packed out, packed in). Blocks
 * travel up to log2(n) times each: for small messages only. One lane (channel 0).
 */
#include "coll/coll.h"

/* COPY blocks of c elements: from positions in `from` to the same or packed positions. */
static int copy(struct tutti_plan *plan, uint32_t src, size_t src_off, uint32_t dst, size_t dst_off,
                size_t count)
{
    return tutti__plan_add_step(plan, TUTTI_STEP_COPY, src, src_off, dst, dst_off, count, 0);
}

/* Pack (unpack = 0) or unpack the positions with bit b set between tmp and the packed area. */
static int pack(struct tutti_plan *plan, int n, size_t c, int b, uint32_t tmp, uint32_t packed,
                size_t packed_base, int unpack)
{
    size_t k = 0;
    for (int j = b; j < n; j += 2 * b) { /* runs of b positions with bit b set */
        size_t run = (size_t)(j + b <= n ? b : n - j) * c;
        int rc = unpack ? copy(plan, packed, packed_base + k, tmp, (size_t)j * c, run)
                        : copy(plan, tmp, (size_t)j * c, packed, packed_base + k, run);
        if (rc != 0) {
            return -1;
        }
        k += run;
    }
    return 0;
}

/* Positions 0..n-1 with bit b set. */
static size_t with_bit(int n, int b)
{
    size_t m = 0;
    for (int j = 0; j < n; j++) {
        m += (j & b) != 0;
    }
    return m;
}

int tutti__alltoall_bruck(const struct tutti_op_desc *op, const struct tutti_plan_params *pp,
                          struct tutti_plan *plan)
{
    int n = pp->nranks, r = pp->rank;
    size_t c = op->count, total = (size_t)n * c;
    uint32_t tmp; /* [0, total): rotated; then packed out; then packed in */
    int go = tutti__bruck_start(op, pp, plan, 0, total, 3 * total, &tmp);
    if (go <= 0) {
        return go;
    }
    size_t head = (size_t)(n - r) * c;
    if (copy(plan, TUTTI_BUF_SEND, (size_t)r * c, tmp, 0, head) != 0 ||
        copy(plan, TUTTI_BUF_SEND, 0, tmp, head, total - head) != 0) {
        return -1;
    }
    for (int b = 1; b < n; b *= 2) {
        size_t m = with_bit(n, b) * c;
        struct tutti_exchange x = {
            .send_peer = (r + b) % n,
            .recv_peer = tutti__mod(r - b, n),
            .send_buf = tmp,
            .send_off = total,
            .send_len = m,
            .recv_buf = tmp,
            .recv_off = 2 * total,
            .recv_len = m,
        };
        tutti__plan_set_peers(plan, -1, -1);
        if (pack(plan, n, c, b, tmp, tmp, total, 0) != 0 ||
            tutti__coll_exchange(plan, pp, &x) != 0) {
            return -1;
        }
        tutti__plan_set_peers(plan, -1, -1);
        if (pack(plan, n, c, b, tmp, tmp, 2 * total, 1) != 0) {
            return -1;
        }
    }
    for (int j = 0; j < n; j++) { /* position j came from rank r - j */
        if (copy(plan, tmp, (size_t)j * c, TUTTI_BUF_RECV, (size_t)tutti__mod(r - j, n) * c, c) !=
            0) {
            return -1;
        }
    }
    return 0;
}
