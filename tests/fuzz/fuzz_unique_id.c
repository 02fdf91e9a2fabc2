/*
 * fuzz_unique_id.c - decoding the 128-byte unique id (tutti__uid_decode in src/comm/init.c), which
 * users carry between processes by any means. Invariants: a rejected id leaves a message; an
 * accepted one holds an IPv4 or IPv6 root address that prints within any buffer; encoding
 * the decoded id and decoding again gives the same id (its canonical form is stable); the
 * canonical form keeps the magic, version, job id and secret bytes of the input.
 */
#include "fuzz.h"
#include "comm/init.h"
#include "tutti.h"

#include <sys/socket.h>

static void check_prints(const union tutti_sockaddr *a, size_t len)
{
    char *buf = fuzz_outbuf(len);
    tutti__sockaddr_str(a, buf, len);
    FUZZ_CHECK_STR(buf, len);
    fuzz_outbuf_free(buf, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tutti_unique_id_t id, canon, again;
    struct tutti_uid u, u2;
    memset(&id, 0, sizeof(id));
    memcpy(&id, data, size < sizeof(id) ? size : sizeof(id));
    memset(&u, 0, sizeof(u));
    memset(&u2, 0, sizeof(u2));
    if (tutti__uid_decode(&id, &u) != TUTTI_OK) {
        const char *msg = tutti_last_error(NULL);
        FUZZ_CHECK(msg != NULL && msg[0] != '\0', "a rejected id without a message");
        return 0;
    }
    int fam = u.boot.root.sa.sa_family;
    FUZZ_CHECK(fam == AF_INET || fam == AF_INET6, "root address family %d", fam);
    for (size_t len = 1; len <= 80; len += 13) {
        check_prints(&u.boot.root, len);
    }
    tutti__uid_encode(&u, &canon);
    FUZZ_CHECK(tutti__uid_decode(&canon, &u2) == TUTTI_OK, "the canonical id does not decode");
    FUZZ_CHECK(memcmp(&u, &u2, sizeof(u)) == 0, "decode(encode(decode(id))) != decode(id)");
    tutti__uid_encode(&u2, &again);
    FUZZ_CHECK(memcmp(&canon, &again, sizeof(canon)) == 0, "the canonical form is not stable");
    /* magic, version, job id, secret: the first 32 bytes pass through unchanged */
    FUZZ_CHECK(memcmp(&canon, &id, 32) == 0, "the canonical form changed the id's fixed fields");
    return 0;
}
