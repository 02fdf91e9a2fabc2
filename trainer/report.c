/*
 * report.c - rank 0's output: the header, progress lines, epoch lines, the summary with the
 * checks, and the JSON document (--json) with the same numbers.
 *
 * Times are means over the ranks. "comm" is the time some gradient bucket was in flight during a
 * step; "exposed" is the part of it the training thread waited for (plus precision conversions);
 * overlap = 1 - exposed / comm is the share of communication hidden behind the backward pass.
 */
#include "report.h"
#include "json_out.h"

#include <stdio.h>
#include <string.h>

static double per_step_ms(double s, long steps)
{
    return steps > 0 ? 1e3 * s / (double)steps : 0.0;
}

static double overlap(const struct train_span *s)
{
    if (s->comm_s <= 0.0) {
        return 0.0;
    }
    double f = 1.0 - s->exposed_s / s->comm_s;
    return f < 0.0 ? 0.0 : f;
}

static void model_string(const struct train_opts *o, char *buf, size_t len)
{
    size_t used = 0;
    for (int i = 0; i < o->nsizes && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i > 0 ? "-" : "", o->sizes[i]);
    }
}

void train_report_header(const struct train_report *r)
{
    const struct train_opts *o = r->o;
    char model[128];
    model_string(o, model, sizeof(model));
    printf("%s: %d rank%s, transport %s, MLP %s (%zu parameters), SGD lr %g (%s schedule) "
           "momentum %g\n",
           TRAIN_TOOL, r->nranks, r->nranks == 1 ? "" : "s", r->transport, model, r->nparams,
           (double)o->lr, train_lr_schedule_name(o->lr_schedule), (double)o->momentum);
    printf("  data: %zu train / %zu test samples from %s; global batch %d (%d..%d per rank), "
           "%ld steps per epoch, %d epoch%s%s, seed %llu\n",
           r->ntrain, r->ntest, o->data_dir, o->batch, o->batch / r->nranks,
           (o->batch + r->nranks - 1) / r->nranks, r->steps_per_epoch, o->epochs,
           o->epochs == 1 ? "" : "s", o->max_steps > 0 ? " (or --steps)" : "",
           (unsigned long long)o->seed);
    printf("  gradients: %s all-reduce (sum of 1/batch-scaled shards), %d bucket%s "
           "(cap %zu KiB), each launched as its layers' backward finishes\n",
           train_prec_name(o->prec), r->nbuckets, r->nbuckets == 1 ? "" : "s", o->bucket_kb);
    printf("  device: %s%s%s\n", train_device_name(o->device), r->gpu[0] != '\0' ? ": " : "",
           r->gpu);
}

void train_report_progress(const struct train_report *r, int epoch, long step_in_epoch,
                           const struct train_span *s)
{
    printf(
        "epoch %d step %5ld/%ld  loss %.4f  %8.0f samples/s  step %6.2f ms  comm %6.2f ms  "
        "exposed %6.2f ms  overlap %3.0f%%\n",
        epoch, step_in_epoch, r->steps_per_epoch, s->samples > 0 ? s->loss_sum / s->samples : 0.0,
        s->wall_s > 0 ? s->samples / s->wall_s : 0.0, per_step_ms(s->step_s, s->steps),
        per_step_ms(s->comm_s, s->steps), per_step_ms(s->exposed_s, s->steps), 100.0 * overlap(s));
}

void train_report_epoch(const struct train_report *r, const struct train_epoch *e)
{
    (void)r;
    printf("epoch %d: test accuracy %.2f%% (%zu samples), test loss %.4f, train loss %.4f, "
           "%.2f s\n",
           e->epoch, 100.0 * e->test_acc, e->test_n, e->test_loss, e->train_loss, e->time_s);
}

static const char *verdict(int result)
{
    return result == TRAIN_CHECK_PASS ? "pass" : result == TRAIN_CHECK_FAIL ? "FAILED" : "-";
}

void train_report_summary(const struct train_report *r)
{
    const struct train_span *t = &r->total;
    double step = per_step_ms(t->step_s, t->steps);
    double acc = r->nepochs > 0 ? r->epochs[r->nepochs - 1].test_acc : 0.0;
    printf("summary: %ld steps, %.0f samples in %.2f s (%.0f samples/s); step %.2f ms, "
           "communication %.2f ms (%.1f%% of the step), exposed %.2f ms (%.1f%%), overlap %.0f%%; "
           "final test accuracy %.2f%%\n",
           t->steps, t->samples, t->wall_s, t->wall_s > 0 ? t->samples / t->wall_s : 0.0, step,
           per_step_ms(t->comm_s, t->steps),
           step > 0 ? 100.0 * per_step_ms(t->comm_s, t->steps) / step : 0.0,
           per_step_ms(t->exposed_s, t->steps),
           step > 0 ? 100.0 * per_step_ms(t->exposed_s, t->steps) / step : 0.0, 100.0 * overlap(t),
           100.0 * acc);
    for (int i = 0; i < 3; i++) {
        if (r->o->check) {
            printf("check %d: %s: %s\n", i + 1, verdict(r->check[i].result), r->check[i].detail);
        }
        if (r->check[i].result == TRAIN_CHECK_FAIL) {
            fprintf(stderr, "%s: check %d failed: %s\n", TRAIN_TOOL, i + 1, r->check[i].detail);
        }
    }
    fflush(stdout);
}

