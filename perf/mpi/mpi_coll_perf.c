/*
 * mpi_coll_perf.c - the perf tools' harness over MPI, to compare tutti with an MPI library on
 * the same machine: the same options, loop, data checks, table and JSON, with the collective
 * chosen by --coll. Launch it with mpirun (-np sets the ranks).
 *
 * Mapping: MPI_Allreduce, MPI_Allgather, MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter_block,
 * MPI_Alltoall and MPI_Sendrecv; MPI_Alltoallv, MPI_Allgatherv, MPI_Gather (MPI_Gatherv with -v
 * uniform|zipf), MPI_Scatter (MPI_Scatterv) and MPI_Reduce_scatter with the very counts and
 * displacements tutti's tools pass (perf_vcounts.c, as MPI's ints); in place with MPI_IN_PLACE
 * where MPI has it (alltoallv's needs a symmetric matrix: out of place only, as tutti's), and
 * MPI_Sendrecv_replace (MPI forbids one buffer as both send and receive buffer). MPI has no 16- or
 * 8-bit floats and no AVG: such rows are skipped with a note, except that collectives which only
 * move data move them as 16- or 8-bit integers. MPI_Bcast has no out-of-place form: the root
 * copies its send buffer first, as tutti does. MPI's in-place reduce-scatter leaves the block at
 * the start of the buffer; it is moved to rank r's block, where NCCL (and the check) expect it.
 * MPI has no group calls: with -m the calls simply follow each other.
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The MPI datatype a collective uses for dt; MPI_DATATYPE_NULL when there is none. */
static MPI_Datatype mpi_type(tutti_datatype_t dt, int reduces)
{
    static const struct {
        tutti_datatype_t dt;
        MPI_Datatype mpi, bits; /* bits: the same-width integer, for moving data only */
    } map[] = {
        {TUTTI_INT8, MPI_INT8_T, MPI_INT8_T},
        {TUTTI_UINT8, MPI_UINT8_T, MPI_UINT8_T},
        {TUTTI_INT16, MPI_INT16_T, MPI_INT16_T},
        {TUTTI_UINT16, MPI_UINT16_T, MPI_UINT16_T},
        {TUTTI_INT32, MPI_INT32_T, MPI_INT32_T},
        {TUTTI_UINT32, MPI_UINT32_T, MPI_UINT32_T},
        {TUTTI_INT64, MPI_INT64_T, MPI_INT64_T},
        {TUTTI_UINT64, MPI_UINT64_T, MPI_UINT64_T},
        {TUTTI_FLOAT16, MPI_DATATYPE_NULL, MPI_UINT16_T},
        {TUTTI_BFLOAT16, MPI_DATATYPE_NULL, MPI_UINT16_T},
        {TUTTI_FLOAT32, MPI_FLOAT, MPI_FLOAT},
        {TUTTI_FLOAT64, MPI_DOUBLE, MPI_DOUBLE},
        {TUTTI_FP8_E4M3, MPI_DATATYPE_NULL, MPI_UINT8_T},
        {TUTTI_FP8_E5M2, MPI_DATATYPE_NULL, MPI_UINT8_T},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (map[i].dt == dt) {
            return reduces ? map[i].mpi : map[i].bits;
        }
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(tutti_op_t op)
{
    switch (op) {
    case TUTTI_SUM:
        return MPI_SUM;
    case TUTTI_PROD:
        return MPI_PROD;
    case TUTTI_MIN:
        return MPI_MIN;
    case TUTTI_MAX:
        return MPI_MAX;
    default:
        return MPI_OP_NULL; /* AVG */
    }
}

static int reduces(const struct perf_coll *coll)
{
    return (coll->flags & PERF_COLL_REDUCES) != 0;
}

static int supports(struct perf_backend *be, const struct perf_coll *coll, tutti_datatype_t dt,
                    tutti_op_t op)
{
    (void)be;
    return mpi_type(dt, reduces(coll)) != MPI_DATATYPE_NULL &&
           (!reduces(coll) || mpi_op(op) != MPI_OP_NULL);
}

static int mpi_failed(struct perf_backend *be, const char *what, int err)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "mpi_coll_perf: rank %d: %s failed: %s\n", be->rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, PERF_EXIT_FAIL); /* the other ranks must not wait for us */
    return -1;
}

