/*
 * ipc.c - the CUDA IPC all-reduce (one-shot) between the 2-8 ranks of one host.
 *
 * Set-up, once per communicator at its first device all-reduce (every rank makes the same call,
 * so every rank is there): each rank allocates a device scratch of two halves, each an input
 * and a result area of TUTTI_IPC_CHUNK bytes, and exports its IPC handle; rank 0 creates a
 * shared-memory segment of flags that every rank registers with CUDA; a host all-gather swaps
 * handles and pids, each rank maps the others' scratch, and a host all-reduce agrees that everyone
 * succeeded (else nobody uses the path and the calls are staged instead).
 *
 * Each call's first piece passes a gate, in place of its first barrier, that compares the
 * ranks' operation fingerprints (fp.h): the host publishes the call's fingerprint in the segment
 * (a ring of records per rank); the stream copies the input piece into its own scratch, writes
 * arrived[me] (no wait) and gate[me] = k << 16 | hash (k: the collective's sequence number),
 * then waits until gate[q] >= that for every q. Ranks whose calls match write the same value
 * and pass, each peer's copy done. Where they differ, only the ranks with the smallest value
 * pass: they read the others' scratch for that first piece (at most TUTTI_IPC_CHUNK bytes, in
 * bounds; the result is undefined, as after any failure) and stop at the next barrier, which
 * the others never reach; the watchdog, which sees two gates of the same call with different
 * values, fails the communicator with TUTTI_ERR_MISMATCH naming both ranks and both calls
 * (from the records), then releases the streams. A call of no elements is the gate alone.
 * Folding the gate into the first barrier saves one synchronization between the streams per
 * call (a ping-pong between two processes' streams takes 6.6 us under MPS on an H200).
 *
 * Piece s of a call (TUTTI_IPC_CHUNK bytes, half h = s mod 2), all enqueued on the stream:
 *   copy the input piece into half h of my scratch; arrive (write arrived[me] = t, the next
 *   tick) and wait until arrived[q] >= t for every q (the first piece: the gate);
 *   one-shot: reduce the n inputs, in rank order (the same bits on every rank), into the output;
 *   two-shot (pieces of at least TUTTI_IPC_TWOSHOT_MIN bytes): reduce my slice of the n inputs
 *   into my result area, arrive and wait again (tick t + 1), copy every rank's slice out;
 *   write done[me] = s.
 * Half h is written again at piece s + 2, after this rank's first wait of piece s + 1, which
 * every q arrives at only after it finished reading half h of piece s: nobody still reads it.
 *
 * A watchdog thread turns a peer that stops into an error: when this rank's stream has arrived
 * at a piece (arrived[me] >= s) and a peer's has not for the communicator's timeout
 * (params->timeout_ms, else TUTTI_TIMEOUT), the communicator fails (TUTTI_ERR_REMOTE naming
 * the rank when its process is gone, else TUTTI_ERR_TIMEOUT), records who failed in the
 * segment (the other ranks' watchdogs fail theirs with TUTTI_ERR_REMOTE naming both) and raises
 * the flags so that every stream goes on. Destroy waits for done[q] of every rank, for as long
 * again, before freeing memory the others map.
 */
#include "gpu/ipc.h"
#include "base/check.h"
#include "gpu/gpu.h"
#include "gpu/devops.h"
#include "base/env.h"
#include "exec/fail.h"
#include "exec/fp.h"
#include "base/log.h"
#include "base/proc.h"
#include "run/service.h"
#include "topology/layout.h"
#include "base/util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define IPC_MAX_RANKS 8 /* the reduction kernel's sources */
#define FLAG_STRIDE   8 /* uint64_t words: one 64-byte line per flag */
#define FP_RING       4 /* fingerprint records kept per rank (calls k mod FP_RING) */
/* flags: arrived[8], done[8], gate[8], the failure record; then the fingerprint records */
#define NFLAGS      (3 * IPC_MAX_RANKS)
#define FLAGS_BYTES ((NFLAGS + 1) * FLAG_STRIDE * sizeof(uint64_t))

struct ipc_peer_info {
    struct tutti_ipc_handle handle;
    int32_t pid;
    int32_t ok;
};

