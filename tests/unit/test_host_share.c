/*
 * test_host_share.c - topology/host_share.c, one detection per host and job: of several
 * processes asking at once, one detects and the others read its result; the file goes once they
 * are done; a maker that died (its lock left, no result) costs the others only their own
 * detection, and files of makers that ended are swept; a result read from the file is placed
 * for the reader's own CPU affinity.
 */
#include "topology/host_share.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NPROC 6

/* A fake detection that counts itself in a pipe and takes a while (as hwloc does). */
static int count_fd = -1;

static tutti_status_t fake_detect(struct tutti_topo *t, struct tutti_topo_pus *pus)
{
    memset(t, 0, sizeof(*t));
    t->ok = 1;
    t->packages = 2;
    t->cores = t->pus = 8;
    snprintf(t->source, sizeof(t->source), "fake machine");
    pus->n = 8;
    for (int c = 0; c < 8; c++) {
        pus->package[c] = (int16_t)(c / 4);
        pus->numa[c] = (int16_t)(c / 4);
    }
    if (count_fd >= 0) {
        (void)write(count_fd, "d", 1);
    }
    usleep(200000);
    return TUTTI_OK;
}

static void unique_name(char *out, size_t len)
{
    uint8_t host[4] = {1, 2, 3, 4};
    tutti__topo_share_name(((uint64_t)getpid() << 16) ^ (uint64_t)tutti__now_ns(), host,
                           sizeof(host), out, len);
}

static int exists(const char *name, const char *suffix)
{
    char path[200];
    snprintf(path, sizeof(path), "/dev/shm/%s%s", name, suffix);
    return access(path, F_OK) == 0;
}

Test(host_share, of_many_ranks_at_once_one_detects_and_the_rest_read)
{
    char name[64];
    unique_name(name, sizeof(name));
    int p[2], asked[2], go[2]; /* detections; then a barrier, as init's sync */
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(pipe(asked), 0);
    cr_assert_eq(pipe(go), 0);
    pid_t kids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        kids[i] = fork();
        cr_assert_geq(kids[i], 0);
        if (kids[i] == 0) {
            count_fd = p[1];
            struct tutti_topo t;
            int from_file = tutti__topo_share(name, fake_detect, &t);
            int ok = t.ok && t.packages == 2 && t.pus == 8 && strcmp(t.source, "fake machine") == 0;
            /* Every sibling has asked before any removes the file (init's first sync). */
            char c = 'a';
            (void)!write(asked[1], &c, 1);
            (void)!read(go[0], &c, 1);
            tutti__topo_share_end();
            _exit(ok ? (from_file ? 10 : 11) : 1);
        }
    }
    close(p[1]);
    for (int i = 0; i < NPROC; i++) {
        char c;
        cr_assert_eq(read(asked[0], &c, 1), 1);
    }
    for (int i = 0; i < NPROC; i++) {
        cr_assert_eq(write(go[1], "g", 1), 1);
    }
    int readers = 0, makers = 0;
    for (int i = 0; i < NPROC; i++) {
        int ws = 0;
        cr_assert_eq(waitpid(kids[i], &ws, 0), kids[i]);
        cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) >= 10, "child %d: status %d", i, ws);
        readers += WEXITSTATUS(ws) == 10;
        makers += WEXITSTATUS(ws) == 11;
    }
    char buf[64];
    ssize_t detections = read(p[0], buf, sizeof(buf));
    close(p[0]);
    cr_expect_eq(detections, 1, "%zd detections for %d processes", detections, NPROC);
    cr_expect_eq(makers, 1);
    cr_expect_eq(readers, NPROC - 1);
    cr_expect(!exists(name, ""), "/dev/shm/%s was left", name);
    cr_expect(!exists(name, ".lock"), "the maker left its lock");
}

Test(host_share, a_maker_that_died_costs_the_others_only_their_own_detection)
{
    char name[64], lock[200];
    unique_name(name, sizeof(name));
    snprintf(lock, sizeof(lock), "/dev/shm/%s.lock", name);
    int fd = open(lock, O_RDWR | O_CREAT | O_EXCL, 0600); /* a lock, no holder, no result */
    cr_assert_geq(fd, 0);
    close(fd);
    struct tutti_topo t;
    int64_t t0 = tutti__now_ns();
    cr_assert_eq(tutti__topo_share(name, fake_detect, &t), 0, "detected alone");
    cr_assert(t.ok && t.packages == 2);
    cr_expect_lt(tutti__now_ns() - t0, 2000000000ll, "no wait beyond the detection itself");
    cr_expect(!exists(name, ".lock"), "the dead maker's lock was left");
    tutti__topo_share_end();
}

Test(host_share, files_of_makers_that_ended_are_swept_by_the_next_detection)
{
    pid_t gone = fork();
    if (gone == 0) {
        _exit(0);
    }
    cr_assert_eq(waitpid(gone, NULL, 0), gone); /* a pid that has ended */
    char dead[64], live[64], path[200];
    unique_name(dead, sizeof(dead));
    snprintf(path, sizeof(path), "/dev/shm/%s", dead);
    uint32_t head[4] = {0x50544f54u, 1, 0, (uint32_t)gone}; /* a result made by `gone` */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, head, sizeof(head)), (ssize_t)sizeof(head));
    close(fd);
    snprintf(path, sizeof(path), "/dev/shm/%s.lock", dead);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600); /* and its lock */
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, &gone, sizeof(uint32_t)), (ssize_t)sizeof(uint32_t));
    close(fd);
    usleep(1000);
    unique_name(live, sizeof(live));
    struct tutti_topo t;
    (void)tutti__topo_share(live, fake_detect, &t);
    cr_expect(!exists(dead, ""), "a dead maker's result was left");
    cr_expect(!exists(dead, ".lock"), "a dead maker's lock was left");
    cr_expect(exists(live, ""), "our own result is there until the end");
    tutti__topo_share_end();
    cr_expect(!exists(live, ""), "and gone after it");
}

