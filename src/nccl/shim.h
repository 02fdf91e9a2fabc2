/*
 * shim.h - the inside of the NCCL-ABI shim (libnccl.so.2): what an ncclComm_t is, how every
 * entry point enters and leaves a communicator, errors, the result table and the group state
 * shared by the files of src/nccl/. Only src/nccl/ includes it.
 *
 * Every entry point is defined once as pnccl<Name>; NCCL_API makes nccl<Name> a weak alias of
 * it, which is how NCCL itself ships (a profiler can interpose nccl<Name> and call pnccl<Name>).
 */
#ifndef TUTTI_NCCL_SHIM_H
#define TUTTI_NCCL_SHIM_H

#include "nccl.h"
#include "tutti.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* Define pnccl<name> and alias nccl<name> to it; the definition follows the macro. */
#define NCCL_API(ret, name, ...)                                                                   \
    ret nccl##name(__VA_ARGS__)                                                                    \
        __attribute__((weak, alias("pnccl" #name), visibility("default")));                        \
    __attribute__((visibility("default"))) ret pnccl##name(__VA_ARGS__)

/* Written into a live communicator, cleared when it is freed: a stale handle is refused. */
#define SHIM_COMM_MAGIC 0x7475636eu
#define SHIM_ERR_LEN    1024

/* A communicator's life, as NCCL describes it. */
enum shim_state {
    SHIM_INITIALIZING, /* a nonblocking or grouped init still running (ncclInProgress) */
    SHIM_READY,
    SHIM_INIT_FAILED, /* init failed; only destroy/abort and the queries are allowed */
    SHIM_FINALIZED,   /* ncclCommFinalize ran: tutti's communicator is gone, the handle stays */
};

/* A buffer recorded by ncclCommRegister or ncclCommWindowRegister. */
struct shim_reg {
    struct shim_reg *next;
    struct shim_reg *next_win; /* windows only: the process's list of live windows (mem.c) */
    void *buf;
    size_t size;
    int window; /* 1 for a window (ncclWindow_t), 0 for a registration handle */
    int flags;
    int rank; /* the communicator's rank (a window's own rank in the device API) */
    void *th; /* tutti_comm_register's handle (RDMA: sends from it need no copy), or NULL */
    tutti_window_t *tw;    /* windows: tutti's window (all-reduce in place on host memory) */
    struct ncclComm *comm; /* the communicator it belongs to */
};

struct ncclComm {
    struct ncclComm *next_live; /* the list of objects not yet freed (comm.c) */
    atomic_uint magic;
    atomic_int refs;      /* 1 for the handle, 1 per call inside (but held calls): freed at 0 */
    atomic_int callable;  /* READY, not suspended, not retired: a held call may run (comm.c) */
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;  /* signalled when state leaves SHIM_INITIALIZING */
    tutti_comm_t *tc;     /* NULL until init ends, and after finalize */
    enum shim_state state;
    ncclResult_t stored; /* the result of init (failed) or of finalize */
    int rank, nranks;
    int cudev;             /* the CUDA device of this rank; -1 on a host without CUDA */
    int blocking;          /* config.blocking: 0 makes init return ncclInProgress */
    int aborted;           /* ncclCommAbort ran: the last reference aborts tc */
    int revoked;           /* ncclCommRevoke ran: quiescent, its asynchronous error is success */
    int suspended;         /* ncclCommSuspend ran: calls are refused until ncclCommResume */
    int mem_suspended;     /* ... with NCCL_SUSPEND_MEM: the caches were released */
    uint64_t cache_seen;   /* suspendable bytes when last measured (comm_ops.c) */
    uint64_t persist_seen; /* bytes suspending keeps, when last measured */
    int grow_pending;      /* ncclCommGetUniqueId made grow_id; no ncclCommGrow used it yet */
    ncclUniqueId grow_id;
    tutti_comm_params_t params; /* what config asks of tutti's communicator at creation */
    unsigned coll_warned;       /* ncclCollConfig_t fields already named (config.c) */
    struct shim_reg *regs;
    char name[64]; /* config.commName, for messages */
    char err[SHIM_ERR_LEN];
};

/* ---- status.c: results and errors ---- */

/** NCCL's result for a tutti status (one table, every status mapped). */
ncclResult_t shim_result_of(tutti_status_t st);

/**
 * Record an error detected by the shim: in comm's message (ncclGetLastError(comm)), or in the
 * calling thread's when comm is NULL. Logs it at warn level through tutti. Returns res.
 */
ncclResult_t shim_error(struct ncclComm *comm, ncclResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * The result of a tutti call made for comm (NULL: not tied to one): on failure tutti's message
 * (the communicator's, else the thread's) is copied into comm's message. Returns the mapping.
 */
ncclResult_t shim_status(struct ncclComm *comm, tutti_status_t st);

/* ---- comm.c: the communicator's life and its entry/exit protocol ---- */

/**
 * Enter an entry point on comm: check the handle, take a reference, wait for a grouped or
 * nonblocking init to end, and refuse a failed init or a finalized communicator (`what` names
 * the entry point in messages). On success *c_p is the communicator, to be passed to
 * shim_leave(). On failure the error is recorded and returned, and nothing is to be left.
 */
ncclResult_t shim_enter(ncclComm_t comm, const char *what, struct ncclComm **c_p);

/** shim_enter() that accepts every state (for destroy, abort, finalize and the queries). */
ncclResult_t shim_enter_any(ncclComm_t comm, const char *what, struct ncclComm **c_p);

/**
 * shim_enter_any(), then take c->lock and wait until c's init has settled; on success the lock
 * is held. Inside the group that is making c this would never end: then the lock is released,
 * c left and ncclInvalidUsage returned (the caller returns it as is).
 */
ncclResult_t shim_enter_settled(ncclComm_t comm, const char *what, struct ncclComm **c_p);

/** Leave: drop the reference shim_enter() took (the last one frees the communicator). */
void shim_leave(struct ncclComm *c);

/**
 * shim_enter() for a call that neither keeps nor drops a reference past its own return (the
 * collectives): a thread that entered comm before, while nothing was freed since, holds it
 * without the live list's lock or a reference (base/hold.h); the free of comm waits for such
 * holds. Leave with shim_leave_call(), never shim_leave().
 */
ncclResult_t shim_enter_call(ncclComm_t comm, const char *what, struct ncclComm **c_p);

/** Leave what shim_enter_call() entered. */
void shim_leave_call(struct ncclComm *c);

/** Set c->callable from its state (the caller holds c->lock and has just changed state,
 * suspended or magic). */
void shim_callable_update(struct ncclComm *c);

/** A fresh communicator object (state SHIM_INITIALIZING, one reference), or NULL. */
struct ncclComm *shim_comm_new(void);

/* How a communicator is made, for the config fields that apply only at creation from an id. */
enum shim_made {
    SHIM_MADE_INIT,  /* ncclCommInitRank*, ncclCommGrow: tutti_comm_init_rank_params */
    SHIM_MADE_SPLIT, /* ncclCommSplit, ncclCommShrink: tutti's child inherits its parent's */
};

/**
 * Adopt a config (config.c): blocking (0 or 1), commName, and minCTAs/maxCTAs as bounds of
 * tutti's channels (at creation from an id); every other field that is set is named in one
 * warning for this communicator (accepted, no effect in tutti). Refuses a config not made by
 * NCCL_CONFIG_INITIALIZER (size, magic, version) and bad values with ncclInvalidArgument.
 */
ncclResult_t shim_config_apply(struct ncclComm *c, const ncclConfig_t *config, enum shim_made how);

/**
 * Check a collective's config (NULL: none) on c, entered, for the nccl*Config entry points
 * (config.c): refused
 * when not made by NCCL_COLLCONFIG_INITIALIZER (ncclInvalidArgument) or when it selects
 * algorithms with forceAlgSelection (ncclInvalidUsage: tutti cannot choose per call); each other
 * field set is named once per communicator. `what` names the entry point.
 */
ncclResult_t shim_coll_config(struct ncclComm *c, const ncclCollConfig_t *config, const char *what);

/**
 * ncclCommInitRank* (comm.c): a new communicator of nranks from id, now, at the group's end or
 * in a thread (nonblocking), on CUDA device `device` (-1: the current one).
 */
ncclResult_t shim_init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
                            const ncclConfig_t *config, int device, const char *what);

/** Once per process, on rank 0, with NCCL_DEBUG at VERSION or above (or tutti's level at info):
 * which library answers NCCL's calls (nccl_env.c). */
void shim_banner(int rank);

/**
 * Settle a communicator being created: ready around tc when st is TUTTI_OK (records rank, size
 * and the current CUDA device), else failed with tutti's message. Wakes threads waiting for it.
 * Returns the NCCL result of st.
 */
ncclResult_t shim_init_settle(struct ncclComm *c, tutti_status_t st, tutti_comm_t *tc);

/* ---- group.c: the thread's group and work deferred to its end ---- */

/** Nonzero while the calling thread is inside ncclGroupStart/ncclGroupEnd. */
int shim_in_group(void);

/**
 * Run fn(arg) at the outermost ncclGroupEnd of this thread, each deferred job in a thread of its
 * own (so grouped inits, splits and grows of several ranks meet), or now when no group is
 * open. fn
 * returns a result; the group's result is the first failure.
 */
ncclResult_t shim_defer(ncclResult_t (*fn)(void *), void *arg);

/* ---- coll.c ---- */

/** tutti's datatype for an NCCL one; ncclInvalidArgument (recorded) when it is not one. */
ncclResult_t shim_dtype(struct ncclComm *c, ncclDataType_t dt, tutti_datatype_t *dt_p);

/**
 * tutti's operator for an NCCL one on c: a built-in one, or a PreMulSum operator made on c
 * (tutti's own handle: tutti checks that it is live and made for the call's datatype).
 */
ncclResult_t shim_redop(struct ncclComm *c, ncclRedOp_t op, tutti_op_t *op_p);

/* ---- nccl_env.c ---- */

/**
 * The i-th NCCL variable the shim reads in place of a TUTTI_* one: its name and tutti's
 * (without TUTTI_). Returns 0 past the last one.
 */
int shim_env_nccl_var(int i, const char **nccl_p, const char **tutti_p);

/* ---- mem.c: windows ---- */

/**
 * Enter the communicator of window win (live, not deregistered) for `what`: *c_p entered (to be
 * left), *reg_p its record (valid while c is entered and the window registered). On failure the
 * error is recorded for the thread and returned.
 */
ncclResult_t shim_window_enter(ncclWindow_t win, const char *what, struct ncclComm **c_p,
                               const struct shim_reg **reg_p);

/** Unlist and free c's registrations and windows (the communicator is being freed). */
void shim_regs_free(struct ncclComm *c);

#endif /* TUTTI_NCCL_SHIM_H */
