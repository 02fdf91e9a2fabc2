/*
 * cuda_load.c - libtutti's side of the GPU module (kernels/cuda/tutti_cuda.h): finds
 * libtutti-cuda.so, dlopens it on the first call, checks its table, and remembers the answer.
 * libtutti links no CUDA library; this file is all it knows of CUDA, and it is compiled
 * whether or not the module was built (cuda_config.h says which).
 */
#include "kernels/cuda/tutti_cuda.h"
#include "kernels/cuda_config.h"
#include "kernels/module_open.h"
#include "base/check.h"
#include "base/env.h"
#include "base/log.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/*
 * The outcome of the one load attempt. File-scope on purpose: a process opens the module at most
 * once (pthread_once) and never closes it, so this is a cache of a fact about the installation,
 * written once and read-only afterwards.
 */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const tutti_cuda_module_t *loaded;
static char tried[1024];
static char load_why[1280];
static char load_path[PATH_MAX];

/* Open one candidate and check its table; 0 on success (loaded and load_path set). */
static int try_open(const char *path)
{
    const tutti_cuda_module_t *mod = tutti__module_open(
        path, TUTTI_CUDA_MODULE_SYMBOL, sizeof(*mod), TUTTI_CUDA_ABI, tried, sizeof(tried));
    if (mod == NULL) {
        return -1;
    }
    loaded = mod;
    snprintf(load_path, sizeof(load_path), "%s", path);
    return 0;
}

/* "<directory of the object holding this code>/libtutti-cuda.so": libtutti.so's directory. */
static int beside_libtutti(char *out, size_t len)
{
    Dl_info info;
    const char *slash;

    if (dladdr((void *)tutti__cuda_module, &info) == 0 || info.dli_fname == NULL) {
        return -1;
    }
    slash = strrchr(info.dli_fname, '/');
    if (slash == NULL) {
        return -1;
    }
    snprintf(out, len, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
             TUTTI_CUDA_MODULE_FILE);
    return 0;
}

static void load(void)
{
    const char *forced = tutti__env()->CUDA_MODULE;
    char path[PATH_MAX];

    if (forced[0] != '\0') {
        (void)try_open(forced); /* the one place asked for, nowhere else */
    } else if (!TUTTI_CUDA_BUILT) {
        snprintf(load_why, sizeof(load_why),
                 "this tutti was built without its GPU module (nvcc was not found when it was "
                 "configured; meson setup -Dcuda=enabled requires it)");
        return;
    } else if ((beside_libtutti(path, sizeof(path)) != 0 || try_open(path) != 0) &&
               try_open(TUTTI_INSTALL_LIBDIR "/" TUTTI_CUDA_MODULE_FILE) != 0) {
        (void)try_open(TUTTI_CUDA_MODULE_FILE); /* the dynamic loader's own search */
    }
    if (loaded != NULL) {
        load_why[0] = '\0';
        tutti_info(TUTTI_SUBSYS_INIT, "GPU module %s: %s", load_path, loaded->build);
    } else {
        snprintf(load_why, sizeof(load_why),
                 "GPU module %s not loadable; tried %s "
                 "(TUTTI_CUDA_MODULE names it)",
                 TUTTI_CUDA_MODULE_FILE, tried);
    }
}

tutti_status_t tutti__cuda_module(const tutti_cuda_module_t **mod_p)
{
    pthread_once(&load_once, load);
    if (loaded == NULL) {
        return tutti__set_error_quiet(NULL, TUTTI_ERR_UNSUPPORTED, "no GPU support: %s", load_why);
    }
    *mod_p = loaded;
    return TUTTI_OK;
}

const char *tutti__cuda_why(void)
{
    pthread_once(&load_once, load);
    return load_why;
}

const char *tutti__cuda_path(void)
{
    pthread_once(&load_once, load);
    return load_path;
}
