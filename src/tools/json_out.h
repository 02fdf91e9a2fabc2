/*
 * json_out.h - the one JSON writer of the tools (perf/ --json, tutti-train --json): containers,
 * keys, commas and escapes are its business, so no caller writes JSON by hand. A number that
 * is not finite (a diverging loss, a time that never ran) is written as null, which every
 * parser reads; printf's "nan" and "-nan" are not JSON.
 *
 * A container opened "inline" keeps its members on one line; otherwise each member starts a
 * new line, indented two spaces a level.
 */
#ifndef TUTTI_JSON_OUT_H
#define TUTTI_JSON_OUT_H

#include <stdio.h>

#define JSON_OUT_DEPTH 16

struct json_out {
    FILE *f;
    int depth;
    int after_key;                         /* the next value follows a key */
    char close[JSON_OUT_DEPTH];            /* per open container: '}' or ']' */
    unsigned char inline_[JSON_OUT_DEPTH]; /* its members stay on one line */
    unsigned char any[JSON_OUT_DEPTH];     /* a member was written */
};

void json_out_init(struct json_out *j, FILE *f);

void json_obj(struct json_out *j, int inline_);
void json_list(struct json_out *j, int inline_);
/** Close the innermost container; at depth 0 a newline ends the document. */
void json_end(struct json_out *j);

void json_key(struct json_out *j, const char *key);
void json_str(struct json_out *j, const char *s); /* NULL: null */
/** printf's %.*g with `digits` significant digits; not finite: null. */
void json_num(struct json_out *j, double v, int digits);
/** printf's %.*f with `decimals` decimals; not finite: null. */
void json_fixed(struct json_out *j, double v, int decimals);
void json_int(struct json_out *j, long long v);
void json_uint(struct json_out *j, unsigned long long v);
void json_bool(struct json_out *j, int v);
void json_null(struct json_out *j);

#endif /* TUTTI_JSON_OUT_H */
