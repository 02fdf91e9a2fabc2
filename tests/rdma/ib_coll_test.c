/*
 * ib_coll_test.c - the verbs transport through tutti's API, on real verbs (run in the Soft-RoCE
 * VM by vm_suite.sh). Each check launches its ranks as processes from the environment
 * (TUTTI_RANK / TUTTI_NRANKS / TUTTI_ROOT / TUTTI_SECRET, set before tutti reads it) and prints
 * one "name ok|failed detail" line:
 *   ib_auto_choice     4 ranks on two "hosts" (TUTTI_HOSTID): shared memory within a host and
 *                      verbs between hosts are chosen, and an all-reduce over both is exact
 *   ib_hier            the same layout with the hierarchical all-reduce forced (reduce-scatter
 *                      over shared memory, all-reduce over verbs per rail, all-gather)
 *   ib_zero_copy       TUTTI_TRANSPORT=ib, 2 ranks: broadcast and all-gather from memory
 *                      registered with tutti_comm_register go without a copy (counted), are exact,
 *                      and unregistered memory is copied; after destroy no registration and no
 *                      file descriptor is left
 *   ib_qp_error        3 ranks: rank 1 forces its queue pair to rank 2 into the error state;
 *                      every rank fails its next calls with TUTTI_ERR_REMOTE (none hangs), and
 *                      rank 1's message names the device, the queue pair and rank 2
 *   ib_peer_killed     3 ranks: rank 2 is SIGKILLed during a 16 MiB all-reduce; ranks 0 and 1
 *                      fail with TUTTI_ERR_REMOTE naming rank 2 within TUTTI_TIMEOUT
 *   ib_peer_stopped    3 ranks: rank 2 is SIGSTOPped; ranks 0 and 1 fail with TUTTI_ERR_TIMEOUT
 *                      (or REMOTE from the one that timed out) after TUTTI_TIMEOUT (5 s)
 *   ib_link_down       2 ranks, rank 0 on rxe0, rank 1 on rxe1: rxe1's link (veth1) goes down
 *                      during all-reduces while the side connections (loopback) stay up: both
 *                      fail with TUTTI_ERR_REMOTE from the port's error event, naming the port
 *   ib_link_lost       the same, but the link stays up and every packet is dropped where it
 *                      arrives (tc ingress filters): the queue pairs exhaust their retries, and
 *                      the error names device, port, queue pair and peer
 * The fault checks also require that every rank's registrations and files are gone after
 * tutti_comm_destroy.
 * Usage: ib_coll_test [check...] (default: all). Exit status 0 when every check passed.
 */
#include "comm/comm.h"
#include "transports/ibverbs/ib.h"
#include "tutti.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fds.h"

#define SECRET "00112233445566778899aabbccddeeff"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

typedef int (*body_fn)(tutti_comm_t *comm, int rank, int nranks);

static int fds_before_init; /* in a rank: its open files before tutti_comm_init_env */

/*
 * Run body on nranks forked ranks with the environment `env` ("NAME=value" strings, NULL
 * terminated) and per rank hostids (NULL: none). Ranks in `stuck` are killed once every other
 * rank has exited. Returns a bitmask of ranks whose exit status was not 0 (bit 31: ranks had to
 * be killed after `limit_s`); *signaled_p gets the ranks that died by a signal.
 */