struct tutti_ipc_state {
    const struct tutti_devops *ops;
    int usable; /* 0: set up failed on some rank, the calls are staged */
    int nranks, rank;
    size_t chunk;
    char *peer[IPC_MAX_RANKS]; /* every rank's scratch as mapped here (mine: my allocation) */
    int32_t pid[IPC_MAX_RANKS];
    volatile uint64_t *flags; /* shared: arrived[q] at q * FLAG_STRIDE, done[q] after them */
    size_t flags_bytes;
    int registered;
    uint64_t seq;  /* pieces issued */
    uint64_t tick; /* arrivals issued: one per one-shot piece, two per two-shot piece */
    pthread_t watchdog;
    int watching;
    _Atomic int stop;
    struct tutti_gpu *gpu;
};

static volatile uint64_t *arrived(struct tutti_ipc_state *st, int q)
{
    return st->flags + (size_t)q * FLAG_STRIDE;
}

static volatile uint64_t *done_flag(struct tutti_ipc_state *st, int q)
{
    return st->flags + (size_t)(IPC_MAX_RANKS + q) * FLAG_STRIDE;
}

static void shm_name(const struct tutti_gpu *gpu, int32_t pid0, char *out, size_t len)
{
    snprintf(out, len, "/tutti-ipc-%016" PRIx64 "-%d", gpu->fab->comm_id, (int)pid0);
}

static volatile uint64_t *gate(struct tutti_ipc_state *st, int q)
{
    return st->flags + (size_t)(2 * IPC_MAX_RANKS + q) * FLAG_STRIDE;
}

/* The failure record after the flags: reporter + 1 (0: none), culprit, status, and for a
 * mismatch the sequence number of the call. */
static volatile uint64_t *fail_info(struct tutti_ipc_state *st)
{
    return st->flags + (size_t)NFLAGS * FLAG_STRIDE;
}

/* Rank q's record of its call k (the words of its fingerprint). */
static volatile uint64_t *fp_rec(struct tutti_ipc_state *st, int q, uint64_t k)
{
    volatile uint64_t *recs = (volatile uint64_t *)((volatile char *)st->flags + FLAGS_BYTES);
    return recs + ((size_t)q * FP_RING + (size_t)(k % FP_RING)) * 4;
}

/* Raise every flag: each stream waiting on this communicator goes on. */
static void release_all(struct tutti_ipc_state *st)
{
    for (int q = 0; q < NFLAGS; q++) {
        __atomic_store_n(st->flags + (size_t)q * FLAG_STRIDE, UINT64_MAX, __ATOMIC_RELEASE);
    }
}

/*
 * "allreduce #5 (1000 x float32, sum)" from rank q's record of call k, or "a call whose record
 * is gone" (it has issued FP_RING more since, or was writing it: the words are read twice).
 */
static void describe_rec(struct tutti_ipc_state *st, int q, uint64_t k, char *buf, size_t len)
{
    volatile uint64_t *r = fp_rec(st, q, k);
    struct tutti_fp fp;
    struct tutti_fp_desc d;
    char why[160];
    for (int i = 0; i < 4; i++) {
        fp.w[i] = __atomic_load_n(&r[i], __ATOMIC_ACQUIRE);
    }
    if (__atomic_load_n(&r[0], __ATOMIC_ACQUIRE) != fp.w[0] ||
        tutti__fp_decode(&fp, st->nranks, &d, why, sizeof(why)) != 0 || d.seq != k) {
        snprintf(buf, len, "collective #%llu (its record is gone)", (unsigned long long)k);
        return;
    }
    tutti__fp_str(&d, 0, buf, len);
}

/* "mismatched calls: allreduce #5 (...) on rank 1 against allreduce #5 (...) on rank 0". */
static void mismatch_msg(struct tutti_ipc_state *st, uint64_t k, int a, int b, char *buf,
                         size_t len)
{
    char da[96], db[96];
    describe_rec(st, a, k, da, sizeof(da));
    describe_rec(st, b, k, db, sizeof(db));
    snprintf(buf, len, "mismatched calls: %s on rank %d (pid %d) against %s on rank %d", da, a,
             (int)st->pid[a], db, b);
}

/* A gate value: the call's sequence number in the high 48 bits (2^48 calls of at least a few
 * microseconds each take centuries: it never wraps; with 32 bits, after 2^32 calls a stale gate
 * of the previous round passed ">=" and a first piece ran unsynchronized, issue 36 item 6), a
 * hash of its fingerprint in the low 16 (the watchdog also compares the whole records). */
#define GATE_HASH_BITS 16

