/*
 * test_fp.c - operation fingerprints (src/exec/fp.c): what both ends of a message compute, what the
 * wire form refuses, and the executor's check on the simulated network (tests/common/sim.c):
 * data of another call fails the operation before it is used, naming both ranks and both calls,
 * and leftover data of an earlier call that only sent is named as such.
 */
#include "coll/coll.h"
#include "comm/comm.h"
#include "exec/fp.h"
#include "gpu/ipc.h"
#include "sched_world.h"
#include "sim.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <string.h>

static struct tutti_op_desc op_of(tutti_coll_t c, size_t count, tutti_datatype_t dt, tutti_op_t op,
                                  int root, int peer, uint64_t seq)
{
    return (struct tutti_op_desc){
        .coll = c, .count = count, .dt = dt, .op = op, .root = root, .peer = peer, .seq = seq};
}

static struct tutti_fp fp_of(const struct tutti_op_desc *op, int rank)
{
    struct tutti_fp fp;
    tutti__fp_make(op, rank, &fp);
    return fp;
}

Test(fp, both_ends_of_a_message_compute_the_same_bytes)
{
    struct tutti_op_desc send = op_of(TUTTI_COLL_SEND, 10, TUTTI_INT32, TUTTI_SUM, -1, 1, 4);
    struct tutti_op_desc recv = op_of(TUTTI_COLL_RECV, 10, TUTTI_INT32, TUTTI_MAX, -1, 0, 4);
    struct tutti_fp s = fp_of(&send, 0), r = fp_of(&recv, 1);
    cr_assert(tutti__fp_eq(&s, &r), "rank 0's send #4 to 1 and rank 1's receive #4 from 0");
    recv.count = 11;
    r = fp_of(&recv, 1);
    cr_assert(!tutti__fp_eq(&s, &r), "another count");
    recv.count = 10;
    recv.seq = 5;
    r = fp_of(&recv, 1);
    cr_assert(!tutti__fp_eq(&s, &r), "another sequence number");
    recv.seq = 4;
    recv.dt = TUTTI_FLOAT32; /* the same size */
    r = fp_of(&recv, 1);
    cr_assert(!tutti__fp_eq(&s, &r), "another datatype of the same size");
    recv.dt = TUTTI_INT32;
    r = fp_of(&recv, 2); /* rank 2 receiving from 0: not the message rank 0 sent to 1 */
    cr_assert(!tutti__fp_eq(&s, &r), "another receiver");
}

Test(fp, collectives_compare_only_the_fields_they_use)
{
    struct tutti_op_desc a = op_of(TUTTI_COLL_BROADCAST, 8, TUTTI_FLOAT32, TUTTI_SUM, 1, -1, 3);
    struct tutti_op_desc b = a;
    b.op = TUTTI_MAX; /* a broadcast has no op: whatever was passed */
    struct tutti_fp fa = fp_of(&a, 0), fb = fp_of(&b, 1);
    cr_assert(tutti__fp_eq(&fa, &fb), "the op of a broadcast is not compared");
    b.root = 0;
    fb = fp_of(&b, 1);
    cr_assert(!tutti__fp_eq(&fa, &fb), "another root");
    struct tutti_op_desc x = op_of(TUTTI_COLL_ALLREDUCE, 8, TUTTI_FLOAT32, TUTTI_SUM, -1, -1, 3);
    struct tutti_op_desc y = x;
    y.root = 5; /* not used by an all-reduce */
    struct tutti_fp fx = fp_of(&x, 0), fy = fp_of(&y, 1);
    cr_assert(tutti__fp_eq(&fx, &fy), "the root of an all-reduce is not compared");
    y.op = TUTTI_MAX;
    fy = fp_of(&y, 1);
    cr_assert(!tutti__fp_eq(&fx, &fy), "another op");
    y = x;
    y.coll = TUTTI_COLL_REDUCE_SCATTER;
    fy = fp_of(&y, 1);
    cr_assert(!tutti__fp_eq(&fx, &fy), "another collective");
    fx = fp_of(&a, 0); /* broadcast #3 against all-reduce #3 */
    cr_assert(!tutti__fp_eq(&fx, &fy), "another collective");
}

