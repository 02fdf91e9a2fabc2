/*
 * xml_probe.c - load a topology file in a child process first. hwloc 2.9 can dereference NULL
 * on some malformed XML (an object without its complete_cpuset attribute: SEGV in
 * hwloc_bitmap_compare_first, found by fuzz_topo), free an object twice on others, leak what it
 * had built when it refuses a file, and allocate 512 MB for a NUMA node without os_index (it
 * sizes a bitmap by the index, 2^32 - 1 when absent; found by fuzz_topo too, whose process then
 * passed its memory limit). A user's TUTTI_TOPO_FILE must give a clear error, not take the
 * process down or swell it. The child loads the file exactly as detect.c will and reports
 * through a pipe whether hwloc loaded or refused it (with errno) and how much its resident
 * memory grew; only a file that loaded within TUTTI_TOPO_PROBE_LIMIT_MB is loaded again by the
 * caller. Live detection is not probed (hwloc reads the kernel's files, not ours).
 */
#include "topology/xml_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_LIMIT_MS 10000

/* What the child writes to its pipe before it exits (less than PIPE_BUF: never blocks). */
struct verdict {
    int loaded;   /* hwloc loaded the file */
    int err;      /* errno when it did not */
    long grew_kb; /* peak resident memory minus that at the start; -1: unknown */
};

/* A "Key:   N kB" line of /proc/self/status, in kB; -1 when unreadable. No stdio: the child of
 * a threaded process calls as little as it can. */
static long status_kb(const char *key)
{
    char text[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    text[n] = '\0';
    size_t klen = strlen(key);
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            return strtol(line + klen + 1, NULL, 10);
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    return -1;
}

_Noreturn static void probe_child(int out, const char *xml, const char *buf, size_t buflen,
                                  void (*configure)(hwloc_topology_t))
{
    /* Die by the signal, quietly: not through a sanitizer's or fuzzer's crash handler, which
     * would report the parent's crash (the parent reads the verdict from the status). */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        signal(fatal[i], SIG_DFL);
    }
    /* The fork reset the peak (VmHWM) to the resident size (VmRSS): the difference after the
     * load is what the load took. */
    long start = status_kb("VmRSS");
    struct verdict v = {0, 0, -1};
    hwloc_topology_t topo;
    v.loaded = hwloc_topology_init(&topo) == 0;
    if (v.loaded) {
        configure(topo);
        v.loaded = (buf != NULL ? hwloc_topology_set_xmlbuffer(topo, buf, (int)buflen)
                                : hwloc_topology_set_xml(topo, xml)) == 0 &&
                   hwloc_topology_load(topo) == 0;
    }
    v.err = v.loaded ? 0 : errno;
    long peak = status_kb("VmHWM");
    if (start >= 0 && peak >= start) {
        v.grew_kb = peak - start;
    }
    ssize_t w = write(out, &v, sizeof(v));
    _exit(w == (ssize_t)sizeof(v) ? 0 : 1);
}

/* Wait up to PROBE_LIMIT_MS for the child; 0 with its status, -1 (err set) when it hung, 1
 * when someone else reaped it. */
static int wait_child(pid_t pid, int *status, const char *what, char *err, size_t len)
{
    struct timespec pause = {0, 1000000};
    for (int ms = 0;; ms++) {
        pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid) {
            return 0;
        }
        if (got < 0 && errno != EINTR) {
            return 1;
        }
        if (ms >= PROBE_LIMIT_MS) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, status, 0);
            snprintf(err, len, "hwloc did not finish loading %s within %d s", what,
                     PROBE_LIMIT_MS / 1000);
            return -1;
        }
        nanosleep(&pause, NULL);
    }
}

int tutti__topo_xml_probe(const char *xml, const char *buf, size_t buflen,
                          void (*configure)(hwloc_topology_t), int *hwloc_errno, char *err,
                          size_t len)
{
    const char *what = xml != NULL ? xml : "the XML topology";
    const char *kind = xml != NULL ? "topology file " : "";
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return TUTTI_TOPO_PROBE_LOADED; /* no probe possible: load in process, as before */
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        probe_child(fds[1], xml, buf, buflen, configure);
    }
    close(fds[1]);
    int status = 0;
    int waited = pid < 0 ? 1 : wait_child(pid, &status, what, err, len);
    struct verdict v;
    ssize_t got = waited == 0 ? read(fds[0], &v, sizeof(v)) : 0;
    close(fds[0]);
    if (waited != 0) {
        return waited < 0 ? TUTTI_TOPO_PROBE_FAILED : TUTTI_TOPO_PROBE_LOADED;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof(v)) {
        if (v.grew_kb > TUTTI_TOPO_PROBE_LIMIT_MB * 1024L) {
            snprintf(err, len,
                     "%s%s takes hwloc %ld MB to load, more than the %d MB tutti allows "
                     "a topology (hwloc sizes a bitmap by the largest index in it: a NUMA node "
                     "without os_index costs 512 MB)",
                     kind, what, v.grew_kb / 1024, TUTTI_TOPO_PROBE_LIMIT_MB);
            return TUTTI_TOPO_PROBE_FAILED;
        }
        *hwloc_errno = v.err;
        return v.loaded ? TUTTI_TOPO_PROBE_LOADED : TUTTI_TOPO_PROBE_REFUSED;
    }
    char how[48];
    if (WIFSIGNALED(status)) {
        snprintf(how, sizeof(how), "signal %d, %s", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(status));
    }
    snprintf(err, len, "%s%s is malformed: hwloc crashed loading it in a probe process (%s)", kind,
             what, how);
    return TUTTI_TOPO_PROBE_FAILED;
}
