/*
 * test_idx.c - the IDX reader and the data set loader on small synthetic files written with
 * zlib into a temporary directory: good files (gzip and plain), and every way a file can be
 * wrong, each reported with the path and the problem.
 */
#include "data.h"
#include "idx.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tutti-idx-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(idx, .init = make_dir, .fini = remove_dir);

/* An IDX header of unsigned bytes with the given dims. Returns its length. */
static size_t header(uint8_t *h, int ndims, const uint32_t *dims)
{
    h[0] = h[1] = 0;
    h[2] = 0x08;
    h[3] = (uint8_t)ndims;
    for (int d = 0; d < ndims; d++) {
        for (int b = 0; b < 4; b++) {
            h[4 + 4 * d + b] = (uint8_t)(dims[d] >> (24 - 8 * b));
        }
    }
    return 4 + 4 * (size_t)ndims;
}

/* Write bytes to dir/name, gzip-compressed or plain. */
static void write_file(const char *name, const void *p, size_t n, int gz, char *path_p)
{
    sprintf(path_p, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(path_p, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(gzwrite(f, p, (unsigned)n), (int)n);
        cr_assert_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path_p, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(p, 1, n, f), n);
        cr_assert_eq(fclose(f), 0);
    }
}

/* n images of 2 x 3 pixels (pixel value = image * 6 + index) plus `extra` bytes; or labels. */
static size_t images(uint8_t *buf, uint32_t n, size_t extra)
{
    uint32_t dims[3] = {n, 2, 3};
    size_t len = header(buf, 3, dims);
    for (size_t i = 0; i < n * 6u + extra; i++) {
        buf[len++] = (uint8_t)i;
    }
    return len;
}

static size_t labels(uint8_t *buf, uint32_t n, uint8_t first)
{
    uint32_t dims[1] = {n};
    size_t len = header(buf, 1, dims);
    for (uint32_t i = 0; i < n; i++) {
        buf[len++] = (uint8_t)((first + i) % 10);
    }
    return len;
}