/* MPI_Bcast works in place: out of place, the root first copies its send buffer. */
static int bcast(const struct perf_call *c, MPI_Datatype t, int n)
{
    if (c->rank == c->root && c->send != c->recv) {
        memcpy(c->recv, c->send, c->lay.recv_count * tutti_datatype_size(c->dt));
    }
    return MPI_Bcast(c->recv, n, t, c->root, MPI_COMM_WORLD);
}

/* In-place reduce-scatter(v): MPI leaves the block at the start of the buffer, NCCL and tutti at
 * the rank's block (counts: the v form's, else blocks of n). */
static int reduce_scatter_in_place(const struct perf_call *c, MPI_Datatype t, int n,
                                   const int *counts)
{
    int err =
        counts != NULL
            ? MPI_Reduce_scatter(MPI_IN_PLACE, c->send, counts, t, mpi_op(c->op), MPI_COMM_WORLD)
            : MPI_Reduce_scatter_block(MPI_IN_PLACE, c->send, n, t, mpi_op(c->op), MPI_COMM_WORLD);
    if (err == MPI_SUCCESS && c->recv != c->send) {
        memmove(c->recv, c->send, c->lay.recv_count * tutti_datatype_size(c->dt));
    }
    return err;
}

/* Gather, scatter and the v collectives, with the counts of c->v where the call has them; in
 * place with MPI_IN_PLACE at the root (gather, scatter) or on every rank. */
static int run_v(const struct perf_coll *coll, const struct perf_call *c, MPI_Datatype t, int n)
{
    const struct perf_vcounts *v = c->v;
    int me = c->rank, root_in_place = c->in_place && me == c->root;
    MPI_Comm w = MPI_COMM_WORLD;
    switch (coll->id) {
    case PERF_ALLTOALLV:
        return MPI_Alltoallv(c->send, v->isendcounts, v->isdispls, t, c->recv, v->irecvcounts,
                             v->irdispls, t, w);
    case PERF_ALLGATHERV:
        return MPI_Allgatherv(c->in_place ? MPI_IN_PLACE : c->send, v->isendcounts[me], t, c->recv,
                              v->irecvcounts, v->irdispls, t, w);
    case PERF_GATHER: {
        const void *in = root_in_place ? MPI_IN_PLACE : c->send;
        return v == NULL ? MPI_Gather(in, n, t, c->recv, n, t, c->root, w)
                         : MPI_Gatherv(in, v->isendcounts[me], t, c->recv, v->irecvcounts,
                                       v->irdispls, t, c->root, w);
    }
    case PERF_SCATTER: {
        void *out = root_in_place ? MPI_IN_PLACE : c->recv;
        return v == NULL ? MPI_Scatter(c->send, n, t, out, n, t, c->root, w)
                         : MPI_Scatterv(c->send, v->isendcounts, v->isdispls, t, out,
                                        v->irecvcounts[me], t, c->root, w);
    }
    default: /* PERF_REDUCE_SCATTERV */
        return c->in_place
                   ? reduce_scatter_in_place(c, t, n, v->irecvcounts)
                   : MPI_Reduce_scatter(c->send, c->recv, v->irecvcounts, t, mpi_op(c->op), w);
    }
}

