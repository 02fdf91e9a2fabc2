/*
 * params.c - NCCL 2.32's parameter API over tutti's environment table (src/base/env.h): every
 * TUTTI_* variable is a parameter under its own name, and every NCCL_* variable the shim reads
 * in its place (nccl_env.c) is one under the NCCL name, with the tutti value in effect (so
 * NCCL_DEBUG reads TUTTI_LOG_LEVEL, as tutti spells it). Values are what tutti read once at
 * first use: ncclParamBind finds a parameter, it sets nothing (the environment is not read
 * again). Typed reads check the type (a string is read only as a string) and the range of the
 * integer asked for; raw reads give 8 bytes for a number (int64 / uint64; durations in
 * nanoseconds) and the string with its terminating NUL.
 */
#include "shim.h"
#include "base/env.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A parameter: its key and tutti's table entry. The handles below are the library's. */
struct ncclParamHandle {
    char key[48];
    int index;       /* in tutti__env_table() */
    const char *via; /* NCCL keys: the NCCL name's own (NULL for TUTTI_* keys) */
};

/* The offset of each table entry's value in struct tutti_env, in table order. */
static const size_t field_off[] = {
#define PARAM_OFF_(name, type, def, lo, hi, help) offsetof(struct tutti_env, name),
    TUTTI_ENV_VARS(PARAM_OFF_)
#undef PARAM_OFF_
};
#define NTUTTI ((int)(sizeof(field_off) / sizeof(field_off[0])))
#define NMAX   (NTUTTI + 32)

/*
 * Every parameter's handle, made once (pthread_once) and never changed after: the API hands
 * out pointers to them. Process-wide on purpose: a handle is valid for the life of the process.
 */
static struct ncclParamHandle handles[NMAX];
static const char *keys[NMAX];
static int nhandles;

static void make_handles(void)
{
    int n = 0;
    const struct tutti_env_desc *d = tutti__env_table(&n);
    for (int i = 0; i < n && nhandles < NMAX; i++) {
        struct ncclParamHandle *h = &handles[nhandles++];
        snprintf(h->key, sizeof(h->key), "TUTTI_%s", d[i].name);
        h->index = i;
    }
    const char *nccl, *tutti;
    for (int i = 0; shim_env_nccl_var(i, &nccl, &tutti) && nhandles < NMAX; i++) {
        struct ncclParamHandle *h = &handles[nhandles];
        h->index = tutti__env_index(tutti);
        if (h->index >= 0) {
            snprintf(h->key, sizeof(h->key), "%s", nccl);
            h->via = nccl;
            nhandles++;
        }
    }
    for (int i = 0; i < nhandles; i++) {
        keys[i] = handles[i].key;
    }
}

static void handles_ready(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* the handles are made once */
    pthread_once(&once, make_handles);
}

static struct ncclParamHandle *find(const char *key)
{
    handles_ready();
    for (int i = 0; i < nhandles; i++) {
        if (strcmp(handles[i].key, key) == 0) {
            return &handles[i];
        }
    }
    return NULL;
}

/* Is h one of the handles? (A handle from elsewhere is refused, not read.) */
static int valid(const struct ncclParamHandle *h)
{
    handles_ready();
    return h != NULL && h >= handles && h < handles + nhandles;
}

static const struct tutti_env_desc *desc_of(const struct ncclParamHandle *h)
{
    int n = 0;
    return &tutti__env_table(&n)[h->index];
}

static const void *value_of(const struct ncclParamHandle *h)
{
    return (const char *)tutti__env() + field_off[h->index];
}

static const char *type_name(tutti_env_type_t t)
{
    return t == TUTTI_ENV_INT        ? "integer"
           : t == TUTTI_ENV_SIZE     ? "size in bytes"
           : t == TUTTI_ENV_DURATION ? "duration in nanoseconds"
                                     : "string";
}

/* The value as text (numbers in bytes and nanoseconds, as ncclParamGet gives them). */
static void text_of(const struct ncclParamHandle *h, char *buf, size_t len)
{
    const void *v = value_of(h);
    switch (desc_of(h)->type) {
    case TUTTI_ENV_STRING: {
        const char *s = *(const char *const *)v;
        snprintf(buf, len, "%s", s != NULL ? s : "");
        break;
    }
    case TUTTI_ENV_INT:
        snprintf(buf, len, "%ld", *(const long *)v);
        break;
    case TUTTI_ENV_SIZE:
        snprintf(buf, len, "%zu", *(const size_t *)v);
        break;
    case TUTTI_ENV_DURATION:
        snprintf(buf, len, "%" PRId64, *(const int64_t *)v);
        break;
    }
}

