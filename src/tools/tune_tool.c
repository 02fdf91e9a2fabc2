/*
 * tune_tool.c - `tutti-info --tune N [--hosts H] [--tcp] [--load R]`: for a communicator of N
 * ranks on H hosts (default 1; ranks numbered host by host) with R ranks per CPU (default 1),
 * the algorithm each collective gets per message size by the static rule and by the cost model
 * (TUTTI_TUNER=model) with the chunk and channels it chose and its predicted time. The call is
 * modelled with float32 data and what a communicator of that kind has: 1 channel, 2 when any
 * pair talks TCP; 512 KiB chunks when every pair talks TCP, else 128 KiB (shared memory's slot).
 */
#include "tune_tool.h"
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE,      TUTTI_COLL_BROADCAST,
                                     TUTTI_COLL_REDUCE,         TUTTI_COLL_REDUCE_SCATTER,
                                     TUTTI_COLL_ALLGATHER,      TUTTI_COLL_ALLTOALL};

static void print_coll(tutti_coll_t coll, const struct tutti_layout *l, int tcp, double load)
{
    int nranks = l->nranks, nhosts = l->nhosts;
    int n = 0;
    const struct tutti_algo *a = tutti__algos(coll, &n);
    int per_rank = coll == TUTTI_COLL_ALLGATHER || coll == TUTTI_COLL_REDUCE_SCATTER ||
                   coll == TUTTI_COLL_ALLTOALL;
    /* The slot: TCP's when every pair talks TCP, else shared memory's (the smaller). */
    int any_tcp = tcp || nhosts > 1, all_tcp = tcp || nhosts == nranks;
    for (size_t bytes = 8; bytes <= ((size_t)1 << 30); bytes *= 16) {
        size_t count = bytes / 4 / (per_rank ? (size_t)nranks : 1);
        if (count == 0) {
            continue;
        }
        struct tutti_op_desc op = {.coll = coll, .count = count, .dt = TUTTI_FLOAT32,
                                   .op = TUTTI_SUM, .root = 0, .peer = -1};
        struct tutti_plan_params pp = {.rank = 0, .nranks = nranks,
                                       .nchannels = any_tcp ? 2 : 1,
                                       .chunk_elems = (all_tcp ? 512 * 1024 : 128 * 1024) / 4,
                                       .direct_max = 8192, .forced = -1, .tuner = 0,
                                       .nhosts = nhosts, .intra_tcp = tcp, .layout = l,
                                       .cpu_load = load};
        int st = tutti__algo_static(&op, &pp);
        double us = -1;
        struct tutti_plan_params run;
        pp.tuner = 1;
        int mo = tutti__algo_tuned(&op, &pp, &run, &us);
        printf("%-15s %11zu  %-13s %-13s", tutti__coll_name(coll), bytes,
               st >= 0 ? a[st].name : "-", mo >= 0 ? a[mo].name : "-");
        if (mo >= 0) {
            printf(" %7zu %3d %12.1f", run.chunk_elems * 4, run.nchannels, us);
        }
        printf("\n");
    }
}

int tutti__tune_tool(int argc, char **argv)
{
    int nranks = 0, nhosts = 1, tcp = 0;
    double load = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--tune") == 0 && i + 1 < argc) {
            nranks = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc) {
            nhosts = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--tcp") == 0) {
            tcp = 1;
        } else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc) {
            char *end = NULL;
            load = strtod(argv[++i], &end);
            if (end == argv[i] || *end != '\0' || !(load >= 0 && load <= 1e6)) {
                fprintf(stderr, "tutti-info: --load takes ranks per CPU (a number >= 0), not "
                                "'%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "tutti-info: unknown --tune option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (nranks < 1 || nhosts < 1 || nhosts > nranks) {
        fprintf(stderr, "tutti-info: --tune N needs N >= 1 and --hosts H in 1..N (got N %d, "
                        "H %d)\n", nranks, nhosts);
        return 2;
    }
    printf("%d ranks on %d host(s), %s within a host, TCP between hosts, %g rank(s) per CPU; "
           "float32\n%-15s %11s  %-13s %-13s %7s %3s %12s\n",
           nranks, nhosts, tcp ? "TCP" : "shared memory", load, "collective", "bytes", "static",
           "model", "chunk", "ch", "model (us)");
    /* Ranks numbered host by host, N / H a host (rounded: exactly H hosts). */
    int *label = malloc((size_t)nranks * sizeof(int));
    struct tutti_layout *l = NULL;
    if (label != NULL) {
        for (int r = 0; r < nranks; r++) {
            label[r] = (int)((long)r * nhosts / nranks);
        }
        l = tutti__layout_new(nranks, label, NULL);
        free(label);
    }
    if (l == NULL) {
        fprintf(stderr, "tutti-info: no memory for a layout of %d ranks\n", nranks);
        return 1;
    }
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        print_coll(colls[i], l, tcp, load);
    }
    tutti__layout_free(l);
    return 0;
}
