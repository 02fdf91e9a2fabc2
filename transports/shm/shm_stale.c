/*
 * shm_stale.c - shared memory segments that outlived their process. A rank killed before its
 * peers attached (SIGKILL during init, the OOM killer) leaves names in /dev/shm; a launch with a
 * root address and a secret has the same communicator id every time, so its next identical
 * launch would meet them and fall back to TCP. Each segment records its maker (struct
 * shm_owner), and:
 *   - a name in the way of a creation is replaced when its maker has ended (tutti__shm_reclaim),
 *     or named in the error with its owner and the rm that removes it;
 *   - the first communicator of a process sweeps this user's transport segments whose makers
 *     have ended (tutti__shm_sweep);
 *   - a rank that sees a local peer die removes the names that peer made (tutti__shm_forget).
 * A segment with no maker recorded (another version's, or a maker killed between shm_open and
 * its first store) is only replaced when in the way and 10 s old, never swept.
 */
#include "shm.h"
#include "base/check.h"
#include "tutti/comm.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define UNOWNED_STALE_S 10 /* a segment without a maker recorded is stale at this age */

/* Stale (1), in use (0, *why says whose) or unreadable (-1, *why says why): segment `name`. */
static int judge(const char *name, int sweeping, char *why, size_t len)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) {
        snprintf(why, len, "%s", strerror(errno));
        return -1;
    }
    struct stat sb;
    struct shm_owner own;
    memset(&own, 0, sizeof(own));
    int verdict = 0;
    if (fstat(fd, &sb) != 0 || sb.st_uid != geteuid()) {
        snprintf(why, len, "it belongs to uid %u", (unsigned)sb.st_uid);
    } else {
        /* read, not mmap: 512 ranks each judging every segment of the host made a mapping's
         * TLB shootdowns a tenth of the machine's time */
        if ((size_t)sb.st_size >= sizeof(own) && pread(fd, &own, sizeof(own), 0) != sizeof(own)) {
            memset(&own, 0, sizeof(own));
        }
        if (own.tag == TUTTI_SHM_OWNER_TAG) {
            int alive = tutti__proc_alive(&own.id);
            verdict = alive == 0;
            snprintf(why, len, "its maker, pid %u, %s", own.id.pid,
                     alive == 0 ? "has ended" : "is running");
        } else {
            time_t age = time(NULL) - TUTTI_MAX(sb.st_mtime, sb.st_ctime);
            verdict = !sweeping && age >= UNOWNED_STALE_S;
            snprintf(why, len, "no maker is recorded in it (%lld s old)", (long long)age);
        }
    }
    close(fd);
    return verdict;
}

int tutti__shm_reclaim(const char *name, struct tutti_errbuf *eb)
{
    char why[96];
    int verdict = judge(name, 0, why, sizeof(why));
    if (verdict == 1 && (shm_unlink(name) == 0 || errno == ENOENT)) {
        tutti_info(TUTTI_SUBSYS_SHM, "removed the stale shared memory segment %s: %s", name, why);
        return 0;
    }
    tutti__set_error(
        eb, TUTTI_ERR_SYSTEM,
        "shm_open %s: File exists: %s (another job with the same communicator id? "
        "give each its own TUTTI_ROOT or launcher job id); if no job of yours uses it, "
        "remove it: rm /dev/shm%s",
        name, why, name);
    return -1;
}

/* Is d_name one of the transport's names: tutti-<16 hex digits>-d (the control directory),
 * -f... (a FIFO), or -c... (a control segment of releases before the directory)? */
static int transport_name(const char *n)
{
    if (strncmp(n, "tutti-", 6) != 0 || strlen(n) < 24 || n[22] != '-') {
        return 0;
    }
    for (int i = 6; i < 22; i++) {
        if (strchr("0123456789abcdef", n[i]) == NULL) {
            return 0;
        }
    }
    return n[23] == 'c' || n[23] == 'd' || n[23] == 'f';
}

static void sweep_once(void)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int removed = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char name[300], why[96];
        if (!transport_name(e->d_name)) {
            continue;
        }
        snprintf(name, sizeof(name), "/%s", e->d_name);
        if (judge(name, 1, why, sizeof(why)) == 1 && shm_unlink(name) == 0) {
            tutti_debug(TUTTI_SUBSYS_SHM, "removed the stale shared memory segment %s: %s", name,
                        why);
            removed++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    if (removed > 0) {
        tutti_info(TUTTI_SUBSYS_SHM,
                   "removed %d stale shared memory segments of processes that have ended", removed);
    }
}

/* Process-wide, yet here rather than in tutti__g (src/base/global.h): the transport layer sits
 * below src/ and the flag is this file's alone. */
static pthread_once_t sweep_done = PTHREAD_ONCE_INIT;

void tutti__shm_sweep(void)
{
    pthread_once(&sweep_done, sweep_once);
}

int tutti__shm_remove_job(uint64_t comm_id)
{
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "tutti-%016" PRIx64 "-", comm_id);
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int removed = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char name[300];
        snprintf(name, sizeof(name), "/%s", e->d_name);
        if (transport_name(e->d_name) && strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
            shm_unlink(name) == 0) {
            removed++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return removed;
}

void tutti__shm_forget(const struct shm_ctx *ctx, int rank)
{
    char name[64]; /* its control page is in the directory, whose name is gone after set-up */
    for (int src = 0; src < ctx->args.nranks; src++) {
        if (ctx->peers[src].ctl == NULL || src == rank) {
            continue; /* only a local rank sends over shared memory */
        }
        for (int ch = 0; ch < TUTTI_MAX_CHANNELS; ch++) {
            tutti__shm_name(ctx, 'f', src, rank, ch, name, sizeof(name));
            (void)shm_unlink(name);
        }
    }
}
