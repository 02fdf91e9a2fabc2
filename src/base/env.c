/*
 * env.c - the only place that reads the process environment.
 *
 * Parses the TUTTI_ENV_VARS table once (pthread_once) into a const struct tutti_env, checks every
 * number against its range, keeps what is malformed or out of range for tutti__env_check() (the
 * error every creating call returns), warns about unknown TUTTI_* names, and offers
 * tutti__env_foreign() for the variables that launchers set (RANK, SLURM_PROCID, ...).
 */
#include "base/env.h"
#include "base/check.h"
#include "base/global.h"
#include "base/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const struct tutti_env_desc env_table[] = {
#define TUTTI_ENV_DESC_(name, type, def, lo, hi, help) {#name, TUTTI_ENV_##type, def, lo, hi, help},
    TUTTI_ENV_VARS(TUTTI_ENV_DESC_)
#undef TUTTI_ENV_DESC_
};
#define ENV_COUNT ((int)(sizeof(env_table) / sizeof(env_table[0])))

_Static_assert(sizeof(env_table) / sizeof(env_table[0]) <= 64, "set_mask holds 64 bits");

int tutti__parse_long(const char *s, long *out_p)
{
    char *end = NULL;
    errno = 0;
    /* Base 10: base 0 read "010" as 8 and "0x10" as 16, which nobody writing a rank means. */
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s) {
        return -1;
    }
    while (isspace((unsigned char)*end)) {
        end++;
    }
    if (*end != '\0') {
        return -1;
    }
    *out_p = v;
    return 0;
}

/* Sizes and durations have one spelling each (issue 36): decimal digits, then a unit, nothing
 * else: no white space, sign, hexadecimal, exponent, "inf" or "nan" (strtoull and strtod take
 * all of those), so a value means what it reads as everywhere. digits() reads the leading run
 * of decimal digits; *n_p counts them. */
static unsigned long long digits(const char **s_p, int *n_p, int *overflow_p)
{
    unsigned long long v = 0;
    int n = 0;
    for (const char *s = *s_p; *s >= '0' && *s <= '9'; s++, n++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (ULLONG_MAX - d) / 10) {
            *overflow_p = 1;
        }
        v = v * 10 + d;
    }
    *s_p += n;
    *n_p = n;
    return v;
}

/* A size: digits, then k, m, g or t (either case, binary), then nothing, "B" or "iB"; or
 * digits and "B". A lowercase "b" is refused: "kb" reads as kilobits. */
int tutti__parse_size(const char *s, size_t *out_p)
{
    int n = 0, overflow = 0;
    unsigned long long v = digits(&s, &n, &overflow);
    if (n == 0 || overflow) {
        return -1;
    }
    static const char units[] = "kmgt";
    const char *u = *s != '\0' ? strchr(units, tolower((unsigned char)*s)) : NULL;
    unsigned long long mul = 1;
    if (u != NULL) {
        mul = 1ull << (10 * (1 + (u - units)));
        s++;
        if (*s == 'i') {
            s++;
            if (*s != 'B') {
                return -1; /* "ki" alone */
            }
        }
    }
    if (*s == 'B') {
        s++;
    }
    if (*s != '\0' || (v != 0 && mul > ULLONG_MAX / v) || v * mul > SIZE_MAX) {
        return -1;
    }
    *out_p = (size_t)(v * mul);
    return 0;
}

/* A duration: digits, optionally a point and more digits, then ns, us, ms, s, m, min or h (a
 * bare number is seconds). */
int tutti__parse_duration_ns(const char *s, int64_t *out_p)
{
    int n = 0, overflow = 0;
    double v = (double)digits(&s, &n, &overflow);
    if (n == 0 || overflow) {
        return -1;
    }
    if (*s == '.') {
        s++;
        /* the fraction digit by digit: strtod would read the point of the caller's locale */
        double place = 0.1;
        for (n = 0; *s >= '0' && *s <= '9'; s++, n++, place /= 10) {
            v += (*s - '0') * place;
        }
        if (n == 0) {
            return -1; /* "1." */
        }
    }
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6},   {"s", 1e9},
                 {"", 1e9},   {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(s, units[i].unit) == 0) {
            double ns = v * units[i].ns;
            if (!(ns <= (double)INT64_MAX / 2)) {
                return -1;
            }
            *out_p = (int64_t)(ns + 0.5); /* "2.3ms": 2299999.9999999995 is 2300000 */
            return 0;
        }
    }
    return -1;
}

