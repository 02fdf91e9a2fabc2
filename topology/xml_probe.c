/*
 * xml_probe.c - load a topology file in a child process first. hwloc 2.9 can dereference NULL
 * on some malformed XML (an object without its complete_cpuset attribute: SEGV in
 * hwloc_bitmap_compare_first, found by fuzz_topo), and a user's TUTTI_TOPO_FILE must give a
 * clear error, not take the process down (it reads memory it did not initialise: under ASan,
 * which fills new memory, it crashes; with glibc's zeroed pages it refuses the file). The child loads the file exactly as detect.c will and
 * exits; only when it exits cleanly does the process load the file itself. Live detection is not
 * probed (hwloc reads the kernel's files, not ours).
 */
#include "topology/xml_probe.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_LIMIT_MS 10000
#define EXIT_LOADED 0
#define EXIT_REFUSED 3

int tutti__topo_xml_probe(const char *xml, const char *buf, size_t buflen,
                          void (*configure)(hwloc_topology_t), char *err, size_t len)
{
    pid_t pid = fork();
    if (pid < 0) {
        return 0; /* no probe possible: load in process, as before */
    }
    if (pid == 0) {
        /* Die by the signal, quietly: not through a sanitizer's or fuzzer's crash handler, which
         * would report the parent's crash (the parent reads the verdict from the status). */
        static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
            signal(fatal[i], SIG_DFL);
        }
        hwloc_topology_t topo;
        int ok = hwloc_topology_init(&topo) == 0;
        if (ok) {
            configure(topo);
            ok = (buf != NULL ? hwloc_topology_set_xmlbuffer(topo, buf, (int)buflen)
                              : hwloc_topology_set_xml(topo, xml)) == 0 &&
                 hwloc_topology_load(topo) == 0;
        }
        _exit(ok ? EXIT_LOADED : EXIT_REFUSED); /* refused: the parent's load says why */
    }
    int status = 0;
    struct timespec pause = {0, 1000000};
    for (int ms = 0;; ms++) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            break;
        }
        if (got < 0 && errno != EINTR) {
            return 0; /* someone else reaped it: no verdict */
        }
        if (ms >= PROBE_LIMIT_MS) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            snprintf(err, len, "hwloc did not finish loading %s within %d s",
                     xml != NULL ? xml : "the XML buffer", PROBE_LIMIT_MS / 1000);
            return -1;
        }
        nanosleep(&pause, NULL);
    }
    if (WIFEXITED(status) &&
        (WEXITSTATUS(status) == EXIT_LOADED || WEXITSTATUS(status) == EXIT_REFUSED)) {
        return 0;
    }
    char how[48];
    if (WIFSIGNALED(status)) {
        snprintf(how, sizeof(how), "signal %d, %s", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(status));
    }
    snprintf(err, len, "%s%s is malformed: hwloc crashed loading it in a probe process (%s)",
             xml != NULL ? "topology file " : "", xml != NULL ? xml : "the XML topology", how);
    return -1;
}
