/*
 * fault_rank.c - one rank of the fault matrix (fault_matrix.sh) and of the soak (soak.sh).
 *
 * It joins a job (tutti_comm_init_env from TUTTI_RANK / TUTTI_NRANKS / TUTTI_ROOT /
 * TUTTI_SECRET, or a unique id that rank 0 writes to --idfile), then runs one collective (or,
 * with --coll mixed, a seeded random mix of collectives, sizes, datatypes and ops that every
 * rank draws alike) until it has made --iters calls and --seconds have passed (the ranks agree
 * on when to stop with a one-element all-reduce per call when --seconds is given), checking every
 * result with the perf tools' exact data patterns (perf/perf_data.h). Gather, scatter and the v
 * collectives take their counts from the perf tools' -v (--skew; perf/perf_vcounts.h; --coll
 * mixed draws it too). --mismatch makes the
 * highest rank call differently, as a buggy program would: another count (count), a datatype
 * of another size (dtype) or of the same size (dtype_same), another op (op; reducing
 * collectives), another root (root; rooted collectives), another collective with the same
 * bytes (coll), for sendrecv a send to another peer (peer: rank + 2 instead of rank + 1), or
 * count vectors that disagree with its peers' (vcounts; v forms: alltoallv's block for rank 0
 * empty where rank 0 expects data, or one element where it expects none; the others' own block
 * one element larger, in every vector it passes).
 * With a mismatch, a rank whose calls all returned TUTTI_OK makes one more (an all-reduce):
 * a call that only sent cannot find out, its next call must.
 *
 * It prints, for the script to parse:
 *   READY rank R pid P comm_id HEX shrink_port N    after its first call (connections are up)
 *   RESULT rank R pid P status NAME iters N t_end EPOCH fds A B rss_kb A B msg: TEXT
 *   FINI rank R fds_init A fds_fini B destroy_s S     after tutti_comm_destroy
 * where t_end is CLOCK_REALTIME when the last call returned (before tutti_comm_destroy), and
 * A / B are this process's open fds and resident KiB after its second call and at the end; FINI
 * gives the fds before init and after destroy, and how long destroy took.
 * Exit: 0 every call right, 1 a call or init failed (TEXT is tutti_last_error), 2 usage,
 * 3 a call returned TUTTI_OK with wrong results.
 */
#include "comm/comm.h"
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fds.h"

struct opts {
    const char *coll; /* a perf tool's name ("all_reduce") or "mixed" */
    size_t bytes;     /* per call; --coll mixed: the largest */
    int dtype, op;
    long iters;
    double seconds;
    const char *mismatch; /* "none", "count", "dtype", "dtype_same", "op", "root", "coll",
                             "peer", "vcounts" */
    const char *idfile;   /* unique-id launch: rank 0 writes the id there */
    int rank, nranks;     /* with --idfile */
    uint64_t seed;
    int skew;      /* --skew: enum perf_skew */
    double zipf_s; /* --skew zipf:S */
};

/* The order matters to --mismatch coll (the next one of the list). */
static const struct perf_coll *const colls[] = {
    &perf_all_reduce, &perf_broadcast, &perf_reduce,   &perf_reduce_scatter,
    &perf_all_gather, &perf_alltoall,  &perf_sendrecv, &perf_alltoallv,
    &perf_allgatherv, &perf_gather,    &perf_scatter,  &perf_reduce_scatterv,
};
#define NCOLLS ((int)(sizeof(colls) / sizeof(colls[0])))

static double now_s(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* VmRSS of this process in KiB, or -1. */
static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: fault_rank [--coll NAME|mixed] [--bytes N] [--dtype T] [--op O] [--iters N]\n"
            "                  [--seconds S] [--seed N] [--skew none|uniform|zipf]\n"
            "                  [--mismatch none|count|dtype|dtype_same|op|root|coll|peer|vcounts]\n"
            "                  [--idfile PATH --rank R --nranks N]\n"
            "NAME: all_reduce broadcast reduce reduce_scatter all_gather alltoall sendrecv\n"
            "      alltoallv allgatherv gather scatter reduce_scatterv\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.coll = "all_reduce",
                       .bytes = 65536,
                       .dtype = TUTTI_FLOAT32,
                       .op = TUTTI_SUM,
                       .iters = 100,
                       .mismatch = "none",
                       .rank = -1,
                       .nranks = -1,
                       .seed = 1,
                       .skew = PERF_SKEW_NONE,
                       .zipf_s = 1.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            return -1;
        }
        i++;
        if (strcmp(a, "--coll") == 0) {
            o->coll = v;
        } else if (strcmp(a, "--bytes") == 0) {
            o->bytes = strtoull(v, NULL, 0);
        } else if (strcmp(a, "--dtype") == 0) {
            o->dtype = perf_dtype_parse(v);
        } else if (strcmp(a, "--op") == 0) {
            o->op = perf_op_parse(v);
        } else if (strcmp(a, "--iters") == 0) {
            o->iters = strtol(v, NULL, 0);
        } else if (strcmp(a, "--seconds") == 0) {
            o->seconds = strtod(v, NULL);
        } else if (strcmp(a, "--mismatch") == 0) {
            o->mismatch = v;
        } else if (strcmp(a, "--seed") == 0) {
            o->seed = strtoull(v, NULL, 0);
        } else if (strcmp(a, "--idfile") == 0) {
            o->idfile = v;
        } else if (strcmp(a, "--rank") == 0) {
            o->rank = atoi(v);
        } else if (strcmp(a, "--nranks") == 0) {
            o->nranks = atoi(v);
        } else if (strcmp(a, "--skew") == 0) {
            o->skew = perf_skew_parse(v, &o->skew, &o->zipf_s) == 0 ? o->skew : -1;
        } else {
            return -1;
        }
    }
    if (o->dtype < 0 || o->op < 0 || o->skew < 0 ||
        (o->idfile != NULL && (o->rank < 0 || o->nranks < 1))) {
        return -1;
    }
    return 0;
}