/* Parse one value into its field; returns 0 on success. */
static int parse_value(const struct tutti_env_desc *d, const char *s, void *field)
{
    switch (d->type) {
    case TUTTI_ENV_STRING:
        *(const char **)field = s;
        return 0;
    case TUTTI_ENV_INT:
        return tutti__parse_long(s, (long *)field);
    case TUTTI_ENV_SIZE:
        return tutti__parse_size(s, (size_t *)field);
    case TUTTI_ENV_DURATION:
        return tutti__parse_duration_ns(s, (int64_t *)field);
    }
    return -1;
}

static void *field_of(struct tutti_env *env, int i)
{
    int k = 0;
#define TUTTI_ENV_FIELD_PTR_(name, type, def, lo, hi, help)                                        \
    if (k++ == i) {                                                                                \
        return &env->name;                                                                         \
    }
    TUTTI_ENV_VARS(TUTTI_ENV_FIELD_PTR_)
#undef TUTTI_ENV_FIELD_PTR_
    return NULL;
}

int tutti__env_index(const char *name)
{
    for (int i = 0; i < ENV_COUNT; i++) {
        if (strcmp(env_table[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

/* Warn about TUTTI_* variables that are not in the table (a typo would silently do nothing). */
static void warn_unknown(void)
{
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "TUTTI_", 6) != 0) {
            continue;
        }
        const char *eq = strchr(*e, '=');
        size_t len = eq != NULL ? (size_t)(eq - *e) - 6 : strlen(*e) - 6;
        char name[64];
        if (len >= sizeof(name)) {
            len = sizeof(name) - 1;
        }
        memcpy(name, *e + 6, len);
        name[len] = '\0';
        if (tutti__env_index(name) < 0) {
            tutti_warn(
                "unknown environment variable TUTTI_%s ignored (tutti-info --env lists them)",
                name);
        }
    }
}

/* Is the parsed value in [d->lo, d->hi]? (The bounds parse as the value does: a bound that does
 * not is a bug in the table, which the unit tests catch.) */
static int in_range(const struct tutti_env_desc *d, const void *field)
{
    switch (d->type) {
    case TUTTI_ENV_INT: {
        long v = *(const long *)field, lo = 0, hi = 0;
        return tutti__parse_long(d->lo, &lo) == 0 && tutti__parse_long(d->hi, &hi) == 0 &&
               v >= lo && v <= hi;
    }
    case TUTTI_ENV_SIZE: {
        size_t v = *(const size_t *)field, lo = 0, hi = 0;
        return tutti__parse_size(d->lo, &lo) == 0 && tutti__parse_size(d->hi, &hi) == 0 &&
               v >= lo && v <= hi;
    }
    case TUTTI_ENV_DURATION: {
        int64_t v = *(const int64_t *)field, lo = 0, hi = 0;
        return tutti__parse_duration_ns(d->lo, &lo) == 0 &&
               tutti__parse_duration_ns(d->hi, &hi) == 0 && v >= lo && v <= hi;
    }
    case TUTTI_ENV_STRING:
        return 1;
    }
    return 0;
}

static const char *type_words(tutti_env_type_t t)
{
    switch (t) {
    case TUTTI_ENV_INT:
        return "a decimal integer";
    case TUTTI_ENV_SIZE:
        return "a size (e.g. 4096, 512k, 2m)";
    case TUTTI_ENV_DURATION:
        return "a duration (e.g. 250us, 10ms, 30s, 5m)";
    case TUTTI_ENV_STRING:
        break;
    }
    return "a string";
}

/* Append one problem to tutti__g.env_problem, "; " between them. Each append leaves room for
 * "; ...", which marks, once, that more problems did not fit. */
static void add_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add_problem(const char *fmt, ...)
{
    static const char more[] = "; ...";
    char *buf = tutti__g.env_problem;
    size_t cap = sizeof(tutti__g.env_problem), n = strlen(buf);
    char one[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(one, sizeof(one), fmt, ap);
    va_end(ap);
    if (n + 2 + strlen(one) + sizeof(more) > cap) {
        if (n < 3 || strcmp(buf + n - 3, "...") != 0) {
            strcat(buf, more);
        }
        return;
    }
    snprintf(buf + n, cap - n, "%s%s", n > 0 ? "; " : "", one);
}

static const struct tutti_env_fallback *fallback;

void tutti__env_set_fallback(const struct tutti_env_fallback *fb)
{
    fallback = fb;
}

/* TUTTI_<d->name>'s value from the fallback into field (else the default stays), the variable it
 * came from in why when it does not parse (kept for a warning once logging works). */
static int from_fallback(const struct tutti_env_desc *d, void *field, char *why, size_t len)
{
    char buf[256];
    const char *from = NULL;
    const char *val = fallback->value(d->name, buf, sizeof(buf), &from);
    if (val == NULL) {
        return 0;
    }
    if (d->type == TUTTI_ENV_STRING) {
        /* the table keeps the pointer for the life of the process; buf is ours only now */
        char *copy = strdup(val);
        if (copy == NULL) {
            return 0;
        }
        *(const char **)field = copy;
        return 1;
    }
    if (parse_value(d, val, field) == 0 && in_range(d, field)) {
        return 1;
    }
    (void)parse_value(d, d->def, field);
    size_t n = strlen(why);
    if (d->lo[0] != '\0') {
        snprintf(why + n, len - n, "%s%s value '%.40s' (as TUTTI_%s: %s, %s to %s)", n ? "; " : "",
                 from ? from : "?", val, d->name, type_words(d->type), d->lo, d->hi);
    } else {
        snprintf(why + n, len - n, "%s%s value '%.40s' (as TUTTI_%s: %s)", n ? "; " : "",
                 from ? from : "?", val, d->name, type_words(d->type));
    }
    return 0;
}

/* The secret variables: set to nothing they used to mean "no secret" and the job ran on a key
 * anyone can compute; a secret variable that cannot be used is an error in every launch mode
 * (issue 36 item 5), the unique id's included, since every mode checks the table. */
static int must_not_be_empty(const char *name)
{
    return strcmp(name, "SECRET") == 0 || strcmp(name, "SECRET_FILE") == 0;
}

static void env_parse(void)
{
    struct tutti_env *env = &tutti__g.env;
    char ignored[512] = "";
    for (int i = 0; i < ENV_COUNT; i++) {
        const struct tutti_env_desc *d = &env_table[i];
        void *field = field_of(env, i);
        if (parse_value(d, d->def, field) != 0 || !in_range(d, field)) {
            abort(); /* a default that does not parse or lies outside its range: a table bug */
        }
        char full[80];
        snprintf(full, sizeof(full), "TUTTI_%s", d->name);
        const char *val = getenv(full);
        if (val != NULL && val[0] == '\0' && must_not_be_empty(d->name)) {
            add_problem("%s is set but empty: unset it, or give it the job's secret", full);
            continue;
        }
        if (val == NULL || val[0] == '\0') {
            if (fallback != NULL && from_fallback(d, field, ignored, sizeof(ignored))) {
                env->set_mask |= 1ull << i;
            }
            continue;
        }
        if (parse_value(d, val, field) != 0) {
            add_problem("%s value '%.40s' is not %s", full, val, type_words(d->type));
        } else if (!in_range(d, field)) {
            add_problem("%s value '%.40s' is out of range (%s to %s)", full, val, d->lo, d->hi);
        } else {
            env->set_mask |= 1ull << i;
            continue;
        }
        (void)parse_value(d, d->def, field); /* the default stays; tutti__env_check refuses */
    }
    tutti__g.env_ready = 1;
    /* Warnings go out after the table is complete, because logging itself reads the table. */
    warn_unknown();
    if (ignored[0] != '\0') {
        tutti_warn("ignored: %s", ignored);
    }
    if (fallback != NULL && fallback->after != NULL) {
        fallback->after();
    }
}

tutti_status_t tutti__env_check(void)
{
    (void)tutti__env();
    if (tutti__g.env_problem[0] == '\0') {
        return TUTTI_OK;
    }
    return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                            "%s (tutti-info --env lists every variable with its range)",
                            tutti__g.env_problem);
}

int tutti__env_int_range(const char *name, long *lo_p, long *hi_p)
{
    int i = tutti__env_index(name);
    long lo, hi;
    if (i < 0 || env_table[i].type != TUTTI_ENV_INT ||
        tutti__parse_long(env_table[i].lo, &lo) != 0 ||
        tutti__parse_long(env_table[i].hi, &hi) != 0) {
        return -1;
    }
    *lo_p = lo;
    *hi_p = hi;
    return 0;
}

const struct tutti_env *tutti__env(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* guards the one parse of the table */
    pthread_once(&once, env_parse);
    return &tutti__g.env;
}

const struct tutti_env_desc *tutti__env_table(int *n_p)
{
    *n_p = ENV_COUNT;
    return env_table;
}

int tutti__env_is_set(const char *name)
{
    int i = tutti__env_index(name);
    return i >= 0 && (tutti__env()->set_mask & (1ull << i)) != 0;
}

void tutti__env_foreign_each(const char *prefix,
                             void (*fn)(const char *entry, size_t name_len, void *arg), void *arg)
{
    size_t n = strlen(prefix);
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, prefix, n) == 0) {
            fn(*e, strcspn(*e, "="), arg);
        }
    }
}

const char *tutti__env_foreign(const char *name)
{
    const char *v = getenv(name);
    return (v != NULL && v[0] != '\0') ? v : NULL;
}
