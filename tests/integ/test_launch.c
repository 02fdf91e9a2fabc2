/*
 * test_launch.c - tutti_comm_init_env under each launcher it understands: Open MPI's mpirun
 * (running launch_prog, skipped when mpirun is absent), torchrun's variables, tutti's own
 * (TUTTI_RANK/TUTTI_NRANKS/TUTTI_ROOT with TUTTI_SECRET or TUTTI_SECRET_FILE) and Slurm's on a
 * single node, set per forked child. No launcher variables at all is INVALID_ARG with a message
 * that lists what to set; a rank with a different TUTTI_SECRET is refused.
 *
 * The test process never calls tutti here: each child sets its launcher's variables and is the
 * first in its process to call tutti, which reads the environment once. Every test first clears
 * whatever launcher variables the test itself runs under (CI may run inside Slurm or mpirun).
 */
#include "comm/comm.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NRANKS   4
#define SECRET_A "00112233445566778899aabbccddeeff"
#define SECRET_B "00112233445566778899aabbccddeefe"

/* Every rank: the world communicator from the environment, then a checked all-reduce. */
static int env_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_env(&comm));
    int rank = -1, n = -1;
    ICHECK_OK(tutti_comm_rank(comm, &rank));
    ICHECK_OK(tutti_comm_size(comm, &n));
    ICHECK(rank == ctx->rank && n == ctx->nranks, "rank/size %d/%d from the environment", rank, n);
    int64_t x[3] = {rank, 1, rank == 0 ? 7 : 0}, y[3];
    ICHECK_OK(tutti_allreduce(x, y, 3, TUTTI_INT64, TUTTI_SUM, comm, NULL));
    ICHECK(y[0] == n * (n - 1) / 2 && y[1] == n && y[2] == 7, "allreduce gave %lld %lld %lld",
           (long long)y[0], (long long)y[1], (long long)y[2]);
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

static void run_env_job(void (*env)(int, int, void *), void *arg, integ_rank_fn fn)
{
    struct integ_opts o = {.nranks = NRANKS, .deadline_s = 50, .env = env, .arg = arg};
    integ_run(&o, fn);
}

/* ---------------------------------------------------------------- mpirun */

/* launch_prog: from meson's environment, else next to this executable. */
static int find_launch_prog(char *path, size_t len)
{
    const char *p = getenv("INTEG_LAUNCH_PROG");
    if (p != NULL) {
        snprintf(path, len, "%s", p);
        return access(path, X_OK) == 0;
    }
    char self[2048];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        return 0;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(path, len, "%.2000s/integ_launch_prog", self);
    return access(path, X_OK) == 0;
}

/* Is an executable called name on PATH? */
static int on_path(const char *name)
{
    const char *path = getenv("PATH");
    char dir[4096];
    while (path != NULL && *path != '\0') {
        size_t n = strcspn(path, ":");
        snprintf(dir, sizeof(dir), "%.*s/%s", (int)n, path, name);
        if (access(dir, X_OK) == 0) {
            return 1;
        }
        path += n + (path[n] == ':');
    }
    return 0;
}

static char prog_path[4096];

/* The single child: becomes mpirun, whose exit status says whether every rank passed. */
static int exec_mpirun(const struct integ_ctx *ctx)
{
    (void)ctx;
    /* As root Open MPI needs --allow-run-as-root; --oversubscribe lets 4 ranks share fewer
     * cores; plm isolated starts them locally without ssh/rsh (or Slurm's srun). */
    char *argv[] = {"mpirun",
                    "--allow-run-as-root",
                    "--oversubscribe",
                    "--mca",
                    "plm",
                    "isolated",
                    "-np",
                    "4",
                    prog_path,
                    NULL};
    execvp("mpirun", argv);
    return integ_fail("exec mpirun: %s", strerror(errno));
}

Test(launch, mpirun_np_4, .timeout = 90)
{
    if (!on_path("mpirun")) {
        cr_skip_test("mpirun is not on PATH: install Open MPI (Debian: openmpi-bin) to run the "
                     "mpirun launch test");
    }
    cr_assert(find_launch_prog(prog_path, sizeof(prog_path)),
              "integ_launch_prog not found (INTEG_LAUNCH_PROG or next to the test)");
    integ_clear_launcher_env();
    struct integ_opts o = {.nranks = 1, .deadline_s = 80};
    integ_run(&o, exec_mpirun);
}

/* ---------------------------------------------------------------- torchrun */

static void torchrun_env(int rank, int nranks, void *arg)
{
    integ_setenv_int("RANK", rank);
    integ_setenv_int("LOCAL_RANK", rank);
    integ_setenv_int("WORLD_SIZE", nranks);
    integ_setenv_int("LOCAL_WORLD_SIZE", nranks);
    integ_setenv("MASTER_ADDR", "127.0.0.1");
    integ_setenv_int("MASTER_PORT", *(int *)arg);
}

