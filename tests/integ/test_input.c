/*
 * test_input.c - hostile or mistaken input from the environment and the file system (issue 18,
 * items 2, 7, 8 and 9), on forked ranks that each read their own environment:
 *
 * - a TUTTI_SECRET_FILE that cannot hold a secret (empty, a directory, /dev/zero, a FIFO with
 *   no writer) fails init on every rank at once, naming the file and what is wrong, instead of
 *   running with the public key (or, for the FIFO, blocking for ever);
 * - size and count variables out of their documented range (a slot size that wraps the segment
 *   size, zero or negative counts) fail init, naming the variable, the value and the range;
 * - a TUTTI_LOG_FILE that is a symbolic or a hard link is not written through, and a new one
 *   is created mode 0600;
 * - integer variables: a timeout below its floor, ranks and sizes that overflow an int (tutti's
 *   own and a launcher's) are refused, naming the variable.
 *
 * The test process never calls tutti: each child sets what differs per rank and is the first in
 * its process to call tutti, which reads the environment once.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET     "00112233445566778899aabbccddeeff"
#define FAST_NS    5000000000LL /* an input error is found before any waiting: 5 s is plenty */
#define MAX_EXPECT 4

/* TUTTI_ROOT on a loopback port that was free a moment ago. */
static void free_root(void)
{
    char root[64];
    int port = integ_free_port();
    cr_assert(port > 0, "no free port");
    snprintf(root, sizeof(root), "127.0.0.1:%d", port);
    integ_setenv("TUTTI_ROOT", root);
}

/* What a job of tutti_comm_init_env expects of each rank: the status and texts the error must
 * contain (none: init must succeed). */
struct expect {
    tutti_status_t status;
    const char *text[MAX_EXPECT];
};

/* Per rank: tutti's own launcher variables on a loopback root, then the shared environment. */
static void own_vars(int rank, int nranks, void *arg)
{
    (void)arg;
    char v[32];
    snprintf(v, sizeof(v), "%d", rank);
    integ_setenv("TUTTI_RANK", v);
    snprintf(v, sizeof(v), "%d", nranks);
    integ_setenv("TUTTI_NRANKS", v);
}

/* Each rank: tutti_comm_init_env must give exp's status quickly, its message the texts. */
static int init_env_rank(const struct integ_ctx *ctx)
{
    const struct expect *exp = ctx->arg;
    tutti_comm_t *comm = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_env(&comm);
    int64_t took = integ_now_ns() - t0;
    const char *msg = tutti_last_error(NULL);
    if (exp->status == TUTTI_OK) {
        ICHECK(st == TUTTI_OK, "init_env: %s: %s", tutti_status_name(st), msg);
        int64_t x = 1, y = 0;
        ICHECK_OK(tutti_allreduce(&x, &y, 1, TUTTI_INT64, TUTTI_SUM, comm, NULL));
        ICHECK(y == ctx->nranks, "allreduce gave %lld", (long long)y);
        ICHECK_OK(tutti_comm_destroy(comm));
        return 0;
    }
    ICHECK(st == exp->status && comm == NULL, "init_env returned %s (expected %s): %s",
           tutti_status_name(st), tutti_status_name(exp->status), msg);
    for (int i = 0; i < MAX_EXPECT && exp->text[i] != NULL; i++) {
        ICHECK(integ_contains(msg, exp->text[i]), "the error does not name \"%s\": %s",
               exp->text[i], msg);
    }
    ICHECK(took < FAST_NS, "the error took %.1f s", (double)took / 1e9);
    return 0;
}

/* nranks ranks of tutti_comm_init_env with tutti's own variables and a fresh loopback root. */
static void run_own_job(int nranks, const struct expect *exp)
{
    free_root();
    struct integ_opts o = {.nranks = nranks, .deadline_s = 40, .env = own_vars, .arg = (void *)exp};
    integ_run(&o, init_env_rank);
}

/* ---------------------------------------------------------------- item 2: the secret file */

enum bad_secret { EMPTY_FILE, DIRECTORY, DEV_ZERO, FIFO, BAD_SECRET_COUNT };

/* Parameters are copied into the test's process, which runs its own copy of this executable
 * (at other addresses): they hold text, not pointers. */