uint64_t tutti__ipc_gate_value(uint64_t seq, uint64_t hash)
{
    return (seq & (UINT64_MAX >> GATE_HASH_BITS)) << GATE_HASH_BITS | hash >> (64 - GATE_HASH_BITS);
}

/* Do rank q's and this rank's records of call k differ (both written, read whole)? */
static int records_differ(struct tutti_ipc_state *st, int q, uint64_t k)
{
    volatile uint64_t *a = fp_rec(st, st->rank, k), *b = fp_rec(st, q, k);
    uint64_t wa[4], wb[4];
    for (int i = 0; i < 4; i++) {
        wa[i] = __atomic_load_n(&a[i], __ATOMIC_ACQUIRE);
        wb[i] = __atomic_load_n(&b[i], __ATOMIC_ACQUIRE);
    }
    if (wa[0] == UINT64_MAX || wb[0] == UINT64_MAX ||
        __atomic_load_n(&a[0], __ATOMIC_ACQUIRE) != wa[0] ||
        __atomic_load_n(&b[0], __ATOMIC_ACQUIRE) != wb[0]) {
        return 0; /* being written: the next look decides */
    }
    return wa[1] != wb[1] || wa[2] != wb[2] || wa[3] != wb[3];
}

/* The gates of call k differ between this rank and rank q: fail, tell the others, release. */
static void fail_mismatch(struct tutti_ipc_state *st, uint64_t k, int q)
{
    char msg[300];
    mismatch_msg(st, k, q, st->rank, msg, sizeof(msg));
    tutti__set_error(&st->gpu->fab->err, TUTTI_ERR_MISMATCH, "allreduce on a stream (CUDA IPC): %s",
                     msg);
    tutti__fabric_fail(st->gpu->fab, TUTTI_ERR_MISMATCH, q);
    volatile uint64_t *fi = fail_info(st);
    fi[1] = (uint64_t)q;
    fi[2] = (uint64_t)TUTTI_ERR_MISMATCH;
    fi[3] = k;
    __atomic_store_n(&fi[0], (uint64_t)st->rank + 1, __ATOMIC_RELEASE);
    release_all(st);
}

/* Has another rank's watchdog failed the communicator? Then fail ours the same way (once). */
static int adopt_failure(struct tutti_ipc_state *st)
{
    volatile uint64_t *fi = fail_info(st);
    uint64_t reporter = __atomic_load_n(&fi[0], __ATOMIC_ACQUIRE);
    if (reporter == 0 || reporter == (uint64_t)st->rank + 1) {
        return 0;
    }
    if (tutti__fabric_health(st->gpu->fab) == TUTTI_OK &&
        (tutti_status_t)fi[2] == TUTTI_ERR_MISMATCH) {
        char msg[300];
        mismatch_msg(st, fi[3], (int)fi[1], (int)reporter - 1, msg, sizeof(msg));
        tutti__set_error(&st->gpu->fab->err, TUTTI_ERR_MISMATCH,
                         "allreduce on a stream (CUDA IPC): rank %d reports: %s", (int)reporter - 1,
                         msg);
        tutti__fabric_fail(st->gpu->fab, TUTTI_ERR_MISMATCH, (int)fi[1]);
    } else if (tutti__fabric_health(st->gpu->fab) == TUTTI_OK) {
        int q = (int)fi[1];
        tutti_status_t why = (tutti_status_t)fi[2];
        tutti__set_error(&st->gpu->fab->err, TUTTI_ERR_REMOTE,
                         "allreduce on a stream (CUDA IPC): rank %d reports that rank %d (pid %d) "
                         "%s",
                         (int)reporter - 1, q, (int)st->pid[q],
                         why == TUTTI_ERR_REMOTE ? "died (its process ended)"
                                                 : "did not arrive within the timeout");
        tutti__fabric_fail(st->gpu->fab, TUTTI_ERR_REMOTE, q);
    }
    return 1;
}

void tutti__ipc_check(struct tutti_gpu *gpu)
{
    if (gpu->ipc != NULL && gpu->ipc->usable) {
        (void)adopt_failure(gpu->ipc);
    }
}

/* Whether peer q's process has ended, a zombie included (kill(pid, 0) still finds a zombie:
 * a peer that died while its parent did not reap it read as alive). The pids were exchanged
 * among the local ranks, in this process's pid namespace. */
