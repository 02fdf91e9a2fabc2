/*
 * rendezvous.c - the one-host rendezvous file of tutti_comm_init_env (launch.c): rank 0 writes
 * its root address and a fresh secret, the other ranks read them. The file lives in the user's
 * runtime directory (XDG_RUNTIME_DIR) when there is one of the user's own, else in a
 * world-writable directory (/tmp) under a name anyone can compute, so both sides distrust it:
 * rank 0 writes a new file of its own (mkostemp: O_EXCL, mode 0600) and renames it into place,
 * and a reader accepts only a regular file, not a symbolic link, owned by its own uid, that
 * nobody else may read or write (mode 0600 or less). docs/SECURITY.md says what this does and
 * does not stop.
 *
 * The file also names its writer (proc.h: pid, start time, pid namespace) and the number of
 * ranks. A file whose writer has ended (a rank 0 that was killed) is stale: a reader waits for
 * the next rank 0 to replace it instead of following it to a root that is gone, and says so.
 */
#include "base/check.h"
#include "comm/launch.h"
#include "base/env.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RDV_MAGIC   0x56445254u /* "TRDV" */
#define RDV_VERSION 2u

/* The file's bytes (host order: both sides are on one host). */
struct rdv_file {
    uint32_t magic, version;
    struct tutti_proc_id owner; /* rank 0's process */
    uint32_t nranks, reserved;
    struct tutti_wire_addr root;
    uint8_t secret[TUTTI_SECRET_BYTES];
};

/* The user's own runtime directory (XDG_RUNTIME_DIR, /run/user/<uid> under systemd-logind):
 * absolute, a directory of this user that nobody else may enter. Another user cannot make a name
 * there first (issue 36: in /tmp, a name made first stops the job). NULL when there is none. */
static const char *private_dir(void)
{
    const char *d = tutti__env_foreign("XDG_RUNTIME_DIR");
    struct stat sb;
    if (d == NULL || d[0] != '/' || strlen(d) > 200 || stat(d, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
        sb.st_uid != getuid() || (sb.st_mode & 077) != 0) {
        return NULL;
    }
    return d;
}

void tutti__rendezvous_path(const char *key, char *out, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: a name, not a secret */
    for (const char *p = key; *p != '\0'; p++) {
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    }
    const char *dir = private_dir();
    snprintf(out, len, "%s/tutti-%u-%016llx.root", dir != NULL ? dir : "/tmp", (unsigned)getuid(),
             (unsigned long long)h);
}

/* Say so when rank 0 takes the name from a job that still runs (two launches without a job id
 * on one host share it; the later ranks of both then meet this one's root). */
static void warn_if_taken(const char *path)
{
    struct tutti_boot_id old;
    struct tutti_rdv_owner owner;
    if (tutti__rendezvous_read(path, &old, &owner) == TUTTI_OK && owner.pid != (uint32_t)getpid()) {
        tutti_warn("the rendezvous file %s belongs to a job that is running (rank 0 pid %u): two "
                   "launches without a root address or job id on this host share it; give each "
                   "its own TUTTI_ROOT",
                   path, owner.pid);
    }
}

tutti_status_t tutti__rendezvous_publish(const char *path, const struct tutti_boot_id *id,
                                         int nranks)
{
    char tmp[320];
    struct rdv_file f = {.magic = RDV_MAGIC, .version = RDV_VERSION, .nranks = (uint32_t)nranks};
    tutti__proc_self(&f.owner);
    tutti__wire_addr_encode(&id->root, &f.root);
    memcpy(f.secret, id->secret, TUTTI_SECRET_BYTES);
    if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
        return tutti__set_error(NULL, TUTTI_ERR_INTERNAL, "rendezvous path %s is too long", path);
    }
    warn_if_taken(path);
    int fd = mkostemp(tmp, O_CLOEXEC); /* a fresh name, O_EXCL, mode 0600 */
    if (fd < 0) {
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "creating %s: %s", tmp, strerror(errno));
    }
    int ok = write(fd, &f, sizeof(f)) == (ssize_t)sizeof(f);
    int err = errno;
    ok = close(fd) == 0 && ok;
    err = ok ? 0 : err;
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "writing %s: %s%s", path, strerror(err),
                                err == EPERM ? " (a file of that name belongs to another user: "
                                               "remove it, or set TUTTI_ROOT)"
                                             : "");
    }
    return TUTTI_OK;
}