Test(idx, reads_gzip_images)
{
    uint8_t buf[256];
    char path[128], err[256];
    write_file("img.gz", buf, images(buf, 5, 0), 1, path);
    struct train_idx idx;
    cr_assert_eq(train_idx_read(path, 3, 0, &idx, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(idx.ndims, 3);
    cr_assert_eq(idx.dims[0], 5);
    cr_assert_eq(idx.dims[1], 2);
    cr_assert_eq(idx.dims[2], 3);
    cr_assert_eq(idx.count, 30);
    for (int i = 0; i < 30; i++) {
        cr_assert_eq(idx.data[i], i);
    }
    train_idx_free(&idx);
}

Test(idx, reads_plain_file_and_limit)
{
    uint8_t buf[256];
    char path[128], err[256];
    write_file("img", buf, images(buf, 5, 0), 0, path);
    struct train_idx idx;
    cr_assert_eq(train_idx_read(path, 3, 2, &idx, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(idx.count, 12, "only the first 2 images are read");
    cr_assert_eq(idx.data[11], 11);
    train_idx_free(&idx);
}

/* Expect a failure whose message names the path and contains `what`. */
static void expect_error(const char *path, int ndims, const char *what)
{
    char err[256] = "";
    struct train_idx idx = {0};
    cr_assert_eq(train_idx_read(path, ndims, 0, &idx, err, sizeof(err)), -1);
    cr_assert_null(idx.data);
    cr_assert_not_null(strstr(err, path), "message names the path: %s", err);
    cr_assert_not_null(strstr(err, what), "message says '%s': %s", what, err);
}

Test(idx, missing_file_names_path)
{
    char path[128];
    sprintf(path, "%s/nope.gz", dir);
    expect_error(path, 3, "No such file");
}

Test(idx, truncated_data)
{
    uint8_t buf[256];
    char path[128];
    write_file("img.gz", buf, images(buf, 5, 0) - 7, 1, path);
    expect_error(path, 3, "truncated");
}

Test(idx, truncated_gzip_stream)
{
    uint8_t buf[256];
    char path[128], cut[128];
    write_file("img.gz", buf, images(buf, 5, 0), 1, path);
    /* keep the first half of the compressed file */
    FILE *f = fopen(path, "rb");
    uint8_t z[512];
    size_t n = fread(z, 1, sizeof(z), f);
    fclose(f);
    write_file("cut.gz", z, n / 2, 0, cut);
    expect_error(cut, 3, "truncated");
}

Test(idx, corrupt_gzip_data)
{
    uint8_t buf[256];
    char path[128], bad[128];
    write_file("img.gz", buf, images(buf, 5, 0), 1, path);
    FILE *f = fopen(path, "rb");
    uint8_t z[512];
    size_t n = fread(z, 1, sizeof(z), f);
    fclose(f);
    z[n / 2] ^= 0xFF; /* inside the deflate stream */
    write_file("bad.gz", z, n, 0, bad);
    char err[256];
    struct train_idx idx;
    cr_assert_eq(train_idx_read(bad, 3, 0, &idx, err, sizeof(err)), -1);
    cr_assert_not_null(strstr(err, "corrupt gzip data"), "%s", err);
    cr_assert_null(strstr(err + strlen(bad), bad), "the path is named once: %s", err);
}

Test(idx, trailing_bytes)
{
    uint8_t buf[256];
    char path[128];
    write_file("img.gz", buf, images(buf, 5, 3), 1, path);
    expect_error(path, 3, "trailing bytes");
}

Test(idx, bad_magic)
{
    uint8_t buf[256];
    char path[128];
    size_t n = images(buf, 5, 0);
    buf[2] = 0x0D; /* float elements */
    write_file("img.gz", buf, n, 1, path);
    expect_error(path, 3, "bad magic 0x00000d03");
}

Test(idx, wrong_dimensions)
{
    uint8_t buf[256];
    char path[128];
    write_file("lab.gz", buf, labels(buf, 5, 0), 1, path);
    expect_error(path, 3, "expected 0x00000803");
}

Test(idx, empty_file)
{
    char path[128];
    write_file("empty.gz", "", 0, 1, path);
    expect_error(path, 1, "not an IDX file: end of file");
}

Test(idx, implausible_size)
{
    uint8_t buf[64];
    char path[128];
    uint32_t dims[3] = {0x7fffffff, 0x7fffffff, 28};
    write_file("huge.gz", buf, header(buf, 3, dims), 1, path);
    expect_error(path, 3, "implausible size");
}

/* A data set directory with prefix-images/labels files. */
static void dataset(uint32_t nimg, uint32_t nlab, uint8_t first_label)
{
    uint8_t buf[256];
    char path[128];
    write_file("train-images-idx3-ubyte.gz", buf, images(buf, nimg, 0), 1, path);
    write_file("train-labels-idx1-ubyte.gz", buf, labels(buf, nlab, first_label), 1, path);
}

Test(idx, dataset_loads_and_batches)
{
    dataset(5, 5, 3);
    struct train_data d;
    char err[256];
    cr_assert_eq(train_data_load(dir, "train", 0, &d, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(d.n, 5);
    cr_assert_eq(d.dim, 6);
    uint32_t idx[2] = {4, 1};
    float x[12];
    uint8_t y[2];
    train_data_batch(&d, idx, 2, x, y);
    cr_assert_float_eq(x[0], 24.0f / 255.0f, 1e-7);
    cr_assert_float_eq(x[6], 6.0f / 255.0f, 1e-7);
    cr_assert_eq(y[0], 7);
    cr_assert_eq(y[1], 4);
    train_data_free(&d);
}

Test(idx, dataset_count_mismatch)
{
    dataset(5, 4, 0);
    struct train_data d;
    char err[256];
    cr_assert_eq(train_data_load(dir, "train", 0, &d, err, sizeof(err)), -1);
    cr_assert_not_null(strstr(err, "holds 5 images but"), "%s", err);
    cr_assert_not_null(strstr(err, "4 labels"), "%s", err);
}

Test(idx, dataset_bad_label)
{
    uint8_t buf[64];
    char path[128];
    dataset(3, 3, 0);
    size_t n = labels(buf, 3, 0);
    buf[n - 1] = 42;
    write_file("train-labels-idx1-ubyte.gz", buf, n, 1, path);
    struct train_data d;
    char err[256];
    cr_assert_eq(train_data_load(dir, "train", 0, &d, err, sizeof(err)), -1);
    cr_assert_not_null(strstr(err, "label 42 of sample 2"), "%s", err);
    cr_assert_not_null(strstr(err, path), "%s", err);
}

Test(idx, missing_labels_named)
{
    uint8_t buf[256];
    char path[128], err[256];
    write_file("t10k-images-idx3-ubyte.gz", buf, images(buf, 2, 0), 1, path);
    struct train_data d;
    cr_assert_eq(train_data_load(dir, "t10k", 0, &d, err, sizeof(err)), -1);
    cr_assert_not_null(strstr(err, "t10k-labels-idx1-ubyte.gz: cannot open"), "%s", err);
}