static int peer_gone(const struct tutti_ipc_state *st, int q)
{
    struct tutti_proc_id self, id = {0};
    tutti__proc_self(&self);
    id.pid = (uint32_t)st->pid[q];
    id.pidns = self.pidns;
    return tutti__proc_alive(&id) == 0;
}

/* A peer that did not arrive within the communicator's timeout: fail, tell the others, release. */
static void fail_late(struct tutti_ipc_state *st, int q, uint64_t mine, int64_t waited)
{
    struct tutti_gpu *gpu = st->gpu;
    volatile uint64_t *fi = fail_info(st);
    int gone = peer_gone(st, q);
    tutti_status_t err = gone ? TUTTI_ERR_REMOTE : TUTTI_ERR_TIMEOUT;
    tutti__set_error(&gpu->fab->err, err,
                     "allreduce on a stream (CUDA IPC), piece %" PRIu64 ": rank %d (pid %d) "
                     "%s; rank %d waited %.1f s (the communicator's timeout)",
                     mine, q, (int)st->pid[q], gone ? "died (its process ended)" : "did not arrive",
                     st->rank, (double)waited / 1e9);
    tutti__fabric_fail(gpu->fab, err, q);
    fi[1] = (uint64_t)q;
    fi[2] = (uint64_t)err;
    __atomic_store_n(&fi[0], (uint64_t)st->rank + 1, __ATOMIC_RELEASE);
    release_all(st);
}

/*
 * The watchdog: the gates of one call with different values (calls that differ), or a peer
 * whose stream does not arrive where this rank's waits for it (at a barrier, or at the gate of
 * a later call than the peer's).
 */
static void *watch(void *arg)
{
    struct tutti_ipc_state *st = arg;
    /* the communicator's own timeout (params->timeout_ms, else TUTTI_TIMEOUT), as for host calls */
    int64_t timeout = st->gpu->fab->cfg.timeout_ns;
    uint64_t seen_a[IPC_MAX_RANKS] = {0}, seen_g[IPC_MAX_RANKS] = {0};
    int64_t since[IPC_MAX_RANKS];
    /* a peer is waited for from now on, not since the clock's zero (boot): else a peer whose
     * stream had not yet arrived at the first sample would count as late since boot */
    for (int q = 0; q < IPC_MAX_RANKS; q++) {
        since[q] = tutti__now_ns();
    }
    while (!atomic_load(&st->stop)) {
        usleep(20000);
        if (adopt_failure(st)) {
            return NULL;
        }
        uint64_t mine = __atomic_load_n(arrived(st, st->rank), __ATOMIC_ACQUIRE);
        uint64_t gm = __atomic_load_n(gate(st, st->rank), __ATOMIC_ACQUIRE);
        int64_t now = tutti__now_ns();
        for (int q = 0; q < st->nranks && mine != UINT64_MAX && gm != UINT64_MAX; q++) {
            uint64_t theirs = __atomic_load_n(arrived(st, q), __ATOMIC_ACQUIRE);
            uint64_t gq = __atomic_load_n(gate(st, q), __ATOMIC_ACQUIRE);
            uint64_t kq = gq >> GATE_HASH_BITS, km = gm >> GATE_HASH_BITS;
            if (gq != UINT64_MAX && kq == km && (gq != gm || records_differ(st, q, km))) {
                fail_mismatch(st, km, q);
                return NULL;
            }
            int late = theirs < mine || kq < km;
            if (!late || theirs != seen_a[q] || gq != seen_g[q]) {
                seen_a[q] = theirs;
                seen_g[q] = gq;
                since[q] = now;
                continue;
            }
            if (now - since[q] >= timeout) {
                fail_late(st, q, mine, now - since[q]);
                return NULL;
            }
        }
    }
    return NULL;
}

static int ipc_offered(const struct tutti_devops *ops)
{
    return ops->dev_alloc != NULL && ops->ipc_export != NULL && ops->ipc_import != NULL &&
           ops->write_value != NULL && ops->reduce != NULL && ops->host_register != NULL;
}

