/*
 * tutti_perf.h - the common harness of the nccl-tests-compatible perf tools.
 *
 * A tool is one collective (struct perf_coll, in perf_<coll>.c: buffer layout, busbw factor,
 * input fill and result check) run by one benchmark loop (perf_bench.c) over a communication
 * backend (struct perf_backend): tutti (tutti_perf.c) or MPI (mpi/mpi_coll_perf.c). Options are
 * nccl-tests' (perf_args.c), the table and JSON are nccl-tests' layout (perf_output.c,
 * perf_json.c), and the data patterns make every result exact (perf_data.c). Gather, scatter and
 * the variable-size collectives take their count vectors from perf_vcounts.c (-v).
 */
#ifndef TUTTI_PERF_H
#define TUTTI_PERF_H

#include "tutti.h"

#include <stddef.h>
#include <stdint.h>

/* -r all, -d all, -o all. */
#define PERF_ALL (-1)

/* Exit codes of the tools: results wrong or a call failed; bad command line. */
enum { PERF_EXIT_OK = 0, PERF_EXIT_FAIL = 1, PERF_EXIT_USAGE = 2 };

/* -a: how the per-rank times become one (nccl-tests' numbering). */
enum perf_average { PERF_AVG_RANK0 = 0, PERF_AVG_MEAN = 1, PERF_AVG_MIN = 2, PERF_AVG_MAX = 3 };

/** --halves: which forms each size runs (a comparison that reads one form skips the other). */
enum perf_halves { PERF_HALF_OUT = 1, PERF_HALF_IN = 2, PERF_HALF_BOTH = 3 };

/** The command line, parsed (perf_args.c). Defaults are nccl-tests'. */
struct perf_opts {
    size_t min_bytes, max_bytes, step_bytes; /* -b -e -i */
    long step_factor;                        /* -f; <= 1 means add step_bytes */
    int iters, warmup, agg_iters;            /* -n -w -m */
    int check;                               /* -c: check iterations after each timing */
    int average;                             /* -a: enum perf_average */
    int dtype;                               /* -d: tutti_datatype_t or PERF_ALL */
    int op;                                  /* -o: tutti_op_t or PERF_ALL */
    int root;                                /* -r: a rank or PERF_ALL */
    int nranks;                              /* -N: ranks to fork; 0 = not given */
    const char *json_path;                   /* --json / -J */
    int per_iter;                            /* -I 1: time each iteration (perf_iters.c) */
    const char *coll;                        /* --coll (mpi_coll_perf only) */
    int print_env;                           /* --print-env */
    int halves;                              /* --halves: PERF_HALF_* bits to run */
    int bind;                                /* --bind: 1 = pin forked ranks to CPUs */
    int corrupt;                             /* hidden --debug-corrupt: flip one output element */
    int device;                              /* --memory device: buffers in GPU memory */
    int reg; /* --register 1: tutti_comm_register the buffers; 2: tutti_mem_alloc and windows */
    int skew;                                /* -v: enum perf_skew (perf_vcounts.h) */
    double zipf_s;                           /* -v zipf:S: the exponent */
};

/** Element counts of one call for a given count, as nccl-tests' getCollByteCount(). */
struct perf_layout {
    size_t send_count, recv_count; /* elements in the send and in the receive buffer */
    size_t param_count;            /* the count argument of the call ("count" column) */
    size_t send_off, recv_off;     /* in place: send and recv start at recvbuf + rank * off */
};

struct perf_vcounts; /* perf_vcounts.h */

/** One call: what fill, check and run work on. */
struct perf_call {
    struct perf_layout lay;
    tutti_datatype_t dt;
    tutti_op_t op; /* collectives that only move data get TUTTI_MAX: the widest data pattern */
    int root;      /* -1 for collectives without a root */
    int rank, nranks, in_place;
    uint64_t seed; /* changes between fills, so stale data never passes */
    void *send;    /* this call's send buffer (in place: inside recvbuf) */
    void *recv;    /* this call's receive buffer */
    /* the counts of a v form (perf_vcounts.h), NULL for a fixed-count call */
    const struct perf_vcounts *v;
};

/* Flags of a collective. */
enum {
    PERF_COLL_REDUCES = 1u << 0,    /* iterate -o; else redop "none" */
    PERF_COLL_ROOTED = 1u << 1,     /* iterate -r; else root -1 */
    PERF_COLL_NO_INPLACE = 1u << 2, /* no in-place form: that half reads N/A */
    PERF_COLL_ROOT_ONLY = 1u << 3,  /* only the root has an output (reduce) */
    PERF_COLL_V = 1u << 4,          /* a v collective: always called with count vectors */
    PERF_COLL_V_SKEW = 1u << 5,     /* with -v uniform|zipf: its v form (gather -> gatherv) */
    PERF_COLL_VMATRIX = 1u << 6,    /* its counts are a matrix, one row per rank (alltoallv) */
};

/* Which collective (the MPI backend dispatches on it). */
typedef enum {
    PERF_ALL_REDUCE,
    PERF_ALL_GATHER,
    PERF_BROADCAST,
    PERF_REDUCE,
    PERF_REDUCE_SCATTER,
    PERF_ALLTOALL,
    PERF_SENDRECV,
    PERF_ALLTOALLV,
    PERF_ALLGATHERV,
    PERF_GATHER,  /* and gatherv with -v */
    PERF_SCATTER, /* and scatterv with -v */
    PERF_REDUCE_SCATTERV,
} perf_coll_id_t;

