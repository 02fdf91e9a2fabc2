/*
 * perf_args.c - the command line of the perf tools: nccl-tests' options with their defaults and
 * meanings, plus -N (fork local ranks), -v (the block sizes of gather, scatter and the v
 * collectives), --json, --print-env and, for mpi_coll_perf, --coll.
 * Options nccl-tests has but that cannot apply here (-t/-g other than 1, -G > 0) are refused
 * with a reason rather than ignored. The hidden --debug-corrupt flips one output element after
 * each checked call, so that tests can prove a wrong result is caught.
 */
#include "perf_data.h"
#include "perf_vcounts.h"
#include "tutti_perf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void perf_args_usage(const char *tool, int mpi)
{
    printf("USAGE: %s\n"
           "\t[-b,--minbytes <min size in bytes, K/M/G units>] (default 32M)\n"
           "\t[-e,--maxbytes <max size in bytes>] (default 32M)\n"
           "\t[-i,--stepbytes <increment size>] (default 1M)\n"
           "\t[-f,--stepfactor <increment factor>] (default: off, sizes grow by -i)\n"
           "\t[-n,--iters <iteration count>] (default 20)\n"
           "\t[-m,--agg_iters <calls aggregated in one group per iteration>] (default 1)\n"
           "\t[-w,--warmup_iters <warmup iteration count>] (default 5)\n"
           "\t[-c,--check <check iteration count, 0 = no check>] (default 1)\n"
           "\t[-o,--op <sum/prod/min/max/avg/all/premulsum>] (default sum)\n"
           "\t[-d,--datatype <int8/uint8/int16/uint16/int32/uint32/int64/uint64/half/bfloat16/"
           "float/double/f8e4m3/f8e5m2/all>] (default float)\n"
           "\t[-r,--root <root/all>] (default 0)\n"
           "\t[-v,--skew <none/uniform/zipf[:S]>] gather, scatter and the v collectives: equal "
           "blocks, random\n\t    ones, or Zipf-distributed ones (exponent S, default 1), the "
           "same for every size on every\n\t    rank; not none: gather and scatter time their "
           "v forms (default none)\n"
           "\t[-a,--average <0/1/2/3> report the time of <0=rank 0/1=avg/2=min/3=max> over "
           "ranks] (default 1)\n"
           "\t[-z,--blocking <0/1>] (accepted; host calls always block)\n"
           "\t[-t,--nthreads 1] [-g,--ngpus 1] [-G,--cudagraph 0] (nothing else applies)\n"
           "%s"
           "\t[--halves <out/in/both>] time the out-of-place form, the in-place one or both "
           "(default both)\n"
           "\t[--bind <core/none>] with -N: pin rank r to the r-th allowed CPU when the ranks "
           "fit the CPUs,\n\t    like mpirun's default (default core)\n"
           "\t[--memory <host/device>] buffers in host memory or, on the GPU, device memory "
           "(calls on\n\t    the default CUDA stream; default host)\n"
           "\t[-R,--register <0/1/2/3>] 1: register the buffers with tutti_comm_register (RDMA: "
           "sends\n\t    without a copy into tutti's FIFOs); 2: allocate them with "
           "tutti_mem_alloc and\n\t    register them as windows (collectives in place across "
           "ranks, as nccl-tests' -R 2);\n\t    3: plain buffers beside a window of their own "
           "(what a window costs the\n\t    calls that do not use it); tutti's tools only; "
           "default 0\n"
           "\t[-J,--json <file>] write every result as JSON (nccl-tests' keys and tutti's)\n"
           "\t[-I,--per_iter_timing <0/1>] 1: time every iteration on its own; the JSON gets "
           "each size's\n\t    per-iteration times (the slowest rank's) and every rank's, "
           "as nccl-tests' -I 1 writes them\n"
           "\t[--print-env] list tutti's environment variables (defaults, ranges) and exit\n"
           "\t[-h,--help]\n",
           tool,
           mpi ? "\t[--coll <all_reduce/all_gather/broadcast/reduce/reduce_scatter/alltoall/"
                 "sendrecv/\n\t    alltoallv/allgatherv/gather/scatter/reduce_scatterv>] "
                 "(default all_reduce)\n"
               : "\t[-N,--nranks <ranks>] fork this many local ranks (default: the launcher's "
                 "ranks under\n\t    mpirun/torchrun/srun/TUTTI_RANK, else 1 rank)\n");
}