NCCL_API(ncclResult_t, ParamBind, ncclParamHandle_t *out, const char *key)
{
    if (out == NULL || key == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclParamBind: %s is NULL",
                          out == NULL ? "out" : "key");
    }
    struct ncclParamHandle *h = find(key);
    if (h == NULL) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclParamBind: no parameter '%.60s': tutti has its TUTTI_* variables "
                          "(tutti-info --env) and the NCCL_* ones it reads in their place "
                          "(ncclParamGetAllParameterKeys lists both)",
                          key);
    }
    *out = h;
    return ncclSuccess;
}

/*
 * The integer value of h if it lies in lo..hi (a signed target) or 0..uhi (unsigned: lo is 0),
 * as *s_p and *u_p. A string, or a value outside the target's range, is refused naming both.
 */
static ncclResult_t read_int(ncclParamHandle_t h, const char *what, int64_t lo, uint64_t hi,
                             int64_t *s_p, uint64_t *u_p)
{
    if (!valid(h)) {
        return shim_error(NULL, ncclInvalidArgument, "%s: %p is not a handle of ncclParamBind",
                          what, (void *)h);
    }
    const void *v = value_of(h);
    tutti_env_type_t t = desc_of(h)->type;
    if (t == TUTTI_ENV_STRING) {
        return shim_error(NULL, ncclInvalidArgument,
                          "%s: %s is a string: read it with ncclParamGetStr", what, h->key);
    }
    int neg = 0;
    uint64_t mag = 0;
    if (t == TUTTI_ENV_SIZE) {
        mag = *(const size_t *)v;
    } else {
        int64_t s = t == TUTTI_ENV_INT ? (int64_t) * (const long *)v : *(const int64_t *)v;
        neg = s < 0;
        mag = neg ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
    }
    if ((neg && (lo == 0 || mag > (uint64_t)(-(lo + 1)) + 1)) || (!neg && mag > hi)) {
        char text[64];
        text_of(h, text, sizeof(text));
        return shim_error(NULL, ncclInvalidArgument,
                          "%s: %s is %s (a %s), out of the range %" PRId64 "..%" PRIu64, what,
                          h->key, text, type_name(t), lo, hi);
    }
    *u_p = mag;
    *s_p = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return ncclSuccess;
}

