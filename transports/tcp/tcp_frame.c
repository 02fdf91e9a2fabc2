/*
 * tcp_frame.c - the TCP transport's frame headers, abort notices and handshake payloads on the
 * wire (tcp.h):
 * encoding, and the checks a received header passes before anything trusts it. Pure functions
 * over bytes, apart from the sockets, so that tests/fuzz/fuzz_tcp_frame.c runs exactly them.
 */
#include "tcp.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>

_Static_assert(TCP_HDR_BYTES == 16 + sizeof(struct tutti_fp), "type, len, seq, fingerprint");

void tutti__tcp_hdr_encode(uint8_t p[TCP_HDR_BYTES], uint32_t type, uint32_t len, uint64_t seq,
                           const struct tutti_fp *fp)
{
    uint32_t t = htole32(type), l = htole32(len);
    uint64_t q = htole64(seq);
    memcpy(p, &t, 4);
    memcpy(p + 4, &l, 4);
    memcpy(p + 8, &q, 8);
    if (fp != NULL) {
        memcpy(p + 16, fp, sizeof(*fp)); /* already in its wire form */
    } else {
        memset(p + 16, 0, sizeof(*fp));
    }
}

int tutti__tcp_hdr_check(const uint8_t p[TCP_HDR_BYTES], size_t slot_size, uint64_t expect_seq,
                         struct tcp_hdr *h, char *why, size_t len)
{
    uint32_t type, flen;
    uint64_t seq;
    memcpy(&type, p, 4);
    memcpy(&flen, p + 4, 4);
    memcpy(&seq, p + 8, 8);
    type = le32toh(type);
    flen = le32toh(flen);
    seq = le64toh(seq);
    if (type != TCP_FRAME_DATA && type != TCP_FRAME_ABORT && type != TCP_FRAME_BEAT) {
        snprintf(why, len, "unknown type 0x%08x", type);
        return -1;
    }
    if (type == TCP_FRAME_DATA && flen > slot_size) {
        snprintf(why, len, "length %u exceeds the slot size %zu", flen, slot_size);
        return -1;
    }
    if (type == TCP_FRAME_ABORT && flen != sizeof(struct tutti_abort_info)) {
        snprintf(why, len, "abort notice of %u bytes", flen);
        return -1;
    }
    if (type == TCP_FRAME_BEAT && flen != TCP_BEAT_BYTES) {
        snprintf(why, len, "beat of %u bytes", flen);
        return -1;
    }
    if (seq != expect_seq) {
        snprintf(why, len, "sequence number %llu, expected %llu", (unsigned long long)seq,
                 (unsigned long long)expect_seq);
        return -1;
    }
    *h = (struct tcp_hdr){.type = type, .len = flen, .seq = seq};
    memcpy(&h->fp, p + 16, sizeof(h->fp));
    return 0;
}

void tutti__tcp_abort_encode(uint8_t p[TCP_ABORT_BYTES], const struct tutti_abort_info *info)
{
    uint32_t v[4] = {htole32((uint32_t)info->origin), htole32((uint32_t)info->culprit),
                     htole32((uint32_t)info->status), htole32(info->seq)};
    memcpy(p, v, sizeof(v));
    memcpy(p + sizeof(v), info->reason, sizeof(info->reason));
    p[TCP_ABORT_BYTES - 1] = '\0';
}

void tutti__tcp_abort_decode(const uint8_t p[TCP_ABORT_BYTES], struct tutti_abort_info *info)
{
    uint32_t v[4];
    memcpy(v, p, sizeof(v));
    info->origin = (int32_t)le32toh(v[0]);
    info->culprit = (int32_t)le32toh(v[1]);
    info->status = (int32_t)le32toh(v[2]);
    info->seq = le32toh(v[3]);
    memcpy(info->reason, p + sizeof(v), sizeof(info->reason));
    info->reason[sizeof(info->reason) - 1] = '\0';
}

void tutti__tcp_beat_encode(uint8_t p[TCP_HDR_BYTES + TCP_BEAT_BYTES], uint64_t seq, int64_t age_ns)
{
    tutti__tcp_hdr_encode(p, TCP_FRAME_BEAT, TCP_BEAT_BYTES, seq, NULL);
    uint64_t a = htole64((uint64_t)(age_ns < 0 ? 0 : age_ns));
    memcpy(p + TCP_HDR_BYTES, &a, sizeof(a));
}

int64_t tutti__tcp_beat_age(const uint8_t p[TCP_BEAT_BYTES])
{
    uint64_t a;
    memcpy(&a, p, sizeof(a));
    a = le64toh(a);
    return a > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a;
}

static void put_u32s(uint8_t *p, const uint32_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t le = htole32(v[i]);
        memcpy(p + 4 * i, &le, 4);
    }
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

void tutti__tcp_hello_encode(const struct tcp_hello *h, uint8_t p[TUTTI_HS_PAYLOAD])
{
    const uint32_t v[8] = {h->kind,
                           h->from,
                           h->to,
                           h->channel,
                           h->index,
                           h->nsocks,
                           (uint32_t)h->slot_size,
                           (uint32_t)(h->slot_size >> 32)};
    put_u32s(p, v, 8);
}

void tutti__tcp_hello_decode(const uint8_t p[TUTTI_HS_PAYLOAD], struct tcp_hello *h)
{
    h->kind = get_u32(p);
    h->from = get_u32(p + 4);
    h->to = get_u32(p + 8);
    h->channel = get_u32(p + 12);
    h->index = get_u32(p + 16);
    h->nsocks = get_u32(p + 20);
    h->slot_size = get_u32(p + 24) | (uint64_t)get_u32(p + 28) << 32;
}
