/*
 * tutti/status.h - status codes returned by every tutti call.
 *
 * One X-macro list generates the enum, the short names and the messages, so the three can never
 * drift apart. TUTTI_OK is 0, TUTTI_IN_PROGRESS is 1 and every error is negative.
 */
#ifndef TUTTI_STATUS_H
#define TUTTI_STATUS_H

#include "tutti/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* name, value, message */
#define TUTTI_STATUS_MAP(X)                                                                        \
    X(OK, 0, "success")                                                                            \
    X(IN_PROGRESS, 1, "operation in progress")                                                     \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                                     \
    X(ERR_INVALID_USAGE, -2, "invalid usage")                                                      \
    X(ERR_NO_MEMORY, -3, "out of memory")                                                          \
    X(ERR_SYSTEM, -4, "system call failed")                                                        \
    X(ERR_CUDA, -5, "CUDA call failed")                                                            \
    X(ERR_REMOTE, -6, "remote peer failed")                                                        \
    X(ERR_TIMEOUT, -7, "timed out")                                                                \
    X(ERR_AUTH, -8, "authentication failed")                                                       \
    X(ERR_UNSUPPORTED, -9, "unsupported")                                                          \
    X(ERR_ABORTED, -10, "communicator aborted")                                                    \
    X(ERR_INTERNAL, -11, "internal error")                                                         \
    X(ERR_MISMATCH, -12, "calls differ between ranks")

/** Result of every tutti call. */
typedef enum {
#define TUTTI_STATUS_ENUM_(name, value, msg) TUTTI_##name = value,
    TUTTI_STATUS_MAP(TUTTI_STATUS_ENUM_)
#undef TUTTI_STATUS_ENUM_
} tutti_status_t;

/**
 * Human-readable message for a status ("invalid argument").
 * @param st  any value; unknown values give "unknown status".
 * @return a static string, never NULL. Thread-safe.
 */
TUTTI_API const char *tutti_status_string(tutti_status_t st);

/**
 * Symbolic name of a status without the prefix ("ERR_INVALID_ARG").
 * @return a static string, never NULL. Thread-safe.
 */
TUTTI_API const char *tutti_status_name(tutti_status_t st);

#ifdef __cplusplus
}
#endif
#endif /* TUTTI_STATUS_H */
