/*
 * tune.h - the cost model and the tuner (private). Pure functions: no I/O, no globals, no
 * communicator. Given a collective, a message size, the number of ranks and hosts and the
 * figures of the links between them, the model predicts how long each algorithm takes, and the
 * tuner picks the fastest algorithm with its chunk size, channel count and protocol.
 *
 * The model is alpha-beta with pipelining (docs/design/tuner.md): an operation costs
 *   base + sum of the hop latencies on its critical path + bytes / bandwidth on its busiest link
 *   + the pipeline fill (the first chunk crossing the path) + a gap per message posted
 *   + on a host path, the CPU time of the busiest rank's messages (each one sent or received),
 * with separate figures for links within a host (shared memory, NVLink, PCIe) and between hosts
 * (TCP, InfiniBand). When ranks outnumber CPUs (cpu_load > 1), a host path's CPU work and
 * CPU-bound bandwidth are shared by cpu_load ranks, each message may find its receiver asleep
 * (a wake-up) and each step on the critical path waits for the scheduler (a switch). Ranks are
 * assumed spread evenly over the hosts and numbered host by host. The figures and where each
 * comes from: tune_links.c.
 */
#ifndef TUTTI_TUNE_H
#define TUTTI_TUNE_H

#include "base/coll_id.h"

#include <stddef.h>

typedef enum {
    TUTTI_LINK_SHM,      /* shared memory between processes of one host (tutti's shm transport) */
    TUTTI_LINK_TCP,      /* TCP between hosts over 10 GbE (tutti's tcp transport) */
    TUTTI_LINK_IB,       /* InfiniBand NDR, 400 Gb/s per NIC */
    TUTTI_LINK_NVLINK,   /* NVLink 4 (H100 SXM), through NVSwitch */
    TUTTI_LINK_PCIE,     /* PCIe Gen5 x16 */
    TUTTI_LINK_LOOPBACK, /* TCP between processes of one host (TUTTI_TRANSPORT=tcp) */
    TUTTI_LINK_KIND_COUNT
} tutti_link_kind_t;

/** One kind of link as the model sees it. */
struct tutti_link {
    double lat_us; /* alpha: one message over one hop, software included (microseconds) */
    double gap_us; /* what each further message of a pipeline costs beyond its bytes */
    double gbps;   /* GB/s (10^9 bytes/s) per direction: per rank within a host, per NIC across */
    /* A host path (one thread per rank posts and completes every message, CPUs move the
     * bytes); 0 where the hardware does it (GPU thread blocks, RDMA): */
    double cpu_us;    /* CPU time per message sent or received, at each end */
    double wake_us;   /* more per message when ranks outnumber CPUs (the receiver slept) */
    double switch_us; /* per step on the critical path when ranks outnumber CPUs */
    double cpu_gbps;  /* bytes one rank's CPU moves per second over it: shared by cpu_load
                         ranks when they outnumber the CPUs (0: not CPU-bound) */
    double chan_gbps; /* at most this much per channel (one TCP stream; 0: no such limit) */
};

/** The figures of a link kind (tune_links.c says where each comes from). */
const struct tutti_link *tutti__link_default(tutti_link_kind_t kind);

/** "shm", "tcp", "ib", "nvlink", "pcie", "loopback"; NULL for an unknown kind. */
const char *tutti__link_kind_name(tutti_link_kind_t kind);

/** The kind named `name` (as tutti__link_kind_name), or -1. */
int tutti__link_parse(const char *name);

/*
 * Protocols: how a message is put on a link. SIMPLE is what tutti does today (slots of
 * chunk_bytes, a flag per slot). LL and LL128 are NCCL's GPU protocols (a flag in every 8-byte
 * word or every 128-byte line: lower latency, part of the bandwidth); the model knows them so
 * that its GPU predictions compare with NCCL's, and a system enables them through `protos`.
 */
typedef enum {
    TUTTI_PROTO_SIMPLE,
    TUTTI_PROTO_LL,
    TUTTI_PROTO_LL128,
    TUTTI_PROTO_COUNT
} tutti_proto_t;

/** "simple", "ll", "ll128". */
const char *tutti__proto_name(tutti_proto_t p);

