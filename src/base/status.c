/*
 * status.c - messages and names of status codes, and the errno -> status mapping.
 * Everything here is generated from TUTTI_STATUS_MAP so the lists cannot drift apart.
 */
#include "base/check.h"

#include <errno.h>

const char *tutti_status_string(tutti_status_t st)
{
    switch (st) {
#define TUTTI_STATUS_MSG_(name, value, msg)                                                        \
    case TUTTI_##name:                                                                             \
        return msg;
        TUTTI_STATUS_MAP(TUTTI_STATUS_MSG_)
#undef TUTTI_STATUS_MSG_
    }
    return "unknown status";
}

const char *tutti_status_name(tutti_status_t st)
{
    switch (st) {
#define TUTTI_STATUS_NAME_(name, value, msg)                                                       \
    case TUTTI_##name:                                                                             \
        return #name;
        TUTTI_STATUS_MAP(TUTTI_STATUS_NAME_)
#undef TUTTI_STATUS_NAME_
    }
    return "UNKNOWN";
}

tutti_status_t tutti__sys_status(int err)
{
    switch (err) {
    case ENOMEM:
        return TUTTI_ERR_NO_MEMORY;
    case EINVAL:
        return TUTTI_ERR_INVALID_ARG;
    case ETIMEDOUT:
        return TUTTI_ERR_TIMEOUT;
    case ECONNRESET:
    case ECONNREFUSED:
    case EPIPE:
    case ENOTCONN:
    case EHOSTUNREACH:
    case ENETUNREACH:
        return TUTTI_ERR_REMOTE;
    default:
        return TUTTI_ERR_SYSTEM;
    }
}
