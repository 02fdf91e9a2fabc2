/*
 * copy_nt.c - tutti__copy_nt: a copy whose destination bypasses the caches
 * (non-temporal stores). For results written once and not read again soon (the user's receive
 * buffer of a large collective), this saves the read-for-ownership of every destination line,
 * a third of the memory traffic of a cached copy. SSE2 is part of x86-64, so no dispatch is
 * needed; other architectures use memcpy.
 */
#include "kernels/reduce.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

void tutti__copy_nt(void *dst, const void *src, size_t bytes)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (bytes < 256 || d == s) {
        if (d != s) {
            memcpy(d, s, bytes);
        }
        return;
    }
    memcpy(d, s, head); /* align the destination to 16 bytes */
    d += head;
    s += head;
    bytes -= head;
    size_t n = bytes & ~(size_t)63;
    for (size_t i = 0; i < n; i += 64) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i x1 = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), x0);
        _mm_stream_si128((__m128i *)(d + i + 16), x1);
        _mm_stream_si128((__m128i *)(d + i + 32), x2);
        _mm_stream_si128((__m128i *)(d + i + 48), x3);
    }
    _mm_sfence(); /* order the streamed lines before later stores (and flags) */
    memcpy(d + n, s + n, bytes - n);
}
#else
void tutti__copy_nt(void *dst, const void *src, size_t bytes)
{
    if (dst != src) {
        memcpy(dst, src, bytes);
    }
}
#endif