/* Join through a unique id: rank 0 makes it and publishes it atomically (write, rename). */
static tutti_status_t join_by_id(const struct opts *o, tutti_comm_t **comm_p)
{
    tutti_unique_id_t id;
    if (o->rank == 0) {
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "%s.tmp", o->idfile);
        tutti_status_t st = tutti_get_unique_id(&id);
        FILE *f = st == TUTTI_OK ? fopen(tmp, "w") : NULL;
        if (f == NULL || fwrite(&id, sizeof(id), 1, f) != 1 || fclose(f) != 0 ||
            rename(tmp, o->idfile) != 0) {
            fprintf(stderr, "fault_rank: cannot publish the unique id in %s\n", o->idfile);
            return st != TUTTI_OK ? st : TUTTI_ERR_SYSTEM;
        }
    } else {
        FILE *f = NULL;
        for (int k = 0; k < 3000 && (f = fopen(o->idfile, "r")) == NULL; k++) {
            usleep(10000);
        }
        if (f == NULL || fread(&id, sizeof(id), 1, f) != 1) {
            fprintf(stderr, "fault_rank: no unique id in %s after 30 s\n", o->idfile);
            return TUTTI_ERR_TIMEOUT;
        }
        fclose(f);
    }
    return tutti_comm_init_rank(comm_p, o->nranks, &id, o->rank);
}

/* splitmix64: the same sequence on every rank for one seed. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* What one call is. */
struct draw {
    tutti_datatype_t dt;
    tutti_op_t op;
    size_t bytes;
    int root, skew;
};

/* What call `it` is: fixed, or drawn from the seed (--coll mixed). */
static const struct perf_coll *pick(const struct opts *o, long it, int nranks, struct draw *d)
{
    const struct perf_coll *c = NULL;
    *d = (struct draw){(tutti_datatype_t)o->dtype, (tutti_op_t)o->op, o->bytes, 0, o->skew};
    if (strcmp(o->coll, "mixed") == 0) {
        uint64_t r = mix(o->seed * 1000003u + (uint64_t)it);
        c = colls[r % NCOLLS];
        d->dt = (tutti_datatype_t)((r >> 8) % PERF_NUM_DTYPES);
        d->op = (tutti_op_t)((r >> 16) % PERF_NUM_OPS);
        d->bytes = (size_t)((r >> 24) % (o->bytes + 1));
        d->skew = (int)((r >> 44) % 3); /* none, uniform, zipf */
        d->root = (int)((r >> 48) % (uint64_t)nranks);
    }
    for (int i = 0; i < NCOLLS && c == NULL; i++) {
        c = strcmp(colls[i]->name, o->coll) == 0 ? colls[i] : NULL;
    }
    return c;
}

/* Another datatype of the same size (an int for a float and back). */
static tutti_datatype_t same_size_other(tutti_datatype_t dt)
{
    switch (tutti_datatype_size(dt)) {
    case 8:
        return dt == TUTTI_FLOAT64 ? TUTTI_INT64 : TUTTI_FLOAT64;
    case 4:
        return dt == TUTTI_FLOAT32 ? TUTTI_INT32 : TUTTI_FLOAT32;
    case 2:
        return dt == TUTTI_FLOAT16 ? TUTTI_BFLOAT16 : TUTTI_FLOAT16;
    default:
        return dt == TUTTI_UINT8 ? TUTTI_INT8 : TUTTI_UINT8;
    }
}

