/*
 * train_main.c - tutti-train: parse the options, load Fashion-MNIST once, then run the ranks:
 * -N forks local ranks after the data is loaded (they share it copy-on-write); without -N,
 * under a launcher (TUTTI_RANK, torchrun, mpirun, srun) this process is one rank; otherwise it
 * runs as a single rank.
 */
#include "tools/local_ranks.h"
#include "train.h"

#include <stdio.h>
#include <stdlib.h>

/* A forked rank that dies lets the others report it (tutti names the dead rank) before the
 * parent ends them: they notice within milliseconds, so this only bounds a hang. */
#define TRAIN_GRACE_S 30

static int load(const struct train_opts *o, struct train_dataset *ds)
{
    char err[600];
    if (train_data_load(o->data_dir, "train", o->limit, &ds->train, err, sizeof(err)) != 0 ||
        train_data_load(o->data_dir, "t10k", o->test_limit, &ds->test, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: cannot load Fashion-MNIST: %s\n", TRAIN_TOOL, err);
        return -1;
    }
    if (ds->train.dim != (size_t)o->sizes[0] || ds->test.dim != (size_t)o->sizes[0]) {
        fprintf(stderr,
                "%s: the images have %zu (train) and %zu (test) pixels; the model takes "
                "%d\n",
                TRAIN_TOOL, ds->train.dim, ds->test.dim, o->sizes[0]);
        return -1;
    }
    return 0;
}

struct rank_args {
    const struct train_opts *o;
    const struct train_dataset *ds;
};

static int rank_main(void *arg, tutti_comm_t *comm)
{
    const struct rank_args *a = arg;
    return train_rank_run(a->o, a->ds, comm);
}

int train_main(int argc, char **argv)
{
    struct train_opts o;
    int rc = train_opts_parse(argc, argv, &o);
    if (rc != 0) {
        return rc > 0 ? TRAIN_EXIT_OK : TRAIN_EXIT_USAGE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* tutti reads its environment once, at the first call: set the transport before it */
    if (o.transport != NULL && setenv("TUTTI_TRANSPORT", o.transport, 1) != 0) {
        perror("setenv");
        return TRAIN_EXIT_FAIL;
    }
    /* Before the data and the ranks: one clear line when no GPU can be used (asked in a child
     * process, so that this one has not initialised CUDA when it forks the ranks). */
    char info[2048];
    if (o.device == TRAIN_DEVICE_CUDA && train_cuda_probe(info, sizeof(info)) != 0) {
        fprintf(stderr, "%s: --device cuda: %s\n", TRAIN_TOOL, info);
        return TRAIN_EXIT_FAIL;
    }
    struct train_dataset ds = {0};
    if (load(&o, &ds) != 0) {
        return TRAIN_EXIT_FAIL;
    }
    struct rank_args args = {.o = &o, .ds = &ds};
    if (o.nranks == 0 && local_ranks_under_launcher()) {
        rc = local_ranks_run_launched(TRAIN_TOOL, rank_main, &args);
    } else {
        o.nranks = o.nranks > 0 ? o.nranks : 1;
        struct local_ranks_opts lo = {
            .tool = TRAIN_TOOL, .nranks = o.nranks, .bind = o.bind, .grace_s = TRAIN_GRACE_S};
        rc = local_ranks_run(&lo, rank_main, &args);
    }
    train_data_free(&ds.train);
    train_data_free(&ds.test);
    return rc;
}
