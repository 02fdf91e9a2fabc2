/*
 * test_wire.c - the checks on bytes from other processes that live apart from the sockets:
 * bootstrap messages (src/comm/boot_wire.c) and TCP frame headers (transports/tcp/tcp_frame.c).
 * tests/fuzz runs the same functions on arbitrary bytes; these pin the expected answers.
 */
#include "comm/boot_wire.h"
#include "transports/tcp/tcp.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

Test(boot_wire, header_round_trips_in_network_order)
{
    uint8_t raw[BOOT_HDR_BYTES];
    struct boot_hdr h;
    tutti__boot_hdr_encode(BOOT_REQ_SYNC, 8, raw);
    cr_assert_eq(raw[3], BOOT_REQ_SYNC);
    cr_assert_eq(raw[7], 8);
    tutti__boot_hdr_decode(raw, &h);
    cr_assert_eq(h.type, BOOT_REQ_SYNC);
    cr_assert_eq(h.len, 8);
}

Test(boot_wire, hello_is_refused_for_kind_range_and_count)
{
    struct boot_hello h = {.kind = BOOT_KIND, .rank = 2, .nranks = 4, .pid = 7};
    char why[200];
    cr_assert_eq(tutti__boot_hello_check(&h, 0, why, sizeof(why)), 0);
    cr_assert_eq(tutti__boot_hello_check(&h, 4, why, sizeof(why)), 0);
    cr_assert_eq(tutti__boot_hello_check(&h, 5, why, sizeof(why)), -2, "a count mismatch is fatal");
    cr_assert(strstr(why, "disagree on the number of ranks (nranks)") != NULL &&
                  strstr(why, "one of 4, the ranks before it as one of 5") != NULL,
              "%s", why);
    h.rank = 4;
    cr_assert_eq(tutti__boot_hello_check(&h, 4, why, sizeof(why)), -1);
    cr_assert(strstr(why, "out of range") != NULL, "%s", why);
    h.rank = 0;
    h.kind = 1;
    cr_assert_eq(tutti__boot_hello_check(&h, 4, why, sizeof(why)), -1);
}

Test(boot_wire, unknown_status_from_the_wire_becomes_remote)
{
    cr_assert_eq(tutti__boot_status_decode((int32_t)htonl((uint32_t)TUTTI_ERR_TIMEOUT)),
                 TUTTI_ERR_TIMEOUT);
    cr_assert_eq(tutti__boot_status_decode((int32_t)htonl(0)), TUTTI_OK);
    cr_assert_eq(tutti__boot_status_decode((int32_t)htonl(1)), TUTTI_ERR_REMOTE, "in progress");
    cr_assert_eq(tutti__boot_status_decode((int32_t)htonl((uint32_t)-1000)), TUTTI_ERR_REMOTE);
}

Test(boot_wire, error_reason_is_terminated_and_never_success)
{
    struct boot_error e;
    memset(&e, 'x', sizeof(e)); /* no terminator anywhere */
    e.status = 0;
    e.culprit = (int32_t)htonl(3);
    char reason[16];
    int culprit = -1;
    cr_assert_eq(tutti__boot_error_decode(&e, &culprit, reason, sizeof(reason)), TUTTI_ERR_REMOTE);
    cr_assert_eq(culprit, 3);
    cr_assert_eq(strlen(reason), sizeof(reason) - 1);
}

/* Walk up from r to rank 0; the number of hops. */
static int tree_depth(int n, int r)
{
    int d = 0, parent, first[BOOT_TREE_FANOUT + 1];
    for (; r != 0; d++) {
        cr_assert_geq(tutti__boot_tree_place(n, r, &parent, first), 0);
        cr_assert(parent >= 0 && parent < r, "n %d: rank %d has parent %d", n, r, parent);
        r = parent;
    }
    return d;
}

Test(boot_wire, tree_places_every_rank_once_in_contiguous_subtrees_of_log_depth)
{
    static int parent_of[700];
    for (int n = 1; n <= 700; n++) {
        int depth = 0;
        for (int r = 0; r < n; r++) {
            parent_of[r] = -2;
        }
        for (int r = 0; r < n; r++) {
            int parent, first[BOOT_TREE_FANOUT + 1];
            int k = tutti__boot_tree_place(n, r, &parent, first);
            cr_assert(k >= 0 && k <= BOOT_TREE_FANOUT, "n %d rank %d: %d children", n, r, k);
            cr_assert_eq(r == 0, parent == -1, "n %d rank %d parent %d", n, r, parent);
            int end = first[k];
            cr_assert(end > r && end <= n, "n %d rank %d: subtree end %d", n, r, end);
            int below = -1; /* the most levels below any child */
            for (int i = 0; i < k; i++) {
                below = below > tutti__boot_tree_height(first[i + 1] - first[i])
                            ? below
                            : tutti__boot_tree_height(first[i + 1] - first[i]);
            }
            cr_assert_eq(tutti__boot_tree_height(end - r), below + 1,
                         "n %d rank %d: height %d, children's most %d", n, r,
                         tutti__boot_tree_height(end - r), below);
            for (int i = 0; i < k; i++) {
                int cp, cf[BOOT_TREE_FANOUT + 1];
                int ck = tutti__boot_tree_place(n, first[i], &cp, cf);
                cr_assert_eq(cp, r, "n %d: child %d of %d says its parent is %d", n, first[i], r,
                             cp);
                cr_assert_eq(cf[ck], first[i + 1], "n %d: child %d's subtree ends at %d, not %d", n,
                             first[i], cf[ck], first[i + 1]);
                cr_assert_eq(first[i], i == 0 ? r + 1 : first[i], "runs start right after r");
                parent_of[first[i]] = r;
            }
            depth = depth > tree_depth(n, r) ? depth : tree_depth(n, r);
        }
        for (int r = 1; r < n; r++) {
            cr_assert_neq(parent_of[r], -2, "n %d: rank %d is nobody's child", n, r);
        }
        cr_assert_eq(tutti__boot_tree_height(n), depth, "n %d: height %d, deepest rank at %d", n,
                     tutti__boot_tree_height(n), depth);
        int bound = 0; /* ceil(log_8(n)) levels below rank 0 suffice */
        for (long cap = 1; cap < n; cap *= BOOT_TREE_FANOUT) {
            bound++;
        }
        cr_assert_leq(depth, bound, "n %d: depth %d, above %d", n, depth, bound);
    }
    int parent, first[BOOT_TREE_FANOUT + 1];
    cr_assert_eq(tutti__boot_tree_place(4, 4, &parent, first), -1);
    cr_assert_eq(tutti__boot_tree_place(0, 0, &parent, first), -1);
}