/** The links of a system: what the tuner needs besides (collective, bytes, nranks, nhosts). */
struct tutti_tune_links {
    struct tutti_link intra; /* between ranks of one host */
    struct tutti_link inter; /* between hosts, per NIC */
    int nics;                /* NICs per host (rails); channels spread over them */
    int max_channels;        /* the tuner tries 1, 2, 4 ... up to this many channels */
    size_t max_chunk;        /* ... and chunks of this many bytes, halved down to 4 KiB (the
                                transports' slot; 0: 4 MiB) */
    double cpu_load;         /* ranks per CPU on the most crowded host (<= 1: a CPU each) */
    int parallel_channels;   /* 1: channels progress independently (GPU thread blocks); 0: one
                                thread posts every channel's messages (tutti's host path) */
    double base_us;          /* fixed software cost of one call */
    unsigned protos;         /* bit (1u << tutti_proto_t) per protocol the system offers */
};

/** The system as the model sees it. */
struct tutti_tune_sys {
    int nranks, nhosts; /* nhosts in 1..nranks; ceil(nranks / nhosts) ranks per host */
    struct tutti_tune_links links;
};

/** What the tuner chooses besides the algorithm. */
struct tutti_tune_cfg {
    size_t chunk_bytes; /* bytes per message (slot) of a pipelined algorithm */
    int nchannels;      /* parallel lanes, data split evenly between them */
    tutti_proto_t proto;
};

/**
 * Predicted time in microseconds of `algo` (a catalog name: "ring", "tree", "hier", "rd",
 * "rabenseifner", "oneshot", "direct", "bruck", "pairwise") for `coll` on `bytes` (NCCL's size
 * convention: the whole buffer of all-reduce, broadcast and reduce; the gathered buffer of
 * all-gather; the input of reduce-scatter; the send buffer of all-to-all), or -1 when the model
 * does not know that algorithm for that collective, or the system or configuration is invalid
 * (nranks < 1, nhosts outside 1..nranks, a protocol the system lacks, no channel...).
 */
double tutti__tune_time(tutti_coll_t coll, const char *algo, size_t bytes,
                        const struct tutti_tune_sys *sys, const struct tutti_tune_cfg *cfg);

/**
 * The best configuration for one algorithm: tries chunk sizes from max_chunk halved down to
 * 4 KiB, channel counts 1..max_channels (powers of two) and the offered protocols; ties go to
 * the larger chunk, the fewer channels. Returns its time in microseconds and fills *cfg_p, or
 * returns -1 (nothing written) as tutti__tune_time does.
 */
double tutti__tune_best(tutti_coll_t coll, const char *algo, size_t bytes,
                        const struct tutti_tune_sys *sys, struct tutti_tune_cfg *cfg_p);

/** The tuner's answer. */
struct tutti_tune_choice {
    int index;        /* into the candidates */
    const char *algo; /* candidates[index] */
    double time_us;
    struct tutti_tune_cfg cfg;
};

/**
 * Pick the fastest of `ncand` candidate algorithms (catalog names, e.g. those that apply to the
 * call) for `coll` on `bytes` over nranks ranks on nhosts hosts with `links`. times_us, if not
 * NULL, receives each candidate's best predicted time (-1: not modelled). Ties go to the earlier
 * candidate. Returns the chosen index and fills *choice_p, or -1 when no candidate is modelled
 * or the arguments are invalid (*choice_p untouched). Pure; thread-safe.
 */
int tutti__tune_pick(tutti_coll_t coll, size_t bytes, int nranks, int nhosts,
                     const char *const *candidates, int ncand, const struct tutti_tune_links *links,
                     double *times_us, struct tutti_tune_choice *choice_p);

/**
 * Links for nhosts hosts of this kind of machine: `intra` within a host, `inter` between hosts,
 * `nics` per host, with the default channel limit, base cost and protocols for that mix (the
 * GPU protocols when intra is NVLink or PCIe), 4 MiB chunks at most and a CPU per rank.
 */
void tutti__tune_links_make(tutti_link_kind_t intra, tutti_link_kind_t inter, int nics,
                            struct tutti_tune_links *links_p);

#endif /* TUTTI_TUNE_H */
