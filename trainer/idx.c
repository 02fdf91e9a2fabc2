/*
 * idx.c - IDX files through zlib's gz* stream, which reads gzip and plain files alike. Every
 * failure names the path and the exact problem: a header that is not IDX, the wrong element
 * type or number of dimensions, fewer bytes than the header promises, or bytes after the data.
 */
#include "idx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Largest array accepted: the header is data, and a corrupt size must not allocate the world. */
#define IDX_MAX_BYTES ((size_t)1 << 31)

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

/* Read exactly n bytes; returns the count read (< n at the end of the data) or -1 on an error. */
static long long read_full(gzFile f, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t want = n - got > (1u << 30) ? (1u << 30) : n - got;
        int r = gzread(f, (char *)buf + got, (unsigned)want);
        if (r < 0) {
            return -1;
        }
        if (r == 0) {
            break;
        }
        got += (size_t)r;
    }
    return (long long)got;
}

/* The stream's error, for messages: zlib's text (without the path zlib puts first), or
 * errno's for a system error. */
static const char *gz_why(gzFile f, const char *path)
{
    int code = Z_OK;
    const char *msg = gzerror(f, &code);
    if (code == Z_ERRNO) {
        return strerror(errno);
    }
    if (code == Z_OK || msg == NULL || msg[0] == '\0') {
        return "unexpected end of file";
    }
    size_t n = strlen(path);
    return strncmp(msg, path, n) == 0 && strncmp(msg + n, ": ", 2) == 0 ? msg + n + 2 : msg;
}

/* Parse and check the header; sets the dims and the element count to read. */
static int read_header(gzFile f, const char *path, int ndims, size_t max_items,
                       struct train_idx *idx, size_t *all_p, char *err, size_t errlen)
{
    uint8_t magic[4];
    long long r = read_full(f, magic, sizeof(magic));
    if (r < 0) {
        return fail(err, errlen, path, "corrupt gzip data: %s", gz_why(f, path));
    }
    if (r != (long long)sizeof(magic)) {
        return fail(err, errlen, path, "not an IDX file: end of file in the 4-byte magic");
    }
    unsigned m =
        (unsigned)magic[0] << 24 | (unsigned)magic[1] << 16 | (unsigned)magic[2] << 8 | magic[3];
    if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != (uint8_t)ndims) {
        return fail(err, errlen, path,
                    "bad magic 0x%08x: expected 0x%08x (unsigned bytes, %d dimension%s)", m,
                    0x800u | (unsigned)ndims, ndims, ndims == 1 ? "" : "s");
    }
    uint8_t be[4 * TRAIN_IDX_MAX_DIMS];
    r = read_full(f, be, 4 * (size_t)ndims);
    if (r != 4 * (long long)ndims) {
        return fail(err, errlen, path, "truncated header: %s reading %d dimension sizes",
                    r < 0 ? gz_why(f, path) : "end of file", ndims);
    }
    size_t all = 1;
    idx->ndims = ndims;
    for (int d = 0; d < ndims; d++) {
        const uint8_t *p = be + 4 * d;
        idx->dims[d] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (idx->dims[d] == 0 || all > IDX_MAX_BYTES / idx->dims[d]) {
            return fail(err, errlen, path, "implausible size %u of dimension %d",
                        (unsigned)idx->dims[d], d);
        }
        all *= idx->dims[d];
    }
    size_t items = idx->dims[0];
    if (max_items > 0 && max_items < items) {
        items = max_items;
    }
    *all_p = all;
    idx->count = all / idx->dims[0] * items;
    return 0;
}

int train_idx_read(const char *path, int ndims, size_t max_items, struct train_idx *idx_p,
                   char *err, size_t errlen)
{
    if (ndims < 1 || ndims > TRAIN_IDX_MAX_DIMS) {
        return fail(err, errlen, path, "cannot read %d dimensions", ndims);
    }
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (f == NULL) {
        return fail(err, errlen, path, "cannot open: %s",
                    errno != 0 ? strerror(errno) : "out of memory");
    }
    struct train_idx idx = {0};
    size_t all = 0;
    int ret = read_header(f, path, ndims, max_items, &idx, &all, err, errlen);
    if (ret != 0) {
        goto out_close;
    }
    idx.data = malloc(idx.count);
    if (idx.data == NULL) {
        ret = fail(err, errlen, path, "no memory for %zu bytes", idx.count);
        goto out_close;
    }
    long long r = read_full(f, idx.data, idx.count);
    if (r != (long long)idx.count) {
        ret = r < 0 ? fail(err, errlen, path, "corrupt gzip data: %s", gz_why(f, path))
                    : fail(err, errlen, path, "truncated: end of file after %lld of %zu data bytes",
                           r, all);
        goto out_free;
    }
    uint8_t extra;
    if (idx.count == all && (r = read_full(f, &extra, 1)) != 0) {
        ret = r < 0
                  ? fail(err, errlen, path, "corrupt gzip data after the data: %s", gz_why(f, path))
                  : fail(err, errlen, path, "trailing bytes after the %zu data bytes", all);
        goto out_free;
    }
    gzclose(f);
    *idx_p = idx;
    return 0;

out_free:
    free(idx.data);
out_close:
    gzclose(f);
    return ret;
}

void train_idx_free(struct train_idx *idx)
{
    free(idx->data);
    memset(idx, 0, sizeof(*idx));
}
