/*
 * membw.c - the machine's memory bandwidth for compare.sh's plots, STREAM's Copy done with
 * memcpy: one thread copies a buffer far larger than the caches, repeatedly, and prints the
 * median rate two ways, as bytes copied per second and as STREAM counts them (bytes read +
 * written per second, twice as many).
 *
 * Usage: membw [-s SIZE_MIB] [-r REPS]   (defaults: 256 MiB, 9 repetitions)
 * Output: one line "memcpy <MiB> MiB: copy <GB/s> GB/s, read+write <GB/s> GB/s" (GB = 10^9).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long mib = 256, reps = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        long *dst = strcmp(argv[i], "-s") == 0 ? &mib : strcmp(argv[i], "-r") == 0 ? &reps : NULL;
        if (dst == NULL || (*dst = strtol(argv[i + 1], NULL, 10)) < 1 || *dst > 65536) {
            fprintf(stderr, "usage: membw [-s SIZE_MIB] [-r REPS]\n");
            return 2;
        }
    }
    if (argc % 2 == 0) {
        fprintf(stderr, "usage: membw [-s SIZE_MIB] [-r REPS]\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20;
    char *src = malloc(bytes), *dst = malloc(bytes);
    double *rate = calloc((size_t)reps, sizeof(*rate));
    if (src == NULL || dst == NULL || rate == NULL) {
        fprintf(stderr, "membw: cannot allocate 2 x %ld MiB\n", mib);
        return 1;
    }
    memset(src, 1, bytes); /* fault every page in before the first timing */
    memset(dst, 0, bytes);
    for (long r = 0; r < reps; r++) {
        double t0 = now_s();
        memcpy(dst, src, bytes);
        rate[r] = (double)bytes / (now_s() - t0) / 1e9;
        src[r % (long)bytes] ^= dst[bytes - 1]; /* a data dependence: no copy is elided */
    }
    qsort(rate, (size_t)reps, sizeof(*rate), cmp_double);
    printf("memcpy %ld MiB: copy %.2f GB/s, read+write %.2f GB/s\n", mib, rate[reps / 2],
           2 * rate[reps / 2]);
    free(rate);
    free(src);
    free(dst);
    return 0;
}
