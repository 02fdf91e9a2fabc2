/*
 * host_share.h - one topology detection per host and job (private). hwloc's detection costs a
 * rank about 0.1 s of CPU; 512 ranks of one host detecting at once is a minute of a 2-core
 * machine. The first of a job's ranks on a host detects and publishes the result in a small
 * shared-memory file; the others wait for it and read it, then place themselves (their own CPU
 * affinity: usable PUs, package, NUMA node) with the file's map of every PU.
 *
 * The file is named after the job and the host (tutti__topo_share_name), so two jobs never
 * share one and namespace "hosts" of one machine each have their own. Its maker unlinks it once
 * every rank has detected (after init's first sync: tutti__topo_share_end). Anything unusual (no
 * /dev/shm, a file of another version, a maker that died or is slow) ends in the rank detecting
 * alone, never in an error.
 */
#ifndef TUTTI_TOPO_HOST_SHARE_H
#define TUTTI_TOPO_HOST_SHARE_H

#include "topology/topo.h"

#include <stdint.h>

#define TUTTI_TOPO_MAX_PUS 1024 /* PUs by OS index that the map places (CPU_SETSIZE) */

/** Each PU's package and NUMA node (logical indices; -1: unknown), by OS index. */
struct tutti_topo_pus {
    int n; /* PUs 0..n-1 are mapped */
    int16_t package[TUTTI_TOPO_MAX_PUS];
    int16_t numa[TUTTI_TOPO_MAX_PUS];
};

/** Detect this machine live into *t, filling the PU map too. */
typedef tutti_status_t (*tutti_topo_detect_fn)(struct tutti_topo *t, struct tutti_topo_pus *pus);

/** The shared file's name for a job on a host ("/tutti-topo-<job>-<host>", for shm_open). */
void tutti__topo_share_name(uint64_t job_id, const uint8_t *hostid, size_t idlen, char *out,
                            size_t len);

/**
 * Fill *t from the host's detection for `name`: read it when another rank has published it
 * (waiting while that rank detects), else detect with `detect` and publish. *t is this process's
 * view either way: a copy read from the file is placed with tutti__topo_place.
 * @return 1: read from the file; 0: detected here (published or not).
 */
int tutti__topo_share(const char *name, tutti_topo_detect_fn detect, struct tutti_topo *t);

/** Unlink the file this process made or read, if any (every rank of its job has detected). */
void tutti__topo_share_end(void);

/** Remove every file of job_id's detections (a launcher whose ranks have all ended). */
void tutti__topo_share_remove_job(uint64_t job_id);

/** Set t's usable PUs and, from the map, its package and NUMA node, for this process's CPU
 * affinity (detect.c). */
void tutti__topo_place(struct tutti_topo *t, const struct tutti_topo_pus *pus);

#endif /* TUTTI_TOPO_HOST_SHARE_H */