Test(launch, torchrun_variables, .timeout = 60)
{
    integ_clear_launcher_env();
    /* tutti's root listens on MASTER_PORT + 1 (torchrun's own store holds MASTER_PORT). */
    static int master_port;
    master_port = integ_free_port() - 1;
    cr_assert(master_port > 0, "no free port");
    run_env_job(torchrun_env, &master_port, env_rank);
}

/* ---------------------------------------------------------------- tutti's own */

struct tutti_vars {
    char root[64];
    const char *secret;    /* TUTTI_SECRET, or NULL */
    char secret_file[256]; /* TUTTI_SECRET_FILE, or "" */
    int odd_rank;          /* this rank gets odd_secret instead (-1: none) */
    const char *odd_secret;
};

static void tutti_env(int rank, int nranks, void *arg)
{
    const struct tutti_vars *v = arg;
    integ_setenv_int("TUTTI_RANK", rank);
    integ_setenv_int("TUTTI_NRANKS", nranks);
    integ_setenv("TUTTI_ROOT", v->root);
    if (rank == v->odd_rank) {
        integ_setenv("TUTTI_SECRET", v->odd_secret);
    } else if (v->secret != NULL) {
        integ_setenv("TUTTI_SECRET", v->secret);
    }
    if (v->secret_file[0] != '\0') {
        integ_setenv("TUTTI_SECRET_FILE", v->secret_file);
    }
}

static void tutti_vars_init(struct tutti_vars *v)
{
    memset(v, 0, sizeof(*v));
    v->odd_rank = -1;
    int port = integ_free_port();
    cr_assert(port > 0, "no free port");
    snprintf(v->root, sizeof(v->root), "127.0.0.1:%d", port);
}

/* A job of tutti's own variables with TUTTI_SECRET; the root on loopback, or on host:port. */
static void run_tutti_job(const char *host, integ_rank_fn fn)
{
    static struct tutti_vars v;
    tutti_vars_init(&v);
    if (host != NULL) {
        int port = atoi(strrchr(v.root, ':') + 1);
        snprintf(v.root, sizeof(v.root), "%s:%d", host, port);
    }
    v.secret = SECRET_A;
    run_env_job(tutti_env, &v, fn);
}

Test(launch, tutti_variables_with_secret, .timeout = 60)
{
    integ_clear_launcher_env();
    run_tutti_job(NULL, env_rank);
}

Test(launch, tutti_variables_with_secret_file, .timeout = 60)
{
    integ_clear_launcher_env();
    static struct tutti_vars v;
    tutti_vars_init(&v);
    char dir[] = "/tmp/tutti-integ-secret-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    snprintf(v.secret_file, sizeof(v.secret_file), "%s/secret", dir);
    FILE *f = fopen(v.secret_file, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", SECRET_A);
    fclose(f);
    chmod(v.secret_file, 0600);
    run_env_job(tutti_env, &v, env_rank);
    unlink(v.secret_file);
    rmdir(dir);
}

/*
 * Two jobs on one host with the same TUTTI_SECRET and size (a secret kept in a user's
 * environment) but different roots: their communicators must have distinct ids, because shared
 * memory segments are named after the id ("/tutti-<id>-..."): equal ids let the ranks of two
 * concurrent jobs open each other's segments.
 */
static uint64_t *comm_ids; /* MAP_SHARED: one per job, written by rank 0 */

static int record_id_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_env(&comm));
    if (ctx->rank == 0) {
        comm_ids[*(int *)ctx->arg] = comm->fab.comm_id;
    }
    ICHECK_OK(tutti_barrier(comm, NULL));
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

static struct tutti_vars id_vars[2];

static void id_job_env(int rank, int nranks, void *arg)
{
    tutti_env(rank, nranks, &id_vars[*(int *)arg]);
}