/* sendrecv, but sending to rank + shift (the mismatch "peer" gives the odd rank shift 2). */
static tutti_status_t sendrecv_to(const struct perf_call *c, tutti_comm_t *comm, int shift)
{
    int to = (c->rank + shift) % c->nranks, from = (c->rank + c->nranks - 1) % c->nranks;
    tutti_status_t st = tutti_group_start();
    tutti_status_t s1 = tutti_send(c->send, c->lay.param_count, c->dt, to, comm, NULL);
    tutti_status_t s2 = tutti_recv(c->recv, c->lay.param_count, c->dt, from, comm, NULL);
    st = tutti_group_end();
    return s1 != TUTTI_OK ? s1 : s2 != TUTTI_OK ? s2 : st;
}

/*
 * --mismatch vcounts on the highest rank: alltoallv's block for rank 0 empty where rank 0
 * expects data (or one element where it expects none); a vector collective's own block one
 * element larger in both vectors it passes (the send count and the receive counts), so its own
 * arguments agree and pass tutti's checks, and only the peers can tell. Both buffers have a
 * spare element after them (one_call), so the larger block neither overruns nor overlaps.
 */
static void vcounts_mismatch(struct perf_vcounts *vc)
{
    if (vc->matrix) {
        vc->sendcounts[0] = vc->sendcounts[0] > 0 ? 0 : 1;
    } else {
        vc->sendcounts[vc->rank]++;
        vc->recvcounts[vc->rank]++;
    }
}

/* The odd rank's call as --mismatch changes it (all but vcounts and peer). */
static const struct perf_coll *mismatch(const char *mis, const struct perf_coll *coll,
                                        struct draw *d, int nranks)
{
    if (strcmp(mis, "dtype") == 0) {
        d->dt = tutti_datatype_size(d->dt) == 8 ? TUTTI_FLOAT32 : TUTTI_FLOAT64;
    } else if (strcmp(mis, "dtype_same") == 0) {
        d->dt = same_size_other(d->dt);
    } else if (strcmp(mis, "op") == 0) {
        d->op = d->op == TUTTI_SUM ? TUTTI_MAX : TUTTI_SUM;
    } else if (strcmp(mis, "root") == 0) {
        d->root = (d->root + 1) % nranks;
    } else if (strcmp(mis, "coll") == 0) {
        for (int i = 0; i < NCOLLS; i++) {
            if (colls[i] == coll) {
                return colls[(i + 1) % NCOLLS]; /* the same bytes, another collective */
            }
        }
    }
    return coll;
}

/* One checked call; *wrong_p = wrong elements. buf is grown as needed. */
static tutti_status_t one_call(const struct opts *o, long it, tutti_comm_t *comm,
                               struct perf_vcounts *vc, void **buf, size_t *cap, size_t *wrong_p)
{
    struct draw d;
    int rank = vc->rank, nranks = vc->nranks;
    const struct perf_coll *coll = pick(o, it, nranks, &d);
    int odd = rank == nranks - 1 && nranks > 1;
    const char *mis = odd ? o->mismatch : "none";
    coll = mismatch(mis, coll, &d, nranks);
    size_t count = d.bytes / tutti_datatype_size(d.dt);
    if (strcmp(mis, "count") == 0) {
        count = 2 * count + nranks;
    }
    struct perf_call c = {.dt = d.dt, .root = (coll->flags & PERF_COLL_ROOTED) ? d.root : -1};
    coll->layout(count, nranks, &c.lay);
    c.op = (coll->flags & PERF_COLL_REDUCES) ? d.op : TUTTI_MAX;
    c.rank = rank;
    c.nranks = nranks;
    c.seed = o->seed + (uint64_t)it;
    perf_vcall(vc, coll, d.skew, o->zipf_s, &c);
    if (strcmp(mis, "vcounts") == 0 && c.v != NULL) {
        vcounts_mismatch(vc);
    }
    /* one spare element after each buffer: room for vcounts' larger block */
    size_t need = (c.lay.send_count + c.lay.recv_count + 2) * tutti_datatype_size(d.dt);
    if (need > *cap) {
        free(*buf);
        *buf = malloc(need);
        *cap = *buf != NULL ? need : 0;
        if (*buf == NULL) {
            return TUTTI_ERR_NO_MEMORY;
        }
    }
    c.send = *buf;
    c.recv = (char *)*buf + (c.lay.send_count + 1) * tutti_datatype_size(d.dt);
    coll->fill(&c);
    tutti_status_t st = strcmp(mis, "peer") == 0 && coll == &perf_sendrecv
                            ? sendrecv_to(&c, comm, 2)
                            : coll->run(&c, comm);
    int owner = !(coll->flags & PERF_COLL_ROOT_ONLY) || rank == c.root;
    *wrong_p = st == TUTTI_OK && owner ? coll->check(&c) : 0;
    return st;
}

