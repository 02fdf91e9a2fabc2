/*
 * test_admit.c - src/net/admit.c, the listeners' policy against strangers: room while under the
 * cap, the oldest evicted only once it has had its chance, a share per address that a burst of
 * young connections (a host's ranks) never loses, a minimum age learnt from the job's own
 * ranks (slow on a crowded host), and a log that sums up a flood in a few lines.
 */
#include "net/admit.h"
#include "base/global.h"
#include "base/log.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000ll

static const struct tutti_admit_slot *at(const void *table, int i)
{
    return &((const struct tutti_admit_slot *)table)[i];
}

static const struct tutti_admit_cfg cfg = {.max_total = 4, .max_per_addr = 2};

Test(admit, room_below_the_cap_and_the_oldest_evicted_only_after_its_chance)
{
    struct tutti_admit_slot t[4] = {{1000 * MS, 1}, {900 * MS, 2}, {1100 * MS, 3}, {950 * MS, 4}};
    int64_t wait = -1;
    cr_assert_eq(tutti__admit_room(t, 3, at, &cfg, 1200 * MS, &wait), -1, "below the cap");
    /* Full; the oldest (index 1, at 900 ms) is 300 ms old: wait 700 ms more. */
    cr_assert_eq(tutti__admit_room(t, 4, at, &cfg, 1200 * MS, &wait), -2);
    cr_assert_eq(wait, 700 * MS, "wait %lld ns", (long long)wait);
    cr_assert_eq(tutti__admit_room(t, 4, at, &cfg, 1900 * MS, &wait), 1, "now it has had 1 s");
}

Test(admit, one_address_evicts_its_own_oldest_but_never_a_young_burst)
{
    struct tutti_admit_slot t[4] = {{0, 7}, {100 * MS, 8}, {200 * MS, 7}, {300 * MS, 9}};
    /* Address 7 holds 2, its cap: its oldest (index 0) goes once it is a second old. */
    cr_assert_eq(tutti__admit_addr_victim(t, 4, at, 7, &cfg, 500 * MS), -1, "too young");
    cr_assert_eq(tutti__admit_addr_victim(t, 4, at, 7, &cfg, 1000 * MS), 0);
    /* Address 8 is under its cap; a new address has nothing to lose. */
    cr_assert_eq(tutti__admit_addr_victim(t, 4, at, 8, &cfg, 5000 * MS), -1);
    cr_assert_eq(tutti__admit_addr_victim(t, 4, at, 42, &cfg, 5000 * MS), -1);
}

Test(admit, a_loaded_hosts_slow_ranks_raise_the_age_below_which_none_is_evicted)
{
    /* Ranks that passed took 100 ms, then 3 s (a crowded host): the slowest is remembered and
     * decays by a sixteenth per handshake that passes; a min age of 4x it spares them. */
    int64_t seen = tutti__admit_learn(0, 100 * MS);
    cr_assert_eq(seen, 100 * MS);
    seen = tutti__admit_learn(seen, 3000 * MS);
    cr_assert_eq(seen, 3000 * MS);
    seen = tutti__admit_learn(seen, 10 * MS);
    cr_assert_eq(seen, 3000 * MS - 3000 * MS / 16, "decays, got %lld", (long long)seen);
    struct tutti_admit_cfg slow = cfg;
    slow.min_age_ns = 4 * seen;
    struct tutti_admit_slot t[4] = {{0, 7}, {100 * MS, 8}, {200 * MS, 7}, {300 * MS, 9}};
    int64_t wait = -1;
    cr_assert_eq(tutti__admit_addr_victim(t, 4, at, 7, &slow, 5000 * MS), -1, "5 s: too young");
    cr_assert_eq(tutti__admit_room(t, 4, at, &slow, 5000 * MS, &wait), -2, "full, none old enough");
    cr_assert_eq(wait, 4 * seen - 5000 * MS);
    cr_assert_eq(tutti__admit_addr_victim(t, 4, at, 7, &slow, 4 * seen), 0, "then it goes");
    /* Never below the fixed minimum, whatever a listener computes. */
    slow.min_age_ns = 1;
    cr_assert_eq(tutti__admit_min_age(&slow), TUTTI_ADMIT_MIN_AGE_NS);
}

