/*
 * error.c - last-error messages: per communicator and per thread (never a process global), and
 * tutti__set_error(), the one way errors are recorded and logged where they are detected.
 */
#include "check.h"
#include "comm/comm.h"
#include "global.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tutti__comm_error_store(struct tutti_comm *comm, const char *msg)
{
    pthread_mutex_lock(&comm->err.lock);
    snprintf(comm->err.msg, sizeof(comm->err.msg), "%s", msg);
    pthread_mutex_unlock(&comm->err.lock);
}

void tutti__comm_error_append(struct tutti_comm *comm, const char *suffix)
{
    pthread_mutex_lock(&comm->err.lock);
    size_t n = strlen(comm->err.msg);
    snprintf(comm->err.msg + n, sizeof(comm->err.msg) - n, "%s", suffix);
    snprintf(tutti__tls.last_error, sizeof(tutti__tls.last_error), "%s", comm->err.msg);
    pthread_mutex_unlock(&comm->err.lock);
}

static tutti_status_t record(struct tutti_comm *comm, tutti_status_t st, int level, const char *fmt,
                             va_list ap)
{
    char msg[sizeof(tutti__tls.last_error)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    snprintf(tutti__tls.last_error, sizeof(tutti__tls.last_error), "%s", msg);
    if (comm != NULL) {
        tutti__comm_error_store(comm, msg);
    }
    TUTTI_LOG_(level, TUTTI_SUBSYS_ALL, "%s: %s", tutti_status_name(st), msg);
    return st;
}

tutti_status_t tutti__set_error(struct tutti_comm *comm, tutti_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(comm, st, TUTTI_LOG_WARN, fmt, ap);
    va_end(ap);
    return st;
}

tutti_status_t tutti__set_error_quiet(struct tutti_comm *comm, tutti_status_t st, const char *fmt,
                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(comm, st, TUTTI_LOG_DEBUG, fmt, ap);
    va_end(ap);
    return st;
}