/* This rank's half of the set-up before the exchange: scratch, handle, rank 0's segment. */
static int setup_local(struct tutti_gpu *gpu, struct tutti_ipc_state *st, struct ipc_peer_info *me)
{
    const struct tutti_devops *ops = st->ops;
    void *scratch = NULL;
    if (ops->dev_alloc(&scratch, 4 * st->chunk) != 0) {
        return -1;
    }
    st->peer[st->rank] = scratch;
    if (ops->ipc_export(scratch, &me->handle) != 0) {
        return -1;
    }
    if (st->rank == 0) {
        char name[80];
        shm_name(gpu, me->pid, name, sizeof(name));
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)st->flags_bytes) != 0) {
            if (fd >= 0) {
                close(fd);
                shm_unlink(name);
            }
            return -1;
        }
        void *m = mmap(NULL, st->flags_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) {
            shm_unlink(name);
            return -1;
        }
        st->flags = m;
    }
    return 0;
}

/* After the exchange: map the peers' scratch and the flags. */
static int setup_peers(struct tutti_gpu *gpu, struct tutti_ipc_state *st,
                       const struct ipc_peer_info *all)
{
    for (int q = 0; q < st->nranks; q++) {
        st->pid[q] = all[q].pid;
        if (q != st->rank && st->ops->ipc_import(&all[q].handle, (void **)&st->peer[q]) != 0) {
            return -1;
        }
    }
    if (st->rank != 0) {
        char name[80];
        shm_name(gpu, all[0].pid, name, sizeof(name));
        int fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0) {
            return -1;
        }
        void *m = mmap(NULL, st->flags_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) {
            return -1;
        }
        st->flags = m;
    }
    if (st->ops->host_register((void *)st->flags, st->flags_bytes) != 0) {
        return -1;
    }
    st->registered = 1;
    return 0;
}

/* Unmap and free what this rank holds (nothing of it may be in use any more). */
static void teardown(struct tutti_ipc_state *st)
{
    for (int q = 0; q < st->nranks; q++) {
        if (st->peer[q] != NULL) {
            (void)(q == st->rank ? st->ops->dev_free(st->peer[q])
                                 : st->ops->ipc_close(st->peer[q]));
        }
    }
    if (st->flags != NULL) {
        if (st->registered) {
            (void)st->ops->host_unregister((void *)st->flags);
        }
        munmap((void *)st->flags, st->flags_bytes);
    }
    free(st);
}

/* The collective set-up; gpu->ipc is set either way (usable or not). */
static tutti_status_t setup(struct tutti_gpu *gpu)
{
    struct tutti_ipc_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_NO_MEMORY,
                                "no memory for the CUDA IPC state");
    }
    st->ops = tutti__devops();
    st->gpu = gpu;
    st->rank = gpu->fab->rank;
    st->nranks = gpu->fab->nranks;
    st->chunk = (tutti__env()->IPC_CHUNK + 255) & ~(size_t)255;
    st->flags_bytes = FLAGS_BYTES + (size_t)IPC_MAX_RANKS * FP_RING * sizeof(struct tutti_fp);
    struct ipc_peer_info me = {.pid = (int32_t)getpid()},
                         *all = calloc((size_t)gpu->fab->nranks, sizeof(*all));
    if (all == NULL) {
        free(st);
        return tutti__set_error(&gpu->fab->err, TUTTI_ERR_NO_MEMORY,
                                "no memory for the CUDA IPC set-up");
    }
    me.ok = setup_local(gpu, st, &me) == 0;
    tutti_status_t rc = tutti__svc_allgather(gpu->run, &me, all, sizeof(me), TUTTI_UINT8);
    int32_t ok = rc == TUTTI_OK && me.ok;
    for (int q = 0; q < gpu->fab->nranks && ok; q++) {
        ok = all[q].ok;
    }
    if (ok) {
        ok = setup_peers(gpu, st, all) == 0;
    }
    if (rc == TUTTI_OK) {
        rc = tutti__svc_allreduce(gpu->run, &ok, &ok, 1, TUTTI_INT32, TUTTI_MIN);
    }
    if (gpu->fab->rank == 0 && all[0].pid != 0) { /* everyone has mapped the flags, or gave up */
        char name[80];
        shm_name(gpu, all[0].pid, name, sizeof(name));
        shm_unlink(name);
    }
    free(all);
    if (rc != TUTTI_OK) {
        teardown(st);
        return rc;
    }
    st->usable = ok;
    if (ok && pthread_create(&st->watchdog, NULL, watch, st) == 0) {
        st->watching = 1;
    } else if (ok) {
        st->usable = 0;
    }
    tutti_info(TUTTI_SUBSYS_COLL, "CUDA IPC all-reduce: %s (%d ranks, %zu-byte pieces)",
               st->usable ? "ready" : "not available on every rank; staging instead",
               gpu->fab->nranks, st->chunk);
    gpu->ipc = st;
    return TUTTI_OK;
}

