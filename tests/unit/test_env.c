/*
 * test_env.c - the environment table: value parsers with units (integers decimal only), defaults,
 * ranges, malformed and out-of-range values (errors), unknown TUTTI_* names, and the launcher
 * helpers (hex secrets, secret files, Slurm node lists).
 */
#include "base/env.h"
#include "comm/launch.h"
#include "base/log.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(env, size_suffixes_parse_as_binary_units)
{
    size_t v = 0;
    cr_assert_eq(tutti__parse_size("4k", &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(tutti__parse_size("2M", &v), 0);
    cr_assert_eq(v, 2u << 20);
    cr_assert_eq(tutti__parse_size("1GiB", &v), 0);
    cr_assert_eq(v, 1ull << 30);
    cr_assert_eq(tutti__parse_size("17", &v), 0);
    cr_assert_eq(v, 17);
    cr_assert_eq(tutti__parse_size("-1", &v), -1);
    cr_assert_eq(tutti__parse_size(" -2", &v), -1, "fuzz_env: was 2^64 - 2");
    cr_assert_eq(tutti__parse_size("2KB", &v), 0);
    cr_assert_eq(v, 2048);
    cr_assert_eq(tutti__parse_size("64B", &v), 0);
    cr_assert_eq(v, 64);
    cr_assert_eq(tutti__parse_size("12q", &v), -1);
    cr_assert_eq(tutti__parse_size("", &v), -1);
    cr_assert_eq(tutti__parse_size("99999999999999999999T", &v), -1);
}

Test(env, durations_take_units_and_bare_seconds)
{
    int64_t ns = 0;
    cr_assert_eq(tutti__parse_duration_ns("250us", &ns), 0);
    cr_assert_eq(ns, 250000);
    cr_assert_eq(tutti__parse_duration_ns("10ms", &ns), 0);
    cr_assert_eq(ns, 10000000);
    cr_assert_eq(tutti__parse_duration_ns("3", &ns), 0);
    cr_assert_eq(ns, 3000000000ll);
    cr_assert_eq(tutti__parse_duration_ns("1.5s", &ns), 0);
    cr_assert_eq(ns, 1500000000ll);
    cr_assert_eq(tutti__parse_duration_ns("2m", &ns), 0);
    cr_assert_eq(ns, 120000000000ll);
    cr_assert_eq(tutti__parse_duration_ns("5 parsecs", &ns), -1);
    cr_assert_eq(tutti__parse_duration_ns("-1s", &ns), -1);
    cr_assert_eq(tutti__parse_duration_ns("2.3ms", &ns), 0);
    cr_assert_eq(ns, 2300000);
    cr_assert_eq(tutti__parse_duration_ns("0.25", &ns), 0);
    cr_assert_eq(ns, 250000000);
}

/* Issue 36 item 6: strtod read "0x10" as 16 s, "0x1p4" as 16 s and "1e3" as 1000 s, and
 * strtoull let sizes begin with white space or "+" and end in "kb"; each spelling that is not
 * digits, an optional fraction (durations) and a unit is refused now. */
Test(env, one_spelling_for_sizes_and_durations)
{
    int64_t ns = 0;
    const char *bad_durations[] = {"0x10", "0x1p4", "1e3", "1E3s", " 5s", "5s ",  "+5s", "inf",
                                   "nan",  "1.",    ".5",  "1,5s", "5 s", "5sec", ""};
    for (size_t i = 0; i < sizeof(bad_durations) / sizeof(bad_durations[0]); i++) {
        cr_expect_eq(tutti__parse_duration_ns(bad_durations[i], &ns), -1, "duration \"%s\"",
                     bad_durations[i]);
    }
    size_t v = 0;
    const char *bad_sizes[] = {" 2k", "2k ", "+2k",  "2kb",  "2 k", "0x10", "1e3",
                               "2ki", "2iB", "2.5k", "2kB ", "k",   "-0"};
    for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
        cr_expect_eq(tutti__parse_size(bad_sizes[i], &v), -1, "size \"%s\"", bad_sizes[i]);
    }
    cr_assert_eq(tutti__parse_size("3kB", &v), 0);
    cr_assert_eq(v, 3072);
    cr_assert_eq(tutti__parse_size("3MiB", &v), 0);
    cr_assert_eq(v, 3u << 20);
}

/* Issue 18: "010" was octal 8 and "0x10" 16 (strtol base 0); integers are decimal only. */
Test(env, integers_are_decimal_only)
{
    long v = 0;
    cr_assert_eq(tutti__parse_long("010", &v), 0);
    cr_assert_eq(v, 10, "\"010\" read as %ld", v);
    cr_assert_eq(tutti__parse_long("08", &v), 0);
    cr_assert_eq(v, 8);
    cr_assert_eq(tutti__parse_long("0x10", &v), -1, "a hex spelling is malformed");
    cr_assert_eq(tutti__parse_long("-5", &v), 0);
    cr_assert_eq(v, -5);
    cr_assert_eq(tutti__parse_long("99999999999999999999", &v), -1, "overflow is malformed");
    cr_assert_eq(tutti__parse_long("", &v), -1);
    cr_assert_eq(tutti__parse_long("12 3", &v), -1);
}

Test(env, defaults_apply_when_unset)
{
    unsetenv("TUTTI_TIMEOUT");
    const struct tutti_env *e = tutti__env();
    cr_assert_eq(e->TIMEOUT, 300000000000ll);
    cr_assert_eq(e->SHM_SLOT_SIZE, 128 * 1024);
    cr_assert_str_eq(e->TRANSPORT, "auto");
    cr_assert_eq(tutti__env_is_set("TIMEOUT"), 0);
}

Test(env, set_values_are_typed, .init = cr_redirect_stderr)
{
    setenv("TUTTI_TIMEOUT", "7s", 1);
    setenv("TUTTI_TCP_SLOT_SIZE", "64k", 1);
    setenv("TUTTI_NSOCKS", "3", 1);
    const struct tutti_env *e = tutti__env();
    cr_assert_eq(e->TIMEOUT, 7000000000ll);
    cr_assert_eq(e->TCP_SLOT_SIZE, 65536);
    cr_assert_eq(e->NSOCKS, 3);
    cr_assert(tutti__env_is_set("NSOCKS"));
}

/* Issue 18: a malformed value used to be a warning, and the job ran on the default. */
Test(env, malformed_value_keeps_default_and_is_an_error, .init = cr_redirect_stderr)
{
    setenv("TUTTI_SHM_SLOT_SIZE", "lots", 1);
    const struct tutti_env *e = tutti__env();
    cr_assert_eq(e->SHM_SLOT_SIZE, 128 * 1024);
    cr_assert_eq(tutti__env_is_set("SHM_SLOT_SIZE"), 0);
    cr_assert_eq(tutti__env_check(), TUTTI_ERR_INVALID_ARG);
    const char *m = tutti_last_error(NULL);
    cr_assert(strstr(m, "TUTTI_SHM_SLOT_SIZE value 'lots' is not a size") != NULL, "%s", m);
}

/* Issue 36 item 5: TUTTI_SECRET= and TUTTI_SECRET_FILE= read as "no secret" (a key anyone can
 * compute, or, through a unique id, not a word); the table's check (which tutti_get_unique_id,
 * tutti_comm_init_rank and tutti_comm_init_env all make) refuses them now, naming each. */
Test(env, empty_secret_variables_are_errors, .init = cr_redirect_stderr)
{
    setenv("TUTTI_SECRET", "", 1);
    setenv("TUTTI_SECRET_FILE", "", 1);
    cr_assert_eq(tutti__env_check(), TUTTI_ERR_INVALID_ARG);
    const char *m = tutti_last_error(NULL);
    cr_assert(strstr(m, "TUTTI_SECRET is set but empty") != NULL, "%s", m);
    cr_assert(strstr(m, "TUTTI_SECRET_FILE is set but empty") != NULL, "%s", m);
    tutti_unique_id_t id;
    cr_assert_eq(tutti_get_unique_id(&id), TUTTI_ERR_INVALID_ARG, "the unique id's path too");
}

/* Issue 18: 2305843009213693888 wrapped the segment size; NSLOTS 0 and -5 were clamped. */
Test(env, out_of_range_values_are_named_with_their_range)
{
    setenv("TUTTI_SHM_SLOT_SIZE", "2305843009213693888", 1);
    setenv("TUTTI_SHM_NSLOTS", "-5", 1);
    setenv("TUTTI_TIMEOUT", "1ns", 1);
    setenv("TUTTI_NRANKS", "4294967297", 1);
    const struct tutti_env *e = tutti__env();
    cr_assert_eq(e->SHM_SLOT_SIZE, 128 * 1024, "the default stays");
    cr_assert_eq(e->SHM_NSLOTS, 8);
    cr_assert_eq(tutti__env_check(), TUTTI_ERR_INVALID_ARG);
    const char *m = tutti_last_error(NULL);
    static const char *const want[] = {
        "TUTTI_SHM_SLOT_SIZE value '2305843009213693888' is out of range (1k to 64m)",
        "TUTTI_SHM_NSLOTS value '-5' is out of range (2 to 1024)",
        "TUTTI_TIMEOUT value '1ns' is out of range (1s to 24h)",
        "TUTTI_NRANKS value '4294967297' is out of range (-1 to 1048576)"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        cr_assert(strstr(m, want[i]) != NULL, "missing \"%s\" in: %s", want[i], m);
    }
}

/* More bad values than the message holds: as many as fit, then "; ...", nothing cut off. */
Test(env, many_bad_values_end_the_message_with_a_mark)
{
    static const char *const names[] = {
        "TUTTI_NSOCKS",    "TUTTI_SHM_NSLOTS", "TUTTI_TCP_NSLOTS",   "TUTTI_IB_QPS",
        "TUTTI_IB_NSLOTS", "TUTTI_IB_TIMEOUT", "TUTTI_IB_RETRY_CNT", "TUTTI_IB_TC",
        "TUTTI_IB_SL",     "TUTTI_NCHANNELS",  "TUTTI_IPC",          "TUTTI_NRANKS"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        setenv(names[i], "99999999", 1);
    }
    cr_assert_eq(tutti__env_check(), TUTTI_ERR_INVALID_ARG);
    const char *m = tutti_last_error(NULL);
    cr_assert(strstr(m, "TUTTI_NSOCKS value '99999999' is out of range (0 to 16)") != NULL, "%s",
              m);
    cr_assert(strstr(m, "; ... (tutti-info --env lists every variable with its range)") != NULL,
              "%s", m);
}

Test(env, values_at_the_ends_of_their_ranges_are_accepted)
{
    setenv("TUTTI_SHM_SLOT_SIZE", "64m", 1);
    setenv("TUTTI_SHM_NSLOTS", "2", 1);
    setenv("TUTTI_TIMEOUT", "1s", 1);
    setenv("TUTTI_IB_GID_INDEX", "-1", 1);
    const struct tutti_env *e = tutti__env();
    cr_assert_eq(tutti__env_check(), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(e->SHM_SLOT_SIZE, 64u << 20);
    cr_assert_eq(e->SHM_NSLOTS, 2);
    cr_assert_eq(e->TIMEOUT, 1000000000ll);
}

Test(env, unknown_tutti_variable_is_reported, .init = cr_redirect_stderr)
{
    setenv("TUTTI_TIMEOUTT", "5s", 1);
    (void)tutti__env();
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    cr_assert(strstr(buf, "TUTTI_TIMEOUTT") != NULL, "warning names the unknown variable: %s", buf);
}

Test(env, every_table_entry_has_help_and_a_parsable_default)
{
    int n = 0;
    const struct tutti_env_desc *t = tutti__env_table(&n);
    cr_assert_gt(n, 10);
    for (int i = 0; i < n; i++) {
        cr_assert_gt(strlen(t[i].help), 5, "%s needs help text", t[i].name);
        cr_assert_eq(tutti__env_index(t[i].name), i);
    }
}

/* Every number has a range that parses as its type and holds its default (env.c aborts on a
 * default outside it; this names the entry). Strings have none. */
Test(env, every_number_has_a_range_around_its_default)
{
    int n = 0;
    const struct tutti_env_desc *t = tutti__env_table(&n);
    for (int i = 0; i < n; i++) {
        const struct tutti_env_desc *d = &t[i];
        if (d->type == TUTTI_ENV_STRING) {
            cr_assert(d->lo[0] == '\0' && d->hi[0] == '\0', "%s: a string with a range", d->name);
            continue;
        }
        long li[3];
        size_t sz[3];
        int64_t ns[3];
        const char *v[3] = {d->lo, d->def, d->hi};
        for (int k = 0; k < 3; k++) {
            int rc = d->type == TUTTI_ENV_INT    ? tutti__parse_long(v[k], &li[k])
                     : d->type == TUTTI_ENV_SIZE ? tutti__parse_size(v[k], &sz[k])
                                                 : tutti__parse_duration_ns(v[k], &ns[k]);
            cr_assert_eq(rc, 0, "%s: '%s' does not parse", d->name, v[k]);
        }
        int ordered = d->type == TUTTI_ENV_INT    ? li[0] <= li[1] && li[1] <= li[2]
                      : d->type == TUTTI_ENV_SIZE ? sz[0] <= sz[1] && sz[1] <= sz[2]
                                                  : ns[0] <= ns[1] && ns[1] <= ns[2];
        cr_assert(ordered, "%s: default %s is not in %s to %s", d->name, d->def, d->lo, d->hi);
    }
    long lo = 0, hi = 0;
    cr_assert_eq(tutti__env_int_range("NCHANNELS", &lo, &hi), 0);
    cr_assert_eq(hi, TUTTI_MAX_CHANNELS, "TUTTI_NCHANNELS goes up to TUTTI_MAX_CHANNELS");
    cr_assert_eq(tutti__env_int_range("TIMEOUT", &lo, &hi), -1, "not an INT");
}

Test(launch, hex_secret_needs_exactly_32_digits)
{
    uint8_t s[16];
    cr_assert_eq(tutti__hex_decode("00112233445566778899aabbccddeeff", s, 16), 0);
    cr_assert_eq(s[0], 0x00);
    cr_assert_eq(s[15], 0xff);
    cr_assert_eq(tutti__hex_decode("00112233445566778899aabbccddeeff\n", s, 16), 0);
    cr_assert_eq(tutti__hex_decode("0011", s, 16), -1);
    cr_assert_eq(tutti__hex_decode("zz112233445566778899aabbccddeeff", s, 16), -1);
}

/* A file in a fresh directory with the given text (NULL: do not create it). */
static void secret_path(char *dir, char *path, size_t len, const char *text)
{
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, len, "%s/secret", dir);
    if (text != NULL) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(text, f);
        fclose(f);
        chmod(path, 0600);
    }
}