/* Refuse what rank 0 of this user cannot have written: the error names path, owner and mode. */
static tutti_status_t check_owner(const char *path, const struct stat *sb)
{
    const char *why = NULL;
    if (!S_ISREG(sb->st_mode)) {
        why = "it is not a regular file";
    } else if (sb->st_uid != getuid()) {
        why = "it is not owned by this user";
    } else if ((sb->st_mode & 077) != 0) {
        why = "group or others have access (rank 0 writes it with mode 0600)";
    }
    if (why == NULL) {
        return TUTTI_OK;
    }
    return tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                            "refusing the rendezvous file %s (owner uid %u, mode %04o): %s "
                            "(this user is uid %u; another user may have planted it: remove it, "
                            "or set TUTTI_ROOT and TUTTI_SECRET)",
                            path, (unsigned)sb->st_uid, (unsigned)(sb->st_mode & 07777), why,
                            (unsigned)getuid());
}

/* Read the opened file (fd): whole and of this version, from a writer that still runs? */
static tutti_status_t read_file(int fd, struct tutti_boot_id *got, struct tutti_rdv_owner *owner)
{
    struct rdv_file f;
    ssize_t n = read(fd, &f, sizeof(f));
    if (n != (ssize_t)sizeof(f) || f.magic != RDV_MAGIC || f.version != RDV_VERSION) {
        /* rename() makes it whole: another version's, or a foreign file; no writer of ours. */
        owner->stale = 1;
        return TUTTI_IN_PROGRESS;
    }
    owner->pid = f.owner.pid;
    owner->nranks = (int)f.nranks;
    if (tutti__proc_alive(&f.owner) == 0) {
        owner->stale = 1; /* its rank 0 has ended: the next one will replace it */
        return TUTTI_IN_PROGRESS;
    }
    if (tutti__wire_addr_decode(&f.root, &got->root) != TUTTI_OK) {
        owner->stale = 1;
        return TUTTI_IN_PROGRESS;
    }
    memcpy(got->secret, f.secret, TUTTI_SECRET_BYTES);
    return TUTTI_OK;
}

tutti_status_t tutti__rendezvous_read(const char *path, struct tutti_boot_id *id,
                                      struct tutti_rdv_owner *owner_p)
{
    memset(owner_p, 0, sizeof(*owner_p));
    /* O_NONBLOCK: a FIFO planted there must not block the open (fstat then refuses it). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        struct stat lsb;
        if (err == ENOENT || lstat(path, &lsb) != 0) {
            return TUTTI_IN_PROGRESS; /* rank 0 has not published it yet */
        }
        if (S_ISLNK(lsb.st_mode)) {
            return tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                                    "refusing the rendezvous file %s (owner uid %u): it is a "
                                    "symbolic link (another user may have planted it: remove it, "
                                    "or set TUTTI_ROOT and TUTTI_SECRET)",
                                    path, (unsigned)lsb.st_uid);
        }
        TUTTI_CHECK(check_owner(path, &lsb));
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "opening %s: %s", path, strerror(err));
    }
    struct stat sb;
    tutti_status_t st = TUTTI_OK;
    if (fstat(fd, &sb) != 0) {
        st = tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "fstat %s: %s", path, strerror(errno));
    } else {
        st = check_owner(path, &sb);
    }
    struct tutti_boot_id got = *id;
    if (st == TUTTI_OK) {
        st = read_file(fd, &got, owner_p);
    }
    close(fd);
    if (st == TUTTI_OK) {
        *id = got;
    }
    return st;
}
