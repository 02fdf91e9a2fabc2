/*
 * test_fork_gate.c - src/base/fork_gate.c: a fork waits until the library's gated threads are out
 * of the gate (the child never gets a copy of one caught half-way through its work), does not
 * wait for one that blocks outside it, and joins the ones that have exited. A child keeps no
 * listening socket of the library: a running gated thread's hook closes its own, registered
 * ones become /dev/null.
 */
#include "base/fork_gate.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int started, steps, release;

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Inside the gate: ten steps of 30 ms of "work"; then outside until released; then exit. */
static void *worker(void *arg)
{
    (void)arg;
    atomic_store(&started, 1);
    for (int i = 0; i < 10; i++) {
        pause_ms(30);
        atomic_fetch_add(&steps, 1);
    }
    tutti__fork_gate_leave();
    while (!atomic_load(&release)) {
        pause_ms(5);
    }
    tutti__fork_gate_enter();
    tutti__fork_gate_exit();
    return NULL;
}

/* Fork; the child exits with the number of steps it saw. */
static int fork_and_count(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        _exit(atomic_load(&steps));
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

Test(fork_gate, fork_waits_for_work_in_the_gate_but_not_for_a_blocked_thread)
{
    cr_assert_eq(tutti__fork_gate_thread_start(worker, NULL, NULL), 0);
    while (!atomic_load(&started)) {
        pause_ms(1);
    }
    /* The worker is mid-way through its 300 ms inside the gate: the fork waits for the end. */
    cr_assert_eq(fork_and_count(), 10, "the child was copied while the worker was working");
    /* Now it waits outside the gate: a fork goes through at once. */
    double t0 = now_s();
    cr_assert_eq(fork_and_count(), 10);
    cr_assert_lt(now_s() - t0, 0.25, "a fork waited for a thread that was outside the gate");
    /* Once it has exited, the next fork joins it (and a later one has nobody to join). */
    atomic_store(&release, 1);
    pause_ms(50);
    cr_assert_eq(fork_and_count(), 10);
    cr_assert_eq(fork_and_count(), 10);
}

/* Gated threads that start while others end: every one is joined, none is lost. */
static void *short_lived(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    tutti__fork_gate_exit();
    return NULL;
}

Test(fork_gate, many_short_threads_and_forks)
{
    atomic_int ran = 0;
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(tutti__fork_gate_thread_start(short_lived, &ran, NULL), 0);
        if (i % 4 == 0) {
            (void)fork_and_count();
        }
    }
    (void)fork_and_count(); /* joins whatever is left */
    cr_assert_eq(atomic_load(&ran), 40);
}

/* ------------------------------------------------------------ what a child must not keep */

static int listener(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 4) == 0);
    return fd;
}

/* Is fd a listening socket in this process? */
static int listening(int fd)
{
    int on = 0;
    socklen_t len = sizeof(on);
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

/* Fork; the child exits with bit 0 = fd still listens, bit 1 = fd is an open descriptor. */
static int fork_and_look(int fd)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        _exit(listening(fd) | (fcntl(fd, F_GETFD) >= 0) << 1);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

Test(fork_gate, a_child_gets_dev_null_for_a_registered_listener)
{
    int fd = listener();
    cr_assert_eq(fork_and_look(fd), 3, "without registration the child keeps the listener");
    cr_assert_eq(tutti__fork_gate_fd_add(fd), 0);
    /* Still a descriptor in the child (its owner's close must not hit another), not a listener. */
    cr_assert_eq(fork_and_look(fd), 2, "the child kept a registered listener");
    cr_assert(listening(fd), "the parent's listener was touched");
    tutti__fork_gate_fd_del(fd);
    cr_assert_eq(fork_and_look(fd), 3, "a socket no longer registered is released anyway");
    close(fd);
}

static atomic_int owner_release;

/* A gated thread that owns a listener (its arg) until released, like a bootstrap root. */
static void *owner(void *arg)
{
    tutti__fork_gate_leave();
    while (!atomic_load(&owner_release)) {
        pause_ms(2);
    }
    tutti__fork_gate_enter();
    close(*(int *)arg);
    tutti__fork_gate_exit();
    return NULL;
}

static void owner_in_child(void *arg)
{
    close(*(int *)arg);
}

Test(fork_gate, a_child_closes_what_a_running_gated_thread_owns)
{
    static int fd;
    fd = listener();
    cr_assert_eq(tutti__fork_gate_thread_start(owner, &fd, owner_in_child), 0);
    cr_assert_eq(fork_and_look(fd), 0, "the child kept the gated thread's listener");
    cr_assert(listening(fd), "the parent's listener was touched");
    atomic_store(&owner_release, 1);
    while (fcntl(fd, F_GETFD) >= 0) {
        pause_ms(1);
    }
    /* The thread has ended: a child no longer runs its hook (the number may be reused). */
    int again = listener();
    cr_assert_eq(again, fd, "the descriptor number was not reused (test premise)");
    pause_ms(20);
    cr_assert_eq(fork_and_look(again), 3, "an ended thread's hook ran in a child");
    close(again);
}
