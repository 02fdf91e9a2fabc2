/*
 * api232_main.c - runs the checks of NCCL 2.32's API on the shim (api232.h) by name, each on
 * forked ranks, and reports them as shim_test does.
 *
 *   api232_test CHECK|all [NRANKS]
 *
 * CHECK: grow, suspend_resume, mem_stats, timeout (needs TUTTI_TIMEOUT of a few seconds),
 * comm_config, params, coll_config, rooted_native, unsupported, device_truthful; "all" runs
 * every one but timeout.
 */
#include "api232.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    shim_rank_fn fn;
    int comm_less; /* the check makes its own communicators */
} checks[] = {
    {"suspend_resume", t_suspend_resume, 0},
    {"mem_stats", t_mem_stats, 0},
    {"timeout", t_timeout, 0},
    {"comm_config", t_comm_config, 1},
    {"params", t_params, 1},
    {"coll_config", t_coll_config, 0},
    {"rooted_native", t_rooted_native, 0},
    {"unsupported", t_unsupported, 0},
    {"device_truthful", t_device_truthful, 0},
};

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    int n = argc > 2 ? atoi(argv[2]) : 3, ran = 0;
    if (n < 2 || n > 8) {
        fprintf(stderr, "usage: %s CHECK|all [NRANKS 2..8]\n", argv[0]);
        return 2;
    }
    int all = strcmp(which, "all") == 0;
    if (all || strcmp(which, "grow") == 0) {
        shim_report("grow", api232_grow(n, 2));
        ran++;
    }
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
        int timeout = strcmp(checks[i].name, "timeout") == 0;
        if ((all && !timeout) || strcmp(which, checks[i].name) == 0) {
            shim_report(checks[i].name, shim_run_ranks(n, checks[i].fn, checks[i].comm_less, 60));
            ran++;
        }
    }
    if (ran == 0) {
        fprintf(stderr, "%s: no check named %s\n", argv[0], which);
        return 2;
    }
    return shim_report_end();
}
