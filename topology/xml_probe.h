/*
 * xml_probe.h - try a topology file in a child process before loading it (xml_probe.c).
 */
#ifndef TUTTI_TOPO_XML_PROBE_H
#define TUTTI_TOPO_XML_PROBE_H

#include <hwloc.h>
#include <stddef.h>

/**
 * Load the file `xml` (or the XML text buf[0..buflen) when buf is not NULL) with hwloc in a
 * forked child, the topology set up by `configure` first. Returns 0 when the child loaded it or
 * hwloc refused it cleanly (the caller's own load then succeeds or says why), or when no probe
 * could run; -1 with a message in err when hwloc crashed or hung on it.
 */
int tutti__topo_xml_probe(const char *xml, const char *buf, size_t buflen,
                          void (*configure)(hwloc_topology_t), char *err, size_t len);

#endif /* TUTTI_TOPO_XML_PROBE_H */
