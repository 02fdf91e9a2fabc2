/*
 * tune_tool.c - `tutti-info --tune N [--hosts H] [--tcp] [--load R] [--sizes B,B...]`: for a
 * communicator of N ranks on H hosts (default 1; ranks numbered host by host) with R ranks per
 * CPU (default 1), the algorithm, chunk and channels each collective gets per message size
 * (default 8 B .. 1 GiB by factors of 16) by the static rule and by the cost model
 * (TUTTI_TUNER=model), with the model's predicted time. The call is
 * modelled with float32 data and what a communicator of that kind has: 1 channel, 2 when any
 * pair talks TCP; 512 KiB chunks when every pair talks TCP, else 128 KiB (shared memory's slot).
 */
#include "tune_tool.h"
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tutti_coll_t colls[] = {TUTTI_COLL_ALLREDUCE, TUTTI_COLL_BROADCAST,
                                     TUTTI_COLL_REDUCE,    TUTTI_COLL_REDUCE_SCATTER,
                                     TUTTI_COLL_ALLGATHER, TUTTI_COLL_ALLTOALL};

#define MAX_SIZES 64

struct tune_opts {
    int tcp;
    double load;
    size_t sizes[MAX_SIZES]; /* bytes (NCCL's size convention) */
    int nsizes;
};

static void print_coll(tutti_coll_t coll, const struct tutti_layout *l, const struct tune_opts *o)
{
    int tcp = o->tcp;
    int nranks = l->nranks, nhosts = l->nhosts;
    int n = 0;
    const struct tutti_algo *a = tutti__algos(coll, &n);
    int per_rank = coll == TUTTI_COLL_ALLGATHER || coll == TUTTI_COLL_REDUCE_SCATTER ||
                   coll == TUTTI_COLL_ALLTOALL;
    /* The slot: TCP's when every pair talks TCP, else shared memory's (the smaller). */
    int any_tcp = tcp || nhosts > 1, all_tcp = tcp || nhosts == nranks;
    for (int i = 0; i < o->nsizes; i++) {
        size_t bytes = o->sizes[i];
        size_t count = bytes / 4 / (per_rank ? (size_t)nranks : 1);
        if (count == 0) {
            continue;
        }
        struct tutti_op_desc op = {.coll = coll,
                                   .count = count,
                                   .dt = TUTTI_FLOAT32,
                                   .op = TUTTI_SUM,
                                   .root = 0,
                                   .peer = -1};
        struct tutti_plan_params pp = {.rank = 0,
                                       .nranks = nranks,
                                       .nchannels = any_tcp ? 2 : 1,
                                       .chunk_elems = (all_tcp ? 512 * 1024 : 128 * 1024) / 4,
                                       .direct_max = 8192,
                                       .forced = -1,
                                       .tuner = 0,
                                       .nhosts = nhosts,
                                       .intra_tcp = tcp,
                                       .layout = l,
                                       .cpu_load = o->load};
        int st = tutti__algo_static(&op, &pp);
        int st_ch = tutti__algo_static_channels(&op, &pp);
        double us = -1;
        struct tutti_plan_params run;
        pp.tuner = 1;
        int mo = tutti__algo_tuned(&op, &pp, &run, &us);
        printf("%-15s %11zu  %-13s %7zu %3d  %-13s", tutti__coll_name(coll), bytes,
               st >= 0 ? a[st].name : "-", pp.chunk_elems * 4, st_ch, mo >= 0 ? a[mo].name : "-");
        if (mo >= 0) {
            printf(" %7zu %3d %12.1f", run.chunk_elems * 4, run.nchannels, us);
        }
        printf("\n");
    }
}

/* "8,64,1024" into o->sizes; 0, or -1 (with a message) for a malformed list. */
static int parse_sizes(const char *arg, struct tune_opts *o)
{
    o->nsizes = 0;
    for (const char *p = arg; *p != '\0';) {
        char *end = NULL;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || v == 0 || (*end != ',' && *end != '\0') || o->nsizes == MAX_SIZES) {
            fprintf(stderr,
                    "tutti-info: --sizes takes up to %d byte counts > 0 separated by "
                    "commas, not '%s'\n",
                    MAX_SIZES, arg);
            return -1;
        }
        o->sizes[o->nsizes++] = (size_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    return o->nsizes > 0 ? 0 : -1;
}

static int parse(int argc, char **argv, int *nranks_p, int *nhosts_p, struct tune_opts *o)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--tune") == 0 && i + 1 < argc) {
            *nranks_p = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc) {
            *nhosts_p = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--tcp") == 0) {
            o->tcp = 1;
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            if (parse_sizes(argv[++i], o) != 0) {
                return -1;
            }
        } else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc) {
            char *end = NULL;
            o->load = strtod(argv[++i], &end);
            if (end == argv[i] || *end != '\0' || !(o->load >= 0 && o->load <= 1e6)) {
                fprintf(stderr,
                        "tutti-info: --load takes ranks per CPU (a number >= 0), not "
                        "'%s'\n",
                        argv[i]);
                return -1;
            }
        } else {
            fprintf(stderr, "tutti-info: unknown --tune option '%s'\n", argv[i]);
            return -1;
        }
    }
    if (*nranks_p < 1 || *nhosts_p < 1 || *nhosts_p > *nranks_p) {
        fprintf(stderr,
                "tutti-info: --tune N needs N >= 1 and --hosts H in 1..N (got N %d, "
                "H %d)\n",
                *nranks_p, *nhosts_p);
        return -1;
    }
    return 0;
}

int tutti__tune_tool(int argc, char **argv)
{
    int nranks = 0, nhosts = 1;
    struct tune_opts o = {.tcp = 0, .load = 1, .nsizes = 0};
    for (size_t b = 8; b <= ((size_t)1 << 30); b *= 16) {
        o.sizes[o.nsizes++] = b;
    }
    if (parse(argc, argv, &nranks, &nhosts, &o) != 0) {
        return 2;
    }
    printf("%d ranks on %d host(s), %s within a host, TCP between hosts, %g rank(s) per CPU; "
           "float32\n%-15s %11s  %-13s %7s %3s  %-13s %7s %3s %12s\n",
           nranks, nhosts, o.tcp ? "TCP" : "shared memory", o.load, "collective", "bytes", "static",
           "chunk", "ch", "model", "chunk", "ch", "model (us)");
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
        print_coll(colls[i], l, &o);
    }
    tutti__layout_free(l);
    return 0;
}
