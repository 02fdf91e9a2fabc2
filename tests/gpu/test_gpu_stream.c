/*
 * test_gpu_stream.c - collectives on real device buffers and the default CUDA stream (suite
 * gpu): 2 and 4 ranks sharing GPU 0, each a process of its own, every rank's results checked
 * against the sums computed on the host. The all-reduce goes through CUDA IPC (src/gpu/ipc.c), the
 * rest is staged (src/gpu/stream.c); one test stages the all-reduce too. This is the real-GPU
 * counterpart of tests/integ/test_stream.c (which runs the same path on an emulated GPU); it skips,
 * saying why, where there is no module or no GPU. CUDA is never initialised in the test process
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

/* No asynchronous error was recorded, and the communicator is destroyed cleanly. */
static int comm_done(tutti_comm_t *comm)
{
    tutti_status_t async = TUTTI_OK;
    ICHECK_OKC(tutti_comm_get_async_error(comm, &async), comm);
    ICHECK(async == TUTTI_OK, "asynchronous error %s", tutti_status_name(async));
    ICHECK_OKC(tutti_comm_destroy(comm), comm);
    return 0;
}

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
    ICHECK(comm_done(comm) == 0, "the communicator's end");
    CU(mod->free(din));
    CU(mod->free(dout));
    free(h);
    free(want);
    return 0;
}

/* n ranks of fn on GPU 0, the all-reduce through CUDA IPC or staged through host memory. */
static void run_on_gpu(int n, integ_rank_fn fn, int staged)
{
    gpu_or_skip();
    if (staged) {
        integ_setenv("TUTTI_IPC", "0");
    }
    integ_run_ranks(n, fn, NULL, 0);
}

Test(gpu, two_ranks_share_the_gpu_on_the_default_stream, .timeout = 300)
{
    run_on_gpu(2, stream_rank, 0);
}

Test(gpu, four_ranks_share_the_gpu_on_the_default_stream, .timeout = 300)
{
    run_on_gpu(4, stream_rank, 0);
}

Test(gpu, two_ranks_share_the_gpu_all_staged, .timeout = 300)
{
    run_on_gpu(2, stream_rank, 1);
}

/*
 * A stream of the rank's own: the input reaches the send buffer by a copy enqueued before the
 * all-reduce and the result leaves by one enqueued after it, so only stream order makes the
 * result right (three rounds with new values catch stale data). Then graph capture: a
 * collective on a stream being captured is refused with TUTTI_ERR_UNSUPPORTED and a message
 * that names the capture, and the stream works on once the capture has ended.
 */
static int own_stream_rank(const struct integ_ctx *ctx)
{
    const tutti_cuda_module_t *mod = NULL;
    ICHECK(tutti__cuda_module(&mod) == TUTTI_OK, "module: %s", tutti__cuda_why());
    const size_t n = (size_t)1 << 20;
    float *hin = NULL, *hout = NULL;
    void *dsend = NULL, *drecv = NULL, *s = NULL;
    CU(mod->host_alloc((void **)&hin, n * sizeof(float)));
    CU(mod->host_alloc((void **)&hout, n * sizeof(float)));
    CU(mod->malloc(&dsend, n * sizeof(float)));
    CU(mod->malloc(&drecv, n * sizeof(float)));
    CU(mod->stream_create(&s));
    tutti_comm_t *comm = NULL;
    ICHECK(integ_comm_init(ctx, NULL, &comm) == 0, "init");
    for (int round = 0; round < 4; round++) {
        if (round == 3) { /* capture: refused, nothing enqueued, the stream still usable */
            CU(mod->capture_begin(s));
            tutti_status_t st = tutti_allreduce(dsend, drecv, n, TUTTI_FLOAT32, TUTTI_SUM, comm, s);
            CU(mod->capture_end(s));
            ICHECK(st == TUTTI_ERR_UNSUPPORTED, "all-reduce under capture returned %s",
                   tutti_status_name(st));
            ICHECK(strstr(tutti_last_error(comm), "captur") != NULL,
                   "the refusal does not name the capture: %s", tutti_last_error(comm));
        }
        for (size_t i = 0; i < n; i++) {
            hin[i] = val(ctx->rank, i) + (float)round;
        }
        CU(mod->copy_async(dsend, hin, n * sizeof(float), s));
        ICHECK_OKC(tutti_allreduce(dsend, drecv, n, TUTTI_FLOAT32, TUTTI_SUM, comm, s), comm);
        CU(mod->copy_async(hout, drecv, n * sizeof(float), s));
        CU(mod->stream_synchronize(s));
        for (size_t i = 0; i < n; i++) {
            float want = 0;
            for (int q = 0; q < ctx->nranks; q++) {
                want += val(q, i) + (float)round;
            }
            ICHECK(hout[i] == want, "round %d: element %zu is %g, expected %g", round, i,
                   (double)hout[i], (double)want);
        }
    }
    ICHECK(comm_done(comm) == 0, "the communicator's end");
    CU(mod->stream_destroy(s));
    CU(mod->free(dsend));
    CU(mod->free(drecv));
    CU(mod->host_free(hin));
    CU(mod->host_free(hout));
    return 0;
}

Test(gpu, own_stream_order_and_graph_capture_refused, .timeout = 300)
{
    run_on_gpu(2, own_stream_rank, 0);
}

Test(gpu, own_stream_order_and_graph_capture_refused_staged, .timeout = 300)
{
    run_on_gpu(2, own_stream_rank, 1);
}
