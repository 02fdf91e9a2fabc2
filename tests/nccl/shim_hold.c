/*
 * shim_hold.c - a thread's later collectives on a communicator enter it by the thread's hold
 * (src/nccl/comm.c, shim_enter_call), without the shim's lock or a reference; an abort from
 * another thread must still refuse every call that starts after it returned, let the calls
 * inside finish first (they read the communicator), and never free it under them. Under the
 * address sanitizer a call that read the freed object fails the run.
 */
#include "shim_hold.h"
#include "shim_check.h"
#include "shim_ranks.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define NCCLOK(call) NCCLOK_ON(NULL, call)

struct racer {
    ncclComm_t comm;
    atomic_int gone;   /* ncclCommAbort has returned */
    atomic_long ok;    /* calls that succeeded */
    long refused;      /* calls refused as aborted (inside) or not live (after) */
    char bad[160];     /* what went wrong, empty if nothing */
    atomic_int failed; /* bad was written (the racer stopped) */
};

static void *call_until_refused(void *p)
{
    struct racer *r = p;
    for (;;) {
        int gone = atomic_load(&r->gone);
        int64_t x = 5, y = 0;
        ncclResult_t res = ncclAllReduce(&x, &y, 1, ncclInt64, ncclSum, r->comm, NULL);
        if (res == ncclSuccess && (gone || y != 5)) {
            snprintf(r->bad, sizeof(r->bad), "a call %s succeeded with %lld",
                     gone ? "after the abort" : "before the abort", (long long)y);
            atomic_store(&r->failed, 1);
            return NULL;
        }
        if (res == ncclSuccess) {
            atomic_fetch_add(&r->ok, 1);
            continue;
        }
        if (res != ncclInvalidUsage && res != ncclInvalidArgument) {
            snprintf(r->bad, sizeof(r->bad), "a call returned %d", (int)res);
            atomic_store(&r->failed, 1);
            return NULL;
        }
        r->refused++;
        if (gone && res == ncclInvalidArgument) {
            return NULL; /* a call made after the abort returned was refused as not live */
        }
    }
}

int t_abort_races_held_calls(ncclComm_t comm, int rank, int n)
{
    (void)comm;
    (void)rank;
    (void)n;
    enum { ROUNDS = 60 };
    for (int round = 0; round < ROUNDS; round++) {
        ncclUniqueId id;
        struct racer r = {0};
        NCCLOK(ncclGetUniqueId(&id));
        NCCLOK(ncclCommInitRank(&r.comm, 1, id, 0));
        pthread_t t;
        CHECK(pthread_create(&t, NULL, call_until_refused, &r) == 0, "pthread_create");
        /* a few held calls first (the thread's first call takes the lock), then abort */
        long want = 2 + round % 7;
        while (atomic_load(&r.ok) < want && !atomic_load(&r.failed)) {
            sched_yield();
        }
        ncclResult_t ab = ncclCommAbort(r.comm);
        atomic_store(&r.gone, 1);
        pthread_join(t, NULL);
        CHECK(ab == ncclSuccess, "round %d: ncclCommAbort -> %d", round, (int)ab);
        CHECK(r.bad[0] == 0, "round %d: %s", round, r.bad);
        CHECK(r.refused >= 1, "round %d: the caller stopped without a refusal", round);
    }
    return 0;
}
