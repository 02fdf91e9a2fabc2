/*
 * test_copy.c - the copy kernels: tutti__copy_nt (non-temporal) and tutti__copy2 (two
 * destinations) against memcpy, for every misalignment of source and destination, sizes around
 * the vector and cache-line steps, and guard bytes that must stay untouched.
 */
#include "kernels/reduce.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 0xA5

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 8));
    }
}

static void check_copy(void (*copy)(void *, const void *, size_t), size_t len, size_t soff,
                       size_t doff)
{
    unsigned char *src = calloc(len + 128, 1), *dst = calloc(len + 128, 1);
    fill(src, len + 128, (unsigned)len);
    memset(dst, GUARD, len + 128);
    copy(dst + doff, src + soff, len);
    for (size_t i = 0; i < len + 128; i++) {
        unsigned char want = (i >= doff && i < doff + len) ? src[soff + i - doff] : GUARD;
        cr_assert_eq(dst[i], want, "len %zu soff %zu doff %zu: byte %zu is %u, expected %u", len,
                     soff, doff, i, dst[i], want);
    }
    free(src);
    free(dst);
}

static void stream(void *d, const void *s, size_t n)
{
    tutti__copy_nt(d, s, n);
}

static void copy2_first(void *d, const void *s, size_t n)
{
    tutti__copy2(d, NULL, s, n);
}

static const size_t lens[] = {0, 1, 15, 16, 63, 64, 255, 256, 257, 1000, 4096, 65537, 1 << 20};

Test(copy, stream_equals_memcpy_at_every_alignment)
{
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t soff = 0; soff < 17; soff += 3) {
            for (size_t doff = 0; doff < 17; doff += 5) {
                check_copy(stream, lens[i], soff, doff);
            }
        }
    }
}

Test(copy, copy2_first_destination_equals_memcpy)
{
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        check_copy(copy2_first, lens[i], 3, 7);
    }
}

Test(copy, copy2_fills_two_destinations_from_one_read)
{
    size_t len = 100000;
    unsigned char *src = malloc(len), *a = malloc(len), *b = malloc(len);
    fill(src, len, 9);
    tutti__copy2(a, b, src, len);
    cr_assert_eq(memcmp(a, src, len), 0);
    cr_assert_eq(memcmp(b, src, len), 0);
    tutti__copy_nt(src, src, len); /* same place: nothing to do, nothing broken */
    cr_assert_eq(memcmp(a, src, len), 0);
    free(src);
    free(a);
    free(b);
}
