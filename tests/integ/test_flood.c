/*
 * test_flood.c - outsiders cannot starve a job: 1100 silent connections to a rank's TCP listener
 * while it waits inside a collective, then a collective that opens a new channel on demand. The
 * listener must evict unauthenticated handshakes (a short deadline, a cap per address, the
 * oldest when full), so the rank's own peer gets in and the collective is right, and it must
 * say so in a few lines, not one warning per stranger.
 *
 * The test links the library statically: it reads a rank's TCP listening address from its
 * communicator.
 */
#include "comm/comm.h"
#include "harness.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SEC    1000000000LL
#define NFLOOD 1100
#define BIG    (1 << 20) /* int64 elements: 8 MiB, every channel of the TCP transport */
#define VICTIM 1         /* the rank whose port is flooded; rank 0 connects to it */

struct flood_shared {
    struct tutti_wire_addr addr; /* the victim's TCP listener */
    _Atomic int published, flooded;
};

static int await(_Atomic int *flag, int secs)
{
    for (int64_t end = integ_now_ns() + secs * SEC; !atomic_load(flag); integ_pause_ms(2)) {
        if (integ_now_ns() > end) {
            return 0;
        }
    }
    return 1;
}

/*
 * A small all-reduce first (its connections exist before the flood); then the victim waits in
 * a second one, accepting whatever comes, while rank 0 holds back until the flood is in; then an
 * 8 MiB all-reduce on every channel, whose new connections the victim must let in.
 */
static int flood_rank(const struct integ_ctx *ctx)
{
    struct flood_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int64_t x = ctx->rank + 1, y = 0;
    ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    if (ctx->rank == VICTIM) {
        memcpy(&sh->addr, comm->fab.peers[VICTIM].blob[TUTTI_TRANSPORT_TCP], sizeof(sh->addr));
        atomic_store(&sh->published, 1);
    } else {
        ICHECK(await(&sh->flooded, 60), "the test process did not flood the port");
    }
    ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    int64_t *v = malloc(BIG * sizeof(*v));
    ICHECK(v != NULL, "out of memory");
    for (int i = 0; i < BIG; i++) {
        v[i] = (int64_t)i * (ctx->rank + 1);
    }
    tutti_status_t st = tutti_allreduce(v, v, BIG, TUTTI_INT64, TUTTI_SUM, comm, NULL);
    ICHECK(st == TUTTI_OK, "the all-reduce after the flood returned %s: %s", tutti_status_name(st),
           tutti_last_error(comm));
    for (int i = 0; i < BIG; i++) {
        ICHECK(v[i] == (int64_t)i * 3, "element %d is %lld", i, (long long)v[i]);
    }
    free(v);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

/* Open n connections to `to` at once (non-blocking), into fds; how many got through in 20 s. */
static int flood(const union tutti_sockaddr *to, int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tutti__sock_connect_start(to, &fds[i]), TUTTI_OK, "stranger %d", i);
    }
    int connected = 0;
    for (int64_t end = integ_now_ns() + 20 * SEC; connected < n && integ_now_ns() < end;) {
        connected = 0;
        for (int i = 0; i < n; i++) {
            int err = 0;
            connected += tutti__sock_connect_check(fds[i], &err) == TUTTI_OK;
        }
        integ_pause_ms(20);
    }
    return connected;
}

/* The ranks' logs (TUTTI_LOG_FILE rank-%p.log in dir, or the test process's, which may have
 * opened it before the fork), one after the other; free it. */
static char *read_logs(const char *dir)
{
    DIR *d = opendir(dir);
    size_t len = 0;
    char *all = calloc(1, 1);
    struct dirent *e;
    while (d != NULL && all != NULL && (e = readdir(d)) != NULL) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        char *one = e->d_name[0] != '.' ? integ_read_file(path) : NULL;
        char *grown = one != NULL ? realloc(all, len + strlen(one) + 1) : all;
        if (one != NULL && grown != NULL) {
            memcpy(grown + len, one, strlen(one) + 1);
            len += strlen(one);
        }
        all = grown;
        free(one);
    }
    if (d != NULL) {
        closedir(d);
    }
    return all;
}

Test(flood, silent_connections_at_a_rank_port_do_not_keep_its_peers_out, .timeout = 120)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max < NFLOOD + 200) {
        cr_skip_test("RLIMIT_NOFILE's hard limit %llu is below the %d descriptors this test needs",
                     (unsigned long long)rl.rlim_max, NFLOOD + 200);
    }
    rl.rlim_cur = rl.rlim_max; /* the ranks inherit it: the test is about eviction, not EMFILE */
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    char dir[] = "/tmp/tutti-flood-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "%s/rank-%%p.log", dir);
    integ_setenv("TUTTI_LOG_FILE", pattern);
    integ_setenv("TUTTI_TRANSPORT", "tcp");
    integ_setenv("TUTTI_TIMEOUT", "30s");
    struct integ_opts o = {
        .nranks = 2, .deadline_s = 100, .make_id = 1, .shared_bytes = sizeof(struct flood_shared)};
    struct integ_job *job = integ_start(&o, flood_rank);
    struct flood_shared *sh = integ_shared(job);
    int64_t end = integ_now_ns() + 30 * SEC;
    while (!atomic_load(&sh->published) && integ_now_ns() < end) {
        integ_pause_ms(2);
    }
    cr_assert(atomic_load(&sh->published), "the victim did not publish its port");
    union tutti_sockaddr to;
    cr_assert_eq(tutti__wire_addr_decode(&sh->addr, &to), TUTTI_OK);
    static int fds[NFLOOD];
    int connected = flood(&to, fds, NFLOOD);
    atomic_store(&sh->flooded, 1);
    integ_finish(job, NULL, 0);
    for (int i = 0; i < NFLOOD; i++) {
        close(fds[i]);
    }
    char *log = read_logs(dir);
    int lines = integ_count(log, "refused connection from") +
                integ_count(log, "connections refused or closed");
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert(connected > 1024, "only %d of %d strangers connected: not a flood", connected,
              NFLOOD);
    cr_assert(lines >= 1 && lines <= 12,
              "%d log lines about strangers (none, or one per stranger?):\n%.3000s", lines,
              log != NULL ? log : "(no log)");
    free(log);
}