struct secret_case {
    enum bad_secret kind;
    char why[32]; /* what the error must say about the file */
};

ParameterizedTestParameters(input, unusable_secret_file_fails_every_rank)
{
    static struct secret_case cases[] = {{EMPTY_FILE, "empty"},
                                         {DIRECTORY, "not a regular file"},
                                         {DEV_ZERO, "not a regular file"},
                                         {FIFO, "not a regular file"}};
    return cr_make_param_array(struct secret_case, cases, BAD_SECRET_COUNT);
}

/* Before: the first three ran the job with the public key (only rank 0 warned, about "no
 * TUTTI_SECRET"); the FIFO blocked every rank in open() past TUTTI_TIMEOUT. */
ParameterizedTest(struct secret_case *c, input, unusable_secret_file_fails_every_rank,
                  .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_TIMEOUT", "3s");
    char dir[] = "/tmp/tutti-integ-secret-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char path[128] = "/dev/zero";
    if (c->kind == EMPTY_FILE) {
        snprintf(path, sizeof(path), "%s/secret", dir);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fclose(f);
        chmod(path, 0600);
    } else if (c->kind == DIRECTORY) {
        snprintf(path, sizeof(path), "%s", dir);
    } else if (c->kind == FIFO) {
        snprintf(path, sizeof(path), "%s/fifo", dir);
        cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo: %s", strerror(errno));
    }
    integ_setenv("TUTTI_SECRET_FILE", path);
    static struct expect exp;
    exp = (struct expect){TUTTI_ERR_INVALID_ARG, {"TUTTI_SECRET_FILE", path, c->why}};
    run_own_job(2, &exp);
    if (c->kind == EMPTY_FILE || c->kind == FIFO) {
        unlink(path);
    }
    rmdir(dir);
}

