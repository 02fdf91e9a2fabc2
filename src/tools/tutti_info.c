/*
 * tutti_info.c - `tutti-info`: what this tutti is and sees (--help lists it all). Without
 * options: version, build,
 * transports, machine. --env: every TUTTI_* variable with its type, default, current value and
 * help (the one table in src/base/env.c). --algos: the algorithms of each collective, as TUTTI_ALGO
 * names them. --host-id: this process's host identity. --hang LOGFILE...: which ranks are behind
 * (hang_report.c). --topo, --topo-file, --rings/--ranks: the topology and its rings (topo_tool.c).
 * --tune N: the automatic algorithm choice per collective and size (tune_tool.c). --footprint N:
 * what N local ranks hold after one call of each collective (footprint_tool.c). --gpu: the GPU
 * module and the visible GPUs (gpu_tool.c). --rdma: the RDMA ports and the address tutti would
 * use on each (transports/ibverbs/ib_devices.c).
 */
#include "coll/coll.h"
#include "footprint_tool.h"
#include "gpu_tool.h"
#include "hang_report.h"
#include "topo_tool.h"
#include "tune_tool.h"
#include "base/env.h"
#include "exec/peer.h"
#include "topology/topo.h"
#include "transports/ibverbs/ib_devices.h"
#include "transports/transport.h"
#include "exec/registry.h"
#include "tutti.h"
#include "kernels/reduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(tutti_env_type_t t)
{
    switch (t) {
    case TUTTI_ENV_STRING:
        return "string";
    case TUTTI_ENV_INT:
        return "int";
    case TUTTI_ENV_SIZE:
        return "size";
    case TUTTI_ENV_DURATION:
        return "duration";
    }
    return "?";
}

static void print_env(void)
{
    int n = 0;
    const struct tutti_env_desc *t = tutti__env_table(&n);
    char name[64], range[48];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "TUTTI_%s", t[i].name);
        const char *cur = tutti__env_foreign(name);
        range[0] = '\0';
        if (t[i].lo[0] != '\0') {
            snprintf(range, sizeof(range), " range %s to %s", t[i].lo, t[i].hi);
        }
        printf("%-22s %-8s default %-8s%s%s%s\n    %s\n", name, type_name(t[i].type),
               t[i].def[0] ? t[i].def : "\"\"", range, cur ? " now " : "", cur ? cur : "",
               t[i].help);
    }
    /* A value that is malformed or out of range is what every init would refuse: say so. */
    if (tutti__env_check() != TUTTI_OK) {
        printf("\nrefused: %s\n", tutti_last_error(NULL));
    }
}

static void print_algos(void)
{
    printf("TUTTI_ALGO=coll:algo,... forces one. Otherwise the cost model (TUTTI_TUNER=model,\n"
           "the default) picks among those that apply, keeping the static rule's choice unless\n"
           "it predicts a clear gain; the static rule (TUTTI_TUNER=static) takes the first\n"
           "(general) algorithm, or the second (one hop) for messages of at most TUTTI_DIRECT_MAX\n"
           "bytes on <= 16 ranks, never those marked [model].\n");
    for (int c = 0; c < TUTTI_COLL_COUNT; c++) {
        int n = 0;
        const struct tutti_algo *a = tutti__algos((tutti_coll_t)c, &n);
        for (int i = 0; i < n; i++) {
            printf("%-15s %-12s %s%s\n", i == 0 ? tutti__coll_name((tutti_coll_t)c) : "", a[i].name,
                   a[i].manual ? "[model] " : "", a[i].desc);
        }
    }
}

