/*
 * layout.h - where a communicator's ranks sit, in the form schedules use: each rank's host (hosts
 * numbered 0..nhosts-1 in order of their lowest rank), its index among its host's ranks, and the
 * locality ring (topology/ring.c) with its inverse. Built once per communicator from the
 * all-gathered view (view.c) and handed to the builders through struct tutti_plan_params; pure
 * data, the same on every rank. Builders given no layout (unit tests of plans) use rank order on
 * one host.
 */
#ifndef TUTTI_TOPO_LAYOUT_H
#define TUTTI_TOPO_LAYOUT_H

struct tutti_layout {
    int nranks;
    int nhosts;
    int ppn;       /* ranks on every host when all hosts have as many, else 0 */
    int *host;     /* [nranks] host index of each rank */
    int *local;    /* [nranks] index among its host's ranks, in rank order */
    int *by_local; /* [nhosts * ppn] the rank with local index l on host h (ppn > 0 only) */
    int *ring;     /* [nranks] ring[i]: the i-th rank of the ring */
    int *ring_pos; /* [nranks] inverse of ring */
};

/**
 * A layout for n ranks: label[r] is any id of rank r's host (equal ids: same host; ids in
 * 0..n-1), order[] a ring through all n ranks (NULL: rank order). Returns NULL when out of
 * memory or when order is not a permutation of 0..n-1.
 */
struct tutti_layout *tutti__layout_new(int n, const int *label, const int *order);

void tutti__layout_free(struct tutti_layout *l);

#endif /* TUTTI_TOPO_LAYOUT_H */
