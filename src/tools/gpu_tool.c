/*
 * gpu_tool.c - `tutti-info --gpu` (and two lines of the plain summary): opens the GPU module
 * through libtutti's loader (kernels/cuda_load.c) and asks it for the CUDA runtime and driver
 * versions and the number of visible GPUs. Without a driver or a GPU the count is 0 and the
 * CUDA status says why; nothing here needs a GPU to run.
 */
#include "gpu_tool.h"
#include "kernels/cuda/tutti_cuda.h"

/* 13000 -> "13.0" */
static void print_version(FILE *out, const char *what, int v)
{
    if (v > 0) {
        fprintf(out, "%s %d.%d", what, v / 1000, (v % 1000) / 10);
    } else {
        fprintf(out, "%s none", what);
    }
}

int tutti__gpu_info(FILE *out)
{
    const tutti_cuda_module_t *mod = NULL;
    int runtime = 0;
    int driver = 0;
    int count = 0;
    int err;

    if (tutti__cuda_module(&mod) != TUTTI_OK) {
        fprintf(out, "gpu module: none: %s\ngpus: unknown (no GPU module)\n", tutti__cuda_why());
        return 1;
    }
    (void)mod->runtime_version(&runtime);
    (void)mod->driver_version(&driver);
    fprintf(out, "gpu module: %s (%s; ", tutti__cuda_path(), mod->build);
    print_version(out, "runtime", runtime);
    fprintf(out, ", ");
    print_version(out, "driver", driver);
    fprintf(out, ")\n");
    err = mod->device_count(&count);
    if (err == 0) {
        fprintf(out, "gpus: %d visible\n", count);
    } else {
        fprintf(out, "gpus: %d visible (%s: %s)\n", count, mod->error_name(err),
                mod->error_string(err));
    }
    return 0;
}
