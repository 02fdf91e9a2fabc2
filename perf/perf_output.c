/*
 * perf_output.c - the table exactly as nccl-tests prints it: the version line (the tool and the
 * library under test in place of nccl-tests' and NCCL's versions), "# Collective test
 * starting", the "# nThread" line, one
 * "#  Rank" line per rank, the three header lines, one row per size with an out-of-place and an
 * in-place half, and the footer with "# Collective test concluded". The v collectives add a
 * line saying which call runs with which block sizes, and two columns after nccl-tests' own:
 * the bytes moved and what padding every block to the largest would move. Widths follow
 * nccl-tests 2.19 (its getFloatStr: a number is printed with two decimals, fewer when it would not
 * fit the column).
 */
#include "perf_report.h"

#include <stdio.h>

void perf_out_header(const char *tool, const struct perf_backend *be, const struct perf_opts *o,
                     const struct perf_rank_info *ranks, const char *extra, int vcols)
{
    int factor = o->step_factor > 1, nranks = be->nranks;
    printf("# %s of tutti %s, nccl-tests' output; library under test: %s %s\n", tool,
           TUTTI_VERSION_STRING, be->lib, be->version);
    printf("# Collective test starting: %s\n", tool);
    printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
           "iters: %d agg iters: %d validation: %d graph: 0\n",
           o->min_bytes, o->max_bytes, factor ? (size_t)o->step_factor : o->step_bytes,
           factor ? "factor" : "bytes", o->warmup, o->iters, o->agg_iters, o->check);
    printf("#\n# Using devices\n");
    for (int r = 0; r < nranks; r++) {
        printf("#  Rank %2d Group %2d Pid %6d on %10s device %s\n", r, 0, ranks[r].pid,
               ranks[r].host, o->device ? "GPU memory (--memory device)" : "host memory");
    }
    printf("#\n%s", extra != NULL ? extra : "");
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place    "
           "      %s\n",
           "", "", "", "", "", vcols ? "      per rank" : "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong");
    printf(vcols ? "  %12s  %12s\n" : "%.0s%.0s\n", "moved", "padded");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
           "");
    printf(vcols ? "  %12s  %12s\n" : "%.0s%.0s\n", "(B)", "(B)");
    fflush(stdout);
}

void perf_out_note(const char *msg)
{
    printf("# %s\n", msg);
}

void perf_out_row_start(const struct perf_row *row)
{
    printf("%12zu  %12zu  %8s  %6s  %6d", row->bytes, row->count, row->type, row->redop, row->root);
}

/* A number in exactly `width` characters: 2 decimals, then 1, then 0, then exponent form. */
static void fit(double v, int width, char *buf, size_t len)
{
    static const char *const fmts[] = {"%*.2f", "%*.1f", "%*.0f"}; /* constant table */
    for (int i = 0; i < 3; i++) {
        if (snprintf(buf, len, fmts[i], width, v) <= width) {
            return;
        }
    }
    snprintf(buf, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

void perf_out_half(const struct perf_half *h)
{
    char t[32], a[32], b[32];
    if (!h->valid) {
        printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
        return;
    }
    fit(h->time_us, 7, t, sizeof(t));
    fit(h->algbw, 6, a, sizeof(a));
    fit(h->busbw, 6, b, sizeof(b));
    if (h->wrong >= 0) {
        printf("  %7s  %6s  %6s  %6g", t, a, b, (double)h->wrong);
    } else {
        printf("  %7s  %6s  %6s    N/A", t, a, b);
    }
}

void perf_out_row_end(const struct perf_row *row)
{
    if (row->vform) {
        printf("  %12zu  %12zu", row->moved, row->padded);
    }
    printf("\n");
    fflush(stdout);
}

void perf_out_footer(const struct perf_summary *s)
{
    printf("# %-20s : %d %s\n", "Out of bounds values", s->errors, s->errors ? "FAILED" : "OK");
    printf("# %-20s : %g \n", "Avg bus bandwidth", s->avg_busbw);
    printf("#\n");
    printf("# Collective test concluded: %s\n", s->tool);
    fflush(stdout);
}