/* A lock whose maker was killed before it wrote its pid: empty. Old, it is swept; new, it may
 * be a maker at work, and stays. */
Test(host_share, an_old_lock_that_records_no_maker_is_swept_and_a_new_one_stays)
{
    char old[64], fresh[64], live[64], path[200];
    unique_name(old, sizeof(old));
    snprintf(path, sizeof(path), "/dev/shm/%s.lock", old);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    struct timespec then[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
    cr_assert_eq(futimens(fd, then), 0);
    close(fd);
    usleep(1000);
    unique_name(fresh, sizeof(fresh));
    snprintf(path, sizeof(path), "/dev/shm/%s.lock", fresh);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    usleep(1000);
    unique_name(live, sizeof(live));
    struct tutti_topo t;
    (void)tutti__topo_share(live, fake_detect, &t);
    tutti__topo_share_end();
    cr_expect(!exists(old, ".lock"), "an empty lock a minute old was left");
    cr_expect(exists(fresh, ".lock"), "an empty lock just made was taken");
    unlink(path);
}

Test(host_share, a_result_read_is_placed_for_the_readers_own_affinity)
{
    struct tutti_topo t = {.ok = 1, .pus = 8, .allowed_pus = 8, .cpu_package = 0, .cpu_numa = 0};
    struct tutti_topo_pus pus = {.n = 8};
    for (int c = 0; c < 8; c++) {
        pus.package[c] = pus.numa[c] = (int16_t)(c / 4);
    }
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++) {
        first = CPU_ISSET(c, &set) ? c : -1;
    }
    tutti__topo_place(&t, &pus);
    cr_expect_eq(t.allowed_pus, CPU_COUNT(&set));
    cr_expect_eq(t.first_pu, first);
    /* Bound to one PU of the map: its package and node; else several (or unmapped): -1. */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    tutti__topo_place(&t, &pus);
    int want = first < 8 ? first / 4 : -1;
    cr_expect_eq(t.cpu_package, want, "bound to PU %d: package %d", first, t.cpu_package);
    cr_expect_eq(t.cpu_numa, want);
    cr_expect_eq(t.allowed_pus, 1);
    pus.package[first < 8 ? first : 0] = -1; /* a PU the map does not place */
    tutti__topo_place(&t, &pus);
    cr_expect_eq(t.cpu_package, -1);
    cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

/* A finished result for name, published by a child that detects and leaves it (no share_end,
 * as a rank between its detection and init's first sync); the file names this process as its
 * maker. */
static void publish(const char *name)
{
    pid_t kid = fork();
    cr_assert_geq(kid, 0);
    if (kid == 0) {
        struct tutti_topo t;
        (void)tutti__topo_share(name, fake_detect, &t);
        _exit(0);
    }
    int st = 0;
    cr_assert_eq(waitpid(kid, &st, 0), kid);
    cr_assert(exists(name, ""), "the child published its result");
    /* its maker is this process now (alive), so the next detection's sweep keeps the file */
    char path[200];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    int fd = open(path, O_WRONLY);
    uint32_t me = (uint32_t)getpid();
    cr_assert_eq(pwrite(fd, &me, sizeof(me), 12), (ssize_t)sizeof(me));
    close(fd);
}

/* The reader must detect alone, and get its own detection (nnics 0), not the file's. */
static void expect_passed_over(const char *name, const char *why)
{
    struct tutti_topo t;
    cr_assert_eq(tutti__topo_share(name, fake_detect, &t), 0, "%s: the file was read", why);
    cr_assert(t.ok && t.nnics == 0 && t.packages == 2, "%s", why);
    tutti__topo_share_end();
}

/* Issue 36 item 2: the result file was opened without O_NOFOLLOW or an owner check and its
 * counts trusted: one claiming 100000 NICs crashed every rank (topology/view.c). Now a file with
 * counts beyond its arrays, one that others may write, one of another user and a link are each
 * passed over: the rank detects alone, as if the file were not there. */
Test(host_share, a_planted_or_corrupt_result_is_passed_over, .init = cr_redirect_stderr)
{
    char name[64], path[200];
    unique_name(name, sizeof(name));
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    publish(name);
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    int bogus = 100000;
    off_t at = 16 + (off_t)offsetof(struct tutti_topo, nnics); /* the file's 16-byte head, then */
    cr_assert_eq(pwrite(fd, &bogus, sizeof(bogus), at), (ssize_t)sizeof(bogus));
    close(fd);
    expect_passed_over(name, "100000 NICs"); /* (and its own result replaced the file, then
                                              * went with share_end: each case starts anew) */
    publish(name);
    cr_assert_eq(chmod(path, 0666), 0);
    expect_passed_over(name, "writable by others");
    if (geteuid() == 0) {
        publish(name);
        cr_assert_eq(chown(path, 65534, 65534), 0);
        expect_passed_over(name, "owned by uid 65534");
    }
    publish(name);
    char real[220];
    snprintf(real, sizeof(real), "%s.real", path);
    cr_assert_eq(rename(path, real), 0);
    cr_assert_eq(symlink(real, path), 0);
    expect_passed_over(name, "a symbolic link");
    unlink(path);
    unlink(real);
}
