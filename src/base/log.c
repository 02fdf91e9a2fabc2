/*
 * log.c - the logger: reads TUTTI_LOG_LEVEL / TUTTI_LOG_SUBSYS / TUTTI_LOG_FILE / TUTTI_LOG_TIME
 * once and writes single-line records "[2026-11-28 02:01:02.123456] host:pid:tid [rank]
 * LEVEL/SUBSYS message" (the stamp in UTC by default) with one write per line, so
 * lines of concurrent ranks and threads do not interleave. The log file is opened without
 * following links and created private (open_log).
 */
#include "base/log.h"
#include "base/env.h"
#include "base/global.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *const level_names[] = {"NONE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

static const struct {
    const char *name;
    uint32_t bit;
} subsys_names[] = {
#define TUTTI_SUBSYS_NAME_(name, bit) {#name, 1u << (bit)},
    TUTTI_SUBSYS_MAP(TUTTI_SUBSYS_NAME_)
#undef TUTTI_SUBSYS_NAME_
};
#define NSUBSYS ((int)(sizeof(subsys_names) / sizeof(subsys_names[0])))

const char *tutti__subsys_name(uint32_t bit)
{
    for (int i = 0; i < NSUBSYS; i++) {
        if (subsys_names[i].bit == bit) {
            return subsys_names[i].name;
        }
    }
    return "ALL";
}

int tutti__log_level_parse(const char *s)
{
    for (int i = 0; i <= TUTTI_LOG_TRACE; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            return i;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        return TUTTI_LOG_WARN;
    }
    return -1;
}

/* "init,coll" -> bits; "^net" -> everything but net; unknown names are reported in *bad_p. */
static uint32_t parse_mask(const char *s, const char **bad_p)
{
    int negate = (s[0] == '^');
    if (negate) {
        s++;
    }
    uint32_t mask = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcasecmp(tok, "all") == 0) {
            mask = TUTTI_SUBSYS_ALL;
            continue;
        }
        int found = 0;
        for (int i = 0; i < NSUBSYS; i++) {
            if (strcasecmp(tok, subsys_names[i].name) == 0) {
                mask |= subsys_names[i].bit;
                found = 1;
            }
        }
        if (!found) {
            *bad_p = "unknown subsystem";
        }
    }
    return negate ? ~mask : mask;
}