#define PARAM_GET_INT(suffix, type, lo, hi, is_signed)                                             \
    NCCL_API(ncclResult_t, ParamGet##suffix, ncclParamHandle_t h, type *out)                       \
    {                                                                                              \
        int64_t s = 0;                                                                             \
        uint64_t u = 0;                                                                            \
        if (out == NULL) {                                                                         \
            return shim_error(NULL, ncclInvalidArgument, "ncclParamGet" #suffix ": out is NULL");  \
        }                                                                                          \
        ncclResult_t r = read_int(h, "ncclParamGet" #suffix, lo, hi, &s, &u);                      \
        if (r == ncclSuccess) {                                                                    \
            *out = is_signed ? (type)s : (type)u;                                                  \
        }                                                                                          \
        return r;                                                                                  \
    }

PARAM_GET_INT(I8, int8_t, INT8_MIN, INT8_MAX, 1)
PARAM_GET_INT(I16, int16_t, INT16_MIN, INT16_MAX, 1)
PARAM_GET_INT(I32, int32_t, INT32_MIN, INT32_MAX, 1)
PARAM_GET_INT(I64, int64_t, INT64_MIN, INT64_MAX, 1)
PARAM_GET_INT(U8, uint8_t, 0, UINT8_MAX, 0)
PARAM_GET_INT(U16, uint16_t, 0, UINT16_MAX, 0)
PARAM_GET_INT(U32, uint32_t, 0, UINT32_MAX, 0)
PARAM_GET_INT(U64, uint64_t, 0, UINT64_MAX, 0)

/* The calling thread's last string of ncclParamGetStr and of ncclParamGetParameter: each valid
 * until the same call on the same thread (NCCL's rule), per thread so threads do not race. */
static _Thread_local char str_buf[512];
static _Thread_local char param_buf[512];

NCCL_API(ncclResult_t, ParamGetStr, ncclParamHandle_t h, const char **out)
{
    if (out == NULL || !valid(h)) {
        return shim_error(NULL, ncclInvalidArgument, "ncclParamGetStr: %s",
                          out == NULL ? "out is NULL" : "not a handle of ncclParamBind");
    }
    if (desc_of(h)->type != TUTTI_ENV_STRING) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclParamGetStr: %s is a %s: read it with ncclParamGetI64/U64 or as "
                          "text with ncclParamGetParameter",
                          h->key, type_name(desc_of(h)->type));
    }
    text_of(h, str_buf, sizeof(str_buf));
    *out = str_buf;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ParamGet, ncclParamHandle_t h, void *out, int maxLen, int *len)
{
    if (out == NULL || len == NULL || !valid(h)) {
        return shim_error(NULL, ncclInvalidArgument, "ncclParamGet: %s",
                          out == NULL   ? "out is NULL"
                          : len == NULL ? "len is NULL"
                                        : "not a handle of ncclParamBind");
    }
    const void *v = value_of(h);
    const void *src = v;
    size_t need = 8;
    int64_t s = 0;
    tutti_env_type_t t = desc_of(h)->type;
    if (t == TUTTI_ENV_STRING) {
        src = *(const char *const *)v != NULL ? *(const char *const *)v : "";
        need = strlen(src) + 1;
    } else if (t == TUTTI_ENV_INT) {
        s = *(const long *)v;
        src = &s;
    }
    if (maxLen < 0 || (size_t)maxLen < need) {
        return shim_error(NULL, ncclInvalidArgument,
                          "ncclParamGet: %s needs %zu bytes, maxLen is %d", h->key, need, maxLen);
    }
    memcpy(out, src, need);
    *len = (int)need;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ParamGetParameter, const char *key, const char **value, int *valueLen)
{
    if (key == NULL || value == NULL || valueLen == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclParamGetParameter: %s is NULL",
                          key == NULL     ? "key"
                          : value == NULL ? "value"
                                          : "valueLen");
    }
    const struct ncclParamHandle *h = find(key);
    if (h == NULL) {
        return shim_error(
            NULL, ncclInvalidArgument,
            "ncclParamGetParameter: no parameter '%.60s' (ncclParamGetAllParameterKeys "
            "lists them)",
            key);
    }
    text_of(h, param_buf, sizeof(param_buf));
    *value = param_buf;
    *valueLen = (int)strlen(param_buf);
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ParamGetAllParameterKeys, const char ***table, int *tableLen)
{
    static _Thread_local const char *copy[NMAX]; /* the caller's table, until its next call */
    if (table == NULL || tableLen == NULL) {
        return shim_error(NULL, ncclInvalidArgument, "ncclParamGetAllParameterKeys: %s is NULL",
                          table == NULL ? "table" : "tableLen");
    }
    handles_ready();
    memcpy(copy, keys, (size_t)nhandles * sizeof(keys[0]));
    *table = copy;
    *tableLen = nhandles;
    return ncclSuccess;
}

/* Every parameter to standard output, as NCCL prints its registry: name, type, value, where
 * the value came from, the default and the meaning. tutti has no private parameters: all are
 * listed (NCCL_PARAM_DUMP_ALL changes nothing). */
NCCL_API(void, ParamDumpAll, void)
{
    handles_ready();
    printf("=== tutti parameters (ncclParamDumpAll, NCCL shim) ===\n");
    for (int i = 0; i < nhandles; i++) {
        const struct ncclParamHandle *h = &handles[i];
        const struct tutti_env_desc *d = desc_of(h);
        char text[256], tname[64];
        text_of(h, text, sizeof(text));
        snprintf(tname, sizeof(tname), "TUTTI_%s", d->name);
        const char *by = !tutti__env_is_set(d->name)         ? NULL
                         : tutti__env_foreign(tname) != NULL ? tname
                                                             : "an NCCL_* variable";
        char from[160];
        snprintf(from, sizeof(from), "%s%s", by != NULL ? "set by " : "unset",
                 by != NULL ? by : "");
        if (h->via != NULL) {
            printf("%s (%s, read as %s) = %s [%s]\n", h->key, type_name(d->type), tname, text,
                   from);
        } else {
            printf("%s (%s) = %s [%s; default %s%s%s%s%s] %s\n", h->key, type_name(d->type), text,
                   from, d->def[0] != '\0' ? d->def : "\"\"", d->lo[0] != '\0' ? ", range " : "",
                   d->lo, d->lo[0] != '\0' ? " to " : "", d->hi, d->help);
        }
    }
    fflush(stdout);
}
