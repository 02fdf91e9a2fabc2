/*
 * global.c - definitions of the only mutable process state (tutti__g) and per-thread state
 * (tutti__tls). See global.h for the rule.
 */
#include "base/global.h"
#include "base/log.h"

struct tutti_global tutti__g = {
    .log_lock = PTHREAD_MUTEX_INITIALIZER,
    .live_comms = TUTTI_HANDLE_SET_INIT,
    .live_reqs = TUTTI_HANDLE_SET_INIT,
    .holds = {.once = PTHREAD_ONCE_INIT},
    .fork_gate = {.lock = PTHREAD_MUTEX_INITIALIZER,
                  .cond = PTHREAD_COND_INITIALIZER,
                  .once = PTHREAD_ONCE_INIT},
};

__thread struct tutti_tls tutti__tls = {
    .rank = -1,
};

struct tutti_log_config tutti__log_cfg = {
    .level = TUTTI_LOG_WARN,
    .mask = TUTTI_SUBSYS_ALL,
};