static unsigned run_job_stuck(int nranks, int port, const char *const *env,
                              const char *const *hostid, body_fn body, double limit_s,
                              unsigned stuck, unsigned *signaled_p)
{
    pid_t pid[16];
    for (int r = 0; r < nranks; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            char v[64];
            snprintf(v, sizeof(v), "%d", r);
            setenv("TUTTI_RANK", v, 1);
            snprintf(v, sizeof(v), "%d", nranks);
            setenv("TUTTI_NRANKS", v, 1);
            snprintf(v, sizeof(v), "127.0.0.1:%d", port);
            setenv("TUTTI_ROOT", v, 1);
            setenv("TUTTI_SECRET", SECRET, 1);
            if (hostid != NULL) {
                setenv("TUTTI_HOSTID", hostid[r], 1);
            }
            for (int i = 0; env != NULL && env[i] != NULL; i++) {
                putenv((char *)env[i]);
            }
            tutti_comm_t *comm = NULL;
            fds_before_init = test_count_fds();
            tutti_status_t st = tutti_comm_init_env(&comm);
            if (st != TUTTI_OK) {
                fprintf(stderr, "rank %d: init: %s: %s\n", r, tutti_status_name(st),
                        tutti_last_error(NULL));
                _exit(1);
            }
            _exit(body(comm, r, nranks));
        }
    }
    unsigned bad = 0, sig = 0, left = (1u << nranks) - 1;
    double end = now_s() + limit_s;
    for (int done = 0; done < nranks;) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p <= 0 && (left & ~stuck) == 0) {
            for (int r = 0; r < nranks; r++) {
                kill(pid[r], (left >> r) & 1u ? SIGKILL : 0);
            }
        }
        if (p <= 0) {
            if (now_s() > end) {
                for (int r = 0; r < nranks; r++) {
                    kill(pid[r], SIGKILL);
                }
                bad |= 1u << 31;
                end = now_s() + 3600;
            }
            usleep(20000);
            continue;
        }
        for (int r = 0; r < nranks; r++) {
            if (pid[r] == p) {
                left &= ~(1u << r);
                bad |= (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ? 1u << r : 0;
                sig |= WIFSIGNALED(status) ? 1u << r : 0;
            }
        }
        done++;
    }
    if (signaled_p != NULL) {
        *signaled_p = sig;
    }
    return bad;
}

static unsigned run_job(int nranks, int port, const char *const *env, const char *const *hostid,
                        body_fn body, double limit_s, unsigned *signaled_p)
{
    return run_job_stuck(nranks, port, env, hostid, body, limit_s, 0, signaled_p);
}

/* ------------------------------------------------------------------ ib_auto_choice */

static int body_auto(tutti_comm_t *comm, int rank, int nranks)
{
    int bad = 0;
    for (int r = 0; r < nranks; r++) {
        int same = (r / 2) == (rank / 2);
        int want = r == rank ? -1 : same ? TUTTI_TRANSPORT_SHM : TUTTI_TRANSPORT_IB;
        if (want >= 0 && comm->fab.net.peer_transport[r] != want) {
            fprintf(stderr, "rank %d: rank %d is reached by transport %d, expected %d\n", rank, r,
                    comm->fab.net.peer_transport[r], want);
            bad = 1;
        }
    }
    enum { N = 100003 };
    static int32_t buf[N];
    for (int i = 0; i < N; i++) {
        buf[i] = i * (rank + 1);
    }
    tutti_status_t st = tutti_allreduce(buf, buf, N, TUTTI_INT32, TUTTI_SUM, comm, NULL);
    int sum = nranks * (nranks + 1) / 2;
    for (int i = 0; st == TUTTI_OK && i < N && !bad; i++) {
        bad = buf[i] != i * sum;
    }
    if (st != TUTTI_OK || bad) {
        fprintf(stderr, "rank %d: all-reduce %s %s\n", rank, tutti_status_name(st),
                tutti_last_error(comm));
    }
    tutti_comm_destroy(comm);
    return st != TUTTI_OK || bad;
}

/* ------------------------------------------------------------------ ib_zero_copy */

static int check_gather(const float *out, int nranks, size_t n)
{
    for (int r = 0; r < nranks; r++) {
        for (size_t i = 0; i < n; i++) {
            if (out[r * n + i] != (float)(r * 1000 + (int)(i % 997))) {
                return 1;
            }
        }
    }
    return 0;
}

/* One broadcast from rank 0 and one all-gather, from `in` (registered or not). */
static int bcast_gather(tutti_comm_t *comm, int rank, int nranks, float *in, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        in[i] = (float)(rank * 1000 + (int)(i % 997));
    }
    tutti_status_t st = tutti_broadcast(in, out, n, TUTTI_FLOAT32, 0, comm, NULL);
    int bad = st != TUTTI_OK || check_gather(out, 1, n);
    st = bad ? st : tutti_allgather(in, out, n, TUTTI_FLOAT32, comm, NULL);
    bad = bad || st != TUTTI_OK || check_gather(out, nranks, n);
    if (bad) {
        fprintf(stderr, "rank %d: broadcast / all-gather wrong: %s %s\n", rank,
                tutti_status_name(st), tutti_last_error(comm));
    }
    return bad;
}

