/*
 * mem.h - the blocks of tutti_mem_alloc (mem.c): each is a memory file (memfd) whose first page
 * holds a random cookie and whose user part follows it, so that a peer that maps the file can
 * prove it mapped the right one.
 */
#ifndef TUTTI_WIN_MEM_H
#define TUTTI_WIN_MEM_H

#include <stddef.h>
#include <stdint.h>

#define TUTTI_MEM_COOKIE_BYTES 16

/* Where a range lies in its block, for a peer to map it. */
struct tutti_mem_ref {
    void *block;   /* the block, for tutti__mem_hold */
    int fd;        /* its memory file */
    size_t maplen; /* the file's length, the cookie page included */
    size_t offset; /* the range's offset in the file */
    uint8_t cookie[TUTTI_MEM_COOKIE_BYTES];
};

/** The page size of the blocks' headers (the offset of the user part in the file). */
size_t tutti__mem_header(void);

/** Fill ref for [p, p + len) when it lies inside one block: 0, else -1. */
int tutti__mem_lookup(const void *p, size_t len, struct tutti_mem_ref *ref);

/** A window holds (delta +1) or lets go of (-1) a block: tutti_mem_free refuses held blocks. */
void tutti__mem_hold(void *block, int delta);

/**
 * Create a memory file of `len` bytes (MFD_CLOEXEC), map it shared at *map_p with a random cookie
 * in its first bytes. Returns the fd, or -1 with errno set.
 */
int tutti__mem_file(size_t len, void **map_p, uint8_t cookie[TUTTI_MEM_COOKIE_BYTES]);

#endif /* TUTTI_WIN_MEM_H */