Test(launch, jobs_sharing_a_secret_get_distinct_comm_ids, .timeout = 60)
{
    integ_clear_launcher_env();
    comm_ids =
        mmap(NULL, 2 * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(comm_ids != MAP_FAILED);
    static int job[2] = {0, 1};
    for (int j = 0; j < 2; j++) {
        tutti_vars_init(&id_vars[j]);
        id_vars[j].secret = SECRET_A;
        struct integ_opts o = {.nranks = 2, .deadline_s = 40, .env = id_job_env, .arg = &job[j]};
        integ_run(&o, record_id_rank);
    }
    cr_assert_neq(comm_ids[0], comm_ids[1],
                  "two jobs with the same secret and size (roots %s and %s) share the comm id "
                  "%016llx",
                  id_vars[0].root, id_vars[1].root, (unsigned long long)comm_ids[0]);
}

/* Rank 3 holds another secret: it is refused, and the others are told it never joined. */
static int odd_secret_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_env(&comm);
    const char *msg = tutti_last_error(NULL);
    ICHECK(st != TUTTI_OK, "init_env succeeded with %s",
           ctx->rank == 3 ? "a wrong secret" : "a rank with a wrong secret in the job");
    if (ctx->rank == 3) {
        ICHECK(st == TUTTI_ERR_AUTH || st == TUTTI_ERR_REMOTE, "wrong secret: %s: %s",
               tutti_status_name(st), msg);
        ICHECK(integ_contains(msg, "secret"), "the message does not mention the secret: %s", msg);
    } else {
        ICHECK(integ_contains(msg, "3 never joined"), "%s: the message does not name rank 3: %s",
               tutti_status_name(st), msg);
    }
    return 0;
}

Test(launch, rank_with_another_tutti_secret_is_refused, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_TIMEOUT", "3s");
    static struct tutti_vars v;
    tutti_vars_init(&v);
    v.secret = SECRET_A;
    v.odd_rank = 3;
    v.odd_secret = SECRET_B;
    run_env_job(tutti_env, &v, odd_secret_rank);
}

/* A root given by this host's name: wherever the name resolves here (loopback, as on many
 * distributions, or the host's own address), rank 0 serves the root so that the ranks reach it. */
Test(launch, tutti_root_given_by_host_name, .timeout = 60)
{
    integ_clear_launcher_env();
    char name[32] = "";
    cr_assert_eq(gethostname(name, sizeof(name) - 1), 0);
    run_tutti_job(name, env_rank);
}

/* Every rank refuses a root port outside TUTTI_PORT_RANGE at once, naming both. */
static int port_outside_range_rank(const struct integ_ctx *ctx)
{
    (void)ctx;
    tutti_comm_t *comm = NULL;
    int64_t t0 = integ_now_ns();
    tutti_status_t st = tutti_comm_init_env(&comm);
    const char *msg = tutti_last_error(NULL);
    ICHECK(st == TUTTI_ERR_INVALID_ARG, "init returned %s: %s", tutti_status_name(st), msg);
    ICHECK(integ_contains(msg, "outside TUTTI_PORT_RANGE 1-2") && integ_contains(msg, "TUTTI_ROOT"),
           "the message does not name the range and the root: %s", msg);
    ICHECK(integ_now_ns() - t0 < 3000000000LL, "the error took %.1f s",
           (double)(integ_now_ns() - t0) / 1e9);
    return 0;
}

Test(launch, root_port_outside_the_port_range_fails_every_rank_at_once, .timeout = 60)
{
    integ_clear_launcher_env();
    integ_setenv("TUTTI_PORT_RANGE", "1-2");
    run_tutti_job(NULL, port_outside_range_rank);
}

/* ---------------------------------------------------------------- Slurm */

static void slurm_env(int rank, int nranks, void *arg)
{
    integ_setenv_int("SLURM_PROCID", rank);
    integ_setenv_int("SLURM_LOCALID", rank);
    integ_setenv_int("SLURM_NTASKS", nranks);
    integ_setenv("SLURM_NNODES", "1");
    integ_setenv_int("SLURM_JOB_ID", *(long *)arg); /* a job of its own: its own rendezvous file */
    integ_setenv("SLURM_STEP_ID", "0");
    integ_setenv("SLURM_JOB_NODELIST", "localhost");
}

Test(launch, slurm_single_node_variables, .timeout = 60)
{
    integ_clear_launcher_env();
    static long job;
    job = 900000000L + (long)getpid();
    run_env_job(slurm_env, &job, env_rank);
}

/* ---------------------------------------------------------------- nothing set */

static int no_launcher_rank(const struct integ_ctx *ctx)
{
    (void)ctx;
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_env(&comm);
    const char *msg = tutti_last_error(NULL);
    ICHECK(st == TUTTI_ERR_INVALID_ARG && comm == NULL, "init_env without a launcher: %s: %s",
           tutti_status_name(st), msg);
    static const char *const must[] = {"TUTTI_RANK", "TUTTI_NRANKS",         "TUTTI_ROOT",  "RANK",
                                       "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++) {
        ICHECK(integ_contains(msg, must[i]), "the message does not list %s: %s", must[i], msg);
    }
    return 0;
}

Test(launch, no_launcher_variables_lists_what_to_set, .timeout = 30)
{
    integ_clear_launcher_env();
    struct integ_opts o = {.nranks = 1, .deadline_s = 20};
    integ_run(&o, no_launcher_rank);
}
