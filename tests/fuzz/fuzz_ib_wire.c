/*
 * fuzz_ib_wire.c - the set-up messages a verbs peer sends over its side connection
 * (transports/ibverbs/ib_wire.c). The first byte gives what this rank expects (queue pairs 1..8,
 * and one of four FIFO geometries); the rest is the message. Invariants: an accepted hello has
 * the expected geometry and exactly the length its queue pairs need, and encodes back to the
 * same bytes; a refused one comes with a reason; a short message's kind is READY, BYE or none,
 * and a known kind encodes back to its bytes.
 */
#include "fuzz.h"
#include "transports/ibverbs/ib_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t geometry[4][2] = {{8, 524288}, {1, 1}, {256, 4096}, {2, 16777215}};
    if (size < 1) {
        return 0;
    }
    uint32_t nqps = (uint32_t)(data[0] & 7) + 1;
    uint32_t nslots = geometry[(data[0] >> 3) & 3][0], slot = geometry[(data[0] >> 3) & 3][1];
    const uint8_t *msg = data + 1;
    size_t len = size - 1;
    struct ib_hello h;
    char why[300];
    memset(why, 0x5a, sizeof(why));
    if (tutti__ib_hello_decode(msg, len, nqps, nslots, slot, &h, why, sizeof(why)) == 0) {
        FUZZ_CHECK(h.nqps == nqps && h.nslots == nslots && h.slot_size == slot,
                   "accepted another geometry");
        FUZZ_CHECK(len == IB_HELLO_HEAD + 32 * (size_t)nqps, "accepted %zu bytes", len);
        uint8_t back[IB_HELLO_MAX];
        FUZZ_CHECK(tutti__ib_hello_encode(&h, back) == len && memcmp(back, msg, len) == 0,
                   "hello does not round-trip");
    } else {
        FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0',
                   "a refusal without a terminated reason");
    }
    uint32_t kind = tutti__ib_msg_kind(msg, len);
    FUZZ_CHECK(kind == 0 || kind == IB_MSG_READY || kind == IB_MSG_BYE, "kind 0x%x", kind);
    if (kind != 0) {
        uint8_t back[4];
        tutti__ib_msg_encode(kind, back);
        FUZZ_CHECK(len == 4 && memcmp(back, msg, 4) == 0, "short message does not round-trip");
    }
    return 0;
}
