/*
 * test_multihost.c - ranks on two "hosts": two network namespaces on a bridge (netns.h:
 * 10.77.0.1/24 and 10.77.0.2/24, addresses that exist only inside the namespaces), made by the
 * test with ip(8) under names unique to the test process, and removed afterwards, also when the
 * test fails (Criterion's .fini). Each child enters its namespace with setns(2) before it
 * touches tutti; tutti's host id includes the network namespace, so ranks in different
 * namespaces are different hosts to it and talk over TCP. Rank 0 makes the unique id inside
 * namespace A, so the bootstrap root listens on 10.77.0.1, which both namespaces reach.
 *
 * Configurations: 2 ranks (one per namespace); 4 ranks, 2 per namespace, with shared memory
 * inside a namespace and TCP across; 4 ranks with TCP everywhere. Every collective runs with
 * checked results (colls.c) for a few datatypes and ops at counts up to 1M+3.
 *
 * One more test uses the namespaces to show that TUTTI_SOCKET_IFNAME ties a listener to the
 * interface itself (SO_BINDTODEVICE), not only to its address.
 *
 * Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and ip(8): otherwise every test is skipped, saying
 * why.
 */
#include "colls.h"
#include "comm/comm.h"
#include "harness.h"
#include "netns.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Two hosts: namespaces a (10.77.0.1) and b (10.77.0.2) on a bridge (netns.h). */
static void setup(void)
{
    netns_setup(2);
}

static void teardown(void)
{
    netns_teardown();
}

/* ---------------------------------------------------------------- the job */

struct mh_config {
    int nranks;
    int tcp; /* TUTTI_TRANSPORT=tcp: also between the ranks of one namespace */
};

/* Every collective, a few datatypes and ops, counts from 0 to 1M+3. */
static int run_collectives(tutti_comm_t *comm, int nranks)
{
    static const tutti_datatype_t dts[] = {TUTTI_INT32, TUTTI_FLOAT32, TUTTI_BFLOAT16,
                                           TUTTI_FP8_E4M3, TUTTI_UINT64};
    static const size_t counts[] = {0, 1, 7, 4099, (1u << 20) + 3};
    int bad = 0, k = 0;
    for (int coll = 0; coll < COLL_NKINDS; coll++) {
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++, k++) {
                if (ci == 4 && d != (size_t)coll % 5) {
                    continue; /* 1M+3: one datatype per collective */
                }
                struct coll_case c = {
                    .coll = (enum coll_kind)coll,
                    .dt = dts[d],
                    .op = coll_op_rotate(dts[d], (unsigned)k),
                    .inplace = coll_has_inplace((enum coll_kind)coll) && (k & 1),
                    .count = counts[ci],
                    .root = k % nranks,
                    .seed = 0xabcdefull + (uint64_t)k,
                };
                int rc = coll_check(comm, &c);
                if (rc < 0) {
                    return 1;
                }
                bad |= rc;
            }
        }
    }
    coll_free_buffers();
    return bad;
}

