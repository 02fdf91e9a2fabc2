/*
 * fuzz.h - what the libFuzzer harnesses share: a check that stops the run with a message (so
 * libFuzzer keeps the input as a crash), quiet logging, and a NUL-terminated copy of the input.
 * Each harness is one file, fuzz_<parser>.c, built with -Dfuzz=true (tests/fuzz/run.sh).
 */
#ifndef TUTTI_FUZZ_H
#define TUTTI_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An invariant of the parser under test; a failure is a finding, kept by libFuzzer. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Called once by libFuzzer (each harness is one translation unit including this header once).
 * The library logs refusals at warn; millions of them would drown the fuzzer's own output.
 * hwloc parses XML with libxml2 when its plugin is there; libxml2 leaks on some malformed files
 * (fuzz_topo found one in CI: 3 KB from inside the plugin, once the plugin is unloaded nothing
 * names it), which LeakSanitizer counts as a crash. So the harnesses use hwloc's own XML
 * parser, and what they fuzz is tutti's handling of whatever hwloc returns.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("TUTTI_LOG_LEVEL", "none", 1);
    setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_xml_libxml", 0);
    return 0;
}

/* The input as a C string of exactly its length (a heap copy, so reads past it are caught). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL) {
        abort();
    }
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/*
 * A buffer of len bytes filled with 0x5a for outputs whose bounds are under test, with one
 * guard byte after it: AddressSanitizer reports writes further out, fuzz_outbuf_free() a write
 * into the guard (which ASan cannot see when len is 0: its malloc(0) hands out one byte).
 */
static inline char *fuzz_outbuf(size_t len)
{
    char *b = malloc(len + 1);
    if (b == NULL) {
        abort();
    }
    memset(b, 0x5a, len + 1);
    return b;
}

#define fuzz_outbuf_free(buf, len)                                                                 \
    do {                                                                                           \
        FUZZ_CHECK((buf)[len] == 0x5a, "write past the %zu bytes given", (size_t)(len));           \
        free(buf);                                                                                 \
    } while (0)

/* The output is a string that fits in len bytes. */
#define FUZZ_CHECK_STR(buf, len)                                                                   \
    FUZZ_CHECK((len) > 0 && memchr((buf), '\0', (len)) != NULL, "not terminated within %zu",       \
               (size_t)(len))

#endif /* TUTTI_FUZZ_H */
