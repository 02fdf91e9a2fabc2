/*
 * fuzz_boot_wire.c - bootstrap messages (src/comm/boot_wire.c, src/exec/peer.c): what the root
 * checks in a joining rank's hello and requests, and what a rank checks in the root's replies. The
 * first byte picks the reader:
 *   0: a hello (32 bytes) and what the root knows (nranks so far);
 *   1: the root reading a stream of requests;
 *   2: a rank reading a stream of replies (errors, syncs, all-gathers of peer records).
 * Invariants: an admitted hello has a rank inside nranks and agrees with the root; a refusal
 * has a reason; headers encode back to their bytes; a length over BOOT_MAX_PAYLOAD stops the
 * root; statuses from the wire are known error codes (or success in a sync); error reasons are
 * terminated within any buffer; a peer record that validates has a terminated host name.
 */
#include "fuzz.h"
#include "comm/boot_wire.h"
#include "net/handshake.h"
#include "exec/peer.h"

#include <arpa/inet.h>

static void read_hello(const uint8_t *p, size_t n)
{
    uint8_t payload[TUTTI_HS_PAYLOAD] = {0};
    int32_t known = 0;
    memcpy(payload, p, n < sizeof(payload) ? n : sizeof(payload));
    if (n > sizeof(payload)) {
        memcpy(&known, p + sizeof(payload), n - sizeof(payload) < 4 ? n - sizeof(payload) : 4);
    }
    known = known < 0 ? -(known + 1) : known; /* the root's count is never negative */
    struct boot_hello h;
    memcpy(&h, payload, sizeof(h)); /* as the root does */
    char why[200];
    memset(why, 0x5a, sizeof(why));
    int v = tutti__boot_hello_check(&h, known, why, sizeof(why));
    FUZZ_CHECK(v == 0 || v == -1 || v == -2, "verdict %d", v);
    if (v == 0) {
        FUZZ_CHECK(h.kind == BOOT_KIND && h.rank >= 0 && h.rank < h.nranks,
                   "admitted rank %d of %d (kind 0x%x)", h.rank, h.nranks, h.kind);
        FUZZ_CHECK(known == 0 || h.nranks == known, "admitted nranks %d, root has %d", h.nranks,
                   known);
        return;
    }
    FUZZ_CHECK_STR(why, sizeof(why));
    FUZZ_CHECK(why[0] != '\0', "a refusal without a reason");
    FUZZ_CHECK(v != -2 || (known != 0 && h.nranks != known), "fatal refusal of a valid count");
}

static void check_status(tutti_status_t st, int ok_allowed)
{
    FUZZ_CHECK(st < 0 || (ok_allowed && st == TUTTI_OK), "status %d from the wire", (int)st);
    FUZZ_CHECK(strcmp(tutti_status_name(st), "UNKNOWN") != 0, "unknown status %d", (int)st);
}

static void read_error(const uint8_t *p, size_t len)
{
    struct boot_error e;
    memcpy(&e, p, sizeof(e));
    char *reason = fuzz_outbuf(len);
    int culprit = 0;
    check_status(tutti__boot_error_decode(&e, &culprit, reason, len), 0);
    if (len > 0) {
        FUZZ_CHECK_STR(reason, len);
    }
    fuzz_outbuf_free(reason, len);
}

/* An all-gather reply: nranks peer records, as init.c validates them. */
static void read_peers(const uint8_t *p, size_t len)
{
    size_t rec = sizeof(struct tutti_peer_info);
    int nranks = (int)(len / rec);
    for (int r = 0; r < nranks; r++) {
        struct tutti_peer_info info;
        memcpy(&info, p + (size_t)r * rec, rec);
        if (tutti__peer_validate(&info, r, nranks) != TUTTI_OK) {
            return;
        }
        FUZZ_CHECK(memchr(info.hostname, '\0', sizeof(info.hostname)) != NULL, "host name");
        char s[48];
        tutti__peer_str(&info, s, sizeof(s));
        FUZZ_CHECK_STR(s, sizeof(s));
    }
}

/* A stream of messages; root != 0: requests as the root reads them, else replies. */
static void read_stream(const uint8_t *p, const uint8_t *end, int root)
{
    while ((size_t)(end - p) >= BOOT_HDR_BYTES) {
        struct boot_hdr h;
        uint8_t back[BOOT_HDR_BYTES];
        tutti__boot_hdr_decode(p, &h);
        tutti__boot_hdr_encode(h.type, h.len, back);
        FUZZ_CHECK(memcmp(back, p, sizeof(back)) == 0, "header does not round-trip");
        p += BOOT_HDR_BYTES;
        if ((root && h.len > BOOT_MAX_PAYLOAD) || (size_t)(end - p) < h.len) {
            return; /* the root drops the client; or the stream ends inside the payload */
        }
        if (h.type == BOOT_REQ_SYNC || h.type == BOOT_REP_SYNC) {
            if (h.len == sizeof(struct boot_sync)) {
                struct boot_sync s;
                memcpy(&s, p, sizeof(s));
                check_status(tutti__boot_status_decode(s.status), 1);
            }
        } else if (!root && h.type == BOOT_REP_ERROR && h.len == sizeof(struct boot_error)) {
            read_error(p, (size_t)(p[0] % 64) * 5);
        } else if (!root && h.type == BOOT_REP_ALLGATHER) {
            read_peers(p, h.len);
        }
        p += h.len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
        read_hello(data + 1, size - 1);
        break;
    case 1:
        read_stream(data + 1, data + size, 1);
        break;
    default:
        read_stream(data + 1, data + size, 0);
        break;
    }
    return 0;
}
