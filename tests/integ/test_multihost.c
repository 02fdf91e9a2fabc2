/*
 * test_multihost.c - ranks on two "hosts": two network namespaces joined by a veth pair
 * (10.77.0.1/24 and 10.77.0.2/24, addresses that exist only inside the namespaces), made by the
 * test with ip(8) under names unique to the test process, and removed afterwards, also when the
 * test fails (Criterion's .fini; namespaces left by a test process that died are removed by the
 * next run). Each child enters its namespace with setns(2) before it touches tutti; tutti's
 * host id includes the network namespace, so ranks in different namespaces are different hosts
 * to it and talk over TCP. Rank 0 makes the unique id inside namespace A, so the bootstrap root
 * listens on 10.77.0.1, which both namespaces reach.
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
#include "comm.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NETNS_DIR "/run/netns"
#define NS_PREFIX "tutti-integ-"

/* The namespaces and veth ends of this test process: "tutti-integ-<pid>-a", "tvi<pid>a". */
static char ns_name[2][64], veth_name[2][16];
static int ns_made[2], veth_made;

/* Run ip(8) with the arguments; 0 when it exits with 0, else -1 with its stderr in err. */
static int run_ip(char *err, size_t errlen, const char *const *args)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    const char *argv[16] = {"ip"};
    int n = 1;
    for (; args[n - 1] != NULL && n < 15; n++) {
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 2);
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        execvp("ip", (char *const *)argv);
        fprintf(stderr, "exec ip: %s", strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    size_t got = 0;
    ssize_t r;
    err[0] = '\0';
    struct pollfd p = {pipefd[0], POLLIN, 0};
    /* ip answers at once; 10 s is a generous bound for a loaded machine. */
    while (got + 1 < errlen && poll(&p, 1, 10000) > 0 &&
           (r = read(pipefd[0], err + got, errlen - 1 - got)) > 0) {
        got += (size_t)r;
    }
    err[got] = '\0';
    close(pipefd[0]);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        return -1;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

#define IP(err, ...) run_ip(err, sizeof(err), (const char *const[]){__VA_ARGS__, NULL})

/* Remove namespaces that earlier test processes (now dead) left behind. */
static void remove_stale_namespaces(void)
{
    DIR *d = opendir(NETNS_DIR);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        long pid = 0;
        if (strncmp(e->d_name, NS_PREFIX, strlen(NS_PREFIX)) != 0 ||
            sscanf(e->d_name + strlen(NS_PREFIX), "%ld-", &pid) != 1) {
            continue;
        }
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char err[256];
            (void)IP(err, "netns", "delete", e->d_name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

static void teardown(void)
{
    char err[256];
    for (int i = 0; i < 2; i++) {
        if (ns_made[i]) {
            (void)IP(err, "netns", "delete", ns_name[i]); /* takes its veth end along */
            ns_made[i] = 0;
        }
    }
    if (veth_made) {
        (void)IP(err, "link", "delete", veth_name[0]); /* only if it never moved */
        veth_made = 0;
    }
}

/* Make the two namespaces and the veth pair; on failure, undo and skip with the reason. */
static void setup(void)
{
    char err[512];
    const char *why = NULL;
    if (geteuid() != 0) {
        cr_skip_test("network namespaces need root (CAP_SYS_ADMIN): not root, skipped");
    }
    if (IP(err, "-V") != 0) {
        cr_skip_test("ip(8) from iproute2 is not available: %s", err);
    }
    remove_stale_namespaces();
    int pid = (int)getpid();
    for (int i = 0; i < 2; i++) {
        snprintf(ns_name[i], sizeof(ns_name[i]), NS_PREFIX "%d-%c", pid, 'a' + i);
        snprintf(veth_name[i], sizeof(veth_name[i]), "tvi%d%c", pid, 'a' + i);
    }
    static const char *const addr[2] = {"10.77.0.1/24", "10.77.0.2/24"};
    for (int i = 0; i < 2 && why == NULL; i++) {
        if (IP(err, "netns", "add", ns_name[i]) != 0) {
            why = "ip netns add";
        }
        ns_made[i] = why == NULL;
    }
    if (why == NULL &&
        IP(err, "link", "add", veth_name[0], "type", "veth", "peer", "name", veth_name[1]) != 0) {
        why = "ip link add ... type veth";
    }
    veth_made = why == NULL;
    for (int i = 0; i < 2 && why == NULL; i++) {
        if (IP(err, "link", "set", veth_name[i], "netns", ns_name[i]) != 0 ||
            IP(err, "-n", ns_name[i], "addr", "add", addr[i], "dev", veth_name[i]) != 0 ||
            IP(err, "-n", ns_name[i], "link", "set", veth_name[i], "up") != 0 ||
            IP(err, "-n", ns_name[i], "link", "set", "lo", "up") != 0) {
            why = "configuring the veth pair";
        }
        veth_made = 0; /* it lives in the namespaces now */
    }
    if (why != NULL) {
        teardown();
        cr_skip_test("cannot make network namespaces (%s failed: %s): needs CAP_SYS_ADMIN and "
                     "CAP_NET_ADMIN",
                     why, err);
    }
}

/* ---------------------------------------------------------------- the job */

struct mh_shared {
    _Atomic int id_ready;
    tutti_unique_id_t id; /* made by rank 0 inside namespace A */
};

struct mh_config {
    int nranks;
    int tcp; /* TUTTI_TRANSPORT=tcp: also between the ranks of one namespace */
};

/* Enter namespace a (ranks 0 .. n/2-1) or b. */
static int enter_namespace(int rank, int nranks)
{
    char path[128];
    const char *name = ns_name[rank < nranks / 2 ? 0 : 1];
    snprintf(path, sizeof(path), NETNS_DIR "/%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ICHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    ICHECK(setns(fd, CLONE_NEWNET) == 0, "setns %s: %s", name, strerror(errno));
    close(fd);
    return 0;
}

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
                    .op = (tutti_op_t)(k % TUTTI_NUM_OPS),
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
    struct mh_shared *sh = ctx->shared;
    if (enter_namespace(ctx->rank, ctx->nranks) != 0) {
        return 1;
    }
    if (ctx->rank == 0) {
        ICHECK_OK(tutti_get_unique_id(&sh->id));
        atomic_store(&sh->id_ready, 1);
    } else {
        int64_t end = integ_now_ns() + 30000000000LL;
        while (!atomic_load(&sh->id_ready) && integ_now_ns() < end) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        ICHECK(atomic_load(&sh->id_ready), "rank 0 made no id within 30 s");
    }
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_rank(&comm, ctx->nranks, &sh->id, ctx->rank));
    /* Different namespaces are different hosts to tutti: TCP between them; shared memory
     * within one unless TUTTI_TRANSPORT=tcp. (A look inside: which transport reaches whom.) */
    const struct mh_config *cfg = ctx->arg;
    for (int r = 0; r < ctx->nranks; r++) {
        int same = (r < ctx->nranks / 2) == (ctx->rank < ctx->nranks / 2);
        int want = (same && !cfg->tcp) ? TUTTI_TRANSPORT_SHM : TUTTI_TRANSPORT_TCP;
        ICHECK(r == ctx->rank || comm->net.peer_transport[r] == want,
               "rank %d (%s namespace) is reached over %s, expected %s", r,
               same ? "the same" : "the other",
               tutti__transport_name((tutti_transport_id_t)comm->net.peer_transport[r]),
               tutti__transport_name((tutti_transport_id_t)want));
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
        .shared_bytes = sizeof(struct mh_shared),
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
    ICHECK(enter_namespace(0, 2) == 0, "cannot enter namespace A");
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
    ICHECK(write(out, ports, sizeof(ports)) == (ssize_t)sizeof(ports), "pipe: %s",
           strerror(errno));
    char c;
    (void)read(hold, &c, 1); /* returns at EOF: the test is done */
    return 0;
}

/*
 * TUTTI_SOCKET_IFNAME ties a listener to the interface, not only to its address. Namespace A
 * gets a second address, 10.78.0.1 on lo, that namespace B reaches through the veth pair (a
 * route via 10.77.0.1). With TUTTI_SOCKET_IFNAME=lo, a tutti listener on 10.78.0.1 refuses what
 * B sends, which arrives on the veth; a plain socket bound to the same address takes it (Linux's
 * weak-host model), which shows that the route works.
 */
Test(multihost, ifname_listener_refuses_what_arrives_through_another_interface, .init = setup,
     .fini = teardown, .timeout = 60)
{
    char err[256];
    cr_assert_eq(IP(err, "-n", ns_name[0], "addr", "add", "10.78.0.1/32", "dev", "lo"), 0, "%s",
                 err);
    cr_assert_eq(IP(err, "-n", ns_name[1], "route", "add", "10.78.0.1/32", "via", "10.77.0.1"),
                 0, "%s", err);
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
        if (enter_namespace(1, 2) != 0) {
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