Test(tcp_frame, header_checks_name_what_is_wrong)
{
    uint8_t raw[TCP_HDR_BYTES];
    struct tcp_hdr h;
    char why[120];
    struct tutti_fp fp = {{1, 2, 3, 0x0102030405060708ull}};
    tutti__tcp_hdr_encode(raw, TCP_FRAME_DATA, 100, 5, &fp);
    cr_assert_eq(tutti__tcp_hdr_check(raw, 100, 5, &h, why, sizeof(why)), 0);
    cr_assert(h.type == TCP_FRAME_DATA && h.len == 100 && h.seq == 5);
    cr_assert(memcmp(&h.fp, &fp, sizeof(fp)) == 0, "the fingerprint travels in the header");
    cr_assert_eq(tutti__tcp_hdr_check(raw, 99, 5, &h, why, sizeof(why)), -1);
    cr_assert(strstr(why, "exceeds the slot size 99") != NULL, "%s", why);
    cr_assert_eq(tutti__tcp_hdr_check(raw, 100, 6, &h, why, sizeof(why)), -1);
    cr_assert(strstr(why, "sequence number 5, expected 6") != NULL, "%s", why);
    tutti__tcp_hdr_encode(raw, TCP_FRAME_ABORT, TCP_ABORT_BYTES - 1, 0, NULL);
    cr_assert_eq(tutti__tcp_hdr_check(raw, 1 << 20, 0, &h, why, sizeof(why)), -1);
    tutti__tcp_hdr_encode(raw, TCP_FRAME_BEAT, TCP_BEAT_BYTES + 1, 0, NULL);
    cr_assert_eq(tutti__tcp_hdr_check(raw, 1 << 20, 0, &h, why, sizeof(why)), -1);
    cr_assert(strstr(why, "beat of 9 bytes") != NULL, "%s", why);
    tutti__tcp_hdr_encode(raw, 0x41414141u, 0, 0, NULL);
    cr_assert_eq(tutti__tcp_hdr_check(raw, 1 << 20, 0, &h, why, sizeof(why)), -1);
    cr_assert(strstr(why, "unknown type 0x41414141") != NULL, "%s", why);
}

Test(tcp_frame, beat_round_trips_its_age_and_clamps_negative_ones)
{
    uint8_t raw[TCP_HDR_BYTES + TCP_BEAT_BYTES];
    struct tcp_hdr h;
    char why[120];
    tutti__tcp_beat_encode(raw, 7, 123456789);
    cr_assert_eq(tutti__tcp_hdr_check(raw, 0, 7, &h, why, sizeof(why)), 0, "%s", why);
    cr_assert(h.type == TCP_FRAME_BEAT && h.len == TCP_BEAT_BYTES && h.seq == 7);
    cr_assert_eq(tutti__tcp_beat_age(raw + TCP_HDR_BYTES), 123456789);
    tutti__tcp_beat_encode(raw, 7, -5);
    cr_assert_eq(tutti__tcp_beat_age(raw + TCP_HDR_BYTES), 0);
    memset(raw + TCP_HDR_BYTES, 0xff, TCP_BEAT_BYTES);
    cr_assert_eq(tutti__tcp_beat_age(raw + TCP_HDR_BYTES), INT64_MAX);
}

Test(tcp_frame, abort_notice_round_trips_with_a_terminated_reason)
{
    struct tutti_abort_info in = {.origin = 2, .culprit = 5, .status = TUTTI_ERR_REMOTE, .seq = 9};
    memset(in.reason, 'r', sizeof(in.reason)); /* unterminated */
    uint8_t raw[TCP_ABORT_BYTES];
    struct tutti_abort_info out;
    tutti__tcp_abort_encode(raw, &in);
    tutti__tcp_abort_decode(raw, &out);
    cr_assert(out.origin == 2 && out.culprit == 5 && out.status == TUTTI_ERR_REMOTE &&
              out.seq == 9);
    cr_assert_eq(strlen(out.reason), sizeof(out.reason) - 1);
}
