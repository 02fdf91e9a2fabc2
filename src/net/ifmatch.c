/*
 * ifmatch.c - TUTTI_SOCKET_IFNAME's patterns (ifmatch.h).
 */
#include "net/ifmatch.h"

#include <net/if.h>
#include <string.h>

/* The spec without its "^" and "=" marks, and what they say. */
static const char *parse_marks(const char *spec, int *exclude_p, int *exact_p)
{
    *exclude_p = spec[0] == '^';
    spec += *exclude_p;
    *exact_p = spec[0] == '=';
    return spec + *exact_p;
}

int tutti__ifname_match(const char *spec, const char *name)
{
    int exclude, exact;
    const char *p = parse_marks(spec, &exclude, &exact);
    if (*p == '\0') {
        return 0;
    }
    size_t nlen = strlen(name);
    int listed = 0;
    while (*p != '\0' && !listed) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        listed = len > 0 && strncmp(name, p, len) == 0 && (!exact || nlen == len);
        p += len + (end != NULL);
    }
    return exclude ? !listed : listed;
}

int tutti__ifname_spec_check(const char *spec, const char **why_p)
{
    int exclude, exact;
    const char *p = parse_marks(spec, &exclude, &exact);
    if (*p == '\0') {
        *why_p = "no interface name after the marks";
        return -1;
    }
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len == 0) {
            *why_p = "an empty entry in the list";
            return -1;
        }
        if (len >= IFNAMSIZ) {
            *why_p = "an entry longer than an interface name can be";
            return -1;
        }
        if (end == NULL) {
            return 0;
        }
        p = end + 1;
    }
}