Test(fp, decode_round_trips_and_describes_the_call)
{
    struct tutti_op_desc ops[] = {
        op_of(TUTTI_COLL_ALLREDUCE, 1000, TUTTI_INT32, TUTTI_SUM, -1, -1, 2),
        op_of(TUTTI_COLL_BROADCAST, 8, TUTTI_FLOAT32, TUTTI_AVG, 1, -1, 1),
        op_of(TUTTI_COLL_RECV, 10, TUTTI_INT8, TUTTI_SUM, -1, 1, 3),
        op_of(TUTTI_COLL_BARRIER, 0, TUTTI_UINT8, TUTTI_MAX, -1, -1, 9),
    };
    const char *human[] = {"allreduce #2 (1000 x int32, sum)", "broadcast #1 (8 x float32, root 1)",
                           "send/recv #3 (10 x int8, rank 1 -> rank 0)", "barrier #9 (0 x uint8)"};
    const char *compact[] = {"allreduce#2:1000xint32:sum", "broadcast#1:8xfloat32:root=1",
                             "sendrecv#3:10xint8:1->0", "barrier#9:0xuint8"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        struct tutti_fp fp = fp_of(&ops[i], 0), back;
        struct tutti_fp_desc d;
        char why[160], s[96];
        cr_assert_eq(tutti__fp_decode(&fp, 2, &d, why, sizeof(why)), 0, "%zu: %s", i, why);
        tutti__fp_encode(&d, &back);
        cr_assert(tutti__fp_eq(&fp, &back), "%zu does not round-trip", i);
        tutti__fp_str(&d, 0, s, sizeof(s));
        cr_assert_str_eq(s, human[i]);
        tutti__fp_str(&d, 1, s, sizeof(s));
        cr_assert_str_eq(s, compact[i]);
    }
}

/* A block call of a blockwise plan (coll/blocks.c) as rank `rank` makes it. */
static struct tutti_op_desc block_of(tutti_coll_t c, size_t count, int a, int b,
                                     const struct tutti_vcounts *v)
{
    struct tutti_op_desc d = op_of(c, count, TUTTI_INT32, TUTTI_SUM, -1, -1, 5);
    d.block = 1;
    d.fp_a = a;
    d.fp_b = b;
    d.v = v;
    d.root = c == TUTTI_COLL_GATHERV ? a : -1;
    return d;
}

/* The sender of a block and its receiver compute the same bytes when their counts agree, and
 * different bytes (named in the description) when they do not. */
Test(fp, a_block_carries_its_count_as_each_end_sees_it)
{
    size_t counts[3] = {4, 0, 9}, other[3] = {4, 1, 9};
    struct tutti_vcounts v = {NULL, NULL, counts, NULL, 0x1234abcdu};
    struct tutti_vcounts w = {NULL, NULL, other, NULL, 0x99990001u};
    struct tutti_fp s, r;
    struct tutti_op_desc snd = block_of(TUTTI_COLL_ALLTOALLV, 7, 0, 2, NULL);
    struct tutti_op_desc rcv = block_of(TUTTI_COLL_ALLTOALLV, 7, 0, 2, NULL);
    s = fp_of(&snd, 0);
    r = fp_of(&rcv, 2);
    cr_assert(tutti__fp_eq(&s, &r), "alltoallv: both ends of block 0 -> 2");
    rcv.count = 8;
    r = fp_of(&rcv, 2);
    cr_assert(!tutti__fp_eq(&s, &r), "alltoallv: 7 elements sent, 8 expected");
    struct tutti_op_desc g1 = block_of(TUTTI_COLL_ALLGATHERV, 0, -1, 1, &v);
    struct tutti_op_desc g2 = block_of(TUTTI_COLL_ALLGATHERV, 0, -1, 1, &w);
    s = fp_of(&g1, 0);
    r = fp_of(&g2, 1);
    cr_assert(!tutti__fp_eq(&s, &r), "allgatherv: the digests of the count vectors differ");
    struct tutti_fp_desc d;
    char why[160], str[160];
    cr_assert_eq(tutti__fp_decode(&s, 3, &d, why, sizeof(why)), 0, "%s", why);
    tutti__fp_str(&d, 0, str, sizeof(str));
    cr_assert_str_eq(str, "allgatherv #5 (block of rank 1: 0 x int32, counts digest 1234abcd)");
    tutti__fp_str(&d, 1, str, sizeof(str));
    cr_assert_str_eq(str, "allgatherv#5:blk1=0xint32:counts=1234abcd");
    s = fp_of(&snd, 0);
    cr_assert_eq(tutti__fp_decode(&s, 3, &d, why, sizeof(why)), 0, "%s", why);
    tutti__fp_str(&d, 0, str, sizeof(str));
    cr_assert_str_eq(str, "alltoallv #5 (7 x int32, rank 0 -> rank 2)");
    struct tutti_op_desc gv = block_of(TUTTI_COLL_GATHERV, 3, 2, 0, NULL);
    s = fp_of(&gv, 0);
    cr_assert_eq(tutti__fp_decode(&s, 3, &d, why, sizeof(why)), 0, "%s", why);
    tutti__fp_str(&d, 0, str, sizeof(str));
    cr_assert_str_eq(str, "gatherv #5 (block of rank 0: 3 x int32, root 2)");
}

