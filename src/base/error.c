/*
 * error.c - last-error messages: per communicator and per thread (never a process global), and
 * tutti__set_error(), the one way errors are recorded and logged where they are detected.
 */
#include "base/check.h"
#include "base/global.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tutti__errbuf_store(struct tutti_errbuf *err, const char *msg)
{
    pthread_mutex_lock(&err->lock);
    snprintf(err->msg, sizeof(err->msg), "%s", msg);
    pthread_mutex_unlock(&err->lock);
}

void tutti__errbuf_read(struct tutti_errbuf *err, char *buf, size_t len)
{
    pthread_mutex_lock(&err->lock);
    snprintf(buf, len, "%s", err->msg);
    pthread_mutex_unlock(&err->lock);
}

void tutti__errbuf_append(struct tutti_errbuf *err, const char *suffix)
{
    pthread_mutex_lock(&err->lock);
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof(err->msg) - n, "%s", suffix);
    snprintf(tutti__tls.last_error, sizeof(tutti__tls.last_error), "%s", err->msg);
    pthread_mutex_unlock(&err->lock);
}

static tutti_status_t record(struct tutti_errbuf *err, tutti_status_t st, int level,
                             const char *fmt, va_list ap)
{
    char msg[sizeof(tutti__tls.last_error)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    snprintf(tutti__tls.last_error, sizeof(tutti__tls.last_error), "%s", msg);
    if (err != NULL) {
        tutti__errbuf_store(err, msg);
    }
    TUTTI_LOG_(level, TUTTI_SUBSYS_ALL, "%s: %s", tutti_status_name(st), msg);
    return st;
}

tutti_status_t tutti__set_error(struct tutti_errbuf *err, tutti_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(err, st, TUTTI_LOG_WARN, fmt, ap);
    va_end(ap);
    return st;
}

tutti_status_t tutti__set_error_quiet(struct tutti_errbuf *err, tutti_status_t st, const char *fmt,
                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(err, st, TUTTI_LOG_DEBUG, fmt, ap);
    va_end(ap);
    return st;
}
