/*
 * example.c - the README's example, compiled and run by the test suite (tests/meson.build):
 * every rank contributes its rank number; after the all-reduce every rank holds the sum.
 * Start it under mpirun, srun or torchrun, or with TUTTI_RANK/TUTTI_NRANKS/TUTTI_ROOT set.
 */
#include <tutti.h>

#include <stdio.h>

int main(void)
{
    tutti_comm_t *comm;
    if (tutti_comm_init_env(&comm) != TUTTI_OK) { /* rank, size, root from the launcher */
        fprintf(stderr, "init: %s\n", tutti_last_error(NULL));
        return 1;
    }
    int rank, size;
    tutti_comm_rank(comm, &rank);
    tutti_comm_size(comm, &size);

    float grad[4] = {(float)rank, (float)rank, (float)rank, (float)rank};
    tutti_status_t st = tutti_allreduce(grad, grad, 4, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
    if (st != TUTTI_OK) {
        fprintf(stderr, "allreduce: %s\n", tutti_last_error(comm));
        return 1;
    }
    float expect = (float)(size * (size - 1) / 2);
    printf("rank %d of %d: grad[0] = %g (expected %g)\n", rank, size, grad[0], expect);
    tutti_comm_destroy(comm);
    return grad[0] == expect ? 0 : 1;
}