/* w3 of a fingerprint with these bytes (version, collective, datatype, op). */
static uint64_t w3(unsigned ver, unsigned coll, unsigned dt, unsigned op)
{
    return htole64((uint64_t)ver | (uint64_t)coll << 8 | (uint64_t)dt << 16 | (uint64_t)op << 24);
}

static uint64_t w2(int32_t a, int32_t b)
{
    return htole64((uint64_t)(uint32_t)a | (uint64_t)(uint32_t)b << 32);
}

Test(fp, decode_refuses_what_no_rank_sends)
{
    struct {
        uint64_t w2, w3;
        const char *what;
    } bad[] = {
        {w2(-1, -1), w3(2, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, TUTTI_SUM), "version"},
        {w2(-1, -1), w3(1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, TUTTI_SUM) | 1ull << 40,
         "reserved bytes"},
        {w2(-1, -1), w3(1, TUTTI_COLL_ALLTOALLV, TUTTI_INT32, 0xff) | 1ull << 40, "reserved bytes"},
        {w2(0, -1), w3(1, TUTTI_COLL_ALLTOALLV, TUTTI_INT32, 0xff), "rank"},
        {w2(-1, 2), w3(1, TUTTI_COLL_ALLGATHERV, TUTTI_INT32, 0xff), "rank"},
        {w2(0, -1), w3(1, TUTTI_COLL_ALLGATHERV, TUTTI_INT32, 0xff), "rank"},
        {w2(-1, 1), w3(1, TUTTI_COLL_GATHERV, TUTTI_INT32, 0xff), "rank"},
        {w2(-1, 0), w3(1, TUTTI_COLL_REDUCE_SCATTERV, TUTTI_INT32, 0xff), "op"},
        {w2(-1, -1), w3(1, TUTTI_COLL_RECV, TUTTI_INT32, 0xff), "collective"},
        {w2(-1, -1), w3(1, TUTTI_COLL_COUNT, TUTTI_INT32, 0xff), "collective"},
        {w2(-1, -1), w3(1, TUTTI_COLL_ALLREDUCE, TUTTI_NUM_DATATYPES, TUTTI_SUM), "datatype"},
        {w2(-1, -1), w3(1, TUTTI_COLL_ALLREDUCE, TUTTI_INT32, TUTTI_NUM_OPS + 1), "op"},
        {w2(0, -1), w3(1, TUTTI_COLL_BROADCAST, TUTTI_INT32, TUTTI_SUM), "op"},
        {w2(2, -1), w3(1, TUTTI_COLL_BROADCAST, TUTTI_INT32, 0xff), "rank"},
        {w2(0, 0), w3(1, TUTTI_COLL_BROADCAST, TUTTI_INT32, 0xff), "rank"},
        {w2(0, -1), w3(1, TUTTI_COLL_ALLGATHER, TUTTI_INT32, 0xff), "rank"},
        {w2(0, 2), w3(1, TUTTI_COLL_SEND, TUTTI_INT32, 0xff), "rank"},
        {w2(-1, 1), w3(1, TUTTI_COLL_SEND, TUTTI_INT32, 0xff), "rank"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tutti_fp fp = {{htole64(1), htole64(8), bad[i].w2, bad[i].w3}};
        struct tutti_fp_desc d;
        char why[160] = "";
        cr_assert_eq(tutti__fp_decode(&fp, 2, &d, why, sizeof(why)), -1, "case %zu accepted", i);
        cr_assert(strstr(why, bad[i].what) != NULL, "case %zu: %s (wanted %s)", i, why,
                  bad[i].what);
    }
    struct tutti_fp zero = {{0}};
    struct tutti_fp_desc d;
    char why[160];
    cr_assert_eq(tutti__fp_decode(&zero, 2, &d, why, sizeof(why)), -1, "all zero: no call");
}

/* Run one call per rank on the simulated network; returns sim_run's result. */
static int run_calls(struct sim_net *net, int n, struct tutti_op_desc *ops)
{
    struct tutti_plan plans[4];
    struct tutti_exec exs[4];
    memset(plans, 0, sizeof(plans));
    for (int r = 0; r < n; r++) {
        struct tutti_plan_params pp = params(r, n, 1, 64, -1);
        cr_assert_eq(tutti__plan_build(&ops[r], &pp, &plans[r]), 0);
        cr_assert_eq(tutti__exec_init(&exs[r], sim_fabric(net, r, 1), &plans[r], ops[r].seq),
                     TUTTI_OK);
    }
    int rc = sim_run(exs, n);
    for (int r = 0; r < n; r++) {
        tutti__exec_fini(&exs[r]);
        tutti__plan_free(&plans[r]);
    }
    return rc;
}

Test(fp, data_of_another_call_fails_before_it_is_used)
{
    struct sim_net *net = sim_net_new(2, 2, 256);
    int32_t in[2][8], out[2][8];
    memset(in, 1, sizeof(in));
    memset(out, 0x5a, sizeof(out));
    /* rank 0 all-reduces 8 ints; rank 1 broadcasts 8 ints from itself (it only sends) */
    struct tutti_op_desc ops[2] = {
        op_of(TUTTI_COLL_ALLREDUCE, 8, TUTTI_INT32, TUTTI_SUM, -1, -1, 1),
        op_of(TUTTI_COLL_BROADCAST, 8, TUTTI_INT32, TUTTI_SUM, 1, -1, 1),
    };
    for (int r = 0; r < 2; r++) {
        ops[r].sendbuf = in[r];
        ops[r].recvbuf = out[r];
    }
    cr_assert_eq(run_calls(net, 2, ops), TUTTI_ERR_MISMATCH);
    const char *msg = sim_error(net, 0);
    cr_assert(
        strstr(msg, "mismatched calls: data of broadcast #1 (8 x int32, root 1) from rank 1") !=
            NULL,
        "%s", msg);
    cr_assert(strstr(msg, "reached allreduce #1 (8 x int32, sum) on rank 0") != NULL, "%s", msg);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(out[0][i], 0x5a5a5a5a, "rank 0's output was written before the check");
    }
    sim_net_free(net);
}

