/*
 * shm_seg.c - making and opening a shared-memory segment: reserve its pages, check that an
 * existing one is this user's, map it and stamp its owner (shm.h, struct shm_owner).
 */
#include "shm.h"
#include "base/check.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

tutti_status_t tutti__shm_reserve(int fd, size_t off, size_t len, const char *name,
                                  struct tutti_errbuf *eb)
{
    /* Reserved now, so that a full /dev/shm is this error and never a SIGBUS later. */
    int err = posix_fallocate(fd, (off_t)off, (off_t)len);
    if (err == 0) {
        return TUTTI_OK;
    }
    struct statvfs vs;
    unsigned long long avail = 0, size = 0;
    if (statvfs("/dev/shm", &vs) == 0) {
        avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
        size = (unsigned long long)vs.f_blocks * vs.f_frsize;
    }
    return tutti__set_error(
        eb, TUTTI_ERR_SYSTEM,
        "reserving %zu bytes of shared memory for %s: %s; /dev/shm has %llu of %llu bytes "
        "free (df /dev/shm; in a container, give it more: docker run --shm-size, or a "
        "larger tmpfs), or lower TUTTI_MEM_BUDGET / TUTTI_SHM_NSLOTS",
        len, name, strerror(err), avail, size);
}

tutti_status_t tutti__shm_fd_ours(int fd, const char *name, struct tutti_errbuf *eb)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        return tutti__set_error(eb, TUTTI_ERR_SYSTEM, "fstat %s: %s", name, strerror(errno));
    }
    if (sb.st_uid != geteuid() || (sb.st_mode & 077) != 0) {
        return tutti__set_error(eb, TUTTI_ERR_SYSTEM,
                                "%s belongs to uid %u with mode %o, not to this user (uid %u) "
                                "with mode 600: another user made this name; it is not used",
                                name, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777),
                                (unsigned)geteuid());
    }
    return TUTTI_OK;
}

void *tutti__shm_map(const char *name, size_t len, int create, tutti_status_t *st_p,
                     struct tutti_errbuf *eb)
{
    int fd = shm_open(name, create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
    if (fd < 0 && create && errno == EEXIST) {
        if (tutti__shm_reclaim(name, eb) != 0) {
            *st_p = TUTTI_ERR_SYSTEM; /* in use by a live process: recorded, naming it */
            return NULL;
        }
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) {
        int err = errno;
        *st_p = (!create && err == ENOENT) ? TUTTI_IN_PROGRESS : TUTTI_ERR_SYSTEM;
        if (*st_p != TUTTI_IN_PROGRESS) {
            tutti__set_error(eb, TUTTI_ERR_SYSTEM, "shm_open %s: %s", name, strerror(err));
        }
        return NULL;
    }
    if (create) {
        *st_p = tutti__shm_reserve(fd, 0, len, name, eb);
        if (*st_p != TUTTI_OK) {
            close(fd);
            shm_unlink(name);
            return NULL;
        }
    } else {
        /* A segment opened, not made: the peer's, unless another user made the name first
         * (issue 36: a FIFO planted 0666 by another user received a rank's first frame). */
        if ((*st_p = tutti__shm_fd_ours(fd, name, eb)) != TUTTI_OK) {
            close(fd);
            return NULL;
        }
        struct stat sb;
        if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < len) {
            close(fd);
            *st_p = TUTTI_IN_PROGRESS; /* the owner has not sized it yet */
            return NULL;
        }
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (create) {
            shm_unlink(name);
        }
        *st_p = tutti__set_error(eb, TUTTI_ERR_SYSTEM, "mmap %s (%zu bytes): %s", name, len,
                                 strerror(err));
        return NULL;
    }
    if (create) {
        /* First of all, so that a maker killed from now on leaves a segment known as its. */
        struct shm_owner *own = p;
        tutti__proc_self(&own->id);
        atomic_store_explicit(&own->tag, TUTTI_SHM_OWNER_TAG, memory_order_release);
    }
    *st_p = TUTTI_OK;
    return p;
}