/* nccl-tests' size syntax: a number, optionally fractional, then K, M or G (powers of 1024). */
static int parse_size(const char *s, size_t *out_p)
{
    double v;
    char unit[2] = "";
    int n = sscanf(s, "%lf %1s", &v, unit);
    double mult = 1;
    if (n < 1 || v < 0) {
        return -1;
    }
    if (n == 2) {
        const char *units = "kKmMgG";
        const char *u = strchr(units, unit[0]);
        if (u == NULL) {
            return -1;
        }
        mult = (double)(1ull << (10 * (1 + (u - units) / 2)));
    }
    *out_p = (size_t)(v * mult);
    return 0;
}

/* A whole number within [lo, hi], or -1. */
static int parse_int(const char *s, long lo, long hi, long *out_p)
{
    char *end;
    long v = strtol(s, &end, 0);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out_p = v;
    return 0;
}

static const struct option long_opts[] = {
    {"nthreads", required_argument, 0, 't'},
    {"ngpus", required_argument, 0, 'g'},
    {"minbytes", required_argument, 0, 'b'},
    {"maxbytes", required_argument, 0, 'e'},
    {"stepbytes", required_argument, 0, 'i'},
    {"stepfactor", required_argument, 0, 'f'},
    {"iters", required_argument, 0, 'n'},
    {"agg_iters", required_argument, 0, 'm'},
    {"warmup_iters", required_argument, 0, 'w'},
    {"check", required_argument, 0, 'c'},
    {"op", required_argument, 0, 'o'},
    {"datatype", required_argument, 0, 'd'},
    {"root", required_argument, 0, 'r'},
    {"average", required_argument, 0, 'a'},
    {"blocking", required_argument, 0, 'z'},
    {"cudagraph", required_argument, 0, 'G'},
    {"nranks", required_argument, 0, 'N'},
    {"json", required_argument, 0, 'J'},
    {"output_file", required_argument, 0, 'J'},
    {"per_iter_timing", required_argument, 0, 'I'},
    {"print-env", no_argument, 0, 'E'},
    {"coll", required_argument, 0, 'K'},
    {"halves", required_argument, 0, 'H'},
    {"bind", required_argument, 0, 'B'},
    {"debug-corrupt", no_argument, 0, 'X'},
    {"memory", required_argument, 0, 'M'},
    {"register", required_argument, 0, 'R'},
    {"skew", required_argument, 0, 'v'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

static void set_defaults(struct perf_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->min_bytes = o->max_bytes = 32u << 20;
    o->step_bytes = 1u << 20;
    o->step_factor = 1;
    o->iters = 20;
    o->warmup = 5;
    o->agg_iters = 1;
    o->check = 1;
    o->average = PERF_AVG_MEAN;
    o->dtype = TUTTI_FLOAT32;
    o->op = TUTTI_SUM;
    o->halves = PERF_HALF_BOTH;
    o->bind = 1;
    o->skew = PERF_SKEW_NONE;
    o->zipf_s = 1.0;
}

/* The whole-number options: their range, and where the value goes (NULL: checked only). */
static int number_opt(int c, const char *arg, struct perf_opts *o)
{
    static const struct {
        char opt;
        long lo, hi;
    } ranges[] = {{'n', 1, 1000000000}, {'m', 1, 1000000}, {'w', 0, 1000000000}, {'c', 0, 1000000},
                  {'a', 0, 3},          {'N', 1, 1024},    {'z', 0, 3},          {'t', 1, 1},
                  {'g', 1, 1},          {'G', 0, 0},       {'f', 0, 1 << 20}};
    int *const dst[] = {&o->iters, &o->agg_iters, &o->warmup, &o->check, &o->average, &o->nranks};
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        long v;
        if (ranges[i].opt != c) {
            continue;
        }
        if (parse_int(arg, ranges[i].lo, ranges[i].hi, &v) != 0) {
            return -1;
        }
        if (c == 'f') {
            o->step_factor = v;
        } else if (i < sizeof(dst) / sizeof(dst[0])) {
            *dst[i] = (int)v;
        }
        return 0;
    }
    return -1;
}

/* What a refused value should have looked like. */
static const char *opt_hint(int c)
{
    switch (c) {
    case 'b':
    case 'e':
    case 'i':
        return "a size such as 8, 64K, 1.5M or 2G";
    case 'd':
        return "a datatype name (see -h) or all";
    case 'o':
        return "sum, prod, min, max, avg or all";
    case 'r':
        return "a rank or all";
    case 't':
    case 'g':
        return "one rank per process: use -N or a launcher for more ranks";
    case 'G':
        return "CUDA graphs are not supported (host memory, blocking calls)";
    case 'a':
        return "0 = rank 0, 1 = average, 2 = minimum, 3 = maximum";
    case 'z':
        return "0 to 3";
    case 'H':
        return "out, in or both";
    case 'M':
        return "host or device";
    case 'R':
        return "0, 1, 2 or 3";
    case 'I':
        return "0 or 1";
    case 'v':
        return "none, uniform, zipf or zipf:S (0 < S <= 10)";
    default:
        return "a whole number in range (-n, -m and -N at least 1)";
    }
}

static int one_opt(int c, const char *arg, struct perf_opts *o)
{
    switch (c) {
    case 'b':
        return parse_size(arg, &o->min_bytes);
    case 'e':
        return parse_size(arg, &o->max_bytes);
    case 'i':
        return parse_size(arg, &o->step_bytes);
    case 'd':
        o->dtype = perf_dtype_parse(arg);
        return o->dtype == -2 ? -1 : 0;
    case 'o':
        o->op = perf_op_parse(arg);
        return o->op == -2 ? -1 : 0;
    case 'r': {
        long v = 0;
        if (strcmp(arg, "all") == 0 || strcmp(arg, "-1") == 0) {
            o->root = PERF_ALL;
            return 0;
        }
        int rc = parse_int(arg, 0, 1 << 20, &v);
        o->root = (int)v;
        return rc;
    }
    case 'J':
        o->json_path = arg;
        return 0;
    case 'K':
        o->coll = arg;
        return 0;
    case 'H':
        o->halves = strcmp(arg, "out") == 0    ? PERF_HALF_OUT
                    : strcmp(arg, "in") == 0   ? PERF_HALF_IN
                    : strcmp(arg, "both") == 0 ? PERF_HALF_BOTH
                                               : 0;
        return o->halves == 0 ? -1 : 0;
    case 'B':
        o->bind = strcmp(arg, "core") == 0 ? 1 : strcmp(arg, "none") == 0 ? 0 : -1;
        return o->bind < 0 ? -1 : 0;
    case 'E':
        o->print_env = 1;
        return 0;
    case 'X':
        o->corrupt = 1;
        return 0;
    case 'M':
        o->device = strcmp(arg, "device") == 0 ? 1 : strcmp(arg, "host") == 0 ? 0 : -1;
        return o->device < 0 ? -1 : 0;
    case 'R':
        o->reg = strlen(arg) == 1 && arg[0] >= '0' && arg[0] <= '3' ? arg[0] - '0' : -1;
        return o->reg < 0 ? -1 : 0;
    case 'I':
        o->per_iter = strcmp(arg, "1") == 0 ? 1 : strcmp(arg, "0") == 0 ? 0 : -1;
        return o->per_iter < 0 ? -1 : 0;
    case 'v':
        return perf_skew_parse(arg, &o->skew, &o->zipf_s);
    }
    return number_opt(c, arg, o);
}

static int validate(const struct perf_opts *o, const char *tool)
{
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, "%s: invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu\n", tool,
                o->min_bytes, o->max_bytes);
        return -1;
    }
    if (o->step_factor <= 1 && o->step_bytes == 0 && o->min_bytes < o->max_bytes) {
        fprintf(stderr, "%s: -i 0 without -f > 1 would never reach maxbytes\n", tool);
        return -1;
    }
    if (o->step_factor > 1 && o->min_bytes == 0 && o->max_bytes > 0) {
        fprintf(stderr, "%s: -b 0 with -f > 1 would never reach maxbytes\n", tool);
        return -1;
    }
    return 0;
}