Test(admit, addresses_are_keyed_by_ip_without_the_port)
{
    union tutti_sockaddr a, b, c;
    cr_assert_eq(tutti__sockaddr_parse("10.1.2.3:5000", -1, 0, &a), TUTTI_OK);
    cr_assert_eq(tutti__sockaddr_parse("10.1.2.3:6000", -1, 0, &b), TUTTI_OK);
    cr_assert_eq(tutti__sockaddr_parse("10.1.2.4:5000", -1, 0, &c), TUTTI_OK);
    cr_assert_eq(tutti__admit_addr_key(&a), tutti__admit_addr_key(&b));
    cr_assert_neq(tutti__admit_addr_key(&a), tutti__admit_addr_key(&c));
}

/* Log to a fresh file of this test's own. */
static void log_to(char *path, size_t len, const char *name)
{
    snprintf(path, len, "/tmp/tutti-test-%s-%d.log", name, (int)getpid());
    unlink(path);
    setenv("TUTTI_LOG_FILE", path, 1);
}

/* What was logged (the file is removed). */
static const char *logged(const char *path)
{
    static char text[1 << 14];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no log at %s", path);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    return text;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

/* 1100 refusals in one window: TUTTI_ADMIT_SHOWN lines, then one summary with the counts. */
Test(admit, a_flood_is_logged_in_a_few_lines)
{
    char path[64];
    log_to(path, sizeof(path), "admit");
    struct tutti_admit_log l;
    memset(&l, 0, sizeof(l));
    snprintf(l.who, sizeof(l.who), "tcp: rank 1");
    for (int i = 0; i < 1100; i++) {
        tutti__admit_closed(&l, i % 2 ? TUTTI_ADMIT_DEADLINE : TUTTI_ADMIT_ADDR, "10.0.0.9:4000",
                            "silent", 1000 * MS + i * MS);
    }
    tutti__admit_flush(&l, 1000 * MS + 2000 * MS, 0); /* the window is not over: nothing yet */
    tutti__admit_flush(&l, 1000 * MS + 2000 * MS, 1); /* the listener closes */
    const char *text = logged(path);
    cr_assert_eq(count(text, "\n"), TUTTI_ADMIT_SHOWN + 1, "log:\n%s", text);
    cr_assert_eq(count(text, "tcp: rank 1 refused connection from 10.0.0.9:4000: silent"),
                 TUTTI_ADMIT_SHOWN, "log:\n%s", text);
    cr_assert(strstr(text, "1097 more connections refused or closed") != NULL &&
                  strstr(text, "no handshake in time 549") != NULL &&
                  strstr(text, "too many from one address 548") != NULL,
              "log:\n%s", text);
}

/* A window ends: its summary comes with the next event, and the next window shows lines again. */
Test(admit, each_window_starts_afresh)
{
    char path[64];
    log_to(path, sizeof(path), "admit2");
    struct tutti_admit_log l;
    memset(&l, 0, sizeof(l));
    snprintf(l.who, sizeof(l.who), "bootstrap root");
    for (int i = 0; i < 10; i++) {
        tutti__admit_closed(&l, TUTTI_ADMIT_AUTH, "10.0.0.9:4000", "bad", i * MS);
    }
    int64_t later = TUTTI_ADMIT_WINDOW_NS + 20 * MS;
    tutti__admit_closed(&l, TUTTI_ADMIT_AUTH, "10.0.0.8:4000", "bad", later);
    const char *text = logged(path);
    cr_assert(strstr(text, "7 more connections refused or closed") != NULL, "log:\n%s", text);
    cr_assert_eq(count(text, "refused connection from 10.0.0.8:4000"), 1, "log:\n%s", text);
}
