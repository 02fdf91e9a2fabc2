/*
 * tune_links.c - the figures the cost model (tune.c) works with: per link kind a latency, a
 * per-message gap and a bandwidth; per protocol how it scales them; default systems. Where each
 * number comes from is said beside it; docs/design/tuner.md and
 * perf/results/2026-11-22-model.md give the commands of the measurements.
 */
#include "tune.h"

#include <string.h>

/*
 * Host links, calibrated on the 2-core development VM (AMD EPYC, Linux 6.18) on 2026-11-25 from
 * perf/tuner_bench.sh (perf/results/2026-11-25-tuner.md: every algorithm forced in turn, 2, 4
 * and 8 ranks, medians of 5 interleaved launches, load average below 1 at the start) and
 * perf/hosts_bench.sh (perf/results/2026-11-25-hosts.md). Ranks bound to a CPU each when they
 * fit (the perf tools' --bind core); 4 and 8 ranks share the 2 CPUs (cpu_load 2 and 4).
 *   shm  2 ranks, 8 B: one-shot 0.21 us (1 hop, a message out and in), ring 0.27 us (2 hops):
 *        base 0.1 us, hop 0.05 us, 0.03 us of CPU per message at each end.
 *        Crowded: 4 ranks one-shot 2.7 us (6 messages a rank, 1 step) and recursive doubling
 *        3-5 us (4 messages, 2 steps); 8 ranks 12.5 and 17.5 us (14 messages, 1 step; 6
 *        messages, 3 steps). Solved for a cost per message and per step times the load:
 *        0.05-0.14 us a message (wake 0.07 on top of the CPU's 0.03), 1.0-1.15 us a step (a
 *        waiting rank yields its CPU: a switch).
 *        gbps: ring busbw at 16-64 MiB on 2 ranks 9.7-10.9 GB/s (mid sizes that stay in cache
 *        reach 24), so 10, CPU-bound: 4 ranks reach 6.4-8.4, 8 ranks 3.1-3.7 (10 / load: 5,
 *        2.5; conservative). More slots of 8 or 32 KiB instead of 128 KiB are slower at every
 *        size from 64 KiB (broadcast ring, 2 and 4 ranks: 12-15 against 20-24 GB/s): the
 *        message costs outweigh the pipeline fill here, as the figures say.
 *   loopback (TUTTI_TRANSPORT=tcp on one host) 2 ranks, 8 B: one-shot 6.4 us, ring 12.5 us:
 *        6.2 us a hop, split as 3.2 us of latency and 1.5 us of CPU (a send or a receive
 *        system call) at each end. Crowded: 4 ranks one-shot 80 us, recursive doubling 60 us;
 *        8 ranks 530 and 374-435 us; solved as above: 6.25-8.3 us a message (a wake-up of 5.5
 *        us on top of the CPU's 1.5: the receiver sleeps in poll), 1-16 us a step (4).
 *        gbps: ring busbw at 4-64 MiB on 2 ranks 3.3-4.6 GB/s: 4, CPU-bound (4 ranks:
 *        1.7-2.1, 8 ranks 0.6-0.8). One channel reaches 2.3-3.2 and two 2.5-4.8 (2 ranks,
 *        TUTTI_NCHANNELS=1/2, ring 1-64 MiB): 3 GB/s a channel; no gain from 2 channels once
 *        crowded.
 *   tcp  between hosts: the same software figures over the wire: 10 GbE (1.25 GB/s, what
 *        perf/hosts_bench.sh's tbf allows), 10 us a hop (veth, bridge, tbf: the namespace
 *        hosts' ring and recursive doubling, see the results file).
 * GPU and InfiniBand links are not on this machine. Bandwidths are NVIDIA's published rates;
 * latencies are NCCL's own model (src/graph/tuning.cc of NVIDIA/nccl, the stored version
 * 01afd20: hwLat per step for the ring with the Simple protocol, NVLink 3.4 us, PCI 5.7 us,
 * NET 9.6 us; baseLat Simple 8.4 us), so that the GPU predictions compare with NCCL's. Their
 * messages are posted by thread blocks and NICs, not by the ranks' CPUs: no CPU terms.
 *   nvlink: H100 SXM5 NVLink 4, 900 GB/s per GPU both directions (18 links x 50 GB/s):
 *           450 GB/s per direction.
 *   pcie:   PCIe Gen5 x16, 32 GT/s x 16 lanes, 128b/130b: 63 GB/s per direction.
 *   ib:     InfiniBand NDR (ConnectX-7), 400 Gb/s per port: 50 GB/s per direction
 *           (HDR, 200 Gb/s: 25 GB/s).
 *   gap:    0.5 us NVLink/PCIe (a flag written and polled per chunk), 1 us IB (one
 *           ibv_post_send per chunk by a proxy thread): assumed, not measured.
 */
