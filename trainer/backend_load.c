/*
 * backend_load.c - --device: the names, the loader of tutti-train's GPU module (dlopen, table
 * check, the places tried and why each failed), the probe that a GPU is usable, run in a child
 * process before the ranks fork, and each rank's choice of GPU.
 */
#include "backend_load.h"
#include "cuda/train_cuda_config.h"
#include "gpu/devops.h"
#include "base/env.h"
#include "kernels/cuda/tutti_cuda.h"
#include "kernels/module_open.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_TIMEOUT_S 60

/*
 * The outcome of the one load attempt. File-scope on purpose: a process opens the module at
 * most once (pthread_once) and never closes it, so this caches a fact about the installation,
 * written once and read-only afterwards (as kernels/cuda_load.c does for libtutti's module).
 */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct train_cuda_module *loaded;
static const struct train_cuda_module *installed; /* a test's module instead (set once) */
static char tried[1536];
static char load_why[1800];
static char load_path[PATH_MAX];

const char *train_device_name(enum train_device d)
{
    return d == TRAIN_DEVICE_CUDA ? "cuda" : "cpu";
}

int train_device_parse(const char *s, enum train_device *d_p)
{
    if (strcmp(s, "cpu") == 0 || strcmp(s, "cuda") == 0) {
        *d_p = s[1] == 'p' ? TRAIN_DEVICE_CPU : TRAIN_DEVICE_CUDA;
        return 0;
    }
    return -1;
}

/* Open one candidate and check its table; 0 on success. */
static int try_open(const char *path)
{
    const struct train_cuda_module *mod = tutti__module_open(path, TRAIN_CUDA_SYMBOL, sizeof(*mod),
                                                             TRAIN_CUDA_ABI, tried, sizeof(tried));
    if (mod == NULL) {
        return -1;
    }
    loaded = mod;
    snprintf(load_path, sizeof(load_path), "%s", path);
    return 0;
}

/* "<directory of this executable>/libtutti-train-cuda.so". */
static int beside_exe(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        return -1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL) {
        return -1;
    }
    *slash = '\0';
    snprintf(out, len, "%.*s/%s", PATH_MAX - 32, exe, TRAIN_CUDA_FILE);
    return 0;
}

static void load(void)
{
    const char *forced = tutti__env()->TRAIN_CUDA_MODULE;
    char path[PATH_MAX];
    if (forced[0] != '\0') {
        (void)try_open(forced); /* the one place asked for, nowhere else */
    } else if (!TRAIN_CUDA_BUILT) {
        snprintf(load_why, sizeof(load_why), "%s", TRAIN_CUDA_NOT_BUILT);
        return;
    } else if ((beside_exe(path, sizeof(path)) != 0 || try_open(path) != 0) &&
               try_open(TRAIN_CUDA_INSTALL_LIBDIR "/" TRAIN_CUDA_FILE) != 0) {
        (void)try_open(TRAIN_CUDA_FILE); /* the dynamic loader's own search */
    }
    if (loaded == NULL) {
        snprintf(load_why, sizeof(load_why),
                 "GPU module %s not loadable; tried %s (TUTTI_TRAIN_CUDA_MODULE names it)",
                 TRAIN_CUDA_FILE, tried);
    }
}

void train_cuda_install(const struct train_cuda_module *mod)
{
    installed = mod;
}

int train_cuda_module(const struct train_cuda_module **mod_p, char *why, size_t len)
{
    if (installed != NULL) {
        *mod_p = installed;
        return 0;
    }
    pthread_once(&load_once, load);
    if (loaded == NULL) {
        snprintf(why, len, "%s", load_why);
        return -1;
    }
    *mod_p = loaded;
    return 0;
}

const char *train_cuda_module_path(void)
{
    if (installed != NULL) {
        return "(built into this program)";
    }
    pthread_once(&load_once, load);
    return load_path;
}

/* "call: cudaErrorX (message)". */
static void cuda_why(const struct train_cuda_module *mod, int err, const char *call, char *why,
                     size_t len)
{
    snprintf(why, len, "%s: %s (%s)", call, mod->error_name(err), mod->error_string(err));
}

