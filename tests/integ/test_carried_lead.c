/*
 * test_carried_lead.c - led calls (issue 38, src/win/win_lead.c): a small broadcast's root and a
 * small reduce's non-roots return once their note is posted, up to TUTTI_WIN_NOTES - 1 calls
 * ahead of the ranks that take from them. At 2, 3 and 4 ranks, with the roots rotating and the
 * taking ranks pausing now and then, hundreds of broadcasts and reduces in a row give exact
 * results, and a mix of both in one group still does. With one root throughout, the givers run
 * as far ahead as the notes allow, and every call still gets its own data.
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

/* Call it: a broadcast (even) or a reduce (odd) of 1 to 64 int32 from root it / 2 % n (fixed:
 * `fixed` if not negative), in a group every 7th call. */
static int one_call(tutti_comm_t *c, int it, int n, int me, int fixed)
{
    int root = fixed >= 0 ? fixed : it / 2 % n, count = 1 + it % 64, grouped = it % 7 == 0;
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

/*
 * CALLS calls. Rotating (ahead == 0): call it is one_call's it, a taker being late now and then.
 * Ahead: rank 0 is every call's root, CALLS / 2 broadcasts that it gives, then as many reduces
 * that the others give, the taking ranks late every 25 calls, so the givers fill every note.
 */
static int calls_rank(const struct integ_ctx *ctx, int ahead)
{
    tutti_comm_t *c = NULL;
    if (integ_comm_init(ctx, NULL, &c) != 0) {
        return 1;
    }
    for (int j = 0; j < CALLS; j++) {
        int bcast = j < CALLS / 2, it = !ahead ? j : bcast ? 2 * j : 2 * (j - CALLS / 2) + 1;
        int late = ahead ? j % 25 == 0 && bcast == (ctx->rank != 0) : j % 50 == ctx->rank * 7;
        if (late) { /* a taker that is late: the givers run ahead */
            integ_pause_ms(ahead ? 1 : 2);
        }
        if (one_call(c, it, ctx->nranks, ctx->rank, ahead ? 0 : -1) != 0) {
            return 1;
        }
    }
    ICHECK_OK(tutti_barrier(c, NULL));
    ICHECK_OK(tutti_comm_destroy(c));
    return 0;
}

static int lead_rank(const struct integ_ctx *ctx)
{
    return calls_rank(ctx, 0);
}

static int ahead_rank(const struct integ_ctx *ctx)
{
    return calls_rank(ctx, 1);
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

ParameterizedTestParameters(carried_lead, givers_run_ahead_as_far_as_the_notes_allow)
{
    static int rank_counts[] = {2, 3};
    return cr_make_param_array(int, rank_counts, sizeof(rank_counts) / sizeof(rank_counts[0]));
}

ParameterizedTest(int *n, carried_lead, givers_run_ahead_as_far_as_the_notes_allow, .timeout = 120)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_run_ranks(*n, ahead_rank, NULL, 0);
}
