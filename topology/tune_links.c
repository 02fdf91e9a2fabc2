/*
 * tune_links.c - the figures the cost model (tune.c) works with: per link kind a latency, a
 * per-message gap and a bandwidth; per protocol how it scales them; default systems. Where each
 * number comes from is said beside it; docs/ARCHITECTURE.md ("Tuner") and
 * perf/results/2026-11-22-model.md give the commands of the measurements.
 */
#include "tune.h"

#include <string.h>

/*
 * Host links, measured on the 2-core development VM with build/perf/all_reduce_perf -N 2
 * --bind core (TUTTI_ALGO=allreduce:ring / :oneshot forced; 2 ranks, so nothing is
 * oversubscribed). The machine is shared and was loaded (load average 14-16 on 2 cores on
 * 2026-11-22) while calibrating: those runs are 10-20x slower than the quiet medians of
 * perf/results/2026-11-21-vm-all_reduce.md (5 launches each), which are used where they exist.
 *   shm  lat: ring 8 B (2 hops) 0.82 us best vs one-shot 8 B (1 hop) 0.72 us best today; quiet
 *        one-shot medians 0.41-0.55 us at 8-128 B: one hop ~0.2 us, base ~0.35 us.
 *        gbps: ring busbw at 256 MiB, quiet median 4.0 GB/s (64 MiB: 3.2, best 5.0; memcpy on
 *        this VM: 11.3 GB/s). The reduction is folded in. Mid sizes that stay in cache reach
 *        5.3 GB/s: the model is conservative there.
 *        gap: 1 MiB (8 slots per rank) runs at least as fast as the bandwidth alone predicts, so
 *        the gap is below what this machine resolves; 0.1 us (a flag store and a doorbell test).
 *   tcp  (loopback) lat: quiet one-shot 8 B median 14 us = base + 1 hop; ring 16-32 KiB (2 hops)
 *        33-40 us: one hop ~10 us, base ~4 us. Loaded today: 171 us per hop (ring 418 us vs
 *        one-shot 247 us): the peer is not on a CPU when its data arrives.
 *        gbps: ring busbw at 64-256 MiB, quiet medians 1.17-1.28 GB/s: 1.3.
 *        gap: 2 us, one sendmsg/recv per frame (assumed; 1 MiB also beats the bandwidth alone).
 *        Between real hosts the NIC caps it: 10 GbE is 1.25 GB/s.
 * GPU and InfiniBand links are not on this machine. Bandwidths are NVIDIA's published rates;
 * latencies are NCCL's own model (src/graph/tuning.cc of NVIDIA/nccl, the stored version
 * 01afd20: hwLat per step for the ring with the Simple protocol, NVLink 3.4 us, PCI 5.7 us,
 * NET 9.6 us; baseLat Simple 8.4 us), so that the GPU predictions compare with NCCL's.
 *   nvlink: H100 SXM5 NVLink 4, 900 GB/s per GPU both directions (18 links x 50 GB/s):
 *           450 GB/s per direction.
 *   pcie:   PCIe Gen5 x16, 32 GT/s x 16 lanes, 128b/130b: 63 GB/s per direction.
 *   ib:     InfiniBand NDR (ConnectX-7), 400 Gb/s per port: 50 GB/s per direction
 *           (HDR, 200 Gb/s: 25 GB/s).
 *   gap:    0.5 us NVLink/PCIe (a flag written and polled per chunk), 1 us IB (one
 *           ibv_post_send per chunk by a proxy thread): assumed, not measured.
 */
static const struct tutti_link links[TUTTI_LINK_KIND_COUNT] = {
    [TUTTI_LINK_SHM] = {.lat_us = 0.2, .gap_us = 0.1, .gbps = 4.0},
    [TUTTI_LINK_TCP] = {.lat_us = 10.0, .gap_us = 2.0, .gbps = 1.3},
    [TUTTI_LINK_IB] = {.lat_us = 9.6, .gap_us = 1.0, .gbps = 50.0},
    [TUTTI_LINK_NVLINK] = {.lat_us = 3.4, .gap_us = 0.5, .gbps = 450.0},
    [TUTTI_LINK_PCIE] = {.lat_us = 5.7, .gap_us = 0.5, .gbps = 63.0},
};

static const char *const link_names[TUTTI_LINK_KIND_COUNT] = {
    [TUTTI_LINK_SHM] = "shm",       [TUTTI_LINK_TCP] = "tcp",   [TUTTI_LINK_IB] = "ib",
    [TUTTI_LINK_NVLINK] = "nvlink", [TUTTI_LINK_PCIE] = "pcie",
};

/* Software cost of one call: tutti's host path (measured above) and NCCL's kernel launch and
 * set-up (baseLat, Simple). */
#define BASE_HOST_US 0.35
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
