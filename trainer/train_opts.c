/*
 * train_opts.c - tutti-train's command line: defaults, parsing with ranges, and the help text.
 * The --debug-* options are hidden: tests use them to prove that a dead rank and a corrupted
 * gradient are caught.
 */
#include "train.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    printf(
        "Usage: " TRAIN_TOOL " [options]\n"
        "Data-parallel training of an MLP on Fashion-MNIST, gradients averaged with tutti.\n"
        "  -N, --nranks N        fork N local ranks (default: the launcher's ranks under\n"
        "                        mpirun/torchrun/srun/TUTTI_RANK, else 1)\n"
        "  -e, --epochs N        epochs (default 3)\n"
        "  -b, --batch N         global batch, split over the ranks (default 128)\n"
        "      --lr X            learning rate (default 0.05)\n"
        "      --lr-schedule S   cosine, step or none: the rate over the run's steps\n"
        "                        (default cosine, from lr down to 0)\n"
        "      --momentum X      SGD momentum (default 0.9)\n"
        "  -p, --precision P     gradient all-reduce precision: fp32, bf16, fp16 (default fp32)\n"
        "      --deterministic   sum gradients as int64 fixed point: weights bitwise equal for\n"
        "                        any number of ranks\n"
        "  -t, --transport T     auto, shm or tcp (sets TUTTI_TRANSPORT; default: environment)\n"
        "      --device D        cpu or cuda: where each rank computes (default cpu); cuda:\n"
        "                        rank r on GPU r mod (visible GPUs), gradients all-reduced\n"
        "                        from GPU memory on CUDA streams\n"
        "  -s, --seed N          data order and initial weights (default 1)\n"
        "      --hidden W,W,...  hidden layer widths (default 512,256)\n"
        "      --bucket-kb N     gradient bucket cap in KiB of fp32 (default 1024)\n"
        "      --data DIR        IDX files (default " TRAIN_DATA_DIR ")\n"
        "      --limit N         train on the first N samples only\n"
        "      --test-limit N    test on the first N samples only\n"
        "      --steps N         stop after N steps\n"
        "      --log-every N     steps between progress lines (default: 10 lines per epoch)\n"
        "  -q, --quiet           no progress lines\n"
        "      --check           validate: 1 rank vs N ranks after K steps, identical weights\n"
        "                        on every rank after every step, final test accuracy\n"
        "      --check-steps K   steps compared by check 1 (default 20)\n"
        "      --target-acc X    test accuracy check 3 requires (default 0.85)\n"
        "      --json FILE       write configuration, epochs, summary and checks as JSON\n"
        "                        (- for standard output)\n"
        "      --bind core|none  with -N: pin rank r to the r-th allowed CPU when the ranks\n"
        "                        fit the CPUs (default core; none with --device cuda)\n"
        "  -h, --help\n");
}

enum {
    OPT_LR = 256,
    OPT_LR_SCHEDULE,
    OPT_MOMENTUM,
    OPT_DETERMINISTIC,
    OPT_HIDDEN,
    OPT_BUCKET,
    OPT_DATA,
    OPT_LIMIT,
    OPT_TEST_LIMIT,
    OPT_STEPS,
    OPT_LOG_EVERY,
    OPT_CHECK,
    OPT_CHECK_STEPS,
    OPT_TARGET,
    OPT_JSON,
    OPT_BIND,
    OPT_DEVICE,
    OPT_DIE,
    OPT_CORRUPT,
};

