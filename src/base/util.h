/*
 * util.h - small helpers used everywhere: monotonic time, min/max, checked size arithmetic,
 * cache-line alignment, overlapping byte ranges.
 */
#ifndef TUTTI_UTIL_H
#define TUTTI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define TUTTI_CACHELINE 64

#define TUTTI_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define TUTTI_MAX(a, b)    ((a) > (b) ? (a) : (b))
#define TUTTI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/** Monotonic clock in nanoseconds. */
static inline int64_t tutti__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/** a * b into *out_p; returns 0, or -1 on overflow. */
static inline int tutti__mul_size(size_t a, size_t b, size_t *out_p)
{
    if (a != 0 && b > SIZE_MAX / a) {
        return -1;
    }
    *out_p = a * b;
    return 0;
}

/** Round up to a multiple of align (a power of two). */
static inline size_t tutti__align_up(size_t x, size_t align)
{
    return (x + align - 1) & ~(align - 1);
}

/** Do the byte ranges [a, a + na) and [b, b + nb) share a byte? (An empty range shares none.) */
static inline int tutti__ranges_overlap(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na > 0 && nb > 0 && x < y + nb && y < x + na;
}

/** CPU pause for spin loops. */
static inline void tutti__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#endif /* TUTTI_UTIL_H */
