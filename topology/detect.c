/*
 * detect.c - machine detection with hwloc: packages, NUMA nodes, cores and the hardware threads
 * this process may use (cpuset of its affinity and cgroup). Done once, under pthread_once; when
 * hwloc fails, sysconf's CPU count stands in and `ok` says so.
 */
#include "topology/topo.h"
#include "global.h"
#include "log.h"

#include <hwloc.h>
#include <pthread.h>
#include <unistd.h>

static void detect(void)
{
    struct tutti_topo *t = &tutti__g.topo;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    t->pus = t->cores = t->allowed_pus = n > 0 ? (int)n : 1;
    t->packages = t->numa_nodes = 1;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        return;
    }
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        tutti_info(TUTTI_SUBSYS_TOPO, "hwloc could not load the topology; using sysconf");
        return;
    }
    t->ok = 1;
    t->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set != NULL && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        int w = hwloc_bitmap_weight(set);
        t->allowed_pus = w > 0 ? w : t->pus;
    } else {
        t->allowed_pus = t->pus;
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    tutti_debug(TUTTI_SUBSYS_TOPO, "%d package(s), %d NUMA node(s), %d core(s), %d/%d PUs usable",
                t->packages, t->numa_nodes, t->cores, t->allowed_pus, t->pus);
}

const struct tutti_topo *tutti__topo(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* guards the one detection */
    pthread_once(&once, detect);
    return &tutti__g.topo;
}