/* The loaded NVIDIA kernel driver's version line, or "" when there is none. */
static void driver_line(char *buf, size_t len)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    buf[0] = '\0';
    if (f != NULL) {
        if (fgets(buf, (int)len, f) == NULL) {
            buf[0] = '\0';
        }
        buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
}

/* The visible GPUs, or why there is none: 0 or -1. */
static int count_gpus(const struct train_cuda_module *mod, int *count_p, char *why, size_t len)
{
    char detail[300], driver[200];
    int err = mod->device_count(count_p);
    if (err == 0 && *count_p > 0) {
        return 0;
    }
    if (err != 0) {
        cuda_why(mod, err, "cudaGetDeviceCount", detail, sizeof(detail));
    } else {
        snprintf(detail, sizeof(detail), "cudaGetDeviceCount found none");
    }
    driver_line(driver, sizeof(driver));
    if (err == TUTTI_CUDA_ERR_INSUFFICIENT_DRIVER && driver[0] != '\0') {
        /* a driver is there, too old for the runtime the module was linked with */
        snprintf(why, len,
                 "no usable CUDA device: %s; the loaded driver (%s) is older than the "
                 "module's CUDA runtime (%s)",
                 detail, driver, mod->build);
    } else {
        snprintf(why, len, "no usable CUDA device: %s", detail);
    }
    return -1;
}

/* tutti's stream path sees the GPU once it notices the driver (re-checked every 100 ms). */
static int tutti_gpu_ready(char *why, size_t len)
{
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    for (int i = 0; i < 100; i++) {
        if (tutti__devops() != NULL) {
            return 0;
        }
        nanosleep(&pause, NULL);
    }
    const char *detail = tutti__devops_why();
    snprintf(why, len, "tutti's stream path cannot use the GPU: %s",
             detail != NULL && detail[0] != '\0' ? detail : "no GPU runtime");
    return -1;
}

int train_cuda_open(int rank, struct train_gpu *gpu, char *why, size_t len)
{
    memset(gpu, 0, sizeof(*gpu));
    if (train_cuda_module(&gpu->mod, why, len) != 0 ||
        count_gpus(gpu->mod, &gpu->count, why, len) != 0) {
        return -1;
    }
    const struct train_cuda_module *mod = gpu->mod;
    gpu->device = rank % gpu->count;
    char call[64];
    int err = mod->set_device(gpu->device);
    snprintf(call, sizeof(call), "cudaSetDevice(%d)", gpu->device);
    if (err == 0) {
        err = mod->device_name(gpu->device, gpu->name, sizeof(gpu->name));
        snprintf(call, sizeof(call), "cudaGetDeviceProperties(%d)", gpu->device);
    }
    if (err != 0) {
        cuda_why(mod, err, call, why, len);
        return -1;
    }
    return tutti_gpu_ready(why, len);
}

/* The probe's child: the answer on fd, exit status 0 when usable. */
static void probe_child(int fd)
{
    char msg[2048];
    struct train_gpu gpu;
    alarm(PROBE_TIMEOUT_S);
    int ok = train_cuda_open(0, &gpu, msg, sizeof(msg)) == 0;
    if (ok) {
        snprintf(msg, sizeof(msg), "%d GPU%s: %s (%s)", gpu.count, gpu.count == 1 ? "" : "s",
                 gpu.name, gpu.mod->build);
    }
    size_t n = strlen(msg), off = 0;
    while (off < n) {
        ssize_t w = write(fd, msg + off, n - off);
        if (w <= 0) {
            break;
        }
        off += (size_t)w;
    }
    _exit(ok ? 0 : 1);
}

int train_cuda_probe(char *info, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(info, len, "cannot probe the GPU: pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(info, len, "cannot probe the GPU: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        probe_child(fds[1]);
    }
    close(fds[1]);
    size_t used = 0;
    for (ssize_t r = 1; r > 0 && used + 1 < len;) {
        r = read(fds[0], info + used, len - 1 - used);
        used += r > 0 ? (size_t)r : 0;
    }
    info[used] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(info, len, "the GPU probe (a child process) died of signal %d (%s)%s", sig,
                 strsignal(sig),
                 sig == SIGALRM ? ": no answer from CUDA within the time allowed" : "");
        return -1;
    }
    if (used == 0) {
        snprintf(info, len, "the GPU probe (a child process) exited with %d and said nothing",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
