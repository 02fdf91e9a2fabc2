/*
 * test_channels.c - the channels and TCP sockets a communicator takes when TUTTI_NCHANNELS and
 * TUTTI_NSOCKS leave it to tutti (default_channels in src/comm/init.c, auto_socks in
 * transports/tcp/tcp_conn.c): 1 channel over shared memory alone; over TCP 4 channels while the
 * one-hop algorithms fit TUTTI_MEM_BUDGET on 4, else 2; 4 sockets a connection up to 8 ranks
 * that have a CPU each, else 2 (ranks pinned to one CPU together are crowded on any machine);
 * what the variables set wins. Every case then runs an all-reduce large enough to use every
 * channel, checks its result and the sockets of the connection it opened.
 *
 * Looks inside the library (tests link it statically): the communicator's configuration and the
 * TCP context.
 */
#include "comm/comm.h"
#include "harness.h"
#include "transports/tcp/tcp.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

struct chcase {
    char transport[8];
    int nranks;
    char budget[8];    /* TUTTI_MEM_BUDGET, "" for unset */
    char set[8];       /* TUTTI_NCHANNELS and TUTTI_NSOCKS, "" for unset */
    int want_channels; /* cfg.nchannels after set-up */
    int want_socks;    /* the TCP context's sockets a connection; 0: no TCP context */
    int pin;           /* every rank bound to the first CPU it may use: all of them crowded */
};

#define COUNT (1 << 18) /* 1 MiB of float32: a chunk and more on every channel */

/* The first CPU this process may use, as its only one. */
static int pin_first_cpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return -1;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            return sched_setaffinity(0, sizeof(set), &set);
        }
    }
    return -1;
}

static int channels_rank(const struct integ_ctx *ctx)
{
    const struct chcase *c = ctx->arg;
    tutti_comm_t *comm = NULL;
    ICHECK(!c->pin || pin_first_cpu() == 0, "cannot bind rank %d to one CPU", ctx->rank);
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    ICHECK(comm->fab.cfg.nchannels == c->want_channels, "%s, %d ranks: %d channels, want %d",
           c->transport, c->nranks, comm->fab.cfg.nchannels, c->want_channels);
    const struct tcp_ctx *tcp = comm->fab.net.tctx[TUTTI_TRANSPORT_TCP];
    if (c->want_socks > 0) {
        ICHECK(tcp != NULL && tutti__tcp_nsocks(tcp) == c->want_socks,
               "%s, %d ranks (%.1f per CPU): %d sockets, want %d", c->transport, c->nranks,
               comm->fab.cfg.cpu_load, tcp != NULL ? tutti__tcp_nsocks(tcp) : 0, c->want_socks);
    }
    float *in = malloc(COUNT * sizeof(float)), *out = malloc(COUNT * sizeof(float));
    ICHECK(in != NULL && out != NULL, "no memory");
    for (int i = 0; i < COUNT; i++) {
        in[i] = (float)(ctx->rank + 1) * (float)(i % 1000);
    }
    ICHECK_OK(tutti_allreduce(in, out, COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL));
    float ranks = (float)(ctx->nranks * (ctx->nranks + 1) / 2);
    int bad = 0;
    for (int i = 0; i < COUNT && !bad; i++) {
        bad = out[i] != ranks * (float)(i % 1000);
    }
    free(in);
    free(out);
    ICHECK(!bad, "all-reduce on %d channels gave a wrong sum", c->want_channels);
    int next = (ctx->rank + 1) % ctx->nranks;
    const struct tcp_conn *conn =
        (const struct tcp_conn *)comm->fab.net.conns[(size_t)next * TUTTI_MAX_CHANNELS];
    if (c->want_socks > 0) {
        ICHECK(conn != NULL && conn->nsocks == c->want_socks,
               "the connection to rank %d has %d sockets, want %d", next,
               conn != NULL ? conn->nsocks : 0, c->want_socks);
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

static struct chcase cases[] = {
    {"shm", 2, "", "", 1, 0, 0},
    {"tcp", 2, "", "", 4, 4, 0},
    /* one hop on 4 channels: 1 peer x 4 x 2 MiB of slots, over the budget; a ring fits it */
    {"tcp", 2, "4m", "", 2, 4, 0},
    /* 8 peers x 4 channels x 2 MiB exceed the default budget; 9 ranks keep 2 sockets */
    {"tcp", 9, "", "", 2, 2, 0},
    {"tcp", 2, "", "3", 3, 3, 0},
    /* 4 ranks on one CPU: 4 channels still fit the budget, the sockets drop to 2 */
    {"tcp", 4, "", "", 4, 2, 1},
    {"tcp", 4, "", "3", 3, 3, 1},
};

ParameterizedTestParameters(channels, defaults)
{
    return cr_make_param_array(struct chcase, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct chcase *c, channels, defaults, .timeout = 120)
{
    cr_log_info("%s, %d ranks%s, budget '%s', channels and sockets '%s'", c->transport, c->nranks,
                c->pin ? " on one CPU" : "", c->budget, c->set);
    cpu_set_t set;
    if (c->want_socks == 4 && !c->pin && sched_getaffinity(0, sizeof(set), &set) == 0 &&
        CPU_COUNT(&set) < c->nranks) {
        cr_skip_test("%d ranks on %d CPUs are crowded: the case wants a CPU for each", c->nranks,
                     CPU_COUNT(&set));
    }
    integ_setenv("TUTTI_TRANSPORT", c->transport);
    integ_setenv("TUTTI_TIMEOUT", "60s");
    integ_setenv("TUTTI_MEM_BUDGET", c->budget[0] != '\0' ? c->budget : NULL);
    integ_setenv("TUTTI_NCHANNELS", c->set[0] != '\0' ? c->set : NULL);
    integ_setenv("TUTTI_NSOCKS", c->set[0] != '\0' ? c->set : NULL);
    integ_setenv("TUTTI_TCP_SLOT_SIZE", NULL);
    integ_setenv("TUTTI_TCP_NSLOTS", NULL);
    struct integ_opts o = {.nranks = c->nranks, .deadline_s = 100, .make_id = 1, .arg = c};
    integ_run(&o, channels_rank);
}
