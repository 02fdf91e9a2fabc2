/*
 * topo.h - what tutti knows about the machines it runs on (private).
 *
 * Three layers, each in its own file:
 *   - struct tutti_topo (detect.c, nvml.c): one machine as hwloc sees it (or as an hwloc XML file
 *     describes it, TUTTI_TOPO_FILE): CPUs, the PCI tree reduced to switches and host bridges,
 *     GPUs and NICs with their locality, NVLink between GPUs. Bounded: at most
 *     TUTTI_TOPO_MAX_GPUS GPUs and TUTTI_TOPO_MAX_NICS NICs are kept.
 *   - struct tutti_topo_rank (view.c): the few facts about one rank that rings and trees need, a
 *     fixed-size record with no pointers. At communicator init every rank all-gathers its record
 *     over the bootstrap; the array of all of them is the communicator's global view.
 *   - ring.c: pure functions over the global view (ring order, link kinds), unit-tested.
 */
#ifndef TUTTI_TOPO_H
#define TUTTI_TOPO_H

#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

#define TUTTI_TOPO_MAX_GPUS 16 /* per machine; NVLink peers fit a uint32_t mask */
#define TUTTI_TOPO_MAX_NICS 16
#define TUTTI_TOPO_NAME     16 /* device names ("mlx5_0", "cuda3") and PCI bus ids */

/*
 * How close two devices (or ranks) are, closest first: a smaller value is a better link. The
 * rings of ring.c visit ranks in this order of preference.
 */
typedef enum {
    TUTTI_LINK_SELF = 0,
    TUTTI_LINK_NVLINK,      /* GPUs joined by NVLink (direct or through NVSwitch) */
    TUTTI_LINK_PCI_SWITCH,  /* under one PCIe switch */
    TUTTI_LINK_HOST_BRIDGE, /* under one PCIe host bridge (root complex) */
    TUTTI_LINK_NUMA,        /* on one NUMA node */
    TUTTI_LINK_PACKAGE,     /* on one package (socket) */
    TUTTI_LINK_HOST,        /* one machine, across packages */
    TUTTI_LINK_NET,         /* different hosts */
    TUTTI_LINK_COUNT
} tutti_link_t;

/** "NVLink", "PCIe switch", ... */
const char *tutti__link_name(tutti_link_t l);

/** Where a device (or a rank) sits in its machine; -1: unknown or none. */
struct tutti_topo_place {
    int package, numa, pci_switch, host_bridge;
};

/** How close two places of one machine are: PCIe switch, host bridge, NUMA, package or host. */
tutti_link_t tutti__topo_place_link(const struct tutti_topo_place *a,
                                    const struct tutti_topo_place *b);

/** One GPU or NIC of a machine. Indices are -1 where unknown or absent. */
struct tutti_topo_dev {
    char name[TUTTI_TOPO_NAME];  /* GPU: "cuda0"/"nvml0"/bus id; NIC: "mlx5_0" or "eth0" */
    char alias[TUTTI_TOPO_NAME]; /* NIC: its network interface when name is the RDMA device */
    char busid[TUTTI_TOPO_NAME]; /* "0000:08:00.0" */
    int package, numa;           /* logical indices */
    int pci_switch, host_bridge; /* indices among the machine's switches and host bridges */
    int rdma;                    /* NIC: has an RDMA (OpenFabrics / verbs) device */
    int port;                    /* NIC: has that or a network interface on this host */
    int nic;                     /* GPU: its nearest NIC */
    tutti_link_t nic_link;       /* GPU: how near that NIC is */
    uint32_t nvlink;             /* GPU: bit g set = NVLink to GPU g */
};

struct tutti_topo {
    int ok;           /* hwloc loaded a topology (else the CPU counts come from sysconf) */
    int from_file;    /* loaded from an hwloc XML file (TUTTI_TOPO_FILE, --topo-file) */
    char source[256]; /* the file, or "this machine" */
    int packages;     /* sockets */
    int numa_nodes;
    int cores;        /* physical cores in the machine */
    int pus;          /* hardware threads in the machine */
    int allowed_pus;  /* hardware threads this process may run on (affinity, cgroups) */
    int first_pu;     /* the lowest of them (-1: unknown) */
    uint64_t machine; /* this process's kernel (boot id hashed); 0 for a topology not ours */
    int cpu_package, cpu_numa; /* where this process may run, when that is one of each */
    int pci_devices, pci_switches, host_bridges;
    int ngpus, nnics;
    int gpus_seen, nics_seen; /* found, before the bound above */
    struct tutti_topo_dev gpu[TUTTI_TOPO_MAX_GPUS];
    struct tutti_topo_dev nic[TUTTI_TOPO_MAX_NICS];
    int nvlink_source;   /* 0: none, 1: the file's NVLinkBandwidth matrix, 2: NVML */
    char nvml_note[160]; /* what NVML said, or why it was not asked */
    char error[512];     /* why loading failed (ok == 0) */
};

/**
 * The machine of this process, detected on first call (or loaded from TUTTI_TOPO_FILE). Never
 * NULL; when loading failed, ok is 0, error says why and the CPU counts come from sysconf.
 * Thread-safe.
 */