static void expect_secret_error(const char *path, const char *why)
{
    uint8_t s[16];
    cr_assert_eq(tutti__secret_file_read(path, s, 16), TUTTI_ERR_INVALID_ARG, "%s", why);
    const char *m = tutti_last_error(NULL);
    cr_assert(strstr(m, path) != NULL && strstr(m, why) != NULL, "not \"%s\": %s", why, m);
}

/* Issue 18: empty, a directory and /dev/zero read as "no secret"; a FIFO blocked for ever. */
Test(launch, secret_file_that_holds_no_secret_is_an_error, .init = cr_redirect_stderr)
{
    char dir[] = "/tmp/tutti-unit-secret-XXXXXX", path[128];
    secret_path(dir, path, sizeof(path), "");
    expect_secret_error(path, "is empty");
    expect_secret_error(dir, "not a regular file (a directory)");
    expect_secret_error("/dev/zero", "not a regular file (a character device)");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    expect_secret_error(path, "not a regular file (a FIFO)"); /* and it returned at once */
    unlink(path);
    expect_secret_error(path, "No such file");
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 300; i++) {
        fputs("00112233445566778899aabbccddeeff\n", f);
    }
    fclose(f);
    expect_secret_error(path, "bytes");
    f = fopen(path, "w");
    fputs("00112233445566778899aabbccddeeff\nmore\n", f);
    fclose(f);
    expect_secret_error(path, "exactly 32 hex digits");
    unlink(path);
    rmdir(dir);
}

