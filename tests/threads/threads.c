/*
 * threads.c - the library's threads at work in one standalone program, so that ThreadSanitizer
 * can watch them (Criterion's test runner cannot start under TSan: Criterion issue #274). Run
 * as N processes with TUTTI_RANK/TUTTI_NRANKS/TUTTI_ROOT (tests/run_example.sh). Each rank:
 *   1. posts asynchronous all-reduces (served by the communicator's progress thread) while the
 *      main thread polls them with tutti_test, then checks every result;
 *   2. runs blocking all-reduces on two communicators (the world and a split) from two threads
 *      at once, checking every result;
 *   3. blocks in a receive nobody answers while another thread calls tutti_comm_abort, which
 *      must end it: TUTTI_ERR_ABORTED, or TUTTI_ERR_REMOTE when a peer's abort notice came
 *      first (every rank aborts itself; which comes first is a race). Abort frees the
 *      communicator.
 * Prints "threads rank R: ok" and exits 0, or names the failed step and exits 1.
 */
#include <tutti.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NREQ   8
#define COUNT  1024
#define ROUNDS 20

static int rank, size;

#define FAIL(comm, ...)                                                                            \
    do {                                                                                           \
        fprintf(stderr, "threads rank %d: ", rank);                                                \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, " (%s)\n", tutti_last_error(comm));                                        \
        exit(1);                                                                                   \
    } while (0)

/* Element i of rank r's contribution in round k, and the sum over all ranks. */
static int32_t value(int r, int k, int i)
{
    return (int32_t)(r * 1000 + k * 7 + i % 13);
}

static int32_t expected(int k, int i)
{
    int32_t s = 0;
    for (int r = 0; r < size; r++) {
        s += value(r, k, i);
    }
    return s;
}

static void check(tutti_comm_t *comm, const int32_t *buf, int k, const char *what)
{
    for (int i = 0; i < COUNT; i++) {
        if (buf[i] != expected(k, i)) {
            FAIL(comm, "%s round %d: element %d is %d, expected %d", what, k, i, buf[i],
                 expected(k, i));
        }
    }
}

static void async_round(tutti_comm_t *comm)
{
    static int32_t buf[NREQ][COUNT];
    tutti_request_t *req[NREQ];
    for (int k = 0; k < NREQ; k++) {
        for (int i = 0; i < COUNT; i++) {
            buf[k][i] = value(rank, k, i);
        }
        if (tutti_iallreduce(buf[k], buf[k], COUNT, TUTTI_INT32, TUTTI_SUM, comm, &req[k]) !=
            TUTTI_OK) {
            FAIL(comm, "iallreduce %d", k);
        }
    }
    for (int left = NREQ; left > 0;) {
        left = 0;
        for (int k = 0; k < NREQ; k++) {
            int done = 1;
            if (req[k] != NULL && tutti_test(req[k], &done) != TUTTI_OK) {
                FAIL(comm, "test %d", k);
            }
            if (req[k] != NULL && done) {
                tutti_request_free(req[k]);
                req[k] = NULL;
                check(comm, buf[k], k, "async");
            }
            left += req[k] != NULL;
        }
    }
}

static void *blocking_rounds(void *arg)
{
    tutti_comm_t *comm = arg;
    int32_t buf[COUNT];
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < COUNT; i++) {
            buf[i] = value(rank, k, i);
        }
        if (tutti_allreduce(buf, buf, COUNT, TUTTI_INT32, TUTTI_SUM, comm, NULL) != TUTTI_OK) {
            FAIL(comm, "allreduce round %d", k);
        }
        check(comm, buf, k, "two communicators");
    }
    return NULL;
}

static void *abort_later(void *arg)
{
    usleep(200 * 1000);
    tutti_comm_abort(arg);
    return NULL;
}

int main(void)
{
    tutti_comm_t *world, *half;
    if (tutti_comm_init_env(&world) != TUTTI_OK) {
        FAIL(NULL, "init");
    }
    tutti_comm_rank(world, &rank);
    tutti_comm_size(world, &size);

    async_round(world);

    if (tutti_comm_split(world, 0, size - rank, &half) != TUTTI_OK) { /* reversed order */
        FAIL(world, "split");
    }
    pthread_t t;
    if (pthread_create(&t, NULL, blocking_rounds, half) != 0) {
        FAIL(world, "pthread_create");
    }
    blocking_rounds(world);
    pthread_join(t, NULL);
    tutti_comm_destroy(half);

    /* every rank waits for a message that never comes, until its own abort */
    int32_t never;
    if (pthread_create(&t, NULL, abort_later, world) != 0) {
        FAIL(world, "pthread_create");
    }
    tutti_status_t st = tutti_recv(&never, 1, TUTTI_INT32, (rank + 1) % size, world, NULL);
    pthread_join(t, NULL);
    if (st != TUTTI_ERR_ABORTED && st != TUTTI_ERR_REMOTE) { /* abort freed world */
        FAIL(NULL, "recv during abort returned %s, expected TUTTI_ERR_ABORTED or _REMOTE",
             tutti_status_name(st));
    }
    printf("threads rank %d: ok\n", rank);
    return 0;
}
