/*
 * topo.h - what tutti knows about the machine it runs on (private). Detection uses hwloc and is
 * done once per process. The schedules that follow locality come with the topology issue; for
 * now the engine uses the CPU count to decide how long to spin before yielding.
 */
#ifndef TUTTI_TOPO_H
#define TUTTI_TOPO_H

struct tutti_topo {
    int ok;         /* hwloc loaded a topology */
    int packages;   /* sockets */
    int numa_nodes;
    int cores;      /* physical cores in the machine */
    int pus;        /* hardware threads in the machine */
    int allowed_pus; /* hardware threads this process may run on (affinity, cgroups) */
};

/** The machine, detected on first call. Thread-safe. */
const struct tutti_topo *tutti__topo(void);

#endif /* TUTTI_TOPO_H */