/** A collective: one per perf_<coll>.c. */
struct perf_coll {
    const char *name; /* "all_reduce": the tool is <name>_perf */
    perf_coll_id_t id;
    unsigned flags;                   /* PERF_COLL_* */
    double (*bus_factor)(int nranks); /* busbw = algbw * factor */
    void (*layout)(size_t count, int nranks, struct perf_layout *lay_p);
    void (*fill)(const struct perf_call *c);    /* write this rank's input, poison its output */
    size_t (*check)(const struct perf_call *c); /* wrong elements in this rank's output */
    tutti_status_t (*run)(const struct perf_call *c, tutti_comm_t *comm); /* tutti backend */
    /** v forms: set the layout's counts and in-place pointers from c->v (perf_vcall). */
    void (*vsetup)(struct perf_call *c);
    /** v-capable collectives: tutti's call, fixed-count form [0] and v form [1], with its
     * in-place form, for the header line "# call:". */
    const char *call[2];
};

/* Shared by the perf_<coll>.c files (perf_coll_common.c). */
double perf_bus_one(int nranks);  /* busbw = algbw: broadcast, reduce, sendrecv */
double perf_bus_ring(int nranks); /* (n-1)/n: all-gather, reduce-scatter, all-to-all */
/** Layout of collectives whose send and receive buffers both hold `count` elements. */
void perf_layout_flat(size_t count, int nranks, struct perf_layout *lay);
/* Layouts of blocks of count / nranks elements (nccl-tests' sizes; the v collectives' mean
 * block). Gathered: one block in, nranks out, in place at block `rank` of recvbuf (all_gather,
 * gather, allgatherv). Scattered: nranks in, one out, in place at block `rank` of sendbuf
 * (reduce_scatter, scatter, reduce_scatterv). All-to-all: nranks blocks each way, no in-place
 * offsets. */
void perf_layout_gathered(size_t count, int nranks, struct perf_layout *lay);
void perf_layout_scattered(size_t count, int nranks, struct perf_layout *lay);
void perf_layout_alltoall(size_t count, int nranks, struct perf_layout *lay);
/** Poison the receive buffer, then write this rank's input into the send buffer. */
void perf_fill_own(const struct perf_call *c);

/** Poison the receive buffer; the root writes its input into the send buffer. */
void perf_fill_root(const struct perf_call *c);

extern const struct perf_coll perf_all_reduce, perf_all_gather, perf_broadcast, perf_reduce,
    perf_reduce_scatter, perf_alltoall, perf_sendrecv, perf_alltoallv, perf_allgatherv, perf_gather,
    perf_scatter, perf_reduce_scatterv;

/** One rank's identity for the "#  Rank" lines. */
struct perf_rank_info {
    int pid;
    char host[60];
};

/* Time combining modes for perf_backend.reduce_f64(). */
enum { PERF_RED_SUM, PERF_RED_MIN, PERF_RED_MAX, PERF_RED_BCAST0 };

/**
 * A communication library under test. Every function returns 0 on success, -1 on failure after
 * saying why on stderr; a failure ends the run (the backend makes the peers fail too).
 */
struct perf_backend {
    const char *lib;       /* "tutti" or "mpi", for the JSON */
    const char *version;   /* the library's version string */
    const char *transport; /* what the JSON reports as transport */
    int rank, nranks;
    void *ctx;
    /** Can this collective run on this datatype and op? 0 no (the rows are skipped), 1 yes. */
    int (*supports)(struct perf_backend *be, const struct perf_coll *coll, tutti_datatype_t dt,
                    tutti_op_t op);
    int (*run)(struct perf_backend *be, const struct perf_coll *coll, const struct perf_call *c);
    int (*group_start)(struct perf_backend *be); /* -m: aggregate calls */
    int (*group_end)(struct perf_backend *be);
    int (*barrier)(struct perf_backend *be);
    int (*reduce_f64)(struct perf_backend *be, double *v, int mode); /* PERF_RED_* in place */
    int (*sum_i64)(struct perf_backend *be, int64_t *v);
    /** Gather every rank's info to rank 0 (all has nranks entries there). */
    int (*gather_info)(struct perf_backend *be, const struct perf_rank_info *mine,
                       struct perf_rank_info *all);
    /** -I 1: gather n doubles of every rank to rank 0 (all: nranks x n there, rank order). */
    int (*gather_f64)(struct perf_backend *be, const double *mine, int n, double *all);
    /** --register: register (bytes > 0) or deregister (bytes 0) the buffers, as windows when
     * how is 2; NULL: no such thing in this library. */
    int (*register_buffers)(struct perf_backend *be, void *send, void *recv, size_t bytes,
                            int how);
    /** --register 2: the buffers from the library's symmetric memory (NULL: none). */
    void *(*mem_alloc)(struct perf_backend *be, size_t bytes);
    void (*mem_free)(struct perf_backend *be, void *p);
    /** The library call a v-capable collective times, for the header (vform: its v form). */
    const char *(*call_name)(const struct perf_coll *coll, int vform);
};

/**
 * Parse argv; mpi != 0 for mpi_coll_perf (--coll instead of -N). Returns 0, 1 after -h (help
 * printed), or -1 after printing the error.
 */
int perf_args_parse(int argc, char **argv, const char *tool, int mpi, struct perf_opts *o);

/** Print the help of a tool; mpi != 0 for mpi_coll_perf (no -N, has --coll). */
void perf_args_usage(const char *tool, int mpi);

/** Run every datatype x op x root x size of the options. Returns a PERF_EXIT_* code. */
int perf_bench_run(const struct perf_coll *coll, const struct perf_opts *o, struct perf_backend *be,
                   const char *tool);

/** main() of every <coll>_perf tool: parse, launch ranks, run. */
int tutti_perf_main(const struct perf_coll *coll, int argc, char **argv);

#endif /* TUTTI_PERF_H */
