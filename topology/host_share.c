/*
 * host_share.c - one topology detection per host and job (host_share.h). The protocol, with
 * files in /dev/shm:
 *   - <name> holds a finished detection; a rank that finds it reads it and is done;
 *   - <name>.lock is made (O_EXCL) by the one rank that detects, which holds an exclusive flock
 *     on it while it does, writes <name>.<pid>, renames that to <name>, then unlinks the lock;
 *   - a rank that finds the lock taken waits for a shared flock on it (the maker has finished or
 *     died: the kernel drops a dead process's locks), then reads <name>; still nothing there
 *     means the maker died, and the rank detects alone (and removes the dead maker's lock).
 * Every rank that used the file unlinks it after init's first sync (tutti__topo_share_end): all
 * have detected by then, and one rank killed there must not leave it behind. Both files record
 * their maker's pid; the first detection of a process removes those whose maker has ended (a
 * job killed whole during its init). No step can hang beyond SHARE_WAIT_NS, and every failure
 * falls back to detecting alone.
 */
#include "topology/host_share.h"
#include "base/log.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHARE_DIR     "/dev/shm"
#define SHARE_MAGIC   0x50544f54u /* "TOTP" */
#define SHARE_VERSION 1u
#define SHARE_WAIT_NS (10ll * 1000000000ll) /* for a maker that detects under a heavy load */

struct share_file {
    uint32_t magic, version, size, pid; /* pid: the maker's */
    struct tutti_topo topo;
    struct tutti_topo_pus pus;
};

static char used[160]; /* the file this process made or read, until tutti__topo_share_end */
static atomic_int has_used;

void tutti__topo_share_name(uint64_t job_id, const uint8_t *hostid, size_t idlen, char *out,
                            size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the host id */
    for (size_t i = 0; i < idlen; i++) {
        h = (h ^ hostid[i]) * 0x100000001b3ull;
    }
    snprintf(out, len, "tutti-topo-%016llx-%016llx", (unsigned long long)job_id,
             (unsigned long long)h);
}

static void path_of(const char *name, const char *suffix, char *out, size_t len)
{
    snprintf(out, len, "%s/%s%s", SHARE_DIR, name, suffix);
}

/* Open a file of the protocol for reading only if it is this user's own: not a link, a regular
 * file, owned by the effective uid and writable by nobody else. /dev/shm is shared by every
 * user: another user can create a name first (issue 36: a planted file claiming 100000 NICs
 * crashed every rank); such a file is passed over (the ranks detect alone), never read. */
static int open_own(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 022) != 0) {
        tutti_warn("%s is not this user's own file (owner uid %u, mode %o): not read; this "
                   "rank detects the topology itself",
                   path, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777));
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

static int terminated(const char *s, size_t len)
{
    return memchr(s, '\0', len) != NULL;
}

static int dev_sane(const struct tutti_topo_dev *d)
{
    return terminated(d->name, sizeof(d->name)) && terminated(d->alias, sizeof(d->alias)) &&
           terminated(d->busid, sizeof(d->busid)) && d->package >= -1 && d->numa >= -1;
}

/* Every count and index within what the readers of a topology assume (its arrays' bounds),
 * every string terminated: a file from a rank of this job always is. */
static int share_sane(const struct share_file *f)
{
    const struct tutti_topo *t = &f->topo;
    if (t->ngpus < 0 || t->ngpus > TUTTI_TOPO_MAX_GPUS || t->nnics < 0 ||
        t->nnics > TUTTI_TOPO_MAX_NICS || t->packages < 0 || t->numa_nodes < 0 || t->cores < 0 ||
        t->pus < 0 || f->pus.n < 0 || f->pus.n > TUTTI_TOPO_MAX_PUS ||
        !terminated(t->source, sizeof(t->source)) ||
        !terminated(t->nvml_note, sizeof(t->nvml_note)) ||
        !terminated(t->error, sizeof(t->error))) {
        return 0;
    }
    for (int i = 0; i < t->ngpus; i++) { /* a GPU's nearest NIC indexes t->nic */
        if (!dev_sane(&t->gpu[i]) || t->gpu[i].nic < -1 || t->gpu[i].nic >= t->nnics) {
            return 0;
        }
    }
    for (int i = 0; i < t->nnics; i++) {
        if (!dev_sane(&t->nic[i])) {
            return 0;
        }
    }
    return 1;
}

/* A finished detection from <name>; 1 when there was a whole, sane one of this version, made by
 * this user. */
static int read_share(const char *name, struct share_file *f)
{
    char path[160];
    path_of(name, "", path, sizeof(path));
    int fd = open_own(path);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = read(fd, f, sizeof(*f));
    close(fd);
    if (n != (ssize_t)sizeof(*f) || f->magic != SHARE_MAGIC || f->version != SHARE_VERSION ||
        f->size != sizeof(*f)) {
        return 0;
    }
    if (!share_sane(f)) {
        tutti_warn("%s holds counts or names out of bounds: not used; this rank detects the "
                   "topology itself",
                   path);
        return 0;
    }
    return 1;
}

/* Detect, then publish as <name> (best effort: a failed write only costs the others). */
static void detect_and_publish(const char *name, tutti_topo_detect_fn detect, struct tutti_topo *t,
                               struct share_file *fp)
{
    memset(fp, 0, sizeof(*fp));
    if (detect(t, &fp->pus) != TUTTI_OK || !t->ok) {
        return; /* a failed detection is each rank's own to report */
    }
    fp->magic = SHARE_MAGIC;
    fp->version = SHARE_VERSION;
    fp->size = sizeof(*fp);
    fp->pid = (uint32_t)getpid();
    fp->topo = *t;
    char tmp[192], path[160];
    path_of(name, "", path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int ok = fd >= 0 && write(fd, fp, sizeof(*fp)) == (ssize_t)sizeof(*fp);
    if (fd >= 0) {
        close(fd);
    }
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
    }
}

