/*
 * api232_params.c - NCCL 2.32's parameter API on the shim: keys by tutti's names (TUTTI_*) and
 * by the NCCL names the shim reads in their place (NCCL_*), typed reads with their type and range
 * checks, raw and string reads, a missing key, the list of keys and the dump. The expected
 * values follow the environment the runner sets (meson: NCCL_DEBUG=WARN, NCCL_IB_TC=106,
 * TUTTI_NCHANNELS=3); without it, tutti's defaults.
 */
#include "api232.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The environment's value of a variable as a number, or `def` when it is unset. */
static long env_or(const char *name, long def)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? atol(v) : def;
}

static ncclParamHandle_t bind(const char *key)
{
    ncclParamHandle_t h = NULL;
    return ncclParamBind(&h, key) == ncclSuccess ? h : NULL;
}

/* Typed reads: integers in range, refusals out of range and across types. */
static int typed(void)
{
    ncclComm_t comm = NULL; /* NCCLOK's messages: the thread's last error */
    ncclParamHandle_t h = bind("TUTTI_TIMEOUT");
    int64_t i64 = 0;
    uint64_t u64 = 0;
    int32_t i32 = 0;
    int8_t i8 = 0;
    uint8_t u8 = 0;
    const char *str = NULL;
    CHECK(h != NULL, "TUTTI_TIMEOUT: %s", ncclGetLastError(NULL));
    NCCLOK(ncclParamGetI64(h, &i64));
    NCCLOK(ncclParamGetU64(h, &u64));
    CHECK(getenv("TUTTI_TIMEOUT") != NULL || (i64 == 300000000000LL && u64 == (uint64_t)i64),
          "TUTTI_TIMEOUT %lld ns", (long long)i64);
    REFUSED(NULL, ncclParamGetI32(h, &i32), ncclInvalidArgument, "out of the range");
    REFUSED(NULL, ncclParamGetStr(h, &str), ncclInvalidArgument, "ncclParamGetI64");
    h = bind("TUTTI_NCHANNELS");
    NCCLOK(ncclParamGetU8(h, &u8));
    NCCLOK(ncclParamGetI8(h, &i8));
    CHECK(u8 == env_or("TUTTI_NCHANNELS", 0) && i8 == (int8_t)u8, "TUTTI_NCHANNELS %u", u8);
    h = bind("TUTTI_IB_GID_INDEX"); /* -1 by default */
    if (getenv("TUTTI_IB_GID_INDEX") == NULL && getenv("NCCL_IB_GID_INDEX") == NULL) {
        NCCLOK(ncclParamGetI8(h, &i8));
        CHECK(i8 == -1, "TUTTI_IB_GID_INDEX %d", i8);
        REFUSED(NULL, ncclParamGetU8(h, &u8), ncclInvalidArgument, "out of the range 0..255");
    }
    h = bind("NCCL_IB_TC"); /* reads TUTTI_IB_TC */
    NCCLOK(ncclParamGetI32(h, &i32));
    CHECK(i32 == env_or("TUTTI_IB_TC", env_or("NCCL_IB_TC", 0)), "NCCL_IB_TC %d", i32);
    h = bind("NCCL_DEBUG"); /* reads TUTTI_LOG_LEVEL, as tutti spells it */
    NCCLOK(ncclParamGetStr(h, &str));
    if (getenv("TUTTI_LOG_LEVEL") == NULL && getenv("NCCL_DEBUG") != NULL &&
        strcmp(getenv("NCCL_DEBUG"), "WARN") == 0) {
        CHECK(strcmp(str, "warn") == 0, "NCCL_DEBUG reads '%s'", str);
    }
    REFUSED(NULL, ncclParamGetI32(h, &i32), ncclInvalidArgument, "is a string");
    int junk = 0;
    REFUSED(NULL, ncclParamGetI32((ncclParamHandle_t)&junk, &i32), ncclInvalidArgument,
            "not a handle");
    return 0;
}

