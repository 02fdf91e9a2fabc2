/*
 * shm_name.c - the names of a communicator's segments, which no other user can know before they
 * exist (issue 36: a name derived from the communicator id alone could be taken first by another
 * user, and the job then failed at set-up).
 *
 * Each rank draws 16 random bytes at init and publishes them in its blob, which travels only in
 * the job's authenticated all-gather. The host's first rank's bytes key SipHash-2-4 (libsodium's
 * crypto_shorthash) over what a segment is ("d": the control directory; "f", src, dst, channel:
 * a FIFO): /tutti-<comm id>-d<64-bit hash>, /tutti-<comm id>-f<64-bit hash>. A name another user
 * sees in /dev/shm tells it nothing of the next one, and every name is made with O_EXCL, mode
 * 600, by the rank that uses it first.
 */
#include "shm.h"
#include "base/check.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

_Static_assert(crypto_shorthash_KEYBYTES == TUTTI_SHM_SALT_BYTES, "the salt keys SipHash");
_Static_assert(TUTTI_SHM_SALT_BYTES <= TUTTI_TRANSPORT_BLOB, "the salt fits the blob");

tutti_status_t tutti__shm_draw_salt(uint8_t *salt, struct tutti_errbuf *eb)
{
    size_t got = 0;
    while (got < TUTTI_SHM_SALT_BYTES) {
        ssize_t n = getrandom(salt + got, TUTTI_SHM_SALT_BYTES - got, 0);
        if (n < 0) {
            return tutti__set_error(eb, TUTTI_ERR_SYSTEM,
                                    "getrandom for the shared memory names failed");
        }
        got += (size_t)n;
    }
    return TUTTI_OK;
}

void tutti__shm_name(const struct shm_ctx *ctx, char kind, int src, int dst, int ch, char *buf,
                     size_t len)
{
    uint8_t msg[13] = {(uint8_t)kind};
    size_t n = 1;
    if (kind == 'f') {
        const int32_t v[3] = {src, dst, ch};
        memcpy(msg + 1, v, sizeof(v));
        n += sizeof(v);
    }
    uint8_t h[crypto_shorthash_BYTES];
    crypto_shorthash(h, msg, n, ctx->salt);
    uint64_t x;
    memcpy(&x, h, sizeof(x));
    snprintf(buf, len, "%s-%c%016" PRIx64, ctx->prefix, kind, x);
}
