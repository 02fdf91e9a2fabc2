/*
 * perf_json.c - every result of a run as one JSON document (--json FILE, or -J as nccl-tests
 * spells it). nccl-tests' keys, so that its tools (tools/analyze_perf_json.py) read it: "size",
 * "out_of_place"/"in_place" with "time", "alg_bw", "bus_bw", "nwrong", "config" with
 * "iterations" and the rest, "devices", and with -I 1 the per-iteration records
 * "out_of_place_per_iter"/"in_place_per_iter" (perf_iters.c). Beside them tutti's own, which
 * the scripts of perf/ read: the tool, library, ranks and transport, "bytes", "time_us",
 * "algbw", "busbw", "wrong", the totals ("out_of_bounds" a count, "avg_busbw", "ok", "error").
 * A half that did not run is null; "wrong" and "nwrong" are null when -c 0. The v collectives
 * add "call" (what was timed), "skew" in "config", and per row "moved_bytes" and
 * "padded_bytes". Written with src/tools/json_out.c: a value that is not finite is null.
 */
#include "perf_report.h"
#include "perf_data.h"
#include "perf_iters.h"
#include "perf_vcounts.h"
#include "json_out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void put_half(struct json_out *j, const char *key, const struct perf_half *h)
{
    /* nccl-tests' names, then tutti's */
    static const char *const names[2][4] = {{"time", "alg_bw", "bus_bw", "nwrong"},
                                            {"time_us", "algbw", "busbw", "wrong"}};
    json_key(j, key);
    if (!h->valid) {
        json_null(j);
        return;
    }
    json_obj(j, 1);
    for (int n = 0; n < 2; n++) {
        const double v[3] = {h->time_us, h->algbw, h->busbw};
        for (int k = 0; k < 3; k++) {
            json_key(j, names[n][k]);
            json_num(j, v[k], 6);
        }
        json_key(j, names[n][3]);
        h->wrong >= 0 ? json_int(j, h->wrong) : json_null(j);
    }
    json_end(j);
}

static void put_config(struct json_out *j, const struct perf_opts *o)
{
    json_key(j, "config");
    json_obj(j, 1);
    json_key(j, "nthreads");
    json_int(j, 1);
    json_key(j, "ngpus");
    json_int(j, 1);
    json_key(j, "minimum_bytes");
    json_uint(j, o->min_bytes);
    json_key(j, "maximum_bytes");
    json_uint(j, o->max_bytes);
    json_key(j, o->step_factor > 1 ? "step_factor" : "step_bytes");
    json_uint(j, o->step_factor > 1 ? (unsigned long long)o->step_factor : o->step_bytes);
    json_key(j, "warmup_iters");
    json_int(j, o->warmup);
    json_key(j, "iterations");
    json_int(j, o->iters);
    json_key(j, "aggregated_iterations");
    json_int(j, o->agg_iters);
    json_key(j, "validation");
    json_int(j, o->check);
    json_key(j, "per_iter_timing");
    json_bool(j, o->per_iter);
    /* tutti's names, as its scripts read them */
    json_key(j, "minbytes");
    json_uint(j, o->min_bytes);
    json_key(j, "maxbytes");
    json_uint(j, o->max_bytes);
    json_key(j, "stepbytes");
    json_uint(j, o->step_bytes);
    json_key(j, "stepfactor");
    json_int(j, o->step_factor);
    json_key(j, "iters");
    json_int(j, o->iters);
    json_key(j, "agg_iters");
    json_int(j, o->agg_iters);
    json_key(j, "check");
    json_int(j, o->check);
    json_key(j, "average");
    json_int(j, o->average);
    json_key(j, "halves");
    json_str(j, o->halves == PERF_HALF_OUT ? "out" : o->halves == PERF_HALF_IN ? "in" : "both");
    json_key(j, "skew");
    json_str(j, perf_skew_name(o->skew));
    if (o->skew == PERF_SKEW_ZIPF) {
        json_key(j, "zipf_exponent");
        json_num(j, o->zipf_s, 6);
    }
    json_end(j);
}

