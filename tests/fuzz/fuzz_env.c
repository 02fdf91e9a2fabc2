/*
 * fuzz_env.c - the parsers of environment values (src/base/env.c, src/comm/launch.c): SIZE
 * ("512k"), DURATION ("10us"), INT, the job secret (32 hex digits) and Slurm node lists. The first
 * byte picks the parser, the rest is the value. Invariants: SIZE agrees with an independent strict
 * parser; DURATION and INT round-trip through their printed form; a decoded secret prints back
 * as the input; a node list's first host fits its buffer and has no list syntax left.
 */
#include "fuzz.h"
#include "base/env.h"
#include "comm/launch.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>

/* What TUTTI_*_SIZE values mean, written out independently (issue 36: one spelling): digits,
 * then k, m, g or t (either case) and nothing, "B" or "iB"; or digits and nothing or "B". No
 * space, sign, lowercase "b" or anything after. */
static int ref_size(const char *s, size_t *out_p)
{
    if (!isdigit((unsigned char)*s)) {
        return -1;
    }
    unsigned __int128 v = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (unsigned)(*s++ - '0');
        if (v > SIZE_MAX) {
            return -1;
        }
    }
    const char *units = "kmgt";
    const char *u = *s != '\0' ? strchr(units, tolower((unsigned char)*s)) : NULL;
    if (u != NULL) {
        v <<= 10 * (u - units + 1);
        s++;
        if (*s == 'i') {
            s++;
            if (*s != 'B') {
                return -1;
            }
        }
    }
    if (*s == 'B') {
        s++;
    }
    if (*s != '\0' || v > SIZE_MAX) {
        return -1;
    }
    *out_p = (size_t)v;
    return 0;
}

static void check_size(const char *s)
{
    size_t got = 0, want = 0;
    int rc = tutti__parse_size(s, &got), ref = ref_size(s, &want);
    FUZZ_CHECK(rc == ref, "'%s': parse_size says %d, the reference %d (%zu)", s, rc, ref,
               rc == 0 ? got : want);
    FUZZ_CHECK(rc != 0 || got == want, "'%s': %zu, expected %zu", s, got, want);
}

static void check_duration(const char *s)
{
    int64_t ns = -1, again = -1;
    if (tutti__parse_duration_ns(s, &ns) != 0) {
        return;
    }
    FUZZ_CHECK(ns >= 0 && ns <= (int64_t)1 << 62, "'%s' gave %" PRId64 " ns", s, ns);
    char printed[32];
    snprintf(printed, sizeof(printed), "%" PRId64 "ns", ns);
    FUZZ_CHECK(tutti__parse_duration_ns(printed, &again) == 0 && again == ns,
               "'%s' gave %" PRId64 " ns, which reads back as %" PRId64, s, ns, again);
}

static void check_long(const char *s)
{
    long v = 0, again = 0;
    if (tutti__parse_long(s, &v) != 0) {
        return;
    }
    char printed[32];
    snprintf(printed, sizeof(printed), "%ld", v);
    FUZZ_CHECK(tutti__parse_long(printed, &again) == 0 && again == v, "'%s' gave %ld", s, v);
}

static void check_secret(const char *s)
{
    uint8_t key[16];
    if (tutti__hex_decode(s, key, sizeof(key)) != 0) {
        return;
    }
    char printed[33];
    for (size_t i = 0; i < sizeof(key); i++) {
        snprintf(printed + 2 * i, 3, "%02x", key[i]);
    }
    for (size_t i = 0; i < 32; i++) {
        FUZZ_CHECK(tolower((unsigned char)s[i]) == printed[i], "'%s' decoded as %s", s, printed);
    }
    for (size_t i = 32; s[i] != '\0'; i++) {
        FUZZ_CHECK(isspace((unsigned char)s[i]), "'%s' has more than 32 digits", s);
    }
}

/* The first byte of the value is the output buffer's size (0..63). */
static void check_nodelist(const char *s)
{
    size_t len = s[0] != '\0' ? (unsigned char)s[0] % 64 : 16;
    const char *list = s[0] != '\0' ? s + 1 : s;
    char *out = fuzz_outbuf(len);
    int rc = tutti__slurm_first_host(list, out, len);
    if (len > 0) {
        FUZZ_CHECK_STR(out, len);
        FUZZ_CHECK((rc == 0) == (out[0] != '\0'), "'%s' -> rc %d, '%s'", list, rc, out);
        FUZZ_CHECK(strpbrk(out, ",[") == NULL, "'%s' -> '%s'", list, out);
    } else {
        FUZZ_CHECK(rc != 0, "a host in a buffer of 0 bytes");
    }
    fuzz_outbuf_free(out, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    char *s = fuzz_cstr(data + 1, size - 1);
    switch (data[0] % 5) {
    case 0:
        check_size(s);
        break;
    case 1:
        check_duration(s);
        break;
    case 2:
        check_long(s);
        break;
    case 3:
        check_secret(s);
        break;
    default:
        check_nodelist(s);
        break;
    }
    free(s);
    return 0;
}
