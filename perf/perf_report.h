/*
 * perf_report.h - what rank 0 prints and saves: the nccl-tests table on stdout (perf_output.c)
 * and the same results as JSON (perf_json.c).
 */
#ifndef TUTTI_PERF_REPORT_H
#define TUTTI_PERF_REPORT_H

#include "tutti_perf.h"

/** One half of a row: the out-of-place or the in-place run. */
struct perf_half {
    int valid; /* 0: not run (in-place all-to-all), printed N/A */
    double time_us, algbw, busbw;
    long long wrong;          /* wrong elements summed over ranks; -1 when not checked */
    struct perf_iters *iters; /* -I 1 with a JSON file: rank 0's per-iteration record */
};

/** One row of the table: a size of one datatype, op and root. */
struct perf_row {
    size_t bytes, count;
    const char *type, *redop;
    int root;
    struct perf_half half[2]; /* [0] out of place, [1] in place */
    int vform;                /* a v form: the two columns below follow */
    size_t moved;             /* bytes of rank 0's blocks (the sum of its counts) */
    size_t padded;            /* nranks x the largest block of any rank, in bytes */
};

/** The run as a whole, for the header, footer and JSON. */
struct perf_summary {
    const char *tool;
    const char *coll; /* the collective's name */
    const struct perf_opts *opts;
    const struct perf_backend *be;
    const struct perf_rank_info *ranks; /* every rank's pid and host, or NULL */
    const struct perf_row *rows;
    size_t nrows;
    int errors;        /* results with wrong elements */
    double avg_busbw;  /* mean busbw over every valid half */
    const char *error; /* a call that failed, or NULL */
    const char *call;  /* the call timed (v-capable collectives), or NULL */
};

/** The version and "Collective test starting" lines, "# nThread ...", the "#  Rank" lines, the
 * lines of `extra` (each "# ...\n"; may be NULL), then the column headers, with "moved" and
 * "padded" at the end when vcols. */
void perf_out_header(const char *tool, const struct perf_backend *be, const struct perf_opts *o,
                     const struct perf_rank_info *ranks, const char *extra, int vcols);

/** A comment line inside the table ("# half: skipped ..."). */
void perf_out_note(const char *msg);

/** The size, count, type, redop and root columns of a row. */
void perf_out_row_start(const struct perf_row *row);

/** time, algbw, busbw and #wrong of one half. */
void perf_out_half(const struct perf_half *h);

/** End of a row: its moved and padded bytes (a v form), then the newline. */
void perf_out_row_end(const struct perf_row *row);

/** "# Out of bounds values" and "# Avg bus bandwidth". */
void perf_out_footer(const struct perf_summary *s);

/** Write the whole run as JSON to path. Returns 0, or -1 after printing why. */
int perf_json_write(const char *path, const struct perf_summary *s);

#endif /* TUTTI_PERF_REPORT_H */