static const struct tutti_link links[TUTTI_LINK_KIND_COUNT] = {
    [TUTTI_LINK_SHM] = {.lat_us = 0.05,
                        .gap_us = 0.25,
                        .gbps = 20.0,
                        .cpu_us = 0.03,
                        .switch_us = 0.4,
                        .cpu_gbps = 20.0},
    [TUTTI_LINK_TCP] = {.lat_us = 10.0,
                        .gap_us = 4.0,
                        .gbps = 1.25,
                        .cpu_us = 1.5,
                        .wake_us = 4.5,
                        .switch_us = 3.5,
                        .cpu_gbps = 2.0,
                        .chan_gbps = 3.0},
    [TUTTI_LINK_IB] = {.lat_us = 9.6, .gap_us = 1.0, .gbps = 50.0},
    [TUTTI_LINK_NVLINK] = {.lat_us = 3.4, .gap_us = 0.5, .gbps = 450.0},
    [TUTTI_LINK_PCIE] = {.lat_us = 5.7, .gap_us = 0.5, .gbps = 63.0},
    [TUTTI_LINK_LOOPBACK] = {.lat_us = 3.2,
                             .gap_us = 4.0,
                             .gbps = 4.0,
                             .cpu_us = 1.5,
                             .wake_us = 1.0,
                             .switch_us = 2.0,
                             .cpu_gbps = 4.0,
                             .chan_gbps = 3.0},
};

static const char *const link_names[TUTTI_LINK_KIND_COUNT] = {
    [TUTTI_LINK_SHM] = "shm",       [TUTTI_LINK_TCP] = "tcp",   [TUTTI_LINK_IB] = "ib",
    [TUTTI_LINK_NVLINK] = "nvlink", [TUTTI_LINK_PCIE] = "pcie", [TUTTI_LINK_LOOPBACK] = "loopback",
};

/* Software cost of one call: tutti's host path (measured above) and NCCL's kernel launch and
 * set-up (baseLat, Simple). */
#define BASE_HOST_US 0.1
#define BASE_GPU_US  8.4

const struct tutti_link *tutti__link_default(tutti_link_kind_t kind)
{
    return (unsigned)kind < TUTTI_LINK_KIND_COUNT ? &links[kind] : NULL;
}

const char *tutti__link_kind_name(tutti_link_kind_t kind)
{
    return (unsigned)kind < TUTTI_LINK_KIND_COUNT ? link_names[kind] : NULL;
}

int tutti__link_parse(const char *name)
{
    for (int k = 0; name != NULL && k < TUTTI_LINK_KIND_COUNT; k++) {
        if (strcmp(name, link_names[k]) == 0) {
            return k;
        }
    }
    return -1;
}

void tutti__tune_links_make(tutti_link_kind_t intra, tutti_link_kind_t inter, int nics,
                            struct tutti_tune_links *links_p)
{
    int gpu = intra == TUTTI_LINK_NVLINK || intra == TUTTI_LINK_PCIE;
    const struct tutti_link *a = tutti__link_default(intra), *b = tutti__link_default(inter);
    memset(links_p, 0, sizeof(*links_p));
    if (a != NULL) {
        links_p->intra = *a;
    }
    if (b != NULL) {
        links_p->inter = *b;
    }
    links_p->nics = nics > 0 ? nics : 1;
    /* tutti's host path runs every channel on one thread: a few channels only spread sockets
     * and NICs; NCCL runs up to 32 channels on H100, one thread block each. */
    links_p->max_channels = gpu ? 32 : 4;
    links_p->parallel_channels = gpu;
    links_p->base_us = gpu ? BASE_GPU_US : BASE_HOST_US;
    links_p->protos = 1u << TUTTI_PROTO_SIMPLE;
    if (gpu) {
        links_p->protos |= (1u << TUTTI_PROTO_LL) | (1u << TUTTI_PROTO_LL128);
    }
}