static void print_summary(void)
{
    const struct tutti_topo *topo = tutti__topo();
    printf("tutti %s (code %d)\n", TUTTI_VERSION_STRING, tutti_version());
    printf("transports:");
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        if (tutti__transport_get((tutti_transport_id_t)id) != NULL) {
            printf(" %s", tutti__transport_name((tutti_transport_id_t)id));
        }
    }
    printf("\nreductions: %s\n", tutti__reduce_isa());
    printf("machine: %d package(s), %d NUMA node(s), %d core(s), %d of %d CPUs usable%s\n",
           topo->packages, topo->numa_nodes, topo->cores, topo->allowed_pus, topo->pus,
           topo->ok ? "" : " (hwloc failed; from sysconf)");
    (void)tutti__gpu_info(stdout);
    (void)tutti__ib_info(stdout);
}

static const char usage_text[] =
    "usage: tutti-info [OPTION]\n"
    "What this tutti is and what it sees. Without an option: the version, the transports built\n"
    "in, the reduction code, the machine, the GPUs and the RDMA ports.\n"
    "\n"
    "  --env                 every TUTTI_* variable: type, default, range, value now, meaning\n"
    "  --algos               the algorithms of each collective, as TUTTI_ALGO names them\n"
    "  --topo [--topo-file F] [--dump F] [--dot F|-] [--png F]\n"
    "                        the machine as tutti sees it (hwloc, NVML), or as file F describes\n"
    "  --rings N | --ranks N [--hosts H]\n"
    "                        the ring N ranks on H hosts like this one would run in\n"
    "  --tune N [--hosts H] [--tcp] [--load R] [--sizes B,B...]\n"
    "                        the algorithm picked per collective and size for N ranks\n"
    "  --footprint N [--size B]\n"
    "                        what N local ranks hold after one call of each collective\n"
    "  --gpu                 the GPU module and the GPUs this process can use\n"
    "  --rdma                the RDMA ports and the address tutti would use on each\n"
    "  --host-id             this process's host identity (ranks with one are on one host)\n"
    "  --hang LOGFILE...     which ranks a hung job waited for, from its ranks' logs\n"
    "  --version, -V         the version\n"
    "  --help, -h            this text\n";

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage_text, stdout);
    } else if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("tutti %s (code %d)\n", TUTTI_VERSION_STRING, tutti_version());
    } else if (argc > 1 && strcmp(argv[1], "--env") == 0) {
        print_env();
    } else if (argc > 1 && strcmp(argv[1], "--algos") == 0) {
        print_algos();
    } else if (argc > 1 && strcmp(argv[1], "--host-id") == 0) {
        uint8_t id[TUTTI_HOSTID_BYTES];
        tutti__host_id(id);
        for (int i = 0; i < TUTTI_HOSTID_BYTES; i++) {
            printf("%02x", id[i]);
        }
        printf("\n");
    } else if (argc > 2 && strcmp(argv[1], "--hang") == 0) {
        return tutti__hang_report(stdout, argc - 2, argv + 2);
    } else if (argc > 1 && (strcmp(argv[1], "--topo") == 0 || strcmp(argv[1], "--topo-file") == 0 ||
                            strcmp(argv[1], "--rings") == 0 || strcmp(argv[1], "--ranks") == 0)) {
        return tutti__topo_tool(argc - 1, argv + 1);
    } else if (argc > 1 && strcmp(argv[1], "--gpu") == 0) {
        (void)tutti__gpu_info(stdout);
    } else if (argc > 1 && strcmp(argv[1], "--rdma") == 0) {
        (void)tutti__ib_info(stdout);
    } else if (argc > 2 && strcmp(argv[1], "--tune") == 0) {
        return tutti__tune_tool(argc - 1, argv + 1);
    } else if (argc > 1 && strcmp(argv[1], "--footprint") == 0) {
        return tutti__footprint_tool(argc - 1, argv + 1);
    } else if (argc > 1) {
        fprintf(stderr, "tutti-info: %s %s\n%s", argv[1],
                strcmp(argv[1], "--hang") == 0 || strcmp(argv[1], "--tune") == 0
                    ? "needs an argument"
                    : "is not an option",
                usage_text);
        return 2;
    } else {
        print_summary();
    }
    return 0;
}