Test(fp, leftover_data_of_a_call_that_only_sent_is_named)
{
    /* Each rank broadcasts from itself (both only send: both complete), then all-reduce: each
     * finds the other's broadcast data waiting instead of the all-reduce's. */
    struct sim_net *net = sim_net_new(2, 2, 256);
    int32_t in[2][8], out[2][8];
    memset(in, 1, sizeof(in));
    struct tutti_op_desc bc[2], ar[2];
    for (int r = 0; r < 2; r++) {
        bc[r] = op_of(TUTTI_COLL_BROADCAST, 8, TUTTI_INT32, TUTTI_SUM, r, -1, 1);
        ar[r] = op_of(TUTTI_COLL_ALLREDUCE, 8, TUTTI_INT32, TUTTI_SUM, -1, -1, 2);
        bc[r].sendbuf = ar[r].sendbuf = in[r];
        bc[r].recvbuf = ar[r].recvbuf = out[r];
    }
    cr_assert_eq(run_calls(net, 2, bc), 0, "roots only send: nothing to check yet");
    cr_assert_eq(run_calls(net, 2, ar), TUTTI_ERR_MISMATCH);
    const char *msg = sim_error(net, 0);
    cr_assert(strstr(msg, "leftover data of broadcast #1 (8 x int32, root 1) from rank 1") != NULL,
              "%s", msg);
    cr_assert(strstr(msg, "reached allreduce #2 (8 x int32, sum) on rank 0; rank 0's collective "
                          "#1 was broadcast #1 (8 x int32, root 0)") != NULL,
              "%s", msg);
    sim_net_free(net);
}