Test(launch, secret_file_with_white_space_around_the_secret_is_read)
{
    char dir[] = "/tmp/tutti-unit-secret-XXXXXX", path[128];
    secret_path(dir, path, sizeof(path), "  00112233445566778899aabbccddeeff \n\n");
    uint8_t s[16] = {0};
    cr_assert_eq(tutti__secret_file_read(path, s, 16), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_eq(s[1], 0x11);
    cr_assert_eq(s[15], 0xff);
    unlink(path);
    rmdir(dir);
}

Test(launch, slurm_first_host_of_a_node_list)
{
    char h[64];
    cr_assert_eq(tutti__slurm_first_host("gpu[03-05,9],cpu1", h, sizeof(h)), 0);
    cr_assert_str_eq(h, "gpu03");
    cr_assert_eq(tutti__slurm_first_host("node7", h, sizeof(h)), 0);
    cr_assert_str_eq(h, "node7");
    cr_assert_eq(tutti__slurm_first_host("a1,b2", h, sizeof(h)), 0);
    cr_assert_str_eq(h, "a1");
    cr_assert_eq(tutti__slurm_first_host("", h, sizeof(h)), -1);
}

/* fuzz_env: the second bracket of a name was copied as it is ("rack1-n[3-4]"). */
Test(launch, slurm_first_host_takes_the_first_number_of_every_bracket)
{
    static const char *const cases[][2] = {{"rack[1-2]-n[3-4],x", "rack1-n3"},
                                           {"[7]a[08]b", "7a08b"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char h[64];
        cr_assert_eq(tutti__slurm_first_host(cases[i][0], h, sizeof(h)), 0, "%s", cases[i][0]);
        cr_assert_str_eq(h, cases[i][1]);
    }
}

/* A buffer of 0 bytes got its terminator written anyway. */
Test(launch, slurm_first_host_with_no_room_writes_nothing)
{
    char h[2] = {'?', '?'};
    cr_assert_eq(tutti__slurm_first_host("node1", h, 0), -1);
    cr_assert_eq(h[0], '?');
    cr_assert_eq(tutti__slurm_first_host("node1", h, 1), -1, "no room for a character");
    cr_assert_eq(h[0], '\0');
}

Test(status, names_and_messages_are_distinct)
{
    tutti_status_t all[] = {TUTTI_OK,
                            TUTTI_IN_PROGRESS,
                            TUTTI_ERR_INVALID_ARG,
                            TUTTI_ERR_INVALID_USAGE,
                            TUTTI_ERR_NO_MEMORY,
                            TUTTI_ERR_SYSTEM,
                            TUTTI_ERR_CUDA,
                            TUTTI_ERR_REMOTE,
                            TUTTI_ERR_TIMEOUT,
                            TUTTI_ERR_AUTH,
                            TUTTI_ERR_UNSUPPORTED,
                            TUTTI_ERR_ABORTED,
                            TUTTI_ERR_INTERNAL};
    int n = (int)(sizeof(all) / sizeof(all[0]));
    for (int i = 0; i < n; i++) {
        cr_assert(i < 2 ? all[i] >= 0 : all[i] < 0, "errors are negative");
        for (int j = i + 1; j < n; j++) {
            cr_assert_str_neq(tutti_status_name(all[i]), tutti_status_name(all[j]));
            cr_assert_str_neq(tutti_status_string(all[i]), tutti_status_string(all[j]));
        }
    }
    cr_assert_str_eq(tutti_status_string((tutti_status_t)-99), "unknown status");
    cr_assert_eq(TUTTI_OK, 0);
    cr_assert_eq(TUTTI_IN_PROGRESS, 1);
}

Test(log, level_names_parse)
{
    cr_assert_eq(tutti__log_level_parse("none"), TUTTI_LOG_NONE);
    cr_assert_eq(tutti__log_level_parse("WARN"), TUTTI_LOG_WARN);
    cr_assert_eq(tutti__log_level_parse("trace"), TUTTI_LOG_TRACE);
    cr_assert_eq(tutti__log_level_parse("loud"), -1);
}

Test(log, lines_carry_host_pid_rank_and_subsystem, .init = cr_redirect_stderr)
{
    setenv("TUTTI_LOG_LEVEL", "info", 1);
    setenv("TUTTI_LOG_SUBSYS", "coll", 1);
    tutti_info(TUTTI_SUBSYS_COLL, "hello %d", 42);
    tutti_info(TUTTI_SUBSYS_NET, "filtered out");
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    cr_assert(strstr(buf, "INFO/COLL hello 42") != NULL, "%s", buf);
    cr_assert(strstr(buf, "filtered out") == NULL, "the subsystem mask filters: %s", buf);
    cr_assert(strstr(buf, "[-]") != NULL, "rank placeholder outside a communicator: %s", buf);
}
