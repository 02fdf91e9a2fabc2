/*
 * json_out.c - the tools' JSON writer (json_out.h).
 */
#include "json_out.h"

#include <math.h>

void json_out_init(struct json_out *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->after_key = 0;
}

/* The innermost container's level, or -1 at the top. */
static int level(const struct json_out *j)
{
    return (j->depth < JSON_OUT_DEPTH ? j->depth : JSON_OUT_DEPTH) - 1;
}

/* Before a member of the innermost container (a key, or a list's value): comma, line break. */
static void member(struct json_out *j)
{
    int d = level(j);
    if (d < 0) {
        return;
    }
    if (j->any[d]) {
        fputs(j->inline_[d] ? ", " : ",", j->f);
    }
    if (!j->inline_[d]) {
        fprintf(j->f, "\n%*s", 2 * j->depth, "");
    }
    j->any[d] = 1;
}

/* Before a value: a list's member, or what follows a key. */
static void value(struct json_out *j)
{
    if (j->after_key) {
        j->after_key = 0;
    } else {
        member(j);
    }
}

static void open_container(struct json_out *j, char open, char close, int inline_)
{
    value(j);
    fputc(open, j->f);
    int outer = level(j);
    j->depth++;
    int d = level(j);
    j->close[d] = close;
    j->inline_[d] = (unsigned char)(inline_ || (outer >= 0 && j->inline_[outer]));
    j->any[d] = 0;
}

void json_obj(struct json_out *j, int inline_)
{
    open_container(j, '{', '}', inline_);
}

void json_list(struct json_out *j, int inline_)
{
    open_container(j, '[', ']', inline_);
}

void json_end(struct json_out *j)
{
    int d = level(j);
    if (d < 0) {
        return;
    }
    if (j->any[d] && !j->inline_[d]) {
        fprintf(j->f, "\n%*s", 2 * (j->depth - 1), "");
    }
    fputc(j->close[d], j->f);
    j->depth--;
    if (j->depth == 0) {
        fputc('\n', j->f);
    }
}

/* A string literal: quotes, backslashes and control characters escaped. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
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

void json_key(struct json_out *j, const char *key)
{
    member(j);
    put_string(j->f, key);
    fputs(": ", j->f);
    j->after_key = 1;
}

void json_str(struct json_out *j, const char *s)
{
    if (s == NULL) {
        json_null(j);
        return;
    }
    value(j);
    put_string(j->f, s);
}

void json_num(struct json_out *j, double v, int digits)
{
    if (!isfinite(v)) {
        json_null(j);
        return;
    }
    value(j);
    fprintf(j->f, "%.*g", digits, v);
}

void json_fixed(struct json_out *j, double v, int decimals)
{
    if (!isfinite(v)) {
        json_null(j);
        return;
    }
    value(j);
    fprintf(j->f, "%.*f", decimals, v);
}

void json_int(struct json_out *j, long long v)
{
    value(j);
    fprintf(j->f, "%lld", v);
}

void json_uint(struct json_out *j, unsigned long long v)
{
    value(j);
    fprintf(j->f, "%llu", v);
}

void json_bool(struct json_out *j, int v)
{
    value(j);
    fputs(v ? "true" : "false", j->f);
}

void json_null(struct json_out *j)
{
    value(j);
    fputs("null", j->f);
}