/* Expand %h and %p in a TUTTI_LOG_FILE pattern. */
static void expand_path(const char *pat, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pat; *p != '\0' && o + 1 < len; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
            int n = p[1] == 'h' ? snprintf(out + o, len - o, "%s", tutti__g.hostname)
                                : snprintf(out + o, len - o, "%d", (int)getpid());
            o += (n > 0 && (size_t)n < len - o) ? (size_t)n : 0;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/*
 * Open TUTTI_LOG_FILE for appending, or say why not in why (logging then goes to stderr). The
 * file may be planted by someone else where a job logs (a shared /tmp): a symbolic link is
 * not followed (O_NOFOLLOW), and an existing regular file must be this user's and have no
 * other name (a hard link to a file elsewhere); a new file is created 0600. Character devices
 * (/dev/null, a terminal) are taken; FIFOs, sockets and directories are not. O_NONBLOCK keeps
 * the open from waiting on a FIFO; it is cleared once the file is accepted.
 */
static FILE *open_log(const char *path, char *why, size_t len)
{
    int fd = open(
        path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        snprintf(why, len, "TUTTI_LOG_FILE %s %s; logging to stderr", path,
                 errno == ELOOP ? "is a symbolic link, which is not followed" : strerror(errno));
        return NULL;
    }
    struct stat sb;
    const char *bad = NULL;
    if (fstat(fd, &sb) != 0) {
        bad = strerror(errno);
    } else if (S_ISREG(sb.st_mode) && sb.st_uid != geteuid()) {
        bad = "belongs to another user";
    } else if (S_ISREG(sb.st_mode) && sb.st_nlink != 1) {
        bad = "has other names (a hard link), which are not written through";
    } else if (!S_ISREG(sb.st_mode) && !S_ISCHR(sb.st_mode)) {
        bad = "is not a regular file";
    }
    FILE *f = NULL;
    if (bad == NULL && fcntl(fd, F_SETFL, O_APPEND) == 0) {
        f = fdopen(fd, "a");
    }
    if (f == NULL) {
        snprintf(why, len, "TUTTI_LOG_FILE %s %s; logging to stderr", path,
                 bad != NULL ? bad : strerror(errno));
        close(fd);
        return NULL;
    }
    return f;
}

int tutti__log_ready(void)
{
    return __atomic_load_n(&tutti__g.log_ready, __ATOMIC_ACQUIRE);
}

void tutti__log_init(void)
{
    int saved = errno;
    pthread_mutex_lock(&tutti__g.log_lock);
    if (tutti__g.log_ready) {
        goto out_unlock;
    }
    /* The env parser logs its own warnings once its table is complete: do not re-enter it. */
    const struct tutti_env *env = tutti__g.env_ready ? &tutti__g.env : tutti__env();
    if (gethostname(tutti__g.hostname, sizeof(tutti__g.hostname) - 1) != 0) {
        snprintf(tutti__g.hostname, sizeof(tutti__g.hostname), "unknown");
    }
    char *dot = strchr(tutti__g.hostname, '.');
    if (dot != NULL) {
        *dot = '\0';
    }
    tutti__g.log_file = stderr;
    const char *problem = NULL;
    char why[640];
    int level = tutti__log_level_parse(env->LOG_LEVEL);
    if (level < 0) {
        problem = "TUTTI_LOG_LEVEL is not one of none, error, warn, info, debug, trace";
        level = TUTTI_LOG_WARN;
    }
    uint32_t mask = parse_mask(env->LOG_SUBSYS, &problem);
    static const char *const times[] = {"none", "utc", "local"};
    int time_mode = -1;
    for (int i = 0; i < 3; i++) {
        time_mode = strcmp(env->LOG_TIME, times[i]) == 0 ? i : time_mode;
    }
    if (time_mode < 0) {
        problem = "TUTTI_LOG_TIME is not one of utc, local, none; stamping in UTC";
        time_mode = 1;
    }
    if (env->LOG_FILE[0] != '\0') {
        char path[512];
        expand_path(env->LOG_FILE, path, sizeof(path));
        FILE *f = open_log(path, why, sizeof(why));
        if (f != NULL) {
            setvbuf(f, NULL, _IOLBF, 0);
            tutti__g.log_file = f;
        } else {
            problem = why;
        }
    }
    tutti__log_cfg.level = level;
    tutti__log_cfg.mask = mask;
    tutti__log_cfg.time = time_mode;
    __atomic_store_n(&tutti__g.log_ready, 1, __ATOMIC_RELEASE);
    if (problem != NULL && level >= TUTTI_LOG_WARN) {
        tutti__log(TUTTI_LOG_WARN, TUTTI_SUBSYS_ENV, "%s", problem);
    }
out_unlock:
    pthread_mutex_unlock(&tutti__g.log_lock);
    errno = saved;
}

void tutti__log(int level, uint32_t subsys, const char *fmt, ...)
{
    int saved = errno;
    char line[1024];
    char rank[16];
    if (tutti__tls.rank >= 0) {
        snprintf(rank, sizeof(rank), "%d", tutti__tls.rank);
    } else {
        snprintf(rank, sizeof(rank), "-");
    }
    char stamp[48] = "";
    if (tutti__log_cfg.time != 0) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        if ((tutti__log_cfg.time == 1 ? gmtime_r(&ts.tv_sec, &tm) : localtime_r(&ts.tv_sec, &tm)) !=
            NULL) {
            size_t k = strftime(stamp, sizeof(stamp), "[%Y-%m-%d %H:%M:%S", &tm);
            snprintf(stamp + k, sizeof(stamp) - k, ".%06ld] ", ts.tv_nsec / 1000);
        }
    }
    int n = snprintf(line, sizeof(line), "%s%s:%d:%ld [%s] %s%s%s ", stamp, tutti__g.hostname,
                     (int)getpid(), (long)syscall(SYS_gettid), rank,
                     level_names[level < 0 || level > TUTTI_LOG_TRACE ? 0 : level],
                     subsys == TUTTI_SUBSYS_ALL ? "" : "/",
                     subsys == TUTTI_SUBSYS_ALL ? "" : tutti__subsys_name(subsys));
    if (n < 0 || (size_t)n >= sizeof(line)) {
        n = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2) {
        len = sizeof(line) - 2;
    }
    line[len++] = '\n';
    /* One write per line: lines of concurrent processes stay whole. */
    ssize_t w = write(fileno(tutti__g.log_file), line, len);
    (void)w;
    errno = saved;
}
