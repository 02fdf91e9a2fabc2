/*
 * env.h - every TUTTI_* environment variable, in one table, parsed once.
 *
 * The table gives name, type, default, range and help. src/base/env.c parses all of them on first
 * use into a const struct tutti_env. Values are typed and accept units: sizes "4k", "2M", "1G";
 * durations "250us", "10ms", "30s", "5m" (a bare number is seconds); integers are decimal only.
 * Every number has a range, lo to hi inclusive, written in the same units (a STRING has none:
 * ""). A malformed value or one out of its range keeps the default in the table and is an error
 * (tutti__env_check), which every call that creates a communicator or a unique id returns: a job
 * never runs with a setting other than the one asked for. An unknown TUTTI_* name is a warning.
 * getenv() is not called anywhere else in the library: variables of launchers (RANK,
 * SLURM_PROCID, ...) are read through tutti__env_foreign().
 */
#ifndef TUTTI_ENV_H
#define TUTTI_ENV_H

#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

/* name, type, default, lo, hi, help */
#define TUTTI_ENV_VARS(X)                                                                          \
    X(LOG_LEVEL, STRING, "warn", "", "", "none, error, warn, info, debug or trace")                \
    X(LOG_SUBSYS, STRING, "all", "", "",                                                           \
      "subsystems to log: init,coll,p2p,net,shm,topo,tune,boot,proxy,alloc,env or all; ^ negates") \
    X(LOG_TIME, STRING, "utc", "", "",                                                             \
      "time stamp that opens every log line, to the microsecond: utc, local or none")              \
    X(LOG_FILE, STRING, "", "", "",                                                                \
      "write logs to this file instead of stderr; %h = host, %p = pid (created 0600; links and "   \
      "other users' files are refused)")                                                           \
    X(TIMEOUT, DURATION, "300s", "1s", "24h",                                                      \
      "longest wait without progress before TUTTI_ERR_TIMEOUT")                                    \
    X(TRANSPORT, STRING, "auto", "", "",                                                           \
      "auto (shared memory on one host, else RDMA verbs where both ranks have a port, else "       \
      "TCP), shm (the same), tcp (TCP for every pair) or ib (verbs for every pair, or an error)")  \
    X(NCHANNELS, INT, "0", "0", "16", "parallel rings per collective; 0 picks per transport")      \
    X(NSOCKS, INT, "0", "0", "16",                                                                 \
      "TCP sockets per connection; 0: 4 on communicators of up to 8 ranks with a CPU each, else "  \
      "2")                                                                                         \
    X(SOCKET_IFNAME, STRING, "", "", "",                                                           \
      "network interface for bootstrap and TCP, written as for NCCL_SOCKET_IFNAME: a prefix "      \
      "(eth), a list (eth,ib), ^ to exclude (^docker,lo), = for exact names (=eth0); listeners "   \
      "are tied to the interface picked (SO_BINDTODEVICE)")                                        \
    X(SOCKET_FAMILY, STRING, "any", "", "", "any, ipv4 or ipv6: address family for the interface") \
    X(PORT_RANGE, STRING, "", "", "",                                                              \
      "listen only on ports lo-hi, the root's included (default: any)")                            \
    X(BOOT_TREE, INT, "64", "0", "1048576",                                                        \
      "communicators of at least this many ranks exchange set-up records over a tree between "     \
      "the ranks, the root serving only the rendezvous; 0: always through the root")               \
    X(HANDSHAKE_TIMEOUT, DURATION, "10s", "10ms", "1h",                                            \
      "a listener closes an accepted connection that has not proved the job's secret by then "     \
      "(at most TUTTI_TIMEOUT)")                                                                   \
    X(HOSTID, STRING, "", "", "",                                                                  \
      "override the host identity; ranks with equal ids share memory (default: boot id, "          \
      "hostname and namespaces)")                                                                  \
    X(SHM_SLOT_SIZE, SIZE, "128k", "1k", "64m", "bytes per shared-memory FIFO slot")               \
    X(SHM_NSLOTS, INT, "8", "2", "1024", "slots per shared-memory FIFO")                           \
    X(SHM_ROTATE, SIZE, "4k", "0", "64m",                                                          \
      "frames of at least this many bytes and at most half a slot start at a rotating offset in "  \
      "their slot, so that a FIFO cycles through all of its memory; 0: every frame at the start")  \
    X(SHM_CMA, INT, "2", "0", "2",                                                                 \
      "1: a local rank reads large frames straight from the sender's memory (process_vm_readv: "   \
      "one copy instead of two) where the kernel allows it; 0: every frame goes through the "      \
      "FIFO; 2: as 1 between two ranks whose kernel copies take at most three memcpys on average " \
      "(timed once per process)")                                                                  \
    X(WINDOWS, INT, "1", "0", "1",                                                                 \
      "1: ranks on one host share control pages: small collectives and sends of up to 4 KiB "      \
      "travel in them, and a collective whose buffers lie in shared windows (tutti/mem.h) reads "  \
      "and writes the peers' buffers in place; 0: none of these (windows are registered but "      \
      "never shared)")                                                                             \
    X(SHM_CMA_MIN, SIZE, "8k", "1k", "64m",                                                        \
      "smallest shared-memory frame read from the sender's memory (TUTTI_SHM_CMA)")                \
    X(SHM_CMA_MAX, SIZE, "1t", "1k", "1t",                                                         \
      "calls that move more than this many bytes per rank (sent plus received) do not use "        \
      "TUTTI_SHM_CMA (default: no limit); reductions never do")                                    \
    X(SHM_CMA_SHARE, INT, "3", "0", "64",                                                          \
      "in a call where a rank only sends (a broadcast's root, a scatter's root, a gather's "       \
      "leaves), it copies every Nth frame that could go by reference into the FIFO itself, and "   \
      "its receiver takes that one from the slot: the idle sender shares the copying; 0: never. "  \
      "Only where no TUTTI_SHM_CMA_LONE limit applies")                                            \
    X(SHM_CMA_LONE, SIZE, "512k", "1k", "1t",                                                      \
      "a rank that only sends in a call (a broadcast's root) sends every frame by reference "      \
      "where it sends at most this many bytes, more where it copies data of its own meanwhile (a " \
      "scatter's root), less where its receiver takes other ranks' data too (a gather's root); a " \
      "larger call puts every frame through the FIFO, one copy on each side (not where the "       \
      "kernel's copy costs at most one memcpy, or TUTTI_SHM_CMA=1)")                               \
    X(SHM_FILL, INT, "2", "0", "2",                                                                \
      "how frames are written into shared-memory slots: 0 through the caches; 1 streamed past "    \
      "them (non-temporal stores); 2 timed per connection: streamed while cached writes run at "   \
      "under a quarter of a streamed one's rate (the receiver's core shares no cache with this "   \
      "one)")                                                                                      \
    X(TCP_SLOT_SIZE, SIZE, "512k", "1k", "1g", "bytes per TCP FIFO slot")                          \
    X(TCP_NSLOTS, INT, "4", "1", "1024", "slots per TCP FIFO")                                     \
    X(IB_HCA, STRING, "", "", "",                                                                  \
      "RDMA devices and ports to use, as NCCL_IB_HCA: dev[:port],...; ^ excludes, = matches "      \
      "names whole (default: all)")                                                                \
    X(IB_QPS, INT, "1", "1", "8", "RDMA queue pairs per connection; slots alternate between them") \
    X(IB_SLOT_SIZE, SIZE, "512k", "1k", "8m", "bytes per RDMA FIFO slot")                          \
    X(IB_NSLOTS, INT, "8", "1", "256", "slots per RDMA FIFO")                                      \
    X(IB_TIMEOUT, INT, "18", "1", "31",                                                            \
      "RDMA ACK timeout exponent: 4.096 us x 2^N per try (18: about 1 s), as NCCL_IB_TIMEOUT")     \
    X(IB_RETRY_CNT, INT, "7", "0", "7", "RDMA retries before a queue pair fails")                  \
    X(IB_INLINE, SIZE, "128", "0", "1k",                                                           \
      "RDMA writes up to this many bytes go inline in the work request")                           \
    X(IB_GID_INDEX, INT, "-1", "-1", "255",                                                        \
      "RoCE: use this GID index of every port instead of the automatic choice (-1)")               \
    X(IB_TC, INT, "0", "0", "255", "RoCE: traffic class of RDMA packets, as NCCL_IB_TC")           \
    X(IB_SL, INT, "0", "0", "15", "InfiniBand service level, as NCCL_IB_SL")                       \
    X(SPIN, DURATION, "50us", "0", "1s", "busy-poll this long before yielding the CPU")            \
    X(ALGO, STRING, "", "", "",                                                                    \
      "force algorithms, e.g. allreduce:oneshot,broadcast:ring (tutti-info --algos lists them)")   \
    X(TUNER, STRING, "model", "", "",                                                              \
      "automatic choice: model (the cost model's algorithm, chunk and channels, the static "       \
      "rule's unless it predicts a clear gain) or static (one hop up to TUTTI_DIRECT_MAX, else "   \
      "the general algorithm)")                                                                    \
    X(DIRECT_MAX, SIZE, "8k", "0", "1g",                                                           \
      "largest message for which the one-hop algorithms (oneshot, direct) are chosen")             \
    X(MEM_BUDGET, SIZE, "32m", "0", "1t",                                                          \
      "connection memory per rank for the algorithms whose peers grow with the ranks (one-hop: "   \
      "n - 1 peers; Bruck, recursive doubling: 2 log2 n); 0: no limit; unset: this or 1 GiB per "  \
      "host shared by its ranks, whichever is smaller")                                            \
    X(STREAM_MIN, SIZE, "0", "0", "1t",                                                            \
      "results of at least this many bytes per rank go to memory with non-temporal stores "        \
      "(0: never); unset: the size of the last-level cache that sysfs lists for the CPU a "        \
      "communicator is made on (never where it lists none)")                                       \
    X(STAGE_CHUNK, SIZE, "4m", "4k", "256m",                                                       \
      "device buffers of a call on a CUDA stream are staged through pinned host memory in pieces " \
      "of this size (all-reduce, broadcast, reduce), so copies overlap the network")               \
    X(IPC, INT, "1", "0", "1",                                                                     \
      "1: all-reduce of device buffers among 2-8 ranks of one host reads the peers' buffers "      \
      "through CUDA IPC; 0: staged through host memory like the other calls")                      \
    X(IPC_CHUNK, SIZE, "32m", "4k", "256m",                                                        \
      "bytes per piece of the CUDA IPC all-reduce (its scratch is 4x)")                            \
    X(IPC_TWOSHOT_MIN, SIZE, "256k", "0", "1t",                                                    \
      "CUDA IPC all-reduce pieces of at least this size are two-shot (reduce-scatter, then "       \
      "all-gather: 2x the data read per rank instead of nranks x)")                                \
    X(YIELD, DURATION, "2ms", "0", "1s", "then sched_yield() this long before sleeping")           \
    X(TOPO_FILE, STRING, "", "", "",                                                               \
      "load the machine's topology from this hwloc XML file instead of detecting it "              \
      "(tutti-info --topo --dump writes one)")                                                     \
    X(CUDA_MODULE, STRING, "", "", "",                                                             \
      "path of the GPU module libtutti-cuda.so (default: beside libtutti, then the install "       \
      "libdir, then the loader's search)")                                                         \
    X(TRAIN_CUDA_MODULE, STRING, "", "", "",                                                       \
      "path of tutti-train's GPU module libtutti-train-cuda.so (default: beside tutti-train, "     \
      "then the install libdir, then the loader's search)")                                        \
    X(RANK, INT, "-1", "-1", "1048575", "this process's rank (tutti_comm_init_env); -1: not set")  \
    X(NRANKS, INT, "-1", "-1", "1048576", "number of ranks (tutti_comm_init_env); -1: not set")    \
    X(ROOT, STRING, "", "", "",                                                                    \
      "host:port of the bootstrap root, served by rank 0 (tutti_comm_init_env)")                   \
    X(SECRET, STRING, "", "", "", "32 hex digits: the job's shared secret (tutti_comm_init_env)")  \
    X(SECRET_FILE, STRING, "", "", "",                                                             \
      "file holding the secret, as TUTTI_SECRET (tutti_comm_init_env)")                            \
    X(PMIX, INT, "1", "0", "1",                                                                    \
      "1: without TUTTI_SECRET, a job started by a PMIx launcher (mpirun, srun --mpi=pmix) gets "  \
      "its secret from rank 0 through the launcher (tutti_comm_init_env); 0: never")               \
    X(LIBRARY, STRING, "", "", "",                                                                 \
      "libtutti.so the Python package (src/python/tutti) loads; the C library ignores it "         \
      "(default: beside the package, then the loader's search)")

