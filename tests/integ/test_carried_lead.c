/*
 * test_carried_lead.c - led calls (issue 38, src/win/win_lead.c): a small broadcast's root and a
 * small reduce's non-roots return once their note is posted, up to one call ahead of the ranks
 * that take from them. At 2, 3 and 4 ranks, with the roots rotating and the taking ranks pausing
 * now and then, hundreds of broadcasts and reduces in a row give exact results, and a mix of
 * both in one group still does.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>

#define CALLS 600

static int32_t val(int it, int r, int i)
{
    return (int32_t)(((uint32_t)it * 2654435761u ^ (uint32_t)r * 40503u ^ (uint32_t)i * 97u) %
                     100000u);
}

/* Call it: a broadcast (even) or a reduce (odd) of 1 to 64 int32 from root it / 2 % n, in a
 * group every 7th call. */
static int one_call(tutti_comm_t *c, int it, int n, int me)
{
    int root = it / 2 % n, count = 1 + it % 64, grouped = it % 7 == 0;
    int32_t in[64], out[64] = {0};
    for (int i = 0; i < count; i++) {
        in[i] = val(it, it % 2 ? me : root, i);
    }
    if (grouped) {
        ICHECK_OK(tutti_group_start());
    }
    if (it % 2 == 0) {
        ICHECK_OK(tutti_broadcast(in, out, (size_t)count, TUTTI_INT32, root, c, NULL));
    } else {
        ICHECK_OK(tutti_reduce(in, out, (size_t)count, TUTTI_INT32, TUTTI_SUM, root, c, NULL));
    }
    if (grouped) {
        ICHECK_OK(tutti_group_end());
    }
    for (int i = 0; i < count && (it % 2 == 0 || me == root); i++) {
        int32_t want = 0;
        for (int r = 0; r < n && it % 2; r++) {
            want += val(it, r, i);
        }
        want = it % 2 ? want : val(it, root, i);
        ICHECK(out[i] == want, "call %d (%s from %d, %d elements): [%d] = %d, not %d", it,
               it % 2 ? "reduce" : "broadcast", root, count, i, out[i], want);
    }
    return 0;
}

static int lead_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    for (int it = 0; it < CALLS; it++) {
        if (it % 50 == ctx->rank * 7) { /* a taker that is late: the givers run ahead */
            integ_pause_ms(2);
        }
        if (one_call(c, it, ctx->nranks, ctx->rank) != 0) {
            return 1;
        }
    }
    ICHECK_OK(tutti_barrier(c, NULL));
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

ParameterizedTestParameters(carried_lead, broadcasts_and_reduces_in_a_row_are_exact)
{
    static int rank_counts[] = {2, 3, 4};
    return cr_make_param_array(int, rank_counts, sizeof(rank_counts) / sizeof(rank_counts[0]));
}

ParameterizedTest(int *n, carried_lead, broadcasts_and_reduces_in_a_row_are_exact, .timeout = 120)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_run_ranks(*n, lead_rank, NULL, 0);
}