static void key_str(struct json_out *j, const char *key, const char *v)
{
    json_key(j, key);
    json_str(j, v);
}

static void key_fixed(struct json_out *j, const char *key, double v, int decimals)
{
    json_key(j, key);
    json_fixed(j, v, decimals);
}

static void key_int(struct json_out *j, const char *key, long long v)
{
    json_key(j, key);
    json_int(j, v);
}

static void json_config(struct json_out *j, const struct train_report *r)
{
    const struct train_opts *o = r->o;
    char model[128];
    model_string(o, model, sizeof(model));
    json_key(j, "config");
    json_obj(j, 1);
    key_int(j, "nranks", r->nranks);
    key_str(j, "transport", r->transport);
    key_str(j, "device", train_device_name(o->device));
    key_str(j, "model", model);
    key_int(j, "parameters", (long long)r->nparams);
    key_int(j, "train_samples", (long long)r->ntrain);
    key_int(j, "test_samples", (long long)r->ntest);
    key_int(j, "global_batch", o->batch);
    key_int(j, "epochs", o->epochs);
    key_int(j, "max_steps", o->max_steps);
    json_key(j, "lr");
    json_num(j, (double)o->lr, 6);
    key_str(j, "lr_schedule", train_lr_schedule_name(o->lr_schedule));
    json_key(j, "momentum");
    json_num(j, (double)o->momentum, 6);
    key_str(j, "precision", train_prec_name(o->prec));
    key_int(j, "buckets", r->nbuckets);
    key_int(j, "bucket_kb", (long long)o->bucket_kb);
    json_key(j, "seed");
    json_uint(j, (unsigned long long)o->seed);
    json_end(j);
}

static void json_summary(struct json_out *j, const struct train_report *r)
{
    const struct train_span *t = &r->total;
    double step = per_step_ms(t->step_s, t->steps);
    json_key(j, "summary");
    json_obj(j, 1);
    key_int(j, "steps", t->steps);
    key_fixed(j, "samples", t->samples, 0);
    key_fixed(j, "time_s", t->wall_s, 4);
    key_fixed(j, "samples_per_s", t->wall_s > 0 ? t->samples / t->wall_s : 0.0, 1);
    key_fixed(j, "step_ms", step, 4);
    key_fixed(j, "comm_ms", per_step_ms(t->comm_s, t->steps), 4);
    key_fixed(j, "exposed_ms", per_step_ms(t->exposed_s, t->steps), 4);
    key_fixed(j, "comm_share", step > 0 ? per_step_ms(t->comm_s, t->steps) / step : 0.0, 4);
    key_fixed(j, "exposed_share", step > 0 ? per_step_ms(t->exposed_s, t->steps) / step : 0.0, 4);
    key_fixed(j, "overlap", overlap(t), 4);
    key_fixed(j, "final_test_accuracy", r->nepochs > 0 ? r->epochs[r->nepochs - 1].test_acc : 0.0,
              6);
    json_end(j);
}

/* The report as JSON (src/tools/json_out.c: a diverging loss is null, not "nan"). */
static void json_body(FILE *f, const struct train_report *r)
{
    struct json_out j;
    json_out_init(&j, f);
    json_obj(&j, 0);
    key_str(&j, "tool", TRAIN_TOOL);
    key_str(&j, "tutti_version", TUTTI_VERSION_STRING);
    json_config(&j, r);
    key_str(&j, "gpu", r->gpu);
    json_key(&j, "epochs");
    json_list(&j, 0);
    for (int i = 0; i < r->nepochs; i++) {
        const struct train_epoch *e = &r->epochs[i];
        json_obj(&j, 1);
        key_int(&j, "epoch", e->epoch);
        key_int(&j, "steps", e->steps);
        key_fixed(&j, "train_loss", e->train_loss, 6);
        key_fixed(&j, "test_accuracy", e->test_acc, 6);
        key_fixed(&j, "test_loss", e->test_loss, 6);
        key_fixed(&j, "time_s", e->time_s, 4);
        json_end(&j);
    }
    json_end(&j);
    json_summary(&j, r);
    json_key(&j, "checks");
    json_list(&j, 0);
    for (int i = 0; i < 3; i++) {
        json_obj(&j, 1);
        key_int(&j, "check", i + 1);
        key_str(&j, "result",
                r->check[i].result == TRAIN_CHECK_PASS   ? "pass"
                : r->check[i].result == TRAIN_CHECK_FAIL ? "fail"
                                                         : "not run");
        json_key(&j, "value");
        json_num(&j, r->check[i].value, 6);
        json_key(&j, "limit");
        json_num(&j, r->check[i].limit, 6);
        key_str(&j, "detail", r->check[i].detail);
        json_end(&j);
    }
    json_end(&j);
    json_end(&j);
}

int train_report_json(const struct train_report *r, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    json_body(f, r);
    int bad = ferror(f);
    if (f != stdout) {
        bad |= fclose(f) != 0;
    } else {
        fflush(f);
    }
    if (bad) {
        fprintf(stderr, "%s: writing %s failed\n", TRAIN_TOOL, path);
        return -1;
    }
    return 0;
}