/* A good secret file still works (and one of a few bytes too many is refused by its length). */
Test(input, secret_file_with_a_secret_still_works, .timeout = 60)
{
    integ_clear_launcher_env();
    char dir[] = "/tmp/tutti-integ-secret-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char path[128];
    snprintf(path, sizeof(path), "%s/secret", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", SECRET);
    fclose(f);
    chmod(path, 0600);
    integ_setenv("TUTTI_SECRET_FILE", path);
    static const struct expect ok = {TUTTI_OK, {NULL}};
    run_own_job(2, &ok);
    unlink(path);
    rmdir(dir);
}

/* ---------------------------------------------------------------- items 7 and 9: values */

struct value_case {
    char name[32];  /* the variable */
    char value[32]; /* out of its range */
    char range[32]; /* what the message must show of the range */
};

ParameterizedTestParameters(input, out_of_range_value_fails_init_naming_it)
{
    static struct value_case cases[] = {
        /* item 7: the segment size wrapped (SIGSEGV on both ranks); counts were clamped */
        {"TUTTI_SHM_SLOT_SIZE", "2305843009213693888", "1k to 64m"},
        {"TUTTI_SHM_SLOT_SIZE", "0", "1k to 64m"},
        {"TUTTI_SHM_NSLOTS", "0", "2 to 1024"},
        {"TUTTI_SHM_NSLOTS", "-5", "2 to 1024"},
        {"TUTTI_TCP_NSLOTS", "0", "1 to 1024"},
        {"TUTTI_STAGE_CHUNK", "1", "4k to 256m"},
        {"TUTTI_NCHANNELS", "17", "0 to 16"},
        /* item 9: every init failed later with misleading messages */
        {"TUTTI_TIMEOUT", "0", "1s to 24h"},
        {"TUTTI_TIMEOUT", "1ns", "1s to 24h"},
        {"TUTTI_SPIN", "1h", "0 to 1s"},
    };
    return cr_make_param_array(struct value_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct value_case *c, input, out_of_range_value_fails_init_naming_it,
                  .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_SECRET", SECRET);
    integ_setenv(c->name, c->value);
    static struct expect exp;
    exp = (struct expect){TUTTI_ERR_INVALID_ARG, {c->name, c->value, c->range}};
    run_own_job(2, &exp);
}

/* A malformed value (here an octal or hex spelling) is an error too, not the default. */
Test(input, integer_in_another_base_is_refused, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_SECRET", SECRET);
    integ_setenv("TUTTI_NSOCKS", "0x3");
    static const struct expect exp = {TUTTI_ERR_INVALID_ARG, {"TUTTI_NSOCKS", "0x3", "decimal"}};
    run_own_job(2, &exp);
}

/* TUTTI_NRANKS=4294967297 made a 1-rank world; TUTTI_RANK=4294967296 became rank 0. */
static void overflow_vars(int rank, int nranks, void *arg)
{
    (void)nranks;
    const char *const *vals = arg;
    integ_setenv("TUTTI_RANK", rank == 0 ? vals[0] : "1");
    integ_setenv("TUTTI_NRANKS", vals[1]);
}

static int overflow_rank(const struct integ_ctx *ctx)
{
    const char *const *vals = ctx->arg;
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_env(&comm);
    const char *msg = tutti_last_error(NULL);
    ICHECK(st == TUTTI_ERR_INVALID_ARG && comm == NULL, "init_env returned %s: %s",
           tutti_status_name(st), msg);
    ICHECK(integ_contains(msg, vals[2]) && integ_contains(msg, vals[3]),
           "the error does not name %s and %s: %s", vals[2], vals[3], msg);
    return 0;
}

Test(input, tutti_nranks_beyond_int_is_refused, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_SECRET", SECRET);
    free_root();
    static const char *const vals[] = {"0", "4294967297", "TUTTI_NRANKS", "4294967297"};
    struct integ_opts o = {
        .nranks = 1, .deadline_s = 20, .env = overflow_vars, .arg = (void *)vals};
    integ_run(&o, overflow_rank);
}

Test(input, tutti_rank_beyond_int_is_refused, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_SECRET", SECRET);
    integ_setenv("TUTTI_TIMEOUT", "3s");
    free_root();
    static const char *const vals[] = {"4294967296", "2", "TUTTI_RANK", "4294967296"};
    struct integ_opts o = {
        .nranks = 1, .deadline_s = 20, .env = overflow_vars, .arg = (void *)vals};
    integ_run(&o, overflow_rank);
}

/* The same for a launcher's variables (torchrun's RANK, WORLD_SIZE, MASTER_PORT). */
struct launcher_case {
    char rank[16], size[16], port[16];
    char name[16], value[16]; /* the variable the error must name, and its value */
};

ParameterizedTestParameters(input, launcher_variable_out_of_range_is_refused)
{
    static struct launcher_case cases[] = {
        {"4294967296", "1", "29500", "RANK", "4294967296"},
        {"0", "4294967297", "29500", "WORLD_SIZE", "4294967297"},
        {"0", "1", "65535", "MASTER_PORT", "65535"}, /* tutti's root would be port 65536 */
    };
    return cr_make_param_array(struct launcher_case, cases, sizeof(cases) / sizeof(cases[0]));
}

static int launcher_rank(const struct integ_ctx *ctx)
{
    const struct launcher_case *c = ctx->arg;
    integ_setenv("RANK", c->rank);
    integ_setenv("WORLD_SIZE", c->size);
    integ_setenv("MASTER_PORT", c->port);
    const char *const vals[] = {NULL, NULL, c->name, c->value};
    struct integ_ctx sub = *ctx;
    sub.arg = (void *)vals;
    return overflow_rank(&sub);
}

ParameterizedTest(struct launcher_case *c, input, launcher_variable_out_of_range_is_refused,
                  .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_TIMEOUT", "3s");
    integ_setenv("TUTTI_SECRET", SECRET);
    integ_setenv("MASTER_ADDR", "127.0.0.1");
    struct integ_opts o = {.nranks = 1, .deadline_s = 20, .arg = c};
    integ_run(&o, launcher_rank);
}

/* ---------------------------------------------------------------- item 8: the log file */

/* One rank that logs at info (a one-rank communicator says it is ready). */
static int logging_rank(const struct integ_ctx *ctx)
{
    (void)ctx;
    umask(022); /* what most users have: fopen(3) made 0644 files under it */
    tutti_unique_id_t id;
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_get_unique_id(&id));
    ICHECK_OK(tutti_comm_init_rank(&comm, 1, &id, 0));
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

static void run_logging_rank(const char *log_file)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_LOG_LEVEL", "info");
    integ_setenv("TUTTI_LOG_FILE", log_file);
    struct integ_opts o = {.nranks = 1, .deadline_s = 20};
    integ_run(&o, logging_rank);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static long file_size(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s: %s", path, strerror(errno));
    return (long)sb.st_size;
}

/* A link planted where the log goes made a job append to the file it points at. */
Test(input, log_file_that_is_a_link_is_not_written_through, .timeout = 60)
{
    char dir[] = "/tmp/tutti-integ-log-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char target[128], sym[128], hard[128];
    snprintf(target, sizeof(target), "%s/precious", dir);
    snprintf(sym, sizeof(sym), "%s/sym.log", dir);
    snprintf(hard, sizeof(hard), "%s/hard.log", dir);
    write_file(target, "precious\n", 0600);
    cr_assert_eq(symlink(target, sym), 0, "symlink: %s", strerror(errno));
    cr_assert_eq(link(target, hard), 0, "link: %s", strerror(errno));
    run_logging_rank(sym);
    cr_expect_eq(file_size(target), 9, "the log went through the symbolic link");
    run_logging_rank(hard);
    cr_expect_eq(file_size(target), 9, "the log went through the hard link");
    unlink(sym);
    unlink(hard);
    unlink(target);
    rmdir(dir);
}

Test(input, new_log_file_is_private, .timeout = 60)
{
    char dir[] = "/tmp/tutti-integ-log-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char path[128];
    snprintf(path, sizeof(path), "%s/tutti.log", dir);
    run_logging_rank(path);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "no log file: %s", strerror(errno));
    cr_expect_eq(sb.st_mode & 0777, 0600, "the log file has mode %o", sb.st_mode & 0777);
    cr_expect_gt(sb.st_size, 0, "nothing was logged");
    /* An existing file of ours is appended to, as before. */
    long before = (long)sb.st_size;
    run_logging_rank(path);
    cr_expect_gt(file_size(path), before, "the second run did not append");
    unlink(path);
    rmdir(dir);
}

/* TUTTI_MEM_BUDGET below a ring's two connections leaves no algorithm: init fails on every rank
 * naming the budget and what a ring needs. */
Test(input, memory_budget_below_a_ring_fails_init_naming_it, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_SECRET", SECRET);
    integ_setenv("TUTTI_MEM_BUDGET", "1m");
    static struct expect exp;
    exp = (struct expect){TUTTI_ERR_INVALID_ARG,
                          {"TUTTI_MEM_BUDGET", "1048576 bytes", "a ring connects 2 peers"}};
    run_own_job(3, &exp);
}

/* A budget a ring fits but no all-to-all does (4 ranks, 2 MiB, 1 MiB per connection): the
 * all-to-all fails on every rank naming the budget, and the communicator goes on. (One of 256
 * elements per rank: a smaller one travels in the control pages, which need no connection.) */
static int budget_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    ICHECK(integ_comm_init(ctx, NULL, &comm) == 0, "init");
    static int32_t big_in[4 * 256], big_out[4 * 256];
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
    tutti_status_t st = tutti_alltoall(big_in, big_out, 256, TUTTI_INT32, comm, NULL);
    ICHECK(st == TUTTI_ERR_INVALID_USAGE, "alltoall: %s, not ERR_INVALID_USAGE",
           tutti_status_name(st));
    const char *why = tutti_last_error(comm);
    ICHECK(strstr(why, "TUTTI_MEM_BUDGET") != NULL && strstr(why, "2097152 bytes") != NULL &&
               strstr(why, "3 peers") != NULL,
           "the error does not name the budget: %s", why);
    ICHECK_OKC(tutti_allreduce(in, out, 4, TUTTI_INT32, TUTTI_SUM, comm, NULL), comm);
    ICHECK(out[0] == 4 && out[3] == 16, "allreduce after the refusal: %d %d", out[0], out[3]);
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

Test(input, alltoall_beyond_the_memory_budget_fails_naming_it, .timeout = 60)
{
    integ_setenv("TUTTI_MEM_BUDGET", "2m");
    integ_run_ranks(4, budget_rank, NULL, 0);
}
