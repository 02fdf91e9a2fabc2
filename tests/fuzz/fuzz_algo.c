/*
 * fuzz_algo.c - TUTTI_ALGO parsing (tutti__algo_parse in src/coll/algos.c). Invariants: a
 * spec is accepted exactly when it has at most 511 characters and every comma-separated
 * entry names a collective and one of its catalog algorithms (checked here independently);
 * what it forces is the last entry per collective; a rejected spec gets a terminated message;
 * the forced choices printed back as a spec parse to the same choices.
 */
#include "fuzz.h"
#include "coll/coll.h"

/* The catalog index entry [tok, tok + len) names ("coll:algo"), or -1; *coll_p its collective. */
static int entry_index(const char *tok, size_t len, int *coll_p)
{
    const char *colon = memchr(tok, ':', len);
    if (colon == NULL) {
        return -1;
    }
    size_t clen = (size_t)(colon - tok), alen = len - clen - 1;
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        const char *name = tutti__coll_name((tutti_coll_t)c);
        if (strlen(name) != clen || memcmp(name, tok, clen) != 0) {
            continue;
        }
        int n = 0;
        const struct tutti_algo *a = tutti__algos((tutti_coll_t)c, &n);
        for (int i = 0; i < n; i++) {
            if (strlen(a[i].name) == alen && memcmp(a[i].name, colon + 1, alen) == 0) {
                *coll_p = c;
                return i;
            }
        }
    }
    return -1;
}

/* Independent reading of the spec: 0 and want[] filled, or -1. Empty entries are skipped. */
static int ref_parse(const char *spec, int want[TUTTI_COLL_COUNT])
{
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        want[c] = -1;
    }
    if (strlen(spec) > 511) {
        return -1;
    }
    for (const char *p = spec; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            int coll = -1, idx = entry_index(p, len, &coll);
            if (idx < 0) {
                return -1;
            }
            want[coll] = idx;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = fuzz_cstr(data, size);
    int forced[TUTTI_COLL_COUNT], want[TUTTI_COLL_COUNT], again[TUTTI_COLL_COUNT];
    char err[256];
    memset(err, 0x5a, sizeof(err));
    int rc = tutti__algo_parse(spec, forced, err, sizeof(err));
    int ref = ref_parse(spec, want);
    FUZZ_CHECK(rc == ref, "'%.300s' (%zu bytes): parse says %d, the reference %d", spec, size, rc,
               ref);
    if (rc != 0) {
        FUZZ_CHECK_STR(err, sizeof(err));
        FUZZ_CHECK(strncmp(err, "TUTTI_ALGO", 10) == 0, "message '%s'", err);
        free(spec);
        return 0;
    }
    char printed[512] = "";
    size_t o = 0;
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        FUZZ_CHECK(forced[c] == want[c], "'%s': collective %d forced %d, expected %d", spec, c,
                   forced[c], want[c]);
        if (forced[c] >= 0) {
            int n = 0;
            const struct tutti_algo *a = tutti__algos((tutti_coll_t)c, &n);
            FUZZ_CHECK(forced[c] < n, "'%s': index %d of %d", spec, forced[c], n);
            o += (size_t)snprintf(printed + o, sizeof(printed) - o, "%s%s:%s", o ? "," : "",
                                  tutti__coll_name((tutti_coll_t)c), a[forced[c]].name);
        }
    }
    FUZZ_CHECK(tutti__algo_parse(printed, again, err, sizeof(err)) == 0 &&
                   memcmp(again, forced, sizeof(again)) == 0,
               "'%s' printed back as '%s' does not parse the same", spec, printed);
    free(spec);
    return 0;
}
