/*
 * topo_tool.h - tutti-info's topology commands: --topo (what was detected or loaded, and what
 * is missing), --dump (hwloc XML), --rings / --ranks (the locality ring of a communicator of N
 * ranks), --dot / --png (Graphviz picture of the machine with the ring).
 */
#ifndef TUTTI_TOPO_TOOL_H
#define TUTTI_TOPO_TOOL_H

#include "topology/topo.h"

#include <stdio.h>

/** A planned communicator: n ranks on nhosts copies of one machine. */
struct topo_plan {
    const struct tutti_topo *t;
    int n, nhosts, per_host;
    struct tutti_topo_rank *v; /* n views */
    int *host;                 /* n host labels (lowest rank of the host) */
    int *order;                /* the ring */
};

/** Run the topology commands on argv (argv[0] is the first option). Returns the exit code. */
int tutti__topo_tool(int argc, char **argv);

/** Graphviz of the plan's machines with the ring drawn in red (topo_dot.c). */
void tutti__topo_dot(FILE *f, const struct topo_plan *p);

/** Render `dot_file` to PNG `png` with dot(1). 0, or -1 with a message on stderr. */
int tutti__topo_png(const char *dot_file, const char *png);

#endif /* TUTTI_TOPO_TOOL_H */
