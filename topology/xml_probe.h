/*
 * xml_probe.h - try a topology file in a child process before loading it (xml_probe.c).
 */
#ifndef TUTTI_TOPO_XML_PROBE_H
#define TUTTI_TOPO_XML_PROBE_H

#include <hwloc.h>
#include <stddef.h>

/** The most a probe may grow its process by loading one topology (resident memory). */
#define TUTTI_TOPO_PROBE_LIMIT_MB 256

enum {
    TUTTI_TOPO_PROBE_LOADED = 0,  /* hwloc loaded it (or no probe could run): load it here */
    TUTTI_TOPO_PROBE_REFUSED = 1, /* hwloc refused it cleanly; *hwloc_errno says how */
    TUTTI_TOPO_PROBE_FAILED = -1, /* hwloc crashed, hung or took too much memory: err says */
};

/**
 * Load the file `xml` (or the XML text buf[0..buflen) when buf is not NULL) with hwloc in a
 * forked child, the topology set up by `configure` first. Returns one of TUTTI_TOPO_PROBE_*.
 * A refusal is reported here so the caller need not load the file again (hwloc leaks what it
 * had built from a malformed file); a file whose load grows the child by more than
 * TUTTI_TOPO_PROBE_LIMIT_MB is FAILED, so the caller's own process never pays for it.
 */
int tutti__topo_xml_probe(const char *xml, const char *buf, size_t buflen,
                          void (*configure)(hwloc_topology_t), int *hwloc_errno, char *err,
                          size_t len);

#endif /* TUTTI_TOPO_XML_PROBE_H */