static const struct option long_opts[] = {
    {"nranks", required_argument, 0, 'N'},
    {"epochs", required_argument, 0, 'e'},
    {"batch", required_argument, 0, 'b'},
    {"lr", required_argument, 0, OPT_LR},
    {"lr-schedule", required_argument, 0, OPT_LR_SCHEDULE},
    {"momentum", required_argument, 0, OPT_MOMENTUM},
    {"precision", required_argument, 0, 'p'},
    {"deterministic", no_argument, 0, OPT_DETERMINISTIC},
    {"transport", required_argument, 0, 't'},
    {"seed", required_argument, 0, 's'},
    {"hidden", required_argument, 0, OPT_HIDDEN},
    {"bucket-kb", required_argument, 0, OPT_BUCKET},
    {"data", required_argument, 0, OPT_DATA},
    {"limit", required_argument, 0, OPT_LIMIT},
    {"test-limit", required_argument, 0, OPT_TEST_LIMIT},
    {"steps", required_argument, 0, OPT_STEPS},
    {"log-every", required_argument, 0, OPT_LOG_EVERY},
    {"quiet", no_argument, 0, 'q'},
    {"check", no_argument, 0, OPT_CHECK},
    {"check-steps", required_argument, 0, OPT_CHECK_STEPS},
    {"target-acc", required_argument, 0, OPT_TARGET},
    {"json", required_argument, 0, OPT_JSON},
    {"bind", required_argument, 0, OPT_BIND},
    {"device", required_argument, 0, OPT_DEVICE},
    {"debug-die-at", required_argument, 0, OPT_DIE},
    {"debug-corrupt", required_argument, 0, OPT_CORRUPT},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

static int parse_long(const char *s, long lo, long hi, long *v_p)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *v_p = v;
    return 0;
}

static int parse_real(const char *s, double lo, double hi, double *v_p)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        return -1;
    }
    *v_p = v;
    return 0;
}

/* "512,256": the hidden widths between the 784 inputs and the 10 classes. */
static int parse_hidden(const char *s, struct train_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    o->nsizes = 1;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        long w;
        if (o->nsizes >= TRAIN_MAX_LAYERS || parse_long(tok, 1, 65536, &w) != 0) {
            return -1;
        }
        o->sizes[o->nsizes++] = (int)w;
    }
    o->sizes[o->nsizes++] = 10;
    return 0;
}

/* "STEP:RANK" or, for --debug-corrupt, "STEP:RANK:pre". */
static int parse_at(const char *s, long *step_p, int *rank_p, int *pre_p)
{
    long step;
    int rank, n = 0;
    char tail[8] = "";
    if (sscanf(s, "%ld:%d%n:%7s", &step, &rank, &n, tail) < 2 || step < 1 || rank < 0) {
        return -1;
    }
    if (tail[0] != '\0' && (pre_p == NULL || strcmp(tail, "pre") != 0)) {
        return -1;
    }
    if (tail[0] == '\0' && s[n] != '\0') {
        return -1;
    }
    *step_p = step;
    *rank_p = rank;
    if (pre_p != NULL) {
        *pre_p = tail[0] != '\0';
    }
    return 0;
}

static void set_defaults(struct train_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->epochs = 3;
    o->batch = 128;
    o->lr = 0.05f;
    o->lr_schedule = TRAIN_LR_COSINE;
    o->momentum = 0.9f;
    o->prec = TRAIN_PREC_FP32;
    o->seed = 1;
    o->data_dir = TRAIN_DATA_DIR;
    o->sizes[0] = 784;
    o->sizes[1] = 512;
    o->sizes[2] = 256;
    o->sizes[3] = 10;
    o->nsizes = 4;
    o->bucket_kb = 1024;
    o->check_steps = 20;
    o->target_acc = 0.85;
    o->bind = -1; /* core on the CPU, none on a GPU: decided once --device is known */
    o->device = TRAIN_DEVICE_CPU;
}