static int run(struct perf_backend *be, const struct perf_coll *coll, const struct perf_call *c)
{
    MPI_Datatype t = mpi_type(c->dt, reduces(coll));
    MPI_Op op = mpi_op(c->op);
    const void *in = c->in_place ? MPI_IN_PLACE : c->send;
    int to = (c->rank + 1) % c->nranks, from = (c->rank + c->nranks - 1) % c->nranks, err;
    if (c->lay.param_count > INT_MAX || (c->v != NULL && !c->v->fits_int)) {
        fprintf(stderr, "mpi_coll_perf: count %zu does not fit MPI's int\n",
                c->v != NULL ? c->v->total : c->lay.param_count);
        return mpi_failed(be, coll->name, MPI_ERR_COUNT);
    }
    int n = (int)c->lay.param_count;
    switch (coll->id) {
    case PERF_ALL_REDUCE:
        err = MPI_Allreduce(in, c->recv, n, t, op, MPI_COMM_WORLD);
        break;
    case PERF_ALL_GATHER:
        err = c->in_place ? MPI_Allgather(MPI_IN_PLACE, 0, t, c->recv, n, t, MPI_COMM_WORLD)
                          : MPI_Allgather(c->send, n, t, c->recv, n, t, MPI_COMM_WORLD);
        break;
    case PERF_REDUCE:
        in = c->in_place && c->rank == c->root ? MPI_IN_PLACE : c->send;
        err = MPI_Reduce(in, c->recv, n, t, op, c->root, MPI_COMM_WORLD);
        break;
    case PERF_REDUCE_SCATTER:
        err = c->in_place ? reduce_scatter_in_place(c, t, n, NULL)
                          : MPI_Reduce_scatter_block(c->send, c->recv, n, t, op, MPI_COMM_WORLD);
        break;
    case PERF_ALLTOALL:
        err = MPI_Alltoall(c->send, n, t, c->recv, n, t, MPI_COMM_WORLD);
        break;
    case PERF_SENDRECV: /* MPI forbids one buffer for both: in place is Sendrecv_replace */
        err = c->send == c->recv ? MPI_Sendrecv_replace(c->recv, n, t, to, 0, from, 0,
                                                        MPI_COMM_WORLD, MPI_STATUS_IGNORE)
                                 : MPI_Sendrecv(c->send, n, t, to, 0, c->recv, n, t, from, 0,
                                                MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case PERF_BROADCAST:
        err = bcast(c, t, n);
        break;
    default:
        err = run_v(coll, c, t, n);
        break;
    }
    return err == MPI_SUCCESS ? 0 : mpi_failed(be, coll->name, err);
}

static int no_group(struct perf_backend *be)
{
    (void)be;
    return 0;
}

static int barrier(struct perf_backend *be)
{
    int err = MPI_Barrier(MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_failed(be, "MPI_Barrier", err);
}

static int reduce_f64(struct perf_backend *be, double *v, int mode)
{
    MPI_Op op = mode == PERF_RED_MIN ? MPI_MIN : mode == PERF_RED_MAX ? MPI_MAX : MPI_SUM;
    int err = mode == PERF_RED_BCAST0
                  ? MPI_Bcast(v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD)
                  : MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_failed(be, "time reduction", err);
}

static int sum_i64(struct perf_backend *be, int64_t *v)
{
    int err = MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_failed(be, "#wrong sum", err);
}

static int gather_info(struct perf_backend *be, const struct perf_rank_info *mine,
                       struct perf_rank_info *all)
{
    int err = MPI_Gather(mine, (int)sizeof(*mine), MPI_BYTE, all, (int)sizeof(*mine), MPI_BYTE, 0,
                         MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_failed(be, "rank info gather", err);
}

static int gather_f64(struct perf_backend *be, const double *mine, int n, double *all)
{
    int err = MPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return err == MPI_SUCCESS ? 0 : mpi_failed(be, "per-iteration times gather", err);
}

/* MPI's call for a v-capable collective, as the header's "# call:" line says it. */
static const char *call_name(const struct perf_coll *coll, int vform)
{
    static const struct {
        perf_coll_id_t id;
        const char *name[2]; /* fixed-count form, v form */
    } calls[] = {
        {PERF_ALLTOALLV, {NULL, "MPI_Alltoallv, out of place"}},
        {PERF_ALLGATHERV, {NULL, "MPI_Allgatherv (in place: MPI_IN_PLACE)"}},
        {PERF_GATHER,
         {"MPI_Gather (in place: MPI_IN_PLACE at the root)",
          "MPI_Gatherv (in place: MPI_IN_PLACE at the root)"}},
        {PERF_SCATTER,
         {"MPI_Scatter (in place: MPI_IN_PLACE at the root)",
          "MPI_Scatterv (in place: MPI_IN_PLACE at the root)"}},
        {PERF_REDUCE_SCATTERV,
         {NULL, "MPI_Reduce_scatter (in place: MPI_IN_PLACE, then the block moved to its place)"}},
    };
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        if (calls[i].id == coll->id) {
            return calls[i].name[vform != 0];
        }
    }
    return NULL;
}

static const struct perf_coll *find_coll(const char *name)
{
    static const struct perf_coll *const colls[] = {
        &perf_all_reduce,     &perf_all_gather, &perf_broadcast, &perf_reduce,
        &perf_reduce_scatter, &perf_alltoall,   &perf_sendrecv,  &perf_alltoallv,
        &perf_allgatherv,     &perf_gather,     &perf_scatter,   &perf_reduce_scatterv,
    };
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        if (strcmp(colls[i]->name, name) == 0) {
            return colls[i];
        }
    }
    return NULL;
}

/* Options are parsed on every rank; only rank 0 says what is wrong with them. */
static int parse(int argc, char **argv, int rank, struct perf_opts *o,
                 const struct perf_coll **coll_p)
{
    int saved_out = dup(1), saved_err = dup(2);
    if (rank != 0 && freopen("/dev/null", "w", stdout) != NULL) {
        dup2(fileno(stdout), 2);
    }
    int rc = perf_args_parse(argc, argv, "mpi_coll_perf", 1, o);
    *coll_p = find_coll(o->coll != NULL ? o->coll : "all_reduce");
    if (rc == 0 && *coll_p == NULL) {
        fprintf(stderr, "mpi_coll_perf: unknown --coll '%s' (see -h)\n", o->coll);
        rc = -1;
    }
    if (rc == 0 && o->print_env) {
        fprintf(stderr, "mpi_coll_perf: --print-env lists tutti's variables: use a tutti tool\n");
        rc = -1;
    }
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    return rc;
}

/*
 * The JSON's library and transport: "ompi" or "mpich" from the version string (one source is
 * built against each), and the settings that chose the transport, from the environment the
 * launcher passes on: Open MPI's --mca btl, MPICH's MPIR_CVAR_NOLOCAL and UCX_TLS.
 */
static void describe(struct perf_backend *be, char *version)
{
    static char transport[128]; /* be->transport points here until the end of main */
    const char *btl = getenv("OMPI_MCA_btl"), *nolocal = getenv("MPIR_CVAR_NOLOCAL");
    const char *tls = getenv("UCX_TLS");
    int is_mpich = strncmp(version, "MPICH", 5) == 0;
    version[strcspn(version, is_mpich ? "\n" : ",\n")] = '\0'; /* "Open MPI v4.1.4" */
    for (char *p = strchr(version, '\t'); p != NULL; p = strchr(p, '\t')) {
        *p = ' '; /* "MPICH Version:\t4.0.2" */
    }
    be->lib = is_mpich ? "mpich" : strncmp(version, "Open MPI", 8) == 0 ? "ompi" : "mpi";
    if (btl != NULL) {
        snprintf(transport, sizeof(transport), "btl %s", btl);
    } else if (nolocal != NULL || tls != NULL) {
        snprintf(transport, sizeof(transport), "nolocal %s, ucx %s",
                 nolocal != NULL ? nolocal : "0", tls != NULL ? tls : "default");
    } else {
        snprintf(transport, sizeof(transport), "default");
    }
    be->transport = transport;
}

int main(int argc, char **argv)
{
    struct perf_opts o;
    const struct perf_coll *coll = NULL;
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int vlen = 0;
    MPI_Init(&argc, &argv);
    struct perf_backend be = {.lib = "mpi",
                              .version = version,
                              .supports = supports,
                              .run = run,
                              .group_start = no_group,
                              .group_end = no_group,
                              .barrier = barrier,
                              .reduce_f64 = reduce_f64,
                              .sum_i64 = sum_i64,
                              .gather_info = gather_info,
                              .gather_f64 = gather_f64,
                              .call_name = call_name};
    MPI_Comm_rank(MPI_COMM_WORLD, &be.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &be.nranks);
    MPI_Get_library_version(version, &vlen);
    describe(&be, version);
    int rc = parse(argc, argv, be.rank, &o, &coll);
    if (rc == 0) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        char tool[64];
        snprintf(tool, sizeof(tool), "mpi_coll_perf --coll %s", coll->name);
        rc = perf_bench_run(coll, &o, &be, tool);
    } else {
        rc = rc > 0 ? PERF_EXIT_OK : PERF_EXIT_USAGE;
    }
    MPI_Finalize();
    return rc;
}
