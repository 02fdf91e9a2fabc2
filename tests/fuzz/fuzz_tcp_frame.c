/*
 * fuzz_tcp_frame.c - the frames a TCP peer sends (transports/tcp/tcp_frame.c), read the way
 * one socket of a connection reads them: header, checks, payload, next header. The first byte
 * gives the connection's sockets (1..16) and slot size; the rest is the stream. Invariants: an
 * accepted header has a known type, a length the receiver can hold (at most a slot; an abort
 * notice exactly), the expected sequence number, and encodes back to the same 48 bytes with its
 * fingerprint (carried as it is: fuzz_fp checks what the executor does with it); a
 * refused one comes with a reason; an abort notice decodes to a terminated reason and encodes
 * back to its input (whose last byte, the reason's terminator, is forced to 0); a beat (which
 * keeps the sequence number for the next frame) carries an age >= 0 that encodes back.
 */
#include "fuzz.h"
#include "transports/tcp/tcp.h"

static void check_abort(const uint8_t *p)
{
    struct tutti_abort_info info;
    uint8_t back[TCP_ABORT_BYTES], want[TCP_ABORT_BYTES];
    memset(&info, 0x5a, sizeof(info));
    tutti__tcp_abort_decode(p, &info);
    FUZZ_CHECK_STR(info.reason, sizeof(info.reason));
    tutti__tcp_abort_encode(back, &info);
    memcpy(want, p, sizeof(want));
    want[sizeof(want) - 1] = '\0';
    FUZZ_CHECK(memcmp(back, want, sizeof(want)) == 0, "abort notice does not round-trip");
}

static void check_beat(const uint8_t *p, uint64_t seq)
{
    int64_t age = tutti__tcp_beat_age(p);
    FUZZ_CHECK(age >= 0, "negative beat age %lld", (long long)age);
    uint8_t back[TCP_HDR_BYTES + TCP_BEAT_BYTES];
    tutti__tcp_beat_encode(back, seq, age);
    FUZZ_CHECK(age == INT64_MAX || memcmp(back + TCP_HDR_BYTES, p, TCP_BEAT_BYTES) == 0,
               "beat age does not round-trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t slot_sizes[] = {0, 1, 4096, 512 * 1024};
    if (size < 1) {
        return 0;
    }
    uint64_t nsocks = (uint64_t)(data[0] & 15) + 1, seq = data[0] >> 7;
    size_t slot_size = slot_sizes[(data[0] >> 4) & 3];
    const uint8_t *p = data + 1, *end = data + size;
    while ((size_t)(end - p) >= TCP_HDR_BYTES) {
        struct tcp_hdr h = {0, 0, 0, {{0}}};
        char why[120];
        memset(why, 0x5a, sizeof(why));
        if (tutti__tcp_hdr_check(p, slot_size, seq, &h, why, sizeof(why)) != 0) {
            FUZZ_CHECK_STR(why, sizeof(why));
            FUZZ_CHECK(why[0] != '\0', "a refused header without a reason");
            return 0; /* the connection fails here */
        }
        FUZZ_CHECK(h.type == TCP_FRAME_DATA || h.type == TCP_FRAME_ABORT ||
                       h.type == TCP_FRAME_BEAT,
                   "type 0x%x", h.type);
        FUZZ_CHECK(h.type == TCP_FRAME_ABORT  ? h.len == TCP_ABORT_BYTES
                   : h.type == TCP_FRAME_BEAT ? h.len == TCP_BEAT_BYTES
                                              : h.len <= slot_size,
                   "length %u with slot size %zu", h.len, slot_size);
        FUZZ_CHECK(h.seq == seq, "sequence %llu, expected %llu", (unsigned long long)h.seq,
                   (unsigned long long)seq);
        uint8_t back[TCP_HDR_BYTES];
        tutti__tcp_hdr_encode(back, h.type, h.len, h.seq, &h.fp);
        FUZZ_CHECK(memcmp(back, p, TCP_HDR_BYTES) == 0, "header does not round-trip");
        p += TCP_HDR_BYTES;
        if ((size_t)(end - p) < h.len) {
            return 0; /* the stream ends inside the payload */
        }
        if (h.type == TCP_FRAME_ABORT) {
            check_abort(p);
            return 0; /* an abort notice ends the connection */
        }
        if (h.type == TCP_FRAME_BEAT) { /* out of band: the next frame keeps the number */
            check_beat(p, h.seq);
            p += h.len;
            continue;
        }
        p += h.len;
        seq += nsocks;
    }
    return 0;
}
