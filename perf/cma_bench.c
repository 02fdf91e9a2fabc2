/*
 * cma_bench.c - is a single copy between processes worth it here, and from which size? For each
 * size: the rate of process_vm_readv from another process (what Open MPI's vader uses for large
 * messages: one copy, by the receiver) beside the rate of memcpy within one process (each of
 * the two copies a shared-memory FIFO makes). Issue 21 asks for this per size, since issue 3
 * found process_vm_readv slow in this kind of VM.
 *
 * The other process is a forked child that holds the source buffer (touched, so its pages are
 * there) until the parent is done. Each size repeats until 0.2 s have passed, 5 times; the
 * median rate is printed (GB = 10^9 bytes).
 *
 * Usage: cma_bench [MAX_MIB]   (default 64: sizes 4 KiB ... MAX_MIB MiB, by 4)
 * Output: a header, then per size "SIZE memcpy_GBps cma_GBps cma/memcpy"; exit 1 if
 * process_vm_readv fails (a kernel without it, or ptrace rules that forbid it: the line says).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPS 5

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

/* One copy of `size` bytes into dst: memcpy from src, or process_vm_readv from pid's remote. */
static int copy_once(pid_t pid, void *remote, const void *src, void *dst, size_t size)
{
    if (pid == 0) {
        memcpy(dst, src, size);
        return 0;
    }
    size_t done = 0;
    while (done < size) {
        struct iovec l = {(char *)dst + done, size - done};
        struct iovec r = {(char *)remote + done, size - done};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* The median rate over REPS runs of 0.2 s each, in GB/s; < 0 if a copy failed. */
static double rate(pid_t pid, void *remote, const void *src, void *dst, size_t size)
{
    double r[REPS];
    for (int k = 0; k < REPS; k++) {
        size_t n = 0;
        double t0 = now_s(), t;
        do {
            if (copy_once(pid, remote, src, dst, size) != 0) {
                return -1;
            }
            n++;
            t = now_s();
        } while (t - t0 < 0.2);
        r[k] = (double)n * (double)size / (t - t0) / 1e9;
    }
    qsort(r, REPS, sizeof(r[0]), cmp_double);
    return r[REPS / 2];
}

int main(int argc, char **argv)
{
    long max_mib = argc > 1 ? strtol(argv[1], NULL, 10) : 64;
    if (argc > 2 || max_mib < 1 || max_mib > 4096) {
        fprintf(stderr, "usage: cma_bench [MAX_MIB]  (1..4096, default 64)\n");
        return 2;
    }
    size_t max = (size_t)max_mib << 20;
    char *src = malloc(max), *dst = malloc(max);
    int pipefd[2];
    if (src == NULL || dst == NULL || pipe(pipefd) != 0) {
        fprintf(stderr, "cma_bench: no memory or pipe: %s\n", strerror(errno));
        return 1;
    }
    memset(src, 1, max); /* the child's copy of these pages is its own after the fork */
    memset(dst, 2, max);
    pid_t child = fork();
    if (child == 0) {
        memset(src, 3, max); /* its own pages, present */
        char c;
        close(pipefd[1]);
        (void)!read(pipefd[0], &c, 1); /* until the parent closes its end */
        _exit(0);
    }
    close(pipefd[0]);
    printf("# size memcpy_GBps cma_GBps cma/memcpy (process_vm_readv from another process vs "
           "memcpy in one; median of %d)\n",
           REPS);
    int rc = 0;
    for (size_t size = 4096; size <= max && rc == 0; size *= 4) {
        double m = rate(0, NULL, src, dst, size);
        double c = rate(child, src, NULL, dst, size);
        if (c < 0) {
            printf("%zu %.2f failed: process_vm_readv: %s\n", size, m, strerror(errno));
            rc = 1;
            break;
        }
        if (dst[0] != 3 || dst[size - 1] != 3) {
            printf("%zu: process_vm_readv copied the wrong bytes\n", size);
            rc = 1;
            break;
        }
        printf("%zu %.2f %.2f %.2f\n", size, m, c, c / m);
        fflush(stdout);
    }
    close(pipefd[1]);
    waitpid(child, NULL, 0);
    free(src);
    free(dst);
    return rc;
}
