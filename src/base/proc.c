/*
 * proc.c - process identity and liveness (proc.h), from /proc and kill(pid, 0).
 */
#include "base/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* State letter and start time of a process from /proc/<pid>/stat; 0, or -1 if unreadable. */
static int stat_of(const char *pid, char *state_p, uint64_t *start_p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: fields go on after the last
     * ')'. Then: state (3), and start time is field 22, the 20th after the state. */
    const char *p = strrchr(buf, ')');
    unsigned long long start = 0;
    char state = 0;
    if (p == NULL || sscanf(p + 1,
                            " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                            "%*s %*s %*s %llu",
                            &state, &start) != 2) {
        return -1;
    }
    *state_p = state;
    *start_p = start;
    return 0;
}

static uint64_t pidns_self(void)
{
    struct stat sb;
    return stat("/proc/self/ns/pid", &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

void tutti__proc_self(struct tutti_proc_id *id_p)
{
    struct tutti_proc_id id = {.pid = (uint32_t)getpid(), .pidns = pidns_self()};
    char state;
    if (stat_of("self", &state, &id.start) != 0) {
        id.start = 0;
    }
    *id_p = id;
}

int tutti__proc_alive(const struct tutti_proc_id *id)
{
    if (id->pid == 0 || id->pidns == 0 || id->pidns != pidns_self()) {
        return -1;
    }
    if (kill((pid_t)id->pid, 0) != 0 && errno == ESRCH) {
        return 0;
    }
    char pid[16], state;
    uint64_t start;
    snprintf(pid, sizeof(pid), "%u", id->pid);
    if (stat_of(pid, &state, &start) != 0) {
        return kill((pid_t)id->pid, 0) != 0 && errno == ESRCH ? 0 : -1; /* ended meanwhile? */
    }
    if (state == 'Z' || state == 'X' || (id->start != 0 && start != id->start)) {
        return 0;
    }
    return 1;
}