const struct tutti_topo *tutti__topo(void);

/**
 * As tutti__topo, and when this call is the process's first, a live detection is shared by the
 * job's ranks of this host through the file `share` (host_share.h; tutti__topo_share_name):
 * one of them detects, the others read. share NULL: detect alone.
 */
const struct tutti_topo *tutti__topo_host(const char *share);

/**
 * Load a machine into *t: from the hwloc XML file `xml`, or detect this machine when xml is
 * NULL. Returns TUTTI_OK, or TUTTI_ERR_INVALID_ARG (bad file, bad XML) / TUTTI_ERR_SYSTEM with a
 * message in t->error; t is then the sysconf fallback. Thread-safe (no shared state).
 */
tutti_status_t tutti__topo_load(const char *xml, struct tutti_topo *t);

/** As tutti__topo_load, from the XML text buf[0..len) (what a file would hold). */
tutti_status_t tutti__topo_load_buffer(const char *buf, size_t len, struct tutti_topo *t);

/** Write the topology (detected, or `xml` re-read) to `out` as hwloc XML. err gets why not. */
tutti_status_t tutti__topo_dump(const char *xml, const char *out, char *err, size_t errlen);

/** NVLink peers of t's GPUs from NVML (dlopen libnvidia-ml.so.1); notes in t->nvml_note. */
void tutti__topo_nvml(struct tutti_topo *t);

/* ---- per-rank view (view.c) ---- */

#define TUTTI_TOPO_RANK_MAGIC 0x504f5455u /* "UTOP" */

enum {
    TUTTI_TOPO_F_DETECTED = 1 << 0, /* hwloc loaded the machine */
    TUTTI_TOPO_F_FILE = 1 << 1,     /* ... from a file */
    TUTTI_TOPO_F_RDMA = 1 << 2,     /* the nearest NIC is an RDMA device */
};

/** One rank, as the others see it: fixed size, no pointers, checked on arrival. */
struct tutti_topo_rank {
    uint32_t magic;
    uint8_t flags;                  /* TUTTI_TOPO_F_* */
    int8_t gpu;                     /* its GPU among its machine's, -1: none */
    int8_t package, numa;           /* of its GPU, else of its CPUs; -1: unknown or several */
    int8_t pci_switch, host_bridge; /* of its GPU; -1: none */
    int8_t nic;                     /* its nearest NIC; -1: none */
    uint8_t nic_link;               /* tutti_link_t from its GPU (or CPUs) to that NIC */
    uint8_t ngpus, nnics;           /* of its machine */
    uint16_t cpus;                  /* CPUs it may run on (its affinity; at most 65535) */
    uint32_t nvlink;                /* NVLink to these GPUs of its machine */
    uint16_t cpu_first;             /* the lowest of those CPUs: equal (cpu_first, cpus), one set */
    uint16_t pad;
    uint64_t machine; /* the kernel it runs on (tutti__machine_id): ranks in other
                         namespaces or containers of one machine share its CPUs */
    char nic_name[TUTTI_TOPO_NAME];
    char gpu_busid[TUTTI_TOPO_NAME];
};

/**
 * The view of the rank that is local_rank-th on machine t. Until the GPU path binds devices, a
 * rank uses GPU local_rank mod ngpus (one GPU per rank, in order, as launchers assign them).
 */
void tutti__topo_rank_view(const struct tutti_topo *t, int local_rank, struct tutti_topo_rank *v);

/**
 * How crowded the CPUs are, from every rank's record (n of them): ranks per CPU on rank me's
 * machine into *mine_p, and on the most crowded machine into *max_p (the same on every rank;
 * above 1: oversubscribed; 0 when out of memory, as if every rank had CPUs of its own).
 * A machine's CPUs are the union of its ranks' CPU sets, taken as disjoint unless two ranks
 * report the same (cpu_first, cpus); ranks of one machine are those with equal `machine`,
 * whatever their host ids (network namespaces on one machine share its CPUs). Pure.
 */
void tutti__topo_cpu_load(const struct tutti_topo_rank *v, int n, int me, double *mine_p,
                          double *max_p);

/** Check a record from the network: magic, indices in range, strings terminated. */
tutti_status_t tutti__topo_rank_validate(const struct tutti_topo_rank *v, char *why, size_t len);

/* ---- rings (ring.c), pure functions ---- */

/**
 * How close ranks a and b are. host[r] labels rank r's machine: equal labels, one machine;
 * labels are in 0..n-1 (the lowest rank of the machine will do).
 */
tutti_link_t tutti__topo_rank_link(const struct tutti_topo_rank *v, const int *host, int a, int b);

/**
 * A ring through all n ranks that follows locality: starting at rank 0, each next rank is the
 * closest unvisited one (NVLink, then PCIe switch, host bridge, NUMA node, package, host); on
 * leaving a host it enters the next through the rank with the same GPU (so both ends use the
 * same rail's NIC), else the lowest rank there. Ties go to the lowest rank. order[i] = the i-th
 * rank of the ring. The same inputs give the same ring on every rank.
 */
void tutti__topo_ring(const struct tutti_topo_rank *v, const int *host, int n, int *order);

#endif /* TUTTI_TOPO_H */