static int multihost_rank(const struct integ_ctx *ctx)
{
    /* Ranks 0 .. n/2-1 in namespace a, the others in b. */
    int host[INTEG_MAX_RANKS];
    for (int r = 0; r < ctx->nranks; r++) {
        host[r] = r < ctx->nranks / 2 ? 0 : 1;
    }
    const struct mh_config *cfg = ctx->arg;
    tutti_comm_t *comm = NULL;
    if (netns_comm_init(ctx, host, cfg->tcp, &comm) != 0) {
        return 1;
    }
    int bad = run_collectives(comm, ctx->nranks);
    /* The bitwise-identity guarantee holds across hosts too. */
    static float in[70001], out[70001];
    uint64_t h, all[INTEG_MAX_RANKS];
    coll_fill_random_float(TUTTI_FLOAT32, in, 70001, 99, ctx->rank);
    ICHECK_OK(tutti_allreduce(in, out, 70001, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL));
    h = coll_hash(out, sizeof(out));
    ICHECK_OK(tutti_allgather(&h, all, 1, TUTTI_UINT64, comm, NULL));
    for (int r = 0; r < ctx->nranks; r++) {
        ICHECK(all[r] == h, "float32 allreduce output of rank %d differs from this rank's", r);
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

static struct mh_config mh_configs[] = {{2, 0}, {4, 0}, {4, 1}};

ParameterizedTestParameters(multihost, every_collective_across_two_namespaces)
{
    return cr_make_param_array(struct mh_config, mh_configs, 3);
}

ParameterizedTest(struct mh_config *cfg, multihost, every_collective_across_two_namespaces,
                  .init = setup, .fini = teardown, .timeout = 240)
{
    integ_setenv("TUTTI_TRANSPORT", cfg->tcp ? "tcp" : "auto");
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_setenv("TUTTI_SOCKET_IFNAME", NULL);
    struct integ_opts o = {
        .nranks = cfg->nranks,
        .deadline_s = 220,
        .shared_bytes = sizeof(struct netns_shared),
        .arg = cfg,
    };
    integ_run(&o, multihost_rank);
}

/* ---------------------------------------------------------------- the device itself */

/* From namespace B: connect to 10.78.0.1:port; 0 when connected, else the errno. */
static int connect_from_b(int port)
{
    union tutti_sockaddr a;
    char where[32];
    snprintf(where, sizeof(where), "10.78.0.1:%d", port);
    if (tutti__sockaddr_parse(where, -1, AF_INET, &a) != TUTTI_OK) {
        return EINVAL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {5, 0};
    int err = 0;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        connect(fd, &a.sa, sizeof(a.in)) != 0) {
        err = errno;
    }
    if (fd >= 0) {
        close(fd);
    }
    return err;
}

/* In namespace A: a tutti listener (TUTTI_SOCKET_IFNAME=lo) and a plain one on 10.78.0.1; their
 * ports go to `out`; they stay open until `hold` closes. */
static int listeners_in_a(int out, int hold)
{
    ICHECK(netns_enter(0) == 0, "cannot enter namespace A: %s", strerror(errno));
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    union tutti_sockaddr a, bound;
    int lfd = -1, plain = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ICHECK_OK(tutti__sockaddr_parse("10.78.0.1:0", -1, AF_INET, &a));
    ICHECK_OK(tutti__sock_listen(&a, &lfd, &bound));
    socklen_t len = sizeof(a);
    ICHECK(plain >= 0 && bind(plain, &a.sa, sizeof(a.in)) == 0 && listen(plain, 8) == 0 &&
               getsockname(plain, &a.sa, &len) == 0,
           "plain listener: %s", strerror(errno));
    int ports[2] = {ntohs(bound.in.sin_port), ntohs(a.in.sin_port)};
    ICHECK(write(out, ports, sizeof(ports)) == (ssize_t)sizeof(ports), "pipe: %s", strerror(errno));
    char c;
    (void)read(hold, &c, 1); /* returns at EOF: the test is done */
    return 0;
}

/*
 * TUTTI_SOCKET_IFNAME ties a listener to the interface, not only to its address. Namespace A
 * gets a second address, 10.78.0.1 on lo, that namespace B reaches through the bridge (a
 * route via 10.77.0.1). With TUTTI_SOCKET_IFNAME=lo, a tutti listener on 10.78.0.1 refuses what
 * B sends, which arrives on the veth; a plain socket bound to the same address takes it (Linux's
 * weak-host model), which shows that the route works.
 */
Test(multihost, ifname_listener_refuses_what_arrives_through_another_interface, .init = setup,
     .fini = teardown, .timeout = 60)
{
    char err[256];
    cr_assert_eq(NETNS_IP(err, "-n", netns_name(0), "addr", "add", "10.78.0.1/32", "dev", "lo"), 0,
                 "%s", err);
    cr_assert_eq(
        NETNS_IP(err, "-n", netns_name(1), "route", "add", "10.78.0.1/32", "via", "10.77.0.1"), 0,
        "%s", err);
    int ports_pipe[2], hold_pipe[2];
    cr_assert(pipe(ports_pipe) == 0 && pipe(hold_pipe) == 0);
    pid_t a = fork();
    if (a == 0) {
        close(ports_pipe[0]);
        close(hold_pipe[1]);
        _exit(listeners_in_a(ports_pipe[1], hold_pipe[0]));
    }
    close(ports_pipe[1]);
    close(hold_pipe[0]);
    int ports[2] = {0, 0};
    struct pollfd p = {ports_pipe[0], POLLIN, 0};
    int got = poll(&p, 1, 20000) > 0 && read(ports_pipe[0], ports, sizeof(ports)) == sizeof(ports);
    pid_t b = got ? fork() : -1;
    if (b == 0) {
        if (netns_enter(1) != 0) {
            _exit(3);
        }
        int to_plain = connect_from_b(ports[1]), to_tutti = connect_from_b(ports[0]);
        if (to_plain != 0) {
            fprintf(stderr, "B could not reach the plain listener: %s\n", strerror(to_plain));
        }
        if (to_tutti != ECONNREFUSED) {
            fprintf(stderr, "B's connection to the tutti listener: %s, expected refused\n",
                    to_tutti == 0 ? "accepted" : strerror(to_tutti));
        }
        _exit(to_plain == 0 && to_tutti == ECONNREFUSED ? 0 : 1);
    }
    int st_b = -1, st_a = -1;
    if (b > 0) {
        waitpid(b, &st_b, 0);
    }
    close(hold_pipe[1]);
    waitpid(a, &st_a, 0);
    close(ports_pipe[0]);
    cr_assert(got, "namespace A published no listeners (its exit status %d)", st_a);
    cr_assert(WIFEXITED(st_b) && WEXITSTATUS(st_b) == 0,
              "from namespace B (see stderr): exit status %d", st_b);
    cr_assert(WIFEXITED(st_a) && WEXITSTATUS(st_a) == 0, "namespace A: exit status %d", st_a);
}
