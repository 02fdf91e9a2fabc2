/*
 * ib_hca.c - the TUTTI_IB_HCA parser and matcher (ib_hca.h).
 */
#include "ib_hca.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *why, size_t len, const char *fmt, const char *arg)
{
    snprintf(why, len, fmt, arg);
    return -1;
}

int tutti__ib_hca_parse(const char *spec, struct tutti_ib_hca_spec *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    if (spec == NULL) {
        return 0;
    }
    const char *p = spec;
    if (*p == '^') {
        out->exclude = 1;
        p++;
    }
    if (*p == '=') {
        out->exact = 1;
        p++;
    }
    if (*p == '\0') {
        return out->exclude || out->exact
                   ? bad(why, len, "TUTTI_IB_HCA '%s': no device named", spec)
                   : 0;
    }
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        char item[96];
        if (n == 0 || n >= sizeof(item)) {
            return bad(why, len, "TUTTI_IB_HCA '%s': an empty or overlong entry", spec);
        }
        if (out->n == TUTTI_IB_HCA_MAX) {
            return bad(why, len, "TUTTI_IB_HCA '%s': more than 32 entries", spec);
        }
        memcpy(item, p, n);
        item[n] = '\0';
        char *colon = strchr(item, ':');
        int port = 0;
        if (colon != NULL) {
            char *end = NULL;
            long v = strtol(colon + 1, &end, 10);
            if (colon[1] == '\0' || *end != '\0' || v < 1 || v > 255) {
                return bad(why, len, "TUTTI_IB_HCA: '%s' has a port that is not 1..255", item);
            }
            port = (int)v;
            *colon = '\0';
        }
        if (item[0] == '\0' || strlen(item) >= sizeof(out->e[0].dev)) {
            return bad(why, len, "TUTTI_IB_HCA: '%s' names no device (or too long a one)", item);
        }
        snprintf(out->e[out->n].dev, sizeof(out->e[0].dev), "%s", item);
        out->e[out->n].port = port;
        out->n++;
        p += n;
        if (*p == ',') {
            p++;
            if (*p == '\0') {
                return bad(why, len, "TUTTI_IB_HCA '%s': ends with a comma", spec);
            }
        }
    }
    return 0;
}

static int entry_matches(const struct tutti_ib_hca_spec *s, int i, const char *dev, int port)
{
    const char *name = s->e[i].dev;
    int name_ok = s->exact ? strcmp(name, dev) == 0 : strncmp(name, dev, strlen(name)) == 0;
    return name_ok && (s->e[i].port == 0 || s->e[i].port == port);
}

int tutti__ib_hca_allows(const struct tutti_ib_hca_spec *s, const char *dev, int port)
{
    if (s->n == 0) {
        return 1;
    }
    for (int i = 0; i < s->n; i++) {
        if (entry_matches(s, i, dev, port)) {
            return !s->exclude;
        }
    }
    return s->exclude;
}