typedef enum {
    TUTTI_ENV_STRING,
    TUTTI_ENV_INT,
    TUTTI_ENV_SIZE,
    TUTTI_ENV_DURATION
} tutti_env_type_t;

/** Parsed values. STRING -> const char *, INT -> long, SIZE -> size_t bytes, DURATION -> ns. */
struct tutti_env {
#define TUTTI_ENV_FIELD_STRING                           const char *
#define TUTTI_ENV_FIELD_INT                              long
#define TUTTI_ENV_FIELD_SIZE                             size_t
#define TUTTI_ENV_FIELD_DURATION                         int64_t
#define TUTTI_ENV_STRUCT_(name, type, def, lo, hi, help) TUTTI_ENV_FIELD_##type name;
    TUTTI_ENV_VARS(TUTTI_ENV_STRUCT_)
#undef TUTTI_ENV_STRUCT_
    /* which variables were set explicitly (bit i = i-th table entry) */
    uint64_t set_mask;
};

/** Description of one table entry, for tutti-info --env and the perf tools' --print-env. */
struct tutti_env_desc {
    const char *name; /* without the TUTTI_ prefix */
    tutti_env_type_t type;
    const char *def;
    const char *lo, *hi; /* the range, inclusive, in the units of def; "" for a STRING */
    const char *help;
};