static int body_zero_copy(tutti_comm_t *comm, int rank, int nranks)
{
    size_t n = 1u << 20; /* 4 MiB of float per rank */
    float *in = malloc(n * sizeof(float)), *out = malloc(n * nranks * sizeof(float));
    void *h = NULL;
    long z0 = tutti__ib_zero_copy_writes();
    int bad = tutti_comm_register(comm, in, n * sizeof(float), &h) != TUTTI_OK;
    bad = bad || bcast_gather(comm, rank, nranks, in, out, n);
    long z1 = tutti__ib_zero_copy_writes();
    bad = bad || tutti_comm_deregister(comm, h) != TUTTI_OK;
    bad = bad || bcast_gather(comm, rank, nranks, in, out, n);
    long z2 = tutti__ib_zero_copy_writes();
    if (z1 == z0 || z2 != z1) {
        fprintf(stderr,
                "rank %d: zero-copy writes: %ld registered (want > 0), %ld after "
                "deregistering (want 0)\n",
                rank, z1 - z0, z2 - z1);
        bad = 1;
    }
    long mrs_live = tutti__ib_live_mrs();
    tutti_comm_destroy(comm);
    if (mrs_live < 2 || tutti__ib_live_mrs() != 0 || test_count_fds() != fds_before_init) {
        fprintf(stderr,
                "rank %d: registrations: %ld in use, %ld after destroy (want 0); open "
                "files %d before init, %d after destroy\n",
                rank, mrs_live, tutti__ib_live_mrs(), fds_before_init, test_count_fds());
        bad = 1;
    }
    printf("rank %d: %ld writes from registered memory\n", rank, z1 - z0);
    free(in);
    free(out);
    return bad;
}

/* ------------------------------------------------------------------ faults */

/* The call failed as expected (status `want`, or REMOTE: a peer reports it), the message holds
 * `must`, and destroy leaves no registration and no file behind. */
static int expect_error(tutti_comm_t *comm, int rank, tutti_status_t st, tutti_status_t want,
                        double t0, const char *must)
{
    char msg[600];
    snprintf(msg, sizeof(msg), "%s", tutti_last_error(comm));
    int good = (st == want || st == TUTTI_ERR_REMOTE) && (must == NULL || strstr(msg, must));
    printf("rank %d: %s after %.2f s: %s\n", rank, tutti_status_name(st), now_s() - t0, msg);
    tutti_comm_destroy(comm);
    if (tutti__ib_live_mrs() != 0 || test_count_fds() != fds_before_init) {
        printf("rank %d: after destroy %ld registrations and %d files are left (%d before)\n", rank,
               tutti__ib_live_mrs(), test_count_fds(), fds_before_init);
        good = 0;
    }
    fflush(stdout);
    return !good;
}

static int expect_remote(tutti_comm_t *comm, int rank, tutti_status_t st, double t0,
                         const char *must)
{
    return expect_error(comm, rank, st, TUTTI_ERR_REMOTE, t0, must);
}

