/*
 * test_topo.c - the global view on real ranks: with TUTTI_TOPO_FILE naming a DGX-like machine
 * (tests/topo/gen_dgx_xml.py), every rank of a communicator, and of a split child, holds every
 * rank's view (rank r on GPU r, NIC mlx5_r); a TUTTI_TOPO_FILE that cannot be loaded fails init
 * on every rank with a message naming the variable and the file.
 */
#include "harness.h"
#include "../topo/gen.h"
#include "comm/comm.h"
#include "topology/topo.h"

#include <criterion/criterion.h>
#include <string.h>

/* Every rank's view in comm: ranks on one host, rank r on GPU (r mod 8) and its NIC. */
static int check_views(const struct tutti_comm *c, const int *parent_rank)
{
    ICHECK(c->fab.topo != NULL, "no global view");
    for (int r = 0; r < c->fab.nranks; r++) {
        const struct tutti_topo_rank *v = &c->fab.topo[r];
        char want[16];
        snprintf(want, sizeof(want), "mlx5_%d", r % 8);
        ICHECK(v->magic == TUTTI_TOPO_RANK_MAGIC && (v->flags & TUTTI_TOPO_F_FILE),
               "rank %d: not a view from the file", r);
        ICHECK(v->gpu == r % 8 && v->ngpus == 8 && v->nnics == 8,
               "rank %d (parent %d): gpu %d of "
               "%d, %d NICs",
               r, parent_rank[r], v->gpu, v->ngpus, v->nnics);
        ICHECK(strcmp(v->nic_name, want) == 0, "rank %d: NIC %s, expected %s", r, v->nic_name,
               want);
        ICHECK(v->nvlink == (0xffu & ~(1u << v->gpu)), "rank %d: NVLink 0x%x", r, v->nvlink);
    }
    return 0;
}

static int views_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL, *child = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int ids[INTEG_MAX_RANKS];
    for (int r = 0; r < ctx->nranks; r++) {
        ids[r] = r;
    }
    if (check_views(comm, ids) != 0) {
        return 1;
    }
    /* The odd ranks form a child: its view is gathered again, with the child's local ranks. */
    ICHECK_OK(tutti_comm_split(comm, ctx->rank % 2, ctx->rank, &child));
    for (int r = 0; r < child->fab.nranks; r++) {
        ids[r] = 2 * r + ctx->rank % 2;
    }
    if (check_views(child, ids) != 0) {
        return 1;
    }
    ICHECK_OK(tutti_comm_destroy(child));
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

Test(topo, every_rank_holds_every_view_from_topo_file, .timeout = 60)
{
    char path[64];
    cr_assert(topo_gen("", path) == 0);
    integ_setenv("TUTTI_TOPO_FILE", path);
    integ_setenv("TUTTI_TIMEOUT", "30s");
    integ_run_ranks(4, views_rank, NULL, 0);
    unlink(path);
}

static int bad_file_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    tutti_status_t st = tutti_comm_init_rank(&comm, ctx->nranks, ctx->id, ctx->rank);
    const char *msg = tutti_last_error(NULL);
    ICHECK(st != TUTTI_OK && comm == NULL, "init succeeded with a bad TUTTI_TOPO_FILE");
    /* The rank that read the file says why; the others may instead learn that a peer failed. */
    ICHECK(integ_contains(msg, "TUTTI_TOPO_FILE") || st == TUTTI_ERR_REMOTE, "%s: %s",
           tutti_status_name(st), msg);
    if (st == TUTTI_ERR_INVALID_ARG) {
        ICHECK(integ_contains(msg, (const char *)ctx->arg), "message does not name the file: %s",
               msg);
    }
    return 0;
}

/* TUTTI_* variables are read once per process: one test (process) per file. */
static void run_bad_file(const char *file)
{
    integ_setenv("TUTTI_TOPO_FILE", file);
    integ_setenv("TUTTI_TIMEOUT", "10s");
    integ_run_ranks(2, bad_file_rank, (void *)file, 0);
}

Test(topo, missing_topo_file_fails_init_on_every_rank, .timeout = 60)
{
    run_bad_file("/nonexistent/machine.xml");
}

Test(topo, topo_file_not_xml_fails_init_on_every_rank, .timeout = 60)
{
    run_bad_file("/etc/hostname");
}
