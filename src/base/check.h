/*
 * check.h - error recording and propagation.
 *
 * Rules (UCX): log once, where an error is detected, with tutti__set_error(); callers propagate
 * with TUTTI_CHECK / TUTTI_CHECK_GOTO, which leave a debug-level "-> NAME" trail (NCCL); outputs
 * are set only on success; cleanup labels are named for what they undo.
 */
#ifndef TUTTI_CHECK_H
#define TUTTI_CHECK_H

#include "tutti/status.h"
#include "base/log.h"

#include <pthread.h>
#include <stddef.h>

/**
 * A last-error message that its owner keeps (a communicator's: comm/comm.h), written under its
 * lock by tutti__set_error. Below the communicator a layer gets the buffer, never the
 * communicator: the transports through tutti_tctx_args.err.
 */
struct tutti_errbuf {
    pthread_mutex_t lock;
    char msg[512];
};

/** Replace err's message with msg. */
void tutti__errbuf_store(struct tutti_errbuf *err, const char *msg);

/** Copy err's message into buf (len bytes, terminated). */
void tutti__errbuf_read(struct tutti_errbuf *err, char *buf, size_t len);

/** Append suffix to err's message (and to the calling thread's copy of it). */
void tutti__errbuf_append(struct tutti_errbuf *err, const char *suffix);

/**
 * Record an error: format the message into err (when it is not NULL) and into the calling
 * thread's last error, and log it at warn level. Returns st so that callers can write
 * `return tutti__set_error(err, TUTTI_ERR_INVALID_ARG, "count ...")`.
 */
tutti_status_t tutti__set_error(struct tutti_errbuf *err, tutti_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Like tutti__set_error() but logs at debug level: for errors a caller may retry or expect. */
tutti_status_t tutti__set_error_quiet(struct tutti_errbuf *err, tutti_status_t st, const char *fmt,
                                      ...) __attribute__((format(printf, 3, 4)));

/** Map an errno value to a status (ENOMEM -> NO_MEMORY, ECONNRESET -> REMOTE, ...). */
tutti_status_t tutti__sys_status(int err);

/** Propagate an error status (negative) to the caller; TUTTI_IN_PROGRESS is not an error. */
#define TUTTI_CHECK(expr)                                                                          \
    do {                                                                                           \
        tutti_status_t check_st_ = (expr);                                                         \
        if (check_st_ < 0) {                                                                       \
            tutti_debug(TUTTI_SUBSYS_ALL, "%s:%d -> %s", __FILE__, __LINE__,                       \
                        tutti_status_name(check_st_));                                             \
            return check_st_;                                                                      \
        }                                                                                          \
    } while (0)

/** Store an error status in `status` and jump to `label`. */
#define TUTTI_CHECK_GOTO(expr, status, label)                                                      \
    do {                                                                                           \
        (status) = (expr);                                                                         \
        if ((status) < 0) {                                                                        \
            tutti_debug(TUTTI_SUBSYS_ALL, "%s:%d -> %s", __FILE__, __LINE__,                       \
                        tutti_status_name(status));                                                \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#endif /* TUTTI_CHECK_H */
