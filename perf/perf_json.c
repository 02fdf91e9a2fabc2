/*
 * perf_json.c - every result of a run as one JSON document (--json FILE), for scripts such as
 * compare_mpi.sh: the tool, library, ranks and transport, the options, then one object per row
 * with both halves (bytes, count, type, redop, root; time_us, algbw, busbw, wrong), and the
 * footer's totals. A half that did not run is null; "wrong" is null when -c 0.
 */
#include "perf_report.h"
#include "perf_data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A JSON string literal (quotes, backslashes and control characters escaped). */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            fprintf(f, "\\%c", ch);
        } else if (ch < 0x20) {
            fprintf(f, "\\u%04x", ch);
        } else {
            fputc(ch, f);
        }
    }
    fputc('"', f);
}

static void put_half(FILE *f, const char *key, const struct perf_half *h)
{
    fprintf(f, ", \"%s\": ", key);
    if (!h->valid) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"time_us\": %.6g, \"algbw\": %.6g, \"busbw\": %.6g, \"wrong\": ", h->time_us,
            h->algbw, h->busbw);
    if (h->wrong >= 0) {
        fprintf(f, "%lld}", h->wrong);
    } else {
        fprintf(f, "null}");
    }
}

static void put_config(FILE *f, const struct perf_opts *o)
{
    fprintf(f,
            "  \"config\": {\"minbytes\": %zu, \"maxbytes\": %zu, \"stepbytes\": %zu, "
            "\"stepfactor\": %ld, \"iters\": %d, \"warmup_iters\": %d, \"agg_iters\": %d, "
            "\"check\": %d, \"average\": %d, \"halves\": \"%s\"},\n",
            o->min_bytes, o->max_bytes, o->step_bytes, o->step_factor, o->iters, o->warmup,
            o->agg_iters, o->check, o->average,
            o->halves == PERF_HALF_OUT ? "out" : o->halves == PERF_HALF_IN ? "in" : "both");
}

static void put_head(FILE *f, const struct perf_summary *s)
{
    char host[256] = "", date[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    gethostname(host, sizeof(host) - 1);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    fprintf(f, "{\n  \"tool\": ");
    put_str(f, s->tool);
    fprintf(f, ",\n  \"collective\": ");
    put_str(f, s->coll);
    fprintf(f, ",\n  \"library\": ");
    put_str(f, s->be->lib);
    fprintf(f, ",\n  \"version\": ");
    put_str(f, s->be->version);
    fprintf(f, ",\n  \"nranks\": %d,\n  \"transport\": ", s->be->nranks);
    put_str(f, s->be->transport);
    fprintf(f, ",\n  \"host\": ");
    put_str(f, host);
    fprintf(f, ",\n  \"date\": ");
    put_str(f, date);
    fprintf(f, ",\n");
    put_config(f, s->opts);
}

int perf_json_write(const char *path, const struct perf_summary *s)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot write %s: %s\n", s->tool, path, strerror(errno));
        return -1;
    }
    put_head(f, s);
    fprintf(f, "  \"results\": [");
    for (size_t i = 0; i < s->nrows; i++) {
        const struct perf_row *r = &s->rows[i];
        fprintf(f, "%s\n    {\"bytes\": %zu, \"count\": %zu, \"type\": ", i ? "," : "", r->bytes,
                r->count);
        put_str(f, r->type);
        fprintf(f, ", \"redop\": ");
        put_str(f, r->redop);
        fprintf(f, ", \"root\": %d", r->root);
        put_half(f, "out_of_place", &r->half[0]);
        put_half(f, "in_place", &r->half[1]);
        fprintf(f, "}");
    }
    fprintf(f,
            "\n  ],\n  \"out_of_bounds\": %d,\n  \"avg_busbw\": %.6g,\n  \"ok\": %s,\n"
            "  \"error\": ",
            s->errors, s->avg_busbw, s->errors == 0 && s->error == NULL ? "true" : "false");
    if (s->error != NULL) {
        put_str(f, s->error);
    } else {
        fprintf(f, "null");
    }
    fprintf(f, "\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: writing %s: %s\n", s->tool, path, strerror(errno));
        return -1;
    }
    return 0;
}