Test(fp, each_call_of_a_merged_group_keeps_its_fingerprint)
{
    /* rank 0 sends 4 then 6 bytes to rank 1 in one group; rank 1 receives them as 6 then 4 */
    struct sim_net *net = sim_net_new(2, 4, 256);
    uint8_t buf0[2][16], buf1[2][16];
    struct tutti_op_desc s[2] = {op_of(TUTTI_COLL_SEND, 4, TUTTI_UINT8, TUTTI_SUM, -1, 1, 1),
                                 op_of(TUTTI_COLL_SEND, 6, TUTTI_UINT8, TUTTI_SUM, -1, 1, 2)};
    struct tutti_op_desc r[2] = {op_of(TUTTI_COLL_RECV, 6, TUTTI_UINT8, TUTTI_SUM, -1, 0, 1),
                                 op_of(TUTTI_COLL_RECV, 4, TUTTI_UINT8, TUTTI_SUM, -1, 0, 2)};
    for (int i = 0; i < 2; i++) {
        s[i].sendbuf = buf0[i];
        r[i].recvbuf = buf1[i];
    }
    const struct tutti_op_desc *sl[2] = {&s[0], &s[1]}, *rl[2] = {&r[0], &r[1]};
    struct tutti_plan plans[2];
    struct tutti_exec exs[2];
    memset(plans, 0, sizeof(plans));
    struct tutti_plan_params p0 = params(0, 2, 1, 256, -1), p1 = params(1, 2, 1, 256, -1);
    cr_assert_eq(tutti__p2p_group_build(sl, 2, &p0, &plans[0]), 0);
    cr_assert_eq(tutti__p2p_group_build(rl, 2, &p1, &plans[1]), 0);
    cr_assert_eq(tutti__exec_init(&exs[0], sim_fabric(net, 0, 1), &plans[0], 1), TUTTI_OK);
    cr_assert_eq(tutti__exec_init(&exs[1], sim_fabric(net, 1, 1), &plans[1], 1), TUTTI_OK);
    cr_assert_eq(sim_run(exs, 2), TUTTI_ERR_MISMATCH);
    const char *msg = sim_error(net, 1);
    cr_assert(strstr(msg, "data of send/recv #1 (4 x uint8, rank 0 -> rank 1) from rank 0") != NULL,
              "%s", msg);
    cr_assert(strstr(msg, "reached send/recv #1 (6 x uint8, rank 0 -> rank 1) on rank 1") != NULL,
              "%s", msg);
    for (int i = 0; i < 2; i++) {
        tutti__exec_fini(&exs[i]);
        tutti__plan_free(&plans[i]);
    }
    sim_net_free(net);
}

/* Issue 36 item 6: the CUDA IPC gate kept 32 bits of the sequence number and waits for ">=":
 * call 2^32 had a gate below call 2^32 - 1's, so a stale gate let its first piece run
 * unsynchronized. The gate increases with the sequence number across 2^32 and far beyond. */
Test(fp, ipc_gate_increases_with_the_sequence_number_past_2_to_the_32)
{
    const uint64_t big = UINT64_MAX, small = 0;
    uint64_t seqs[] = {0,
                       1,
                       0xfffffffeull,
                       0xffffffffull,
                       0x100000000ull,
                       0x100000001ull,
                       1ull << 40,
                       (1ull << 48) - 1};
    for (size_t i = 1; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        cr_assert_gt(tutti__ipc_gate_value(seqs[i], small), tutti__ipc_gate_value(seqs[i - 1], big),
                     "call %llu's gate is not above call %llu's", (unsigned long long)seqs[i],
                     (unsigned long long)seqs[i - 1]);
    }
    cr_assert_neq(tutti__ipc_gate_value(7, 1ull << 63), tutti__ipc_gate_value(7, 0),
                  "calls that differ write different gates");
}
