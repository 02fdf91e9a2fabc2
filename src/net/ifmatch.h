/*
 * ifmatch.h - which interfaces TUTTI_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME under the shim)
 * names, in the form NCCL and Gloo users write:
 *
 *   eth           every interface whose name starts with "eth" (eth0, eth1, ...)
 *   eth0,ib       a comma-separated list: any of them
 *   =eth0         exactly eth0 (no prefix match); =eth0,eth1 exactly one of those
 *   ^docker,lo    every interface except those starting with docker or lo
 *   ^=docker0     every interface except exactly docker0
 *
 * An empty spec matches nothing here; the caller treats "unset" itself.
 */
#ifndef TUTTI_IFMATCH_H
#define TUTTI_IFMATCH_H

/** Does interface `name` match `spec`? 1 or 0. */
int tutti__ifname_match(const char *spec, const char *name);

/**
 * Is spec well formed (a non-empty list with no empty entry, each at most IFNAMSIZ - 1
 * characters)? 0, or -1 with why (a static string) set.
 */
int tutti__ifname_spec_check(const char *spec, const char **why_p);

#endif /* TUTTI_IFMATCH_H */