static void put_devices(struct json_out *j, const struct perf_summary *s)
{
    json_key(j, "devices");
    json_list(j, 0);
    for (int r = 0; s->ranks != NULL && r < s->be->nranks; r++) {
        json_obj(j, 1);
        json_key(j, "rank");
        json_int(j, r);
        json_key(j, "group");
        json_int(j, 0);
        json_key(j, "pid");
        json_int(j, s->ranks[r].pid);
        json_key(j, "hostname");
        json_str(j, s->ranks[r].host);
        json_key(j, "device");
        json_int(j, -1);
        json_key(j, "device_info");
        json_str(j, s->opts->device ? "device memory" : "host memory");
        json_end(j);
    }
    json_end(j);
}

static void put_head(struct json_out *j, const struct perf_summary *s)
{
    char host[256] = "", date[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    gethostname(host, sizeof(host) - 1);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    json_key(j, "tool");
    json_str(j, s->tool);
    json_key(j, "collective");
    json_str(j, s->coll);
    json_key(j, "library");
    json_str(j, s->be->lib);
    json_key(j, "version");
    json_str(j, s->be->version);
    json_key(j, "nranks");
    json_int(j, s->be->nranks);
    json_key(j, "transport");
    json_str(j, s->be->transport);
    if (s->call != NULL) {
        json_key(j, "call");
        json_str(j, s->call);
    }
    json_key(j, "host");
    json_str(j, host);
    json_key(j, "date");
    json_str(j, date);
    put_config(j, s->opts);
    put_devices(j, s);
}

static void put_row(struct json_out *j, const struct perf_row *r, const struct perf_opts *o)
{
    json_obj(j, 1);
    json_key(j, "size");
    json_uint(j, r->bytes);
    json_key(j, "bytes");
    json_uint(j, r->bytes);
    json_key(j, "count");
    json_uint(j, r->count);
    json_key(j, "type");
    json_str(j, r->type);
    json_key(j, "redop");
    json_str(j, r->redop);
    json_key(j, "root");
    json_int(j, r->root);
    if (r->vform) {
        json_key(j, "moved_bytes");
        json_uint(j, r->moved);
        json_key(j, "padded_bytes");
        json_uint(j, r->padded);
    }
    put_half(j, "out_of_place", &r->half[0]);
    put_half(j, "in_place", &r->half[1]);
    for (int h = 0; h < 2 && o->per_iter; h++) {
        if (r->half[h].valid && r->half[h].iters != NULL) {
            perf_iters_json(j, h == 0 ? "out_of_place_per_iter" : "in_place_per_iter",
                            r->half[h].iters);
        }
    }
    json_key(j, "actual_iterations");
    json_int(j, o->iters);
    json_end(j);
}

int perf_json_write(const char *path, const struct perf_summary *s)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot write %s: %s\n", s->tool, path, strerror(errno));
        return -1;
    }
    struct json_out j;
    json_out_init(&j, f);
    json_obj(&j, 0);
    put_head(&j, s);
    json_key(&j, "results");
    json_list(&j, 0);
    for (size_t i = 0; i < s->nrows; i++) {
        put_row(&j, &s->rows[i], s->opts);
    }
    json_end(&j);
    json_key(&j, "out_of_bounds");
    json_int(&j, s->errors);
    json_key(&j, "avg_busbw");
    json_num(&j, s->avg_busbw, 6);
    json_key(&j, "average_bus_bandwidth");
    json_obj(&j, 1);
    json_key(&j, "bandwidth");
    json_num(&j, s->avg_busbw, 6);
    json_key(&j, "okay");
    json_str(&j, "unchecked");
    json_end(&j);
    json_key(&j, "ok");
    json_bool(&j, s->errors == 0 && s->error == NULL);
    json_key(&j, "error");
    json_str(&j, s->error);
    json_end(&j);
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: writing %s: %s\n", s->tool, path, strerror(errno));
        return -1;
    }
    return 0;
}
