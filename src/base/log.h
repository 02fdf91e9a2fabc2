/*
 * log.h - leveled, subsystem-masked logging.
 *
 * TUTTI_LOG_LEVEL=none|error|warn|info|debug|trace (default warn), TUTTI_LOG_SUBSYS=init,coll,...
 * or all, '^' negates the list, TUTTI_LOG_FILE=path with %h (host) and %p (pid). Every line starts
 * with "host:pid:tid [rank] LEVEL/SUBSYS". The macros test level and mask before evaluating their
 * arguments, and preserve errno. trace lines are compiled in only with -Dtrace=true.
 */
#ifndef TUTTI_LOG_H
#define TUTTI_LOG_H

#include <stdint.h>

typedef enum {
    TUTTI_LOG_NONE = 0,
    TUTTI_LOG_ERROR = 1,
    TUTTI_LOG_WARN = 2,
    TUTTI_LOG_INFO = 3,
    TUTTI_LOG_DEBUG = 4,
    TUTTI_LOG_TRACE = 5,
} tutti_log_level_t;

/* name, bit */
#define TUTTI_SUBSYS_MAP(X)                                                                        \
    X(INIT, 0)                                                                                     \
    X(COLL, 1)                                                                                     \
    X(P2P, 2)                                                                                      \
    X(NET, 3)                                                                                      \
    X(SHM, 4)                                                                                      \
    X(TOPO, 5)                                                                                     \
    X(TUNE, 6)                                                                                     \
    X(BOOT, 7)                                                                                     \
    X(PROXY, 8)                                                                                    \
    X(ALLOC, 9)                                                                                    \
    X(ENV, 10)

typedef enum {
#define TUTTI_SUBSYS_ENUM_(name, bit) TUTTI_SUBSYS_##name = 1u << (bit),
    TUTTI_SUBSYS_MAP(TUTTI_SUBSYS_ENUM_)
#undef TUTTI_SUBSYS_ENUM_
        TUTTI_SUBSYS_ALL = 0xffffffffu,
} tutti_subsys_t;

/** Current level and mask; initialised from the environment on first use. */
struct tutti_log_config {
    int level;
    uint32_t mask;
    int time; /* TUTTI_LOG_TIME: 0 none, 1 UTC, 2 local time */
};
extern struct tutti_log_config tutti__log_cfg; /* defined in global.c */
void tutti__log_init(void);
int tutti__log_ready(void);

static inline int tutti__log_on(int level, uint32_t subsys)
{
    if (!tutti__log_ready()) {
        tutti__log_init();
    }
    return level <= tutti__log_cfg.level && (subsys & tutti__log_cfg.mask) != 0;
}

void tutti__log(int level, uint32_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Emit a line; level and mask are checked first, so the arguments cost nothing when off. */
#define TUTTI_LOG_(level, subsys, ...)                                                             \
    do {                                                                                           \
        if (tutti__log_on((level), (subsys))) {                                                    \
            tutti__log((level), (subsys), __VA_ARGS__);                                            \
        }                                                                                          \
    } while (0)

#define tutti_error(...)         TUTTI_LOG_(TUTTI_LOG_ERROR, TUTTI_SUBSYS_ALL, __VA_ARGS__)
#define tutti_warn(...)          TUTTI_LOG_(TUTTI_LOG_WARN, TUTTI_SUBSYS_ALL, __VA_ARGS__)
#define tutti_info(subsys, ...)  TUTTI_LOG_(TUTTI_LOG_INFO, (subsys), __VA_ARGS__)
#define tutti_debug(subsys, ...) TUTTI_LOG_(TUTTI_LOG_DEBUG, (subsys), __VA_ARGS__)
#ifdef TUTTI_ENABLE_TRACE
#define tutti_trace(subsys, ...) TUTTI_LOG_(TUTTI_LOG_TRACE, (subsys), __VA_ARGS__)
#else
#define tutti_trace(subsys, ...) ((void)0)
#endif

/** Warn once per call site per process. */
#define tutti_warn_once(...)                                                                       \
    do {                                                                                           \
        static int warned_once_; /* per call site: remembers that this line was printed */         \
        if (!__atomic_exchange_n(&warned_once_, 1, __ATOMIC_RELAXED)) {                            \
            tutti_warn(__VA_ARGS__);                                                               \
        }                                                                                          \
    } while (0)

/** Name of a subsystem bit ("coll"), for log prefixes and tutti-info. */
const char *tutti__subsys_name(uint32_t bit);

/** Parse a level name; returns -1 when unknown. */
int tutti__log_level_parse(const char *s);

#endif /* TUTTI_LOG_H */