int perf_args_parse(int argc, char **argv, const char *tool, int mpi, struct perf_opts *o)
{
    set_defaults(o);
    optind = 1;
    for (;;) {
        int c =
            getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:c:o:d:r:a:z:G:N:J:I:R:v:h", long_opts, NULL);
        if (c == -1) {
            break;
        }
        if (c == 'h') {
            perf_args_usage(tool, mpi);
            return 1;
        }
        if (c == '?' || c == ':') {
            fprintf(stderr, "%s: see %s -h for the options\n", tool, tool);
            return -1;
        }
        if ((c == 'N' && mpi) || (c == 'K' && !mpi)) {
            fprintf(stderr, "%s: %s\n", tool,
                    mpi ? "-N does not apply: mpirun -np sets the ranks"
                        : "--coll is for mpi_coll_perf; this tool runs one collective");
            return -1;
        }
        if (one_opt(c, optarg, o) != 0) {
            const char *name = NULL;
            for (int i = 0; long_opts[i].name != NULL && name == NULL; i++) {
                name = long_opts[i].val == c ? long_opts[i].name : NULL;
            }
            fprintf(stderr, "%s: invalid value '%s' for --%s: %s\n", tool, optarg, name,
                    opt_hint(c));
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", tool, argv[optind]);
        return -1;
    }
    return validate(o, tool);
}
