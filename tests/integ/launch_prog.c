/*
 * launch_prog.c - a small tutti program for launchers (mpirun in test_launch.c): it builds the
 * world communicator with tutti_comm_init_env, checks rank and size against the launcher's
 * variables, runs an all-reduce and a broadcast and checks them. Exit status 0 when all is
 * right; otherwise it prints why on stderr and exits with 1 (2 when the communicator could not
 * be made).
 */
#include "tutti.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 100003

static int fail(int rank, const char *what, tutti_status_t st, const tutti_comm_t *comm)
{
    fprintf(stderr, "launch_prog rank %d (pid %d): %s: %s: %s\n", rank, (int)getpid(), what,
            tutti_status_name(st), tutti_last_error(comm));
    return 1;
}

/* The launcher's own idea of the size (-1 when it says nothing we know). */
static int launcher_size(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS", "TUTTI_NRANKS"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = getenv(names[i]);
        if (v != NULL) {
            return atoi(v);
        }
    }
    return -1;
}

int main(void)
{
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_env(&comm);
    if (st != TUTTI_OK) {
        fail(-1, "tutti_comm_init_env", st, NULL);
        return 2;
    }
    int rank = -1, n = -1;
    tutti_comm_rank(comm, &rank);
    tutti_comm_size(comm, &n);
    if (n != launcher_size()) {
        fprintf(stderr, "launch_prog rank %d: size %d, the launcher says %d\n", rank, n,
                launcher_size());
        return 1;
    }
    static int64_t a[COUNT], b[COUNT];
    for (int i = 0; i < COUNT; i++) {
        a[i] = (int64_t)i * (rank + 1);
    }
    if ((st = tutti_allreduce(a, b, COUNT, TUTTI_INT64, TUTTI_SUM, comm, NULL)) != TUTTI_OK) {
        return fail(rank, "tutti_allreduce", st, comm);
    }
    for (int i = 0; i < COUNT; i++) {
        if (b[i] != (int64_t)i * n * (n + 1) / 2) {
            fprintf(stderr, "launch_prog rank %d: allreduce element %d is %lld\n", rank, i,
                    (long long)b[i]);
            return 1;
        }
    }
    int64_t token = rank == n - 1 ? 0x5eed : -1;
    if ((st = tutti_broadcast(&token, &token, 1, TUTTI_INT64, n - 1, comm, NULL)) != TUTTI_OK) {
        return fail(rank, "tutti_broadcast", st, comm);
    }
    if (token != 0x5eed) {
        fprintf(stderr, "launch_prog rank %d: broadcast gave %lld\n", rank, (long long)token);
        return 1;
    }
    if ((st = tutti_comm_destroy(comm)) != TUTTI_OK) {
        return fail(rank, "tutti_comm_destroy", st, NULL);
    }
    return 0;
}