tutti_status_t tutti__ipc_wanted(struct tutti_gpu *gpu, const struct tutti_op_desc *op, int *use_p)
{
    *use_p = 0;
    const struct tutti_devops *ops = tutti__devops();
    /* A pre-multiplied sum goes staged: the host scales each rank's input as it reads it
     * (exec.c); the IPC path's kernels reduce the inputs as they are. */
    if (op->coll != TUTTI_COLL_ALLREDUCE || op->count == 0 || tutti__env()->IPC == 0 ||
        (int)op->op == TUTTI_OP_PREMUL || gpu->fab->nranks < 2 ||
        gpu->fab->nranks > IPC_MAX_RANKS || ops == NULL || !ipc_offered(ops) ||
        (gpu->fab->layout != NULL && gpu->fab->layout->nhosts != 1)) {
        return TUTTI_OK;
    }
    int sdev = 0, rdev = 0;
    if (ops->is_device(op->sendbuf, &sdev) != 0 || ops->is_device(op->recvbuf, &rdev) != 0 ||
        !sdev || !rdev) {
        return TUTTI_OK;
    }
    if (gpu->ipc == NULL) {
        TUTTI_CHECK(setup(gpu));
    }
    *use_p = gpu->ipc->usable;
    return TUTTI_OK;
}

/* Enqueue "flag(me) = v, then wait until every rank's flag(q) >= v" (flag: arrived or gate). */
static int arrive(struct tutti_ipc_state *st,
                  volatile uint64_t *(*flag)(struct tutti_ipc_state *, int), void *stream,
                  uint64_t v)
{
    const struct tutti_devops *d = st->ops;
    int err = d->write_value(stream, flag(st, st->rank), v);
    for (int q = 0; q < st->nranks && err == 0; q++) {
        if (q != st->rank) {
            err = d->wait_geq(stream, flag(st, q), v);
        }
    }
    return err;
}

/* Enqueue "arrived[me] = tick, then wait until every rank's arrived >= tick". */
static int barrier(struct tutti_ipc_state *st, void *stream, uint64_t tick)
{
    return arrive(st, arrived, stream, tick);
}

/*
 * One piece of n elements at byte offset off. Scratch half h holds the input piece, then (two-
 * shot) the reduced slices after it. One-shot: every rank reduces all n elements from every
 * scratch. Two-shot: rank q reduces slice q from every scratch into its own result area, a
 * second barrier, then every rank copies every slice from its owner: each rank reads 2 x the
 * piece instead of nranks x. Either way each element is folded in rank order.
 */
static int piece(struct tutti_ipc_state *st, const struct tutti_op_desc *op, size_t off, size_t n,
                 const uint64_t *gate_v, void *stream)
{
    const struct tutti_devops *d = st->ops;
    size_t es = tutti_datatype_size(op->dt);
    uint64_t s = ++st->seq;
    size_t half = (size_t)(s & 1) * 2 * st->chunk;
    int divisor = op->op == TUTTI_AVG ? st->nranks : 1;
    int two = n * es >= tutti__env()->IPC_TWOSHOT_MIN && n >= (size_t)st->nranks;
    const void *src[IPC_MAX_RANKS];
    char *out = (char *)op->recvbuf + off;
    int err =
        d->copy_async(st->peer[st->rank] + half, (const char *)op->sendbuf + off, n * es, stream);
    if (err == 0 && gate_v != NULL) {
        /* a call's first piece: the gate is its barrier (a rank writes its gate after its copy) */
        err = d->write_value(stream, arrived(st, st->rank), ++st->tick);
        err = err != 0 ? err : arrive(st, gate, stream, *gate_v);
    } else if (err == 0) {
        err = barrier(st, stream, ++st->tick);
    }
    if (!two) {
        for (int q = 0; q < st->nranks; q++) {
            src[q] = st->peer[q] + half;
        }
        err = err != 0 ? err : d->reduce(src, st->nranks, out, n, op->dt, op->op, divisor, stream);
    } else {
        /* slices of `per` elements, a multiple of 64 bytes where the piece allows */
        size_t line = 64 / es > 0 ? 64 / es : 1;
        size_t per = ((n + (size_t)st->nranks - 1) / (size_t)st->nranks + line - 1) / line * line;
        size_t mine = (size_t)st->rank * per;
        size_t cnt = mine < n ? TUTTI_MIN(per, n - mine) : 0;
        for (int q = 0; q < st->nranks; q++) {
            src[q] = st->peer[q] + half + mine * es;
        }
        if (err == 0 && cnt > 0) {
            err = d->reduce(src, st->nranks, st->peer[st->rank] + half + st->chunk + mine * es, cnt,
                            op->dt, op->op, divisor, stream);
        }
        if (err == 0) {
            err = barrier(st, stream, ++st->tick);
        }
        for (int q = 0; q < st->nranks && err == 0; q++) {
            size_t first = (size_t)q * per;
            if (first < n) {
                err = d->copy_async(out + first * es, st->peer[q] + half + st->chunk + first * es,
                                    TUTTI_MIN(per, n - first) * es, stream);
            }
        }
    }
    return err != 0 ? err : d->write_value(stream, done_flag(st, st->rank), s);
}

