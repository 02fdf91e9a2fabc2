/*
 * rendezvous.c - the one-host rendezvous file of tutti_comm_init_env (launch.c): rank 0 writes
 * its root address and a fresh secret, the other ranks read them. The file lives in a
 * world-writable directory (/tmp) under a name anyone can compute, so both sides distrust it:
 * rank 0 writes a new file of its own (mkostemp: O_EXCL, mode 0600) and renames it into place,
 * and a reader accepts only a regular file, not a symbolic link, owned by its own uid, that
 * nobody else may read or write (mode 0600 or less). docs/SECURITY.md says what this does and
 * does not stop.
 */
#include "check.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

tutti_status_t tutti__rendezvous_publish(const char *path, const struct tutti_boot_id *id)
{
    char tmp[320];
    struct tutti_wire_addr w;
    tutti__wire_addr_encode(&id->root, &w);
    if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
        return tutti__set_error(NULL, TUTTI_ERR_INTERNAL, "rendezvous path %s is too long", path);
    }
    int fd = mkostemp(tmp, O_CLOEXEC); /* a fresh name, O_EXCL, mode 0600 */
    if (fd < 0) {
        return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "creating %s: %s", tmp, strerror(errno));
    }
    int ok = write(fd, &w, sizeof(w)) == sizeof(w) &&
             write(fd, id->secret, TUTTI_SECRET_BYTES) == TUTTI_SECRET_BYTES;
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

tutti_status_t tutti__rendezvous_read(const char *path, struct tutti_boot_id *id)
{
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
    struct tutti_wire_addr w;
    struct tutti_boot_id got = *id;
    if (st == TUTTI_OK && (read(fd, &w, sizeof(w)) != sizeof(w) ||
                           read(fd, got.secret, TUTTI_SECRET_BYTES) != TUTTI_SECRET_BYTES ||
                           tutti__wire_addr_decode(&w, &got.root) != TUTTI_OK)) {
        st = TUTTI_IN_PROGRESS; /* rename() makes it whole: a stale or foreign file, wait */
    }
    close(fd);
    if (st == TUTTI_OK) {
        *id = got;
    }
    return st;
}
