/*
 * admit.c - the listeners' policy against strangers (admit.h): room for one more handshake,
 * which one to evict, and a log that sums up instead of writing a line per stranger.
 */
#include "net/admit.h"
#include "base/log.h"
#include "base/util.h"

#include <stdio.h>
#include <string.h>

uint64_t tutti__admit_addr_key(const union tutti_sockaddr *a)
{
    const uint8_t *p = NULL;
    size_t len = 0;
    if (a->sa.sa_family == AF_INET) {
        p = (const uint8_t *)&a->in.sin_addr;
        len = sizeof(a->in.sin_addr);
    } else if (a->sa.sa_family == AF_INET6) {
        p = (const uint8_t *)&a->in6.sin6_addr;
        len = sizeof(a->in6.sin6_addr);
    }
    uint64_t h = 1469598103934665603ull ^ a->sa.sa_family; /* FNV-1a over the IP only */
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

int64_t tutti__admit_min_age(const struct tutti_admit_cfg *cfg)
{
    return TUTTI_MAX(cfg->min_age_ns, TUTTI_ADMIT_MIN_AGE_NS);
}

int64_t tutti__admit_learn(int64_t seen_ns, int64_t took_ns)
{
    return TUTTI_MAX(took_ns, seen_ns - seen_ns / 16);
}

/* The oldest handshake (from addr, unless any_addr), or -1 when there is none. */
static int oldest(const void *table, int n, tutti_admit_at_fn at, int any_addr, uint64_t addr)
{
    int o = -1;
    for (int i = 0; i < n; i++) {
        const struct tutti_admit_slot *s = at(table, i);
        if ((any_addr || s->addr == addr) && (o < 0 || s->since_ns < at(table, o)->since_ns)) {
            o = i;
        }
    }
    return o;
}

int tutti__admit_room(const void *table, int n, tutti_admit_at_fn at,
                      const struct tutti_admit_cfg *cfg, int64_t now, int64_t *wait_ns_p)
{
    if (n < cfg->max_total) {
        return -1;
    }
    int o = oldest(table, n, at, 1, 0);
    int64_t left = at(table, o)->since_ns + tutti__admit_min_age(cfg) - now;
    if (left <= 0) {
        return o;
    }
    *wait_ns_p = left;
    return -2;
}

int tutti__admit_addr_victim(const void *table, int n, tutti_admit_at_fn at, uint64_t addr,
                             const struct tutti_admit_cfg *cfg, int64_t now)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        count += at(table, i)->addr == addr;
    }
    if (count < cfg->max_per_addr) {
        return -1;
    }
    int o = oldest(table, n, at, 0, addr);
    return now - at(table, o)->since_ns >= tutti__admit_min_age(cfg) ? o : -1;
}

static const char *const why_names[TUTTI_ADMIT_NWHY] = {
    [TUTTI_ADMIT_AUTH] = "authentication failed",
    [TUTTI_ADMIT_DEADLINE] = "no handshake in time",
    [TUTTI_ADMIT_ADDR] = "too many from one address",
    [TUTTI_ADMIT_FULL] = "evicted from a full table",
    [TUTTI_ADMIT_OTHER] = "closed during the handshake",
};

void tutti__admit_flush(struct tutti_admit_log *l, int64_t now, int force)
{
    if (l->window_end == 0 || (!force && now < l->window_end)) {
        return;
    }
    long total = 0;
    char parts[256] = "";
    size_t o = 0;
    for (int w = 0; w < TUTTI_ADMIT_NWHY; w++) {
        if (l->hidden[w] > 0 && o < sizeof(parts)) {
            o += (size_t)snprintf(parts + o, sizeof(parts) - o, "%s%s %ld", o > 0 ? ", " : "",
                                  why_names[w], l->hidden[w]);
        }
        total += l->hidden[w];
    }
    if (total > 0) {
        double secs = (double)(TUTTI_MIN(now, l->window_end) - l->window_end) / 1e9 +
                      (double)TUTTI_ADMIT_WINDOW_NS / 1e9;
        tutti_warn("%s: %ld more connections refused or closed in %.1f s (%s; the last from %s); "
                   "strangers are evicted, the job goes on",
                   l->who, total, secs, parts, l->last_from);
    }
    memset(l->hidden, 0, sizeof(l->hidden));
    l->shown = 0;
    l->window_end = 0;
}

void tutti__admit_closed(struct tutti_admit_log *l, enum tutti_admit_why why, const char *from,
                         const char *detail, int64_t now)
{
    tutti__admit_flush(l, now, 0);
    if (l->window_end == 0) {
        l->window_end = now + TUTTI_ADMIT_WINDOW_NS;
    }
    if (l->shown < TUTTI_ADMIT_SHOWN) {
        l->shown++;
        tutti_warn("%s refused connection from %s: %s%s", l->who, from, detail,
                   l->shown == TUTTI_ADMIT_SHOWN ? " (more in this window are summed up)" : "");
        return;
    }
    l->hidden[why]++;
    snprintf(l->last_from, sizeof(l->last_from), "%s", from);
    tutti_debug(TUTTI_SUBSYS_NET, "%s refused connection from %s: %s", l->who, from, detail);
}