/* One option; 0, or -1 when its value is wrong. */
static int set_opt(int c, const char *arg, struct train_opts *o)
{
    long v;
    double x;
    switch (c) {
    case 'N':
        return parse_long(arg, 1, 1024, &v) == 0 ? (o->nranks = (int)v, 0) : -1;
    case 'e':
        return parse_long(arg, 1, 100000, &v) == 0 ? (o->epochs = (int)v, 0) : -1;
    case 'b':
        return parse_long(arg, 1, 1 << 20, &v) == 0 ? (o->batch = (int)v, 0) : -1;
    case 's':
        return parse_long(arg, 0, 0x7fffffffL, &v) == 0 ? (o->seed = (uint64_t)v, 0) : -1;
    case 'q':
        o->quiet = 1;
        return 0;
    case 'p':
        return train_prec_parse(arg, &o->prec);
    case 't':
        o->transport = arg;
        return strcmp(arg, "auto") == 0 || strcmp(arg, "shm") == 0 || strcmp(arg, "tcp") == 0 ? 0
                                                                                              : -1;
    case OPT_LR:
        return parse_real(arg, 0.0, 100.0, &x) == 0 ? (o->lr = (float)x, 0) : -1;
    case OPT_LR_SCHEDULE:
        return train_lr_schedule_parse(arg, &o->lr_schedule);
    case OPT_MOMENTUM:
        return parse_real(arg, 0.0, 1.0, &x) == 0 ? (o->momentum = (float)x, 0) : -1;
    case OPT_TARGET:
        return parse_real(arg, 0.0, 1.0, &o->target_acc);
    case OPT_DETERMINISTIC:
        o->prec = TRAIN_PREC_FIXED;
        return 0;
    case OPT_HIDDEN:
        return parse_hidden(arg, o);
    case OPT_BUCKET:
        return parse_long(arg, 1, 1L << 30, &v) == 0 ? (o->bucket_kb = (size_t)v, 0) : -1;
    case OPT_DATA:
        o->data_dir = arg;
        return 0;
    case OPT_LIMIT:
        return parse_long(arg, 1, 1L << 30, &v) == 0 ? (o->limit = (size_t)v, 0) : -1;
    case OPT_TEST_LIMIT:
        return parse_long(arg, 1, 1L << 30, &v) == 0 ? (o->test_limit = (size_t)v, 0) : -1;
    case OPT_STEPS:
        return parse_long(arg, 1, 1L << 40, &o->max_steps);
    case OPT_LOG_EVERY:
        return parse_long(arg, 1, 1L << 30, &v) == 0 ? (o->log_every = (int)v, 0) : -1;
    case OPT_CHECK:
        o->check = 1;
        return 0;
    case OPT_CHECK_STEPS:
        return parse_long(arg, 1, 1L << 30, &v) == 0 ? (o->check_steps = (int)v, 0) : -1;
    case OPT_JSON:
        o->json_path = arg;
        return 0;
    case OPT_BIND:
        o->bind = strcmp(arg, "core") == 0 ? 1 : strcmp(arg, "none") == 0 ? 0 : -1;
        return o->bind < 0 ? -1 : 0;
    case OPT_DEVICE:
        return train_device_parse(arg, &o->device);
    case OPT_DIE:
        return parse_at(arg, &o->die_step, &o->die_rank, NULL);
    case OPT_CORRUPT:
        return parse_at(arg, &o->corrupt_step, &o->corrupt_rank, &o->corrupt_pre);
    default:
        return -1;
    }
}

int train_opts_parse(int argc, char **argv, struct train_opts *o)
{
    set_defaults(o);
    int c, idx = -1;
    opterr = 0;
    /* idx is set only when a long option matched: it names the option in a message */
    while ((c = getopt_long(argc, argv, ":N:e:b:p:t:s:qh", long_opts, &idx)) != -1) {
        if (c == 'h') {
            usage();
            return 1;
        }
        if (c == '?' || c == ':') {
            fprintf(stderr, "%s: %s option %s (see --help)\n", TRAIN_TOOL,
                    c == '?' ? "unknown" : "missing the value of", argv[optind - 1]);
            return -1;
        }
        if (set_opt(c, optarg, o) != 0) {
            /* argv[optind - 1] is the value itself when it came as a separate argument */
            char name[32];
            if (idx >= 0) {
                snprintf(name, sizeof(name), "--%s", long_opts[idx].name);
            } else {
                snprintf(name, sizeof(name), "-%c", c);
            }
            fprintf(stderr, "%s: invalid value '%s' of %s (see --help)\n", TRAIN_TOOL, optarg,
                    name);
            return -1;
        }
        idx = -1;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", TRAIN_TOOL, argv[optind]);
        return -1;
    }
    /* On a GPU a rank's threads (training, gradient waiter, tutti's progress thread, CUDA's
     * own) mostly wait for the device, several of them spinning: on one CPU they would take
     * turns by time slices. */
    if (o->bind < 0) {
        o->bind = o->device == TRAIN_DEVICE_CUDA ? 0 : 1;
    }
    return 0;
}