static int body_qp_error(tutti_comm_t *comm, int rank, int nranks)
{
    (void)nranks;
    size_t n = 64 * 1024;
    float *buf = calloc(n, sizeof(float));
    tutti_status_t st = TUTTI_OK;
    double t0 = 0;
    for (int it = 0; it < 1000 && st == TUTTI_OK; it++) {
        if (it == 5) {
            t0 = now_s();
            if (rank == 1 &&
                tutti__ib_debug_qp_error(comm->fab.net.tctx[TUTTI_TRANSPORT_IB], 2) != TUTTI_OK) {
                fprintf(stderr, "rank 1: the test hook found no queue pair to rank 2\n");
                return 1;
            }
        }
        st = tutti_allreduce(buf, buf, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    }
    free(buf);
    return expect_remote(comm, rank, st, t0, rank == 1 ? "QP" : NULL);
}

static void *killer(void *arg)
{
    usleep((useconds_t)(intptr_t)arg);
    kill(getpid(), SIGKILL);
    return NULL;
}

static int body_kill(tutti_comm_t *comm, int rank, int nranks)
{
    (void)nranks;
    size_t n = 4u << 20; /* 16 MiB of float */
    float *buf = calloc(n, sizeof(float));
    tutti_status_t st = tutti_allreduce(buf, buf, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    double t0 = now_s();
    pthread_t t;
    if (rank == 2) {
        pthread_create(&t, NULL, killer, (void *)(intptr_t)300000); /* 0.3 s into the loop */
    }
    for (int it = 0; it < 1000 && st == TUTTI_OK; it++) {
        st = tutti_allreduce(buf, buf, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    }
    free(buf);
    return expect_remote(comm, rank, st, t0, "rank 2");
}

static int body_stop(tutti_comm_t *comm, int rank, int nranks)
{
    (void)nranks;
    size_t n = 1u << 16;
    float *buf = calloc(n, sizeof(float));
    tutti_status_t st = TUTTI_OK;
    double t0 = now_s();
    for (int it = 0; it < 100000 && st == TUTTI_OK; it++) {
        if (rank == 2 && it == 5) {
            raise(SIGSTOP); /* the parent kills it at the end */
        }
        st = tutti_allreduce(buf, buf, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    }
    free(buf);
    return expect_error(comm, rank, st, TUTTI_ERR_TIMEOUT, t0, NULL);
}

static const char *link_cmd; /* what rank 0 runs to break the link */

/* All-reduces until rank 0 breaks the link at the 5th; the error must contain `must`. */
static int link_fault(tutti_comm_t *comm, int rank, const char *must)
{
    size_t n = 1u << 18;
    float *buf = calloc(n, sizeof(float));
    tutti_status_t st = TUTTI_OK;
    double t0 = 0;
    for (int it = 0; it < 100000 && st == TUTTI_OK; it++) {
        if (it == 5) {
            t0 = now_s();
            if (rank == 0 && system(link_cmd) != 0) {
                fprintf(stderr, "rank 0: '%s' failed\n", link_cmd);
            }
        }
        st = tutti_allreduce(buf, buf, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    }
    free(buf);
    return expect_remote(comm, rank, st, t0, must);
}

static int body_link_down(tutti_comm_t *comm, int rank, int nranks)
{
    (void)nranks;
    return link_fault(comm, rank, rank == 0 ? "rxe0:1" : "rxe1:1");
}

static int body_link_lost(tutti_comm_t *comm, int rank, int nranks)
{
    (void)nranks;
    return link_fault(comm, rank, "retry counter exceeded");
}

/* ------------------------------------------------------------------ main */

static int report(const char *name, int good, const char *detail)
{
    printf("%s %s%s%s\n", name, good ? "ok" : "failed", detail[0] ? " " : "", detail);
    fflush(stdout);
    return !good;
}

static int wanted(int argc, char **argv, const char *name)
{
    if (argc < 2) {
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int failed = 0;
    char detail[160];
    static const char *const forced[] = {"TUTTI_TRANSPORT=ib", "TUTTI_TIMEOUT=20s", NULL};
    static const char *const faulty[] = {"TUTTI_TRANSPORT=ib", "TUTTI_TIMEOUT=20s",
                                         "TUTTI_IB_TIMEOUT=14", "TUTTI_LOG_LEVEL=error", NULL};
    if (wanted(argc, argv, "ib_auto_choice")) {
        static const char *const hosts[] = {"hostA", "hostA", "hostB", "hostB"};
        static const char *const env[] = {"TUTTI_TIMEOUT=20s", NULL};
        unsigned bad = run_job(4, 29610, env, hosts, body_auto, 120, NULL);
        snprintf(detail, sizeof(detail), "(failed ranks mask 0x%x)", bad);
        failed += report("ib_auto_choice", bad == 0, bad ? detail : "");
    }
    if (wanted(argc, argv, "ib_hier")) {
        static const char *const hosts[] = {"hostA", "hostA", "hostB", "hostB"};
        static const char *const env[] = {"TUTTI_TIMEOUT=20s", "TUTTI_ALGO=allreduce:hier", NULL};
        unsigned bad = run_job(4, 29615, env, hosts, body_auto, 120, NULL);
        snprintf(detail, sizeof(detail), "(failed ranks mask 0x%x)", bad);
        failed += report("ib_hier", bad == 0, bad ? detail : "");
    }
    if (wanted(argc, argv, "ib_zero_copy")) {
        unsigned bad = run_job(2, 29620, forced, NULL, body_zero_copy, 180, NULL);
        snprintf(detail, sizeof(detail), "(failed ranks mask 0x%x)", bad);
        failed += report("ib_zero_copy", bad == 0, bad ? detail : "");
    }
    if (wanted(argc, argv, "ib_qp_error")) {
        unsigned bad = run_job(3, 29630, faulty, NULL, body_qp_error, 120, NULL);
        snprintf(detail, sizeof(detail), "(ranks without the expected error: mask 0x%x)", bad);
        failed += report("ib_qp_error", bad == 0, bad ? detail : "");
    }
    if (wanted(argc, argv, "ib_peer_killed")) {
        unsigned sig = 0;
        unsigned bad = run_job(3, 29640, faulty, NULL, body_kill, 120, &sig);
        snprintf(detail, sizeof(detail), "(ranks without the expected error: mask 0x%x)",
                 bad & ~4u);
        failed += report("ib_peer_killed", (bad & ~4u) == 0 && sig == 4u, bad & ~4u ? detail : "");
    }
    if (wanted(argc, argv, "ib_peer_stopped")) {
        static const char *const env[] = {"TUTTI_TRANSPORT=ib", "TUTTI_TIMEOUT=5s",
                                          "TUTTI_LOG_LEVEL=error", NULL};
        double t0 = now_s();
        unsigned bad = run_job_stuck(3, 29650, env, NULL, body_stop, 60, 4u, NULL);
        snprintf(detail, sizeof(detail), "(ranks without the expected error: mask 0x%x)",
                 bad & ~4u);
        /* rank 2 stays stopped until the others are done, then it is killed: bit 2 expected */
        failed += report("ib_peer_stopped", (bad & ~4u) == 0 && (bad & 4u) != 0,
                         (bad & ~4u) ? detail : "");
        printf("(ib_peer_stopped: %.1f s)\n", now_s() - t0);
    }
    /* Retry count 6: Soft-RoCE takes 7 (NCCL's default, and tutti's) as "retry for ever", as
     * the InfiniBand spec does for the RNR retry count only; a lost link is then found by
     * TUTTI_TIMEOUT instead. */
    static const char *const link_env[] = {"TUTTI_TRANSPORT=ib",    "TUTTI_TIMEOUT=30s",
                                           "TUTTI_IB_TIMEOUT=12",   "TUTTI_IB_RETRY_CNT=6",
                                           "TUTTI_LOG_LEVEL=error", NULL};
    if (wanted(argc, argv, "ib_link_down")) {
        link_cmd = "ip link set veth1 down";
        unsigned bad = run_job(2, 29660, link_env, NULL, body_link_down, 90, NULL);
        int up = system("ip link set veth1 up && sleep 2");
        snprintf(detail, sizeof(detail), "(ranks without the expected error: mask 0x%x)", bad);
        failed += report("ib_link_down", bad == 0 && up == 0, bad ? detail : "");
    }
    if (wanted(argc, argv, "ib_link_lost")) {
        /* Dropped where packets arrive, as a fabric would lose them: a qdisc that drops on the
         * way out tells rxe, which then resends at once forever instead of timing out. */
        link_cmd = "for d in veth0 veth1; do tc qdisc add dev $d ingress && "
                   "tc filter add dev $d ingress matchall action drop || exit 1; done";
        unsigned bad = run_job(2, 29670, link_env, NULL, body_link_lost, 90, NULL);
        int up = system("tc qdisc del dev veth0 ingress; tc qdisc del dev veth1 ingress");
        snprintf(detail, sizeof(detail), "(ranks without the expected error: mask 0x%x)", bad);
        failed += report("ib_link_lost", bad == 0 && up == 0, bad ? detail : "");
    }
    return failed != 0;
}