static void mark_used(const char *name)
{
    path_of(name, "", used, sizeof(used));
    atomic_store(&has_used, 1);
}

/* The maker's pid recorded in a file of ours: a lock, a result, or a result being written
 * ("<name>.<pid>"); 0 when none is (yet) recorded. */
static pid_t maker_of(const char *entry)
{
    const char *dot = strrchr(entry, '.');
    if (dot != NULL && strcmp(dot, ".lock") != 0) {
        return (pid_t)atol(dot + 1);
    }
    char path[300];
    snprintf(path, sizeof(path), "%s/%s", SHARE_DIR, entry);
    uint32_t head[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, head, sizeof(head)) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (dot != NULL) {
        return n >= 4 ? (pid_t)head[0] : 0; /* a lock: the pid alone */
    }
    return n == (ssize_t)sizeof(head) && head[0] == SHARE_MAGIC ? (pid_t)head[3] : 0;
}

/* A lock older than this that records no pid: its maker was killed between making it and
 * writing its pid (a few microseconds), or it is another user's puzzle; either way nobody
 * will remove it, and it would stay in /dev/shm until reboot. */
#define EMPTY_LOCK_AGE_S 10

static int empty_lock_left(const char *entry)
{
    const char *dot = strrchr(entry, '.');
    struct stat sb;
    char path[300];
    snprintf(path, sizeof(path), "%s/%s", SHARE_DIR, entry);
    return dot != NULL && strcmp(dot, ".lock") == 0 && stat(path, &sb) == 0 && sb.st_size == 0 &&
           time(NULL) - sb.st_mtime > EMPTY_LOCK_AGE_S;
}

/* Remove the files whose maker has ended (a job killed whole while it detected). */
static void sweep(void)
{
    DIR *d = opendir(SHARE_DIR);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "tutti-topo-", 11) != 0) {
            continue;
        }
        pid_t pid = maker_of(e->d_name);
        if ((pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) ||
            (pid == 0 && empty_lock_left(e->d_name))) {
            char path[300];
            snprintf(path, sizeof(path), "%s/%s", SHARE_DIR, e->d_name);
            tutti_debug(TUTTI_SUBSYS_TOPO, "removing %s: its maker, pid %d, has ended", path,
                        (int)pid); /* pid 0: an old lock that records none */
            unlink(path);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* Wait for a shared lock on the maker's lock file: it has finished, or died. 0 when the lock
 * file is gone already (finished), 1 after the lock, -1 on any trouble or at the deadline. */
static int wait_maker(const char *lock, int64_t deadline)
{
    int fd = open_own(lock); /* another user's lock: not waited for (it could hold it forever) */
    if (fd < 0) {
        return errno == ENOENT ? 0 : -1;
    }
    int got = -1;
    for (useconds_t us = 100; tutti__now_ns() < deadline; us = us < 20000 ? us * 2 : us) {
        if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
            got = 1;
            break;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            break;
        }
        usleep(us);
    }
    close(fd);
    return got;
}

int tutti__topo_share(const char *name, tutti_topo_detect_fn detect, struct tutti_topo *t)
{
    static struct share_file f; /* 20 KB; one detection per process (its caller's lock) */
    char lock[192];
    int64_t deadline = tutti__now_ns() + SHARE_WAIT_NS; /* for all tries together */
    sweep();
    path_of(name, ".lock", lock, sizeof(lock));
    for (int tries = 0; tries < 3; tries++) {
        if (read_share(name, &f)) {
            mark_used(name);
            *t = f.topo;
            tutti__topo_place(t, &f.pus);
            tutti_debug(TUTTI_SUBSYS_TOPO, "topology read from %s/%s (detected by another rank)",
                        SHARE_DIR, name);
            return 1;
        }
        int fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            /* Never blocks: a reader may hold a shared lock for an instant (it came between
             * our open and this flock); then the others find no result and detect alone. */
            (void)flock(fd, LOCK_EX | LOCK_NB);
            uint32_t pid = (uint32_t)getpid();
            (void)!write(fd, &pid, sizeof(pid));
            mark_used(name);
            detect_and_publish(name, detect, t, &f);
            unlink(lock);
            close(fd);
            return 0;
        }
        int waited = errno == EEXIST ? wait_maker(lock, deadline) : -1;
        if (waited < 0) {
            break; /* no /dev/shm, or a maker that is slow: detect alone */
        }
        if (waited == 1 && !read_share(name, &f)) {
            unlink(lock); /* its maker died detecting (or had just made it: one more detection) */
            break;
        }
    }
    tutti_debug(TUTTI_SUBSYS_TOPO, "topology: detecting alone (%s/%s not available)", SHARE_DIR,
                name);
    memset(&f.pus, 0, sizeof(f.pus));
    (void)detect(t, &f.pus);
    return 0;
}

void tutti__topo_share_remove_job(uint64_t job_id)
{
    char prefix[48];
    snprintf(prefix, sizeof(prefix), "tutti-topo-%016llx-", (unsigned long long)job_id);
    DIR *d = opendir(SHARE_DIR);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            char path[300];
            snprintf(path, sizeof(path), "%s/%s", SHARE_DIR, e->d_name);
            unlink(path);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

void tutti__topo_share_end(void)
{
    if (atomic_exchange(&has_used, 0)) {
        unlink(used);
    }
}