/*
 * Shall the loop go on? Without --seconds: until --iters calls. With it, every rank votes each
 * round (an all-reduce MAX of "I want more"), so all stop after the same call even though their
 * clocks differ; a failed vote ends the loop with its status.
 */
static int keep_going(const struct opts *o, tutti_comm_t *comm, long it, double t0,
                      tutti_status_t *st_p)
{
    if (o->seconds <= 0) {
        return it < o->iters;
    }
    int32_t want = it < o->iters || now_s(CLOCK_MONOTONIC) - t0 < o->seconds, any = 0;
    *st_p = tutti_allreduce(&want, &any, 1, TUTTI_INT32, TUTTI_MAX, comm, NULL);
    return *st_p == TUTTI_OK && any != 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct draw d0;
    const struct perf_coll *c0 = parse(argc, argv, &o) == 0 ? pick(&o, 0, 1, &d0) : NULL;
    if (c0 == NULL) {
        usage();
        return 2;
    }
    if (strcmp(o.mismatch, "vcounts") == 0 && strcmp(o.coll, "mixed") != 0 &&
        !perf_vform(c0, o.skew)) {
        fprintf(stderr, "fault_rank: --mismatch vcounts needs count vectors: a v collective, or "
                        "gather or scatter with --skew uniform|zipf\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fds_init = test_count_fds();
    tutti_comm_t *comm = NULL;
    tutti_status_t st = o.idfile != NULL ? join_by_id(&o, &comm) : tutti_comm_init_env(&comm);
    int rank = o.rank, nranks = o.nranks;
    if (st == TUTTI_OK) {
        tutti_comm_rank(comm, &rank);
        tutti_comm_size(comm, &nranks);
    }
    struct perf_vcounts vc = {0};
    if (st == TUTTI_OK && perf_vcounts_alloc(&vc, nranks, rank) != 0) {
        st = TUTTI_ERR_NO_MEMORY;
    }
    double t0 = now_s(CLOCK_MONOTONIC);
    int fds0 = -1;
    long rss0 = -1, it = 0;
    size_t wrong = 0, cap = 0;
    void *buf = NULL;
    for (; st == TUTTI_OK && wrong == 0 && keep_going(&o, comm, it, t0, &st); it++) {
        st = one_call(&o, it, comm, &vc, &buf, &cap, &wrong);
        if (it == 0 && st == TUTTI_OK) {
            union tutti_sockaddr sh;
            socklen_t shlen = sizeof(sh);
            int shport =
                comm->shrink_fd >= 0 && getsockname(comm->shrink_fd, &sh.sa, &shlen) == 0
                    ? (int)ntohs(sh.sa.sa_family == AF_INET6 ? sh.in6.sin6_port : sh.in.sin_port)
                    : -1;
            printf("READY rank %d pid %d comm_id %016llx shrink_port %d\n", rank, (int)getpid(),
                   (unsigned long long)comm->fab.comm_id, shport);
        } else if (it == 1) {
            fds0 = test_count_fds();
            rss0 = rss_kb();
        }
    }
    if (strcmp(o.mismatch, "none") != 0 && st == TUTTI_OK && wrong == 0) {
        /* A rank whose mismatched calls only sent (a broadcast root) cannot tell at those
         * calls; it learns at its next one, which a program makes sooner or later. */
        int32_t one = 1;
        st = tutti_allreduce(&one, &one, 1, TUTTI_INT32, TUTTI_SUM, comm, NULL);
    }
    double t_end = now_s(CLOCK_REALTIME);
    int fds1 = test_count_fds();
    long rss1 = rss_kb();
    const char *msg = st != TUTTI_OK ? tutti_last_error(comm) : wrong ? "wrong results" : "";
    printf("RESULT rank %d pid %d status %s iters %ld t_end %.3f fds %d %d rss_kb %ld %ld "
           "msg: %s (%zu wrong elements)\n",
           rank, (int)getpid(), tutti_status_name(st), it, t_end, fds0, fds1, rss0, rss1, msg,
           wrong);
    free(buf);
    perf_vcounts_free(&vc);
    double t_destroy = now_s(CLOCK_MONOTONIC);
    if (comm != NULL) {
        tutti_comm_destroy(comm);
    }
    double destroy_s = now_s(CLOCK_MONOTONIC) - t_destroy;
    /* The bootstrap root is a detached thread of rank 0 that closes its sockets on its own
     * time after a failed set-up: give it a second before calling an fd a leak. */
    int fds_fini = test_count_fds();
    for (int k = 0; k < 100 && fds_fini != fds_init; k++) {
        usleep(10000);
        fds_fini = test_count_fds();
    }
    printf("FINI rank %d fds_init %d fds_fini %d destroy_s %.3f\n", rank, fds_init, fds_fini,
           destroy_s);
    return st != TUTTI_OK ? 1 : wrong != 0 ? 3 : 0;
}