/** The parsed environment; parsed on the first call. Thread-safe. */
const struct tutti_env *tutti__env(void);

/** Table of every variable; *n_p gets the count. */
const struct tutti_env_desc *tutti__env_table(int *n_p);

/** Index of a variable in the table, by name without prefix; -1 if unknown. */
int tutti__env_index(const char *name);

/**
 * Every variable set to a malformed value or one out of its range, as an error:
 * TUTTI_ERR_INVALID_ARG naming each (variable, value, range), recorded for the calling thread.
 * @return TUTTI_OK when every value is good. Thread-safe.
 */
tutti_status_t tutti__env_check(void);

/** The range of an INT variable, by name without prefix; -1 if it is not an INT. */
int tutti__env_int_range(const char *name, long *lo_p, long *hi_p);

/** Was TUTTI_<name> set in the environment? */
int tutti__env_is_set(const char *name);

/** A launcher's variable (RANK, SLURM_PROCID, ...): NULL when unset or empty. */
const char *tutti__env_foreign(const char *name);

/** fn(entry, name_len, arg) for every "NAME=value" entry of the environment whose name starts
 * with prefix (another library's variables: the NCCL shim names the ones it does not read). */
void tutti__env_foreign_each(const char *prefix,
                             void (*fn)(const char *entry, size_t name_len, void *arg), void *arg);

/**
 * Another library's variables read where tutti's are unset (the NCCL shim: src/nccl/nccl_env.c).
 * value(name, buf, len, from_p): the value for TUTTI_<name> in buf, and the variable it came from
 * in *from_p, or NULL. after(): once the table is complete (logging works), to warn about what
 * has no equivalent. A value that does not parse is ignored with a warning naming its variable:
 * only TUTTI_* values are strict.
 */
struct tutti_env_fallback {
    const char *(*value)(const char *name, char *buf, size_t len, const char **from_p);
    void (*after)(void);
};

/** Install fb before the table is first read (a library constructor); NULL removes it. */
void tutti__env_set_fallback(const struct tutti_env_fallback *fb);

/* Value parsers, shared with the table and unit-tested on their own. 0 on success, -1 if bad.
 * tutti__parse_long reads decimal only ("010" is ten, "0x10" is malformed) and refuses what
 * does not fit a long. */
int tutti__parse_size(const char *s, size_t *out_p);
int tutti__parse_duration_ns(const char *s, int64_t *out_p);
int tutti__parse_long(const char *s, long *out_p);

#endif /* TUTTI_ENV_H */
