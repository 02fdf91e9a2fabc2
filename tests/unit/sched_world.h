/*
 * sched_world.h - the harness of the schedule tests: one world of n simulated ranks with
 * recognisable inputs, every rank's real plan run on the real executor over the simulated
 * network (tests/common/sim.c), and every rank's result compared with a reference.
 */
#ifndef TUTTI_TEST_SCHED_WORLD_H
#define TUTTI_TEST_SCHED_WORLD_H

#include "exec/plan.h"

#include <stddef.h>
#include <stdint.h>

#define MAXN     17
#define SENTINEL 0x5a5a5a5au

struct world {
    int n;
    size_t count;
    int root;
    int inplace;
    uint32_t *send[MAXN], *recv[MAXN];
    size_t send_elems, recv_elems;
};

/** Rank's input element i. */
uint32_t input(int rank, size_t i);

/** Allocate and fill the buffers for collective c (inputs; outputs SENTINEL). */
void world_fill(struct world *w, tutti_coll_t c);
void world_free(struct world *w);

/** Rank r's call of collective c on the world's buffers. */
struct tutti_op_desc desc(const struct world *w, tutti_coll_t c, int r, tutti_op_t op);

/** Where params() places the ranks (NULL: rank order on one host). */
extern const struct tutti_layout *world_layout;

/** The transport params() reports to each rank (NULL: not known, as in tools). */
extern const uint8_t *world_peer_transport;

/** params()' tuner (0: the static rule; 1: the cost model) and its ranks per CPU. */
extern int world_tuner;
extern double world_cpu_load;

/** Plan parameters of rank r (layout: world_layout). */
struct tutti_plan_params params(int r, int n, int nch, size_t chunk, int forced);

/** Build and run every rank's plan with catalog entry `algo`; returns sim_run's result. */
int run_algo(struct world *w, tutti_coll_t c, tutti_op_t op, int nch, size_t slot_elems, int algo);

/** Assert that every rank's output is the reference (SUM for the reducing collectives). */
void check(const struct world *w, tutti_coll_t c, const char *what);

/**
 * Float all-reduce (SUM, 301 elements whose sums round differently in other orders) with catalog
 * entry algo on n ranks: every rank's result must be bitwise identical to rank 0's.
 */
void check_float_bitwise(int n, int algo, size_t slot);

#endif /* TUTTI_TEST_SCHED_WORLD_H */
