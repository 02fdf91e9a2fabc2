/*
 * win_move.c - the collectives that only copy, on shared windows (win_share.c resolves every
 * rank's buffers, and waits afterwards): each byte is copied once, from where it lies to where
 * it goes, by one rank, and the work is split evenly.
 * - broadcast: each rank copies its 1/n share of the root's input into every output;
 * - all-gather: each rank copies its input into its block of every output;
 * - all-to-all: each rank copies its block for rank k into its block of k's output.
 * Where a destination is the source itself (the root's, or a rank's own block, in place), the
 * copy is skipped. Two destinations of one source go in one pass over it (tutti__copy2).
 */
#include "win/win.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <string.h>

void tutti__win_share_of(size_t count, size_t es, int n, int r, size_t *lo, size_t *hi)
{
    size_t line = es < 64 ? 64 / es : 1; /* shares cut at cache lines */
    size_t per = (count + (size_t)n - 1) / (size_t)n;
    per = (per + line - 1) / line * line;
    *lo = per * (size_t)r;
    *hi = *lo + per;
    *lo = *lo < count ? *lo : count;
    *hi = *hi < count ? *hi : count;
}

/* src's bytes into every destination of dst[0..nd-1] but src itself, two at a time. */
static void fan_out(uint8_t **dst, int nd, const uint8_t *src, size_t bytes)
{
    uint8_t *pending = NULL;
    for (int i = 0; i < nd; i++) {
        if (dst[i] == src) {
            continue;
        }
        if (pending == NULL) {
            pending = dst[i];
            continue;
        }
        tutti__copy2(pending, dst[i], src, bytes);
        pending = NULL;
    }
    if (pending != NULL) {
        tutti__copy2(pending, NULL, src, bytes);
    }
}

void tutti__win_move(const struct tutti_op_desc *op, int me, int n, const uint8_t *const *in,
                     uint8_t *const *out)
{
    size_t es = tutti_datatype_size(op->dt), block = op->count * es;
    uint8_t *dst[n];
    if (op->coll == TUTTI_COLL_BROADCAST) {
        size_t lo, hi;
        tutti__win_share_of(op->count, es, n, me, &lo, &hi);
        if (lo < hi) {
            for (int k = 0; k < n; k++) {
                dst[k] = out[k] + lo * es;
            }
            fan_out(dst, n, in[op->root] + lo * es, (hi - lo) * es);
        }
        return;
    }
    if (op->coll == TUTTI_COLL_ALLGATHER) {
        for (int k = 0; k < n; k++) {
            dst[k] = out[k] + (size_t)me * block;
        }
        fan_out(dst, n, in[me], block);
        return;
    }
    for (int k = 0; k < n; k++) { /* all-to-all */
        uint8_t *d = out[k] + (size_t)me * block;
        const uint8_t *s = in[me] + (size_t)k * block;
        if (d != s) {
            memcpy(d, s, block);
        }
    }
}
