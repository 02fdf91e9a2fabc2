/*
 * test_boot.c - start-up on real processes when something is off: a bootstrap root whose
 * process forked its ranks (the children must not keep the root's listening socket, so a rank
 * that comes after the root has closed is refused at once, with a clear message).
 *
 * Some checks look inside the library (tests link it statically): the root's address in the
 * unique id.
 */
#include "harness.h"
#include "init.h"
#include "util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEC 1000000000LL

/* Sockets of this process bound to the port of `a` (the root's); -1 when /proc is unreadable. */
static int sockets_on_port(const union tutti_sockaddr *a)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        union tutti_sockaddr s;
        socklen_t len = sizeof(s);
        if (e->d_name[0] != '.' && getsockname(atoi(e->d_name), &s.sa, &len) == 0 &&
            s.sa.sa_family == a->sa.sa_family && s.in.sin_port == a->in.sin_port) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Does anything accept a TCP connection at `a` within 2 s? */
static int accepts_connections(const union tutti_sockaddr *a)
{
    int fd = -1, err = 0;
    if (tutti__sock_connect_start(a, &fd) != TUTTI_OK) {
        return 0;
    }
    tutti_status_t st = TUTTI_IN_PROGRESS;
    for (int64_t end = integ_now_ns() + 2 * SEC; st == TUTTI_IN_PROGRESS && integ_now_ns() < end;) {
        struct pollfd p = {fd, POLLOUT, 0};
        poll(&p, 1, 10);
        st = tutti__sock_connect_check(fd, &err);
    }
    close(fd);
    return st == TUTTI_OK;
}

/* ---------------------------------------------------------------- the root and fork */

struct late_shared {
    _Atomic int joined;    /* early ranks with their communicator */
    _Atomic int late_done; /* the late rank has its answer */
};

/* An early rank: joins, reduces, then stays alive (with whatever it inherited) until the late
 * rank has been answered. */
static int early_rank(const struct integ_ctx *ctx)
{
    struct late_shared *sh = ctx->shared;
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_rank(&comm, 2, ctx->id, ctx->rank));
    atomic_fetch_add(&sh->joined, 1);
    int64_t end = integ_now_ns() + 40 * SEC;
    while (!atomic_load(&sh->late_done) && integ_now_ns() < end) {
        integ_pause_ms(5);
    }
    ICHECK(atomic_load(&sh->late_done), "the late rank was not answered within 40 s");
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

/* Rank 1 of 2 again (a rank restarted with the id of a job that has formed), long after the root
 * closed: refused at once, and told why. */
static int late_rank(const struct integ_ctx *ctx)
{
    struct late_shared *sh = ctx->arg;
    tutti_comm_t *comm = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_rank(&comm, 2, ctx->id, 1);
    double secs = (double)(integ_now_ns() - t0) / 1e9;
    const char *msg = tutti_last_error(NULL);
    atomic_store(&sh->late_done, 1);
    ICHECK(st != TUTTI_OK, "a rank joined a root that had closed");
    ICHECK(secs < 3, "the late rank was answered after %.1f s (TUTTI_TIMEOUT 10 s): %s: %s", secs,
           tutti_status_name(st), msg);
    ICHECK(!integ_contains(msg, "secret"), "the message blames the secret: %s", msg);
    ICHECK(integ_contains(msg, "bootstrap root") && integ_contains(msg, "closed"),
           "the message does not say that the root has closed: %s", msg);
    return 0;
}

/*
 * The test process makes the id (so it serves the root, in a thread) and forks two ranks, as
 * the perf tools' -N does. Once they have their communicator the root closes its port, and
 * nothing may still accept there: not the ranks either, which were forked while it listened.
 * A rank that comes then (here a second rank 1) gets a fast, clear error.
 */
Test(boot, a_forked_rank_does_not_keep_the_root_listening, .timeout = 60)
{
    integ_setenv("TUTTI_TIMEOUT", "10s");
    tutti_unique_id_t id;
    cr_assert_eq(tutti_get_unique_id(&id), TUTTI_OK, "%s", tutti_last_error(NULL));
    struct tutti_uid u;
    cr_assert_eq(tutti__uid_decode(&id, &u), TUTTI_OK);
    struct integ_opts o = {
        .nranks = 2, .deadline_s = 50, .id = &id, .shared_bytes = sizeof(struct late_shared)};
    struct integ_job *early = integ_start(&o, early_rank);
    struct late_shared *sh = integ_shared(early);
    int64_t end = integ_now_ns() + 20 * SEC;
    while ((atomic_load(&sh->joined) < 2 || sockets_on_port(&u.boot.root) != 0) &&
           integ_now_ns() < end) {
        integ_pause_ms(5);
    }
    cr_assert_eq(atomic_load(&sh->joined), 2, "the two ranks did not join");
    cr_assert_eq(sockets_on_port(&u.boot.root), 0, "the root did not close its port");
    int open = accepts_connections(&u.boot.root);
    struct integ_opts lo = {.nranks = 1, .deadline_s = 30, .id = &id, .arg = sh};
    integ_run(&lo, late_rank);
    atomic_store(&sh->late_done, 1);
    integ_finish(early, NULL, 0);
    cr_assert(!open, "the root's port still accepts connections after the root closed it (a "
                     "forked rank kept its listening socket)");
}