/*
 * Publish this rank's fingerprint of call op (its seq issued) and return its gate value
 * (tutti__ipc_gate_value; see the top of the file).
 */
static uint64_t fp_gate(struct tutti_ipc_state *st, const struct tutti_op_desc *op)
{
    struct tutti_fp fp;
    tutti__fp_make(op, st->rank, &fp);
    volatile uint64_t *rec = fp_rec(st, st->rank, op->seq);
    __atomic_store_n(&rec[0], UINT64_MAX, __ATOMIC_RELEASE); /* being written */
    for (int i = 3; i >= 0; i--) {
        __atomic_store_n(&rec[i], fp.w[i], __ATOMIC_RELEASE);
    }
    uint64_t h = fp.w[1] * 0x9e3779b97f4a7c15ull ^ fp.w[2] * 0xbf58476d1ce4e5b9ull ^
                 fp.w[3] * 0x94d049bb133111ebull;
    return tutti__ipc_gate_value(op->seq, h);
}

tutti_status_t tutti__ipc_allreduce(struct tutti_gpu *gpu, const struct tutti_op_desc *op,
                                    void *stream)
{
    struct tutti_ipc_state *st = gpu->ipc;
    struct tutti_op_desc call = *op;
    tutti__fp_issue(gpu->fab, &call); /* issued now, in order with the communicator's other calls */
    op = &call;
    size_t es = tutti_datatype_size(op->dt), per = st->chunk / es;
    uint64_t gate_v = fp_gate(st, op);
    int err = op->count == 0 ? arrive(st, gate, stream, gate_v) : 0;
    for (size_t first = 0; first < op->count && err == 0; first += per) {
        err = piece(st, op, first * es, TUTTI_MIN(per, op->count - first),
                    first == 0 ? &gate_v : NULL, stream);
    }
    if (err != 0) {
        tutti__set_error(&gpu->fab->err, TUTTI_ERR_SYSTEM,
                         "allreduce (CUDA IPC): enqueueing on the "
                         "stream: %s",
                         st->ops->error_string(err));
        release_all(st);
        return tutti__fabric_fail(gpu->fab, TUTTI_ERR_SYSTEM, gpu->fab->rank);
    }
    return TUTTI_OK;
}

void tutti__ipc_fini(struct tutti_gpu *gpu, int aborting)
{
    struct tutti_ipc_state *st = gpu->ipc;
    if (st == NULL) {
        return;
    }
    gpu->ipc = NULL;
    if (st->usable && !aborting) {
        /* Every rank's stream must be past its last reduction, which reads this scratch. */
        int64_t start = tutti__now_ns();
        for (int q = 0; q < st->nranks; q++) {
            while (__atomic_load_n(done_flag(st, q), __ATOMIC_ACQUIRE) < st->seq &&
                   tutti__now_ns() - start < gpu->fab->cfg.timeout_ns) {
                usleep(100);
            }
        }
        if (tutti__now_ns() - start >= gpu->fab->cfg.timeout_ns) {
            tutti_warn("tutti_comm_destroy: a rank's stream did not finish its CUDA IPC "
                       "all-reduces within the communicator's timeout; its memory is left mapped");
            aborting = 1;
        }
    }
    if (st->watching) {
        atomic_store(&st->stop, 1);
        pthread_join(st->watchdog, NULL);
    }
    if (aborting && st->usable) {
        release_all(st);
        return; /* streams may still read the scratch: it stays */
    }
    teardown(st);
}
