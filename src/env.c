/*
 * env.c - the only place that reads the process environment.
 *
 * Parses the TUTTI_ENV_VARS table once (pthread_once) into a const struct tutti_env, warns about
 * unknown TUTTI_* names and malformed values, and offers tutti__env_foreign() for the variables
 * that launchers set (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, ...).
 */
#include "env.h"
#include "global.h"
#include "log.h"

#include <stdio.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const struct tutti_env_desc env_table[] = {
#define TUTTI_ENV_DESC_(name, type, def, help) {#name, TUTTI_ENV_##type, def, help},
    TUTTI_ENV_VARS(TUTTI_ENV_DESC_)
#undef TUTTI_ENV_DESC_
};
#define ENV_COUNT ((int)(sizeof(env_table) / sizeof(env_table[0])))

_Static_assert(sizeof(env_table) / sizeof(env_table[0]) <= 64, "set_mask holds 64 bits");

int tutti__parse_long(const char *s, long *out_p)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 0);
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

int tutti__parse_size(const char *s, size_t *out_p)
{
    char *end = NULL;
    errno = 0;
    /* strtoull skips white space and then negates "-2" into 2^64 - 2: refuse a sign after
     * the space too (fuzz_env found " -2" read as 18446744073709551614 bytes). */
    const char *digits = s;
    while (isspace((unsigned char)*digits)) {
        digits++;
    }
    if (digits[0] == '-') {
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return -1;
    }
    unsigned long long mul = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k':
        mul = 1ull << 10;
        end++;
        break;
    case 'm':
        mul = 1ull << 20;
        end++;
        break;
    case 'g':
        mul = 1ull << 30;
        end++;
        break;
    case 't':
        mul = 1ull << 40;
        end++;
        break;
    default:
        break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I')) {
        end++; /* "KiB" */
    }
    if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end != '\0' || (v != 0 && mul > ULLONG_MAX / v) || v * mul > SIZE_MAX) {
        return -1;
    }
    *out_p = (size_t)(v * mul);
    return 0;
}

int tutti__parse_duration_ns(const char *s, int64_t *out_p)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !(v >= 0.0)) {
        return -1;
    }
    double mul = 1e9; /* a bare number is seconds */
    if (strcmp(end, "ns") == 0) {
        mul = 1.0;
    } else if (strcmp(end, "us") == 0) {
        mul = 1e3;
    } else if (strcmp(end, "ms") == 0) {
        mul = 1e6;
    } else if (strcmp(end, "s") == 0 || *end == '\0') {
        mul = 1e9;
    } else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0) {
        mul = 60e9;
    } else if (strcmp(end, "h") == 0) {
        mul = 3600e9;
    } else {
        return -1;
    }
    double ns = v * mul;
    if (ns > (double)INT64_MAX / 2) {
        return -1;
    }
    *out_p = (int64_t)ns;
    return 0;
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
#define TUTTI_ENV_FIELD_PTR_(name, type, def, help)                                                \
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
            tutti_warn("unknown environment variable TUTTI_%s ignored (tutti-info --env lists them)",
                       name);
        }
    }
}

static void env_parse(void)
{
    struct tutti_env *env = &tutti__g.env;
    char pending[ENV_COUNT][192];
    int npending = 0;
    for (int i = 0; i < ENV_COUNT; i++) {
        const struct tutti_env_desc *d = &env_table[i];
        void *field = field_of(env, i);
        if (parse_value(d, d->def, field) != 0) {
            abort(); /* a default that does not parse is a bug in the table */
        }
        char full[80];
        snprintf(full, sizeof(full), "TUTTI_%s", d->name);
        const char *val = getenv(full);
        if (val == NULL || val[0] == '\0') {
            continue;
        }
        if (parse_value(d, val, field) != 0) {
            snprintf(pending[npending++], sizeof(pending[0]), "%s value '%.60s' is malformed", full,
                     val);
            (void)parse_value(d, d->def, field);
            continue;
        }
        env->set_mask |= 1ull << i;
    }
    tutti__g.env_ready = 1;
    /* Warnings go out after the table is complete, because logging itself reads the table. */
    for (int i = 0; i < npending; i++) {
        tutti_warn("%s; using the default", pending[i]);
    }
    warn_unknown();
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

const char *tutti__env_foreign(const char *name)
{
    const char *v = getenv(name);
    return (v != NULL && v[0] != '\0') ? v : NULL;
}
