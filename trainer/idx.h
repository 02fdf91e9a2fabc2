/*
 * idx.h - reading IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
 *
 * An IDX file is a 4-byte magic (two zero bytes, a type byte, the number of dimensions), one
 * big-endian 32-bit size per dimension, then the elements in row-major order. Only unsigned bytes
 * (type 0x08) are read: magic 0x801 for a label vector, 0x803 for a stack of images.
 */
#ifndef TRAIN_IDX_H
#define TRAIN_IDX_H

#include <stddef.h>
#include <stdint.h>

#define TRAIN_IDX_MAX_DIMS 4

/** A loaded IDX array of unsigned bytes. */
struct train_idx {
    int ndims;
    uint32_t dims[TRAIN_IDX_MAX_DIMS];
    size_t count;  /* elements read: dims[0] (or max_items, if smaller) x the other dims */
    uint8_t *data; /* malloc'ed, count bytes */
};

/**
 * Read an IDX file of unsigned bytes with exactly `ndims` dimensions (1 for labels, 3 for
 * images). At most max_items entries of the first dimension are read (0: all); a file is
 * still checked to hold every entry its header promises when all are read.
 * @param err  out: on failure, a message naming the path and what is wrong
 * @return 0, or -1 (missing or unreadable file, not gzip/IDX, wrong magic, wrong number of
 *         dimensions, truncated, trailing bytes). *idx_p is set only on success.
 */
int train_idx_read(const char *path, int ndims, size_t max_items, struct train_idx *idx_p,
                   char *err, size_t errlen);

/** Free what train_idx_read() allocated; idx may be zeroed. */
void train_idx_free(struct train_idx *idx);

#endif /* TRAIN_IDX_H */