/* Keys, missing keys, raw and string reads. */
static int untyped(void)
{
    ncclComm_t comm = NULL;
    ncclParamHandle_t h = NULL;
    const char **keys = NULL, *val = NULL;
    int nkeys = 0, found = 0, len = 0;
    NCCLOK(ncclParamGetAllParameterKeys(&keys, &nkeys));
    for (int i = 0; i < nkeys; i++) {
        found += strcmp(keys[i], "TUTTI_TIMEOUT") == 0 || strcmp(keys[i], "NCCL_DEBUG") == 0 ||
                 strcmp(keys[i], "NCCL_SOCKET_NTHREADS") == 0;
    }
    CHECK(nkeys > 40 && found == 3, "%d keys, %d of the 3 looked for", nkeys, found);
    REFUSED(NULL, ncclParamBind(&h, "NCCL_NOT_A_PARAMETER"), ncclInvalidArgument,
            "no parameter 'NCCL_NOT_A_PARAMETER'");
    REFUSED(NULL, ncclParamBind(&h, NULL), ncclInvalidArgument, "key is NULL");
    REFUSED(NULL, ncclParamGetParameter("TUTTI_NOPE", &val, &len), ncclInvalidArgument,
            "no parameter");
    NCCLOK(ncclParamGetParameter("TUTTI_SHM_NSLOTS", &val, &len));
    CHECK(getenv("TUTTI_SHM_NSLOTS") != NULL || (strcmp(val, "8") == 0 && len == 1),
          "TUTTI_SHM_NSLOTS '%s' %d", val, len);
    unsigned char raw[128];
    int64_t ns = 0;
    NCCLOK(ncclParamGet(bind("TUTTI_TIMEOUT"), raw, sizeof(raw), &len));
    memcpy(&ns, raw, sizeof(ns));
    CHECK(len == 8 && (getenv("TUTTI_TIMEOUT") != NULL || ns == 300000000000LL), "raw %d %lld", len,
          (long long)ns);
    REFUSED(NULL, ncclParamGet(bind("TUTTI_TIMEOUT"), raw, 4, &len), ncclInvalidArgument,
            "needs 8 bytes");
    NCCLOK(ncclParamGet(bind("TUTTI_TUNER"), raw, sizeof(raw), &len));
    CHECK(len == (int)strlen((char *)raw) + 1, "raw string of %d bytes '%s'", len, raw);
    return 0;
}

/* The dump goes to standard output: caught in a file, then read. */
static int dump(void)
{
    char path[] = "/tmp/api232-dump-XXXXXX", buf[65536];
    int fd = mkstemp(path), saved = dup(1);
    CHECK(fd >= 0 && saved >= 0, "temporary file");
    fflush(stdout);
    dup2(fd, 1);
    ncclParamDumpAll();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    unlink(path);
    CHECK(got > 0, "no dump");
    buf[got] = '\0';
    CHECK(strstr(buf, "TUTTI_TIMEOUT (duration in nanoseconds) = ") != NULL &&
              strstr(buf, "NCCL_DEBUG (string, read as TUTTI_LOG_LEVEL) = ") != NULL,
          "dump:\n%.2000s", buf);
    if (getenv("NCCL_IB_TC") != NULL && getenv("TUTTI_IB_TC") == NULL) {
        char want[128];
        snprintf(want, sizeof(want), "read as TUTTI_IB_TC) = %ld [set by an NCCL_* variable]",
                 env_or("NCCL_IB_TC", 0));
        CHECK(strstr(buf, want) != NULL, "NCCL_IB_TC's line lacks '%s':\n%.2000s", want, buf);
    }
    return 0;
}

int t_params(ncclComm_t unused, int rank, int n)
{
    (void)unused;
    (void)n;
    if (rank != 0) {
        return 0; /* the parameters are the process's: one rank checks them */
    }
    return typed() || untyped() || dump();
}
