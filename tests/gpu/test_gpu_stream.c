/*
 * test_gpu_stream.c - collectives on real device buffers and the default CUDA stream (suite
 * gpu): 2 and 4 ranks sharing GPU 0, each a process of its own, every rank's results checked
 * against the sums computed on the host. The all-reduce goes through CUDA IPC (src/ipc.c), the
 * rest is staged (src/stream.c); one test stages the all-reduce too. This is the real-GPU counterpart of
 * tests/integ/test_stream.c (which runs the same path on an emulated GPU); it skips, saying
 * why, where there is no module or no GPU. CUDA is never initialised in the test process
 * itself (a forked child of an initialised process cannot use CUDA): a probe child asks.
 */
#include "harness.h"
#include "kernels/cuda/tutti_cuda.h"
#include "tutti.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 0 when the module loads and sees a GPU; else why not, in `why`. Asked in a child. */
static int probe_gpu(char *why, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, len, "pipe failed");
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        const tutti_cuda_module_t *mod = NULL;
        char msg[512] = "";
        int n = 0;
        if (tutti__cuda_module(&mod) != TUTTI_OK) {
            snprintf(msg, sizeof(msg), "no GPU module: %s", tutti__cuda_why());
        } else {
            int err = mod->device_count(&n);
            if (n == 0) {
                snprintf(msg, sizeof(msg), "no CUDA device visible: %s",
                         err != 0 ? mod->error_string(err) : "cudaGetDeviceCount found none");
            }
        }
        ssize_t w = write(fds[1], msg, strlen(msg));
        _exit(w < 0 || n == 0 ? 1 : 0);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], why, len - 1);
    why[got > 0 ? got : 0] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void gpu_or_skip(void)
{
    char why[512];
    if (probe_gpu(why, sizeof(why)) != 0) {
        cr_skip_test("%s", why);
    }
}

static float val(int rank, size_t i)
{
    return (float)((rank + 1) * 100 + (int)(i % 613)); /* exact in float sums of a few ranks */
}

#define CU(call)                                                                                   \
    do {                                                                                           \
        int err_ = (call);                                                                         \
        ICHECK(err_ == 0, "%s: %s", #call, mod->error_string(err_));                               \
    } while (0)

/* All-reduce, broadcast, all-gather and reduce-scatter of device buffers on the default stream,
 * sizes 1 element to 64 MiB per rank. */
static int stream_rank(const struct integ_ctx *ctx)
{
    const tutti_cuda_module_t *mod = NULL;
    ICHECK(tutti__cuda_module(&mod) == TUTTI_OK, "module: %s", tutti__cuda_why());
    const size_t counts[] = {1, 1000, 1 << 20, 16 << 20};
    size_t most = (16u << 20) * (size_t)ctx->nranks;
    float *h = malloc(most * sizeof(float)), *want = malloc(most * sizeof(float));
    void *din = NULL, *dout = NULL;
    ICHECK(h != NULL && want != NULL, "no memory");
    CU(mod->malloc(&din, most * sizeof(float)));
    CU(mod->malloc(&dout, most * sizeof(float)));
    tutti_comm_t *comm = NULL;
    ICHECK(integ_comm_init(ctx, NULL, &comm) == 0, "init");
    int p = ctx->nranks, r = ctx->rank;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k];
        for (int c = 0; c < 4; c++) {
            size_t in_n = c == 3 ? n * (size_t)p : n, out_n = c == 2 ? n * (size_t)p : n;
            for (size_t i = 0; i < in_n; i++) {
                h[i] = val(r, i);
            }
            CU(mod->memcpy(din, h, in_n * sizeof(float), TUTTI_CUDA_H2D));
            tutti_status_t st = TUTTI_OK;
            for (size_t i = 0; i < out_n; i++) {
                float s = 0;
                for (int q = 0; q < p; q++) {
                    s += val(q, c == 3 ? (size_t)r * n + i : i);
                }
                want[i] = c == 1 ? val(0, i) : c == 2 ? val((int)(i / n), i % n) : s;
            }
            if (c == 0) {
                st = tutti_allreduce(din, dout, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
            } else if (c == 1) {
                st = tutti_broadcast(din, dout, n, TUTTI_FLOAT32, 0, comm, NULL);
            } else if (c == 2) {
                st = tutti_allgather(din, dout, n, TUTTI_FLOAT32, comm, NULL);
            } else {
                st = tutti_reduce_scatter(din, dout, n, TUTTI_FLOAT32, TUTTI_SUM, comm, NULL);
            }
            ICHECK_OKC(st, comm);
            CU(mod->synchronize());
            CU(mod->memcpy(h, dout, out_n * sizeof(float), TUTTI_CUDA_D2H));
            for (size_t i = 0; i < out_n; i++) {
                ICHECK(h[i] == want[i], "collective %d of %zu: element %zu is %g, expected %g", c,
                       n, i, (double)h[i], (double)want[i]);
            }
        }
    }
    tutti_status_t async = TUTTI_OK;
    ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
    ICHECK(async == TUTTI_OK, "asynchronous error %s", tutti_status_name(async));
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    CU(mod->free(din));
    CU(mod->free(dout));
    free(h);
    free(want);
    return 0;
}

Test(gpu, two_ranks_share_the_gpu_on_the_default_stream, .timeout = 300)
{
    gpu_or_skip();
    integ_run_ranks(2, stream_rank, NULL, 0);
}

Test(gpu, four_ranks_share_the_gpu_on_the_default_stream, .timeout = 300)
{
    gpu_or_skip();
    integ_run_ranks(4, stream_rank, NULL, 0);
}

/* The same with the all-reduce staged through host memory instead of CUDA IPC. */
Test(gpu, two_ranks_share_the_gpu_all_staged, .timeout = 300)
{
    gpu_or_skip();
    integ_setenv("TUTTI_IPC", "0");
    integ_run_ranks(2, stream_rank, NULL, 0);
}
