/*
 * mem.c - tutti_mem_alloc and tutti_mem_free (tutti/mem.h): host memory in memory files that
 * local peers can map, and the table of the blocks (mem.h) that window registration reads.
 */
#include "win/mem.h"
#include "base/check.h"
#include "tutti/mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

struct block {
    struct block *next;
    uint8_t *map; /* the file's mapping: the cookie page, then the user part */
    size_t maplen;
    int fd;
    int holds; /* windows registering it */
    uint8_t cookie[TUTTI_MEM_COOKIE_BYTES];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks;

size_t tutti__mem_header(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

int tutti__mem_file(size_t len, void **map_p, uint8_t cookie[TUTTI_MEM_COOKIE_BYTES])
{
    int fd = memfd_create("tutti-mem", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    void *m = MAP_FAILED;
    if (ftruncate(fd, (off_t)len) != 0 ||
        getrandom(cookie, TUTTI_MEM_COOKIE_BYTES, 0) != TUTTI_MEM_COOKIE_BYTES ||
        (m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    memcpy(m, cookie, TUTTI_MEM_COOKIE_BYTES);
    *map_p = m;
    return fd;
}

tutti_status_t tutti_mem_alloc(void **ptr_p, size_t bytes)
{
    if (ptr_p == NULL || bytes == 0) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_mem_alloc: %s",
                                ptr_p == NULL ? "ptr_p is NULL" : "bytes is 0");
    }
    size_t hdr = tutti__mem_header();
    if (bytes > SIZE_MAX / 2) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                "tutti_mem_alloc: %zu bytes overflow the address space", bytes);
    }
    struct block *b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "tutti_mem_alloc: no memory");
    }
    b->maplen = hdr + (bytes + hdr - 1) / hdr * hdr;
    void *m = NULL;
    b->fd = tutti__mem_file(b->maplen, &m, b->cookie);
    if (b->fd < 0) {
        int e = errno;
        free(b);
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY,
                                "tutti_mem_alloc: a memory file of %zu bytes: %s", bytes,
                                strerror(e));
    }
    b->map = m;
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&lock);
    *ptr_p = b->map + hdr;
    return TUTTI_OK;
}

tutti_status_t tutti_mem_free(void *ptr)
{
    if (ptr == NULL) {
        return TUTTI_OK;
    }
    size_t hdr = tutti__mem_header();
    pthread_mutex_lock(&lock);
    struct block **pp = &blocks;
    while (*pp != NULL && (*pp)->map + hdr != (uint8_t *)ptr) {
        pp = &(*pp)->next;
    }
    struct block *b = *pp;
    if (b == NULL || b->holds > 0) {
        int holds = b != NULL ? b->holds : 0;
        pthread_mutex_unlock(&lock);
        return b == NULL ? tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG,
                                            "tutti_mem_free: %p is not memory from "
                                            "tutti_mem_alloc",
                                            ptr)
                         : tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                                            "tutti_mem_free: %p is still registered in %d "
                                            "window%s; deregister first",
                                            ptr, holds, holds == 1 ? "" : "s");
    }
    *pp = b->next;
    pthread_mutex_unlock(&lock);
    munmap(b->map, b->maplen);
    close(b->fd);
    free(b);
    return TUTTI_OK;
}

int tutti__mem_lookup(const void *p, size_t len, struct tutti_mem_ref *ref)
{
    uintptr_t a = (uintptr_t)p;
    int rc = -1;
    pthread_mutex_lock(&lock);
    for (struct block *b = blocks; b != NULL; b = b->next) {
        uintptr_t lo = (uintptr_t)b->map + tutti__mem_header(), hi = (uintptr_t)b->map + b->maplen;
        if (a >= lo && a <= hi && len <= hi - a) {
            ref->block = b;
            ref->fd = b->fd;
            ref->maplen = b->maplen;
            ref->offset = a - (uintptr_t)b->map;
            memcpy(ref->cookie, b->cookie, TUTTI_MEM_COOKIE_BYTES);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void tutti__mem_hold(void *block, int delta)
{
    pthread_mutex_lock(&lock);
    ((struct block *)block)->holds += delta;
    pthread_mutex_unlock(&lock);
}
