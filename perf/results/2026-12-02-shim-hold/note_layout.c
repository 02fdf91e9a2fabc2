/* note_layout.c (built as gcc -O2 -o lay note_layout.c; run as lay SLOT_BYTES FENCE) - one-off: how a ring's slot size and the sender's fences change the time a
 * message of 8 B takes between two processes pinned to cpus 0 and 1 (the sender runs up to
 * R-1 messages ahead; the receiver acknowledges every 4th). Args: slot_bytes fence(0/1) [n]. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { R = 16 };
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void pin(int c)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    sched_setaffinity(0, sizeof s, &s);
}
int main(int argc, char **argv)
{
    size_t S = (size_t)atoi(argv[1]);
    int fence = atoi(argv[2]);
    long n = argc > 3 ? atol(argv[3]) : 2000000;
    uint8_t *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(m, 0, 1 << 20);
    _Atomic uint64_t *ack = (_Atomic uint64_t *)(m + 4096);
    _Atomic uint64_t *fen = (_Atomic uint64_t *)(m + 8192);
    uint8_t *ring = m + 65536;
    double *out = (double *)(m + 12288);
    if (fork() == 0) { /* receiver */
        pin(1);
        uint64_t sum = 0;
        double t0 = 0;
        for (long k = 1; k <= n; k++) {
            if (k == 1000) t0 = now();
            uint8_t *s = ring + (size_t)(k % R) * S;
            _Atomic uint64_t *st = (_Atomic uint64_t *)s;
            while (atomic_load_explicit(st, memory_order_acquire) != (uint64_t)k) {
            }
            uint64_t v;
            memcpy(&v, s + 8, 8);
            sum += v;
            if ((k & 3) == 0) atomic_store_explicit(ack, (uint64_t)k, memory_order_release);
        }
        out[0] = (now() - t0) / (n - 1000) * 1e6;
        out[1] = (double)(sum & 1);
        _exit(0);
    }
    pin(0);
    uint64_t seen = 0;
    double t0 = 0;
    for (long k = 1; k <= n; k++) {
        if (k == 1000) t0 = now();
        while ((uint64_t)k >= seen + R - 1) {
            seen = atomic_load_explicit(ack, memory_order_acquire);
        }
        uint8_t *s = ring + (size_t)(k % R) * S;
        uint64_t v = (uint64_t)k;
        memcpy(s + 8, &v, 8);
        atomic_store_explicit((_Atomic uint64_t *)s, (uint64_t)k, memory_order_release);
        if (fence) atomic_exchange(fen, (uint64_t)k); /* one full fence a message */
    }
    double ts = (now() - t0) / (n - 1000) * 1e6;
    wait(NULL);
    printf("S=%zu fence=%d send %.4f recv %.4f us\n", S, fence, ts, out[0]);
    return 0;
}
