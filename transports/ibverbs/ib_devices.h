/*
 * ib_devices.h - the RDMA ports of this machine as tutti sees them: every port of every verbs
 * device, its state, link layer and rate, and the address tutti would use on it (InfiniBand: its
 * LID and GID 0; RoCE: the GID it picks, RoCE v2 first, IPv4-mapped first). TUTTI_IB_HCA
 * filters (ib_hca.h).
 */
#ifndef TUTTI_TRANSPORTS_IB_DEVICES_H
#define TUTTI_TRANSPORTS_IB_DEVICES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TUTTI_IB_MAX_PORTS 32

enum tutti_ib_link { TUTTI_IB_LINK_IB = 1, TUTTI_IB_LINK_ETH = 2 };
enum tutti_ib_gid_type { TUTTI_IB_GID_IB = 0, TUTTI_IB_GID_ROCE_V1 = 1, TUTTI_IB_GID_ROCE_V2 = 2 };

struct tutti_ib_port {
    char dev[64];
    int port;
    int active;    /* IBV_PORT_ACTIVE */
    int link;      /* enum tutti_ib_link */
    int mtu;       /* active MTU in bytes */
    double gbps;   /* active width x speed, Gbit/s (0: unknown) */
    uint16_t lid;  /* InfiniBand */
    int gid_index; /* the GID tutti uses; -1: none usable */
    int gid_type;  /* enum tutti_ib_gid_type */
    uint8_t gid[16];
    int allowed; /* TUTTI_IB_HCA lets tutti use it */
};

/**
 * Fill up to `max` ports (every port of every device, allowed or not). Returns how many, or -1
 * with `why` set (TUTTI_IB_HCA malformed). 0 ports: `why` says what was looked at (no verbs
 * devices; the kernel's /sys/class/infiniband).
 */
int tutti__ib_ports(struct tutti_ib_port *ports, int max, char *why, size_t len);

/** "fe80::..." or, for an IPv4-mapped GID, "::ffff:10.99.0.1". */
void tutti__ib_gid_str(const uint8_t gid[16], char *out, size_t len);

/** `tutti-info --rdma`: print the ports and what tutti would use. Returns how many usable. */
int tutti__ib_info(FILE *out);

#endif /* TUTTI_TRANSPORTS_IB_DEVICES_H */
