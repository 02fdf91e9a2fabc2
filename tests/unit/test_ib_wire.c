/*
 * test_ib_wire.c - the verbs transport's set-up messages (transports/ibverbs/ib_wire.c) and the
 * blob that says which ranks can reach each other over verbs: round trips, every refusal, and
 * no read past a short message. Pure functions: no RDMA device needed.
 */
#include "transports/ibverbs/ib.h"
#include "transports/ibverbs/ib_wire.h"

#include <criterion/criterion.h>
#include <string.h>

static struct ib_hello sample(uint32_t nqps)
{
    struct ib_hello h = {.nqps = nqps,
                         .nslots = 8,
                         .slot_size = 524288,
                         .addr = 0x00007f1234567000ull,
                         .rkey = 0xdeadbeef};
    for (uint32_t q = 0; q < nqps; q++) {
        for (int i = 0; i < 16; i++) {
            h.qp[q].gid[i] = (uint8_t)(q * 16 + i);
        }
        h.qp[q].qpn = 0x100 + q;
        h.qp[q].psn = 0xabcdef - q;
        h.qp[q].lid = (uint16_t)(0x1234 + q);
        h.qp[q].gid_index = 3;
        h.qp[q].link = TUTTI_IB_LINK_ETH;
        h.qp[q].mtu = 4096;
    }
    return h;
}

Test(ib_wire, hello_round_trips_for_every_queue_pair_count)
{
    for (uint32_t n = 1; n <= IB_WIRE_MAX_QPS; n++) {
        struct ib_hello h = sample(n), back;
        uint8_t msg[IB_HELLO_MAX];
        size_t len = tutti__ib_hello_encode(&h, msg);
        cr_assert_eq(len, IB_HELLO_HEAD + 32 * n);
        char why[300] = "";
        cr_assert_eq(tutti__ib_hello_decode(msg, len, n, 8, 524288, &back, why, sizeof(why)), 0,
                     "%s", why);
        cr_assert_eq(back.addr, h.addr);
        cr_assert_eq(back.rkey, h.rkey);
        cr_assert_eq(memcmp(back.qp, h.qp, n * sizeof(h.qp[0])), 0, "queue pairs differ (n %u)", n);
    }
}

Test(ib_wire, hello_that_disagrees_on_the_fifo_names_the_settings)
{
    struct ib_hello h = sample(2), back;
    uint8_t msg[IB_HELLO_MAX];
    size_t len = tutti__ib_hello_encode(&h, msg);
    char why[300] = "";
    cr_assert_eq(tutti__ib_hello_decode(msg, len, 1, 8, 524288, &back, why, sizeof(why)), -1);
    cr_assert(strstr(why, "TUTTI_IB_QPS") != NULL, "%s", why);
    cr_assert_eq(tutti__ib_hello_decode(msg, len, 2, 4, 524288, &back, why, sizeof(why)), -1);
    cr_assert_eq(tutti__ib_hello_decode(msg, len, 2, 8, 4096, &back, why, sizeof(why)), -1);
    cr_assert(strstr(why, "2 queue pairs, 8 slots of 524288 bytes") != NULL, "%s", why);
}

Test(ib_wire, malformed_hellos_are_refused_without_reading_past_them)
{
    struct ib_hello h = sample(3), back;
    uint8_t msg[IB_HELLO_MAX];
    size_t len = tutti__ib_hello_encode(&h, msg);
    char why[300];
    for (size_t cut = 0; cut < len; cut++) { /* every truncation */
        cr_assert_eq(tutti__ib_hello_decode(msg, cut, 3, 8, 524288, &back, why, sizeof(why)), -1,
                     "%zu of %zu bytes accepted", cut, len);
    }
    uint8_t bad[IB_HELLO_MAX];
    memcpy(bad, msg, len);
    bad[0] ^= 1; /* magic */
    cr_assert_eq(tutti__ib_hello_decode(bad, len, 3, 8, 524288, &back, why, sizeof(why)), -1);
    memcpy(bad, msg, len);
    bad[28] = 1; /* the reserved word */
    cr_assert_eq(tutti__ib_hello_decode(bad, len, 3, 8, 524288, &back, why, sizeof(why)), -1);
    cr_assert(strstr(why, "malformed") != NULL, "%s", why);
    memcpy(bad, msg, len);
    bad[4] = 9; /* 9 queue pairs claimed, and expected: still more than a hello can hold */
    cr_assert_eq(tutti__ib_hello_decode(bad, len, 9, 8, 524288, &back, why, sizeof(why)), -1);
}

Test(ib_wire, short_messages_are_known_by_kind_and_length)
{
    uint8_t m[4];
    tutti__ib_msg_encode(IB_MSG_READY, m);
    cr_assert_eq(tutti__ib_msg_kind(m, 4), IB_MSG_READY);
    cr_assert_eq(tutti__ib_msg_kind(m, 3), 0);
    tutti__ib_msg_encode(IB_MSG_BYE, m);
    cr_assert_eq(tutti__ib_msg_kind(m, 4), IB_MSG_BYE);
    tutti__ib_msg_encode(IB_MSG_HELLO, m);
    cr_assert_eq(tutti__ib_msg_kind(m, 4), 0, "a hello is not a short message");
}

Test(ib_wire, blobs_are_compatible_only_with_a_common_link_layer)
{
    uint8_t roce[TUTTI_TRANSPORT_BLOB] = {0}, ib[TUTTI_TRANSPORT_BLOB] = {0},
            none[TUTTI_TRANSPORT_BLOB] = {0};
    struct ib_blob b = {.magic = IB_BLOB_MAGIC, .links = 1u << TUTTI_IB_LINK_ETH, .nports = 2};
    memcpy(roce, &b, sizeof(b)); /* little-endian host: the wire form */
    b.links = 1u << TUTTI_IB_LINK_IB;
    memcpy(ib, &b, sizeof(b));
    cr_assert(tutti__ib_blob_compatible(roce, roce));
    cr_assert(tutti__ib_blob_compatible(ib, ib));
    cr_assert_not(tutti__ib_blob_compatible(roce, ib), "RoCE and InfiniBand ports cannot talk");
    cr_assert_not(tutti__ib_blob_compatible(roce, none), "a rank without a port");
    cr_assert_not(tutti__ib_blob_compatible(none, none));
}
