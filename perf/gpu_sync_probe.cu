// gpu_sync_probe.cu - facts about one GPU that tutti's stream path depends on, measured rather
// than assumed (issue 17's run on an H100 hung with two ranks in one process and showed
// millisecond latencies with two processes sharing the GPU):
//
//   gpu_sync_probe apis     which runtime calls return while another stream of the same
//                           process is blocked in cuStreamWaitValue64 on a host word that is
//                           written 1 s later (a call taking ~1 s waits for the device)
//   gpu_sync_probe lat N    median time of N round trips of an 8-byte copy device -> host
//   gpu_sync_probe waiter S for S seconds: a stream blocked on a host word, released every 1 ms
//                           (what the staged path does while a peer is late)
//   gpu_sync_probe spinner S for S seconds: kernels that spin for 1 ms each
//   gpu_sync_probe pingpong N   two processes (forked before CUDA starts) whose streams
//                           take turns through two words of shared host memory: each round
//                           is a stream write in one process and a stream wait in the other,
//                           as the CUDA IPC all-reduce's flags are; prints the median round
//
// It links only cudart (static) and reaches the driver's cuStreamWaitValue64 through
// cudaGetDriverEntryPointByVersion, as kernels/cuda/stream_ops.cu does.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{
using wait_fn = int (*)(void *, unsigned long long, unsigned long long, unsigned int);
wait_fn wait64;

double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            std::printf("%s: %s\n", #x, cudaGetErrorString(e_));                               \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

void find_wait()
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CK(cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &fn, 12000, cudaEnableDefault, &q));
    wait64 = reinterpret_cast<wait_fn>(fn);
}

void block_stream(cudaStream_t s, volatile unsigned long long *word, unsigned long long v)
{
    int e = wait64(s, (unsigned long long)(uintptr_t)word, v, 0);
    if (e != 0) {
        std::printf("cuStreamWaitValue64 failed: %d\n", e);
        std::exit(1);
    }
}

__global__ void spin_kernel(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

int apis()
{
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    volatile unsigned long long *word = nullptr;
    CK(cudaHostAlloc((void **)&word, 64, cudaHostAllocPortable | cudaHostAllocMapped));
    void *dev = nullptr, *host = nullptr, *pinned = nullptr;
    CK(cudaMalloc(&dev, 4 << 20));
    size_t big = 4 << 20;
    struct api {
        const char *name;
        std::function<void()> setup, call;
    };
    std::vector<api> list = {
        {"cudaHostAlloc 4 MiB", [] {}, [&] { CK(cudaHostAlloc(&pinned, big, cudaHostAllocPortable | cudaHostAllocMapped)); }},
        {"cudaFreeHost", [] {}, [&] { CK(cudaFreeHost(pinned)); }},
        {"cudaMallocHost 64 MiB", [] {}, [&] { CK(cudaMallocHost(&pinned, 64 << 20)); }},
        {"cudaFreeHost 64 MiB", [] {}, [&] { CK(cudaFreeHost(pinned)); }},
        {"cudaHostRegister 4 MiB", [&] { host = aligned_alloc(4096, big); std::memset(host, 1, big); },
         [&] { CK(cudaHostRegister(host, big, cudaHostRegisterPortable | cudaHostRegisterMapped)); }},
        {"cudaHostUnregister", [] {}, [&] { CK(cudaHostUnregister(host)); std::free(host); }},
        {"cudaMalloc 4 MiB", [] {}, [&] { CK(cudaMalloc(&pinned, big)); }},
        {"cudaFree", [] {}, [&] { CK(cudaFree(pinned)); }},
        {"cudaMalloc 1 GiB", [] {}, [&] { CK(cudaMalloc(&pinned, 1ull << 30)); }},
        {"cudaFree 1 GiB", [] {}, [&] { CK(cudaFree(pinned)); }},
        {"cudaStreamCreate", [] {}, [&] { cudaStream_t t; CK(cudaStreamCreate(&t)); }},
        {"cudaEventCreate", [] {}, [&] { cudaEvent_t ev; CK(cudaEventCreate(&ev)); }},
        {"cudaMemcpyAsync D2D + sync (other stream)", [] {},
         [&] { CK(cudaMemcpyAsync((char *)dev + 4096, dev, 4096, cudaMemcpyDeviceToDevice, s2)); CK(cudaStreamSynchronize(s2)); }},
        {"cudaLaunchHostFunc + sync (other stream)", [] {},
         [&] { CK(cudaLaunchHostFunc(s2, [](void *) {}, nullptr)); CK(cudaStreamSynchronize(s2)); }},
        {"cudaIpcGetMemHandle", [] {}, [&] { cudaIpcMemHandle_t h; CK(cudaIpcGetMemHandle(&h, dev)); }},
        {"cudaPointerGetAttributes", [] {}, [&] { cudaPointerAttributes a; CK(cudaPointerGetAttributes(&a, dev)); }},
    };
    unsigned long long v = 0;
    std::printf("# call while another stream waits 1 s on a host word       seconds\n");
    for (auto &a : list) {
        a.setup();
        *word = v;
        block_stream(s1, word, ++v);
        CK(cudaMemsetAsync(dev, 0, 64, s1));
        std::thread releaser([&] {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            *word = v;
        });
        double t0 = now_s();
        a.call();
        double t = now_s() - t0;
        releaser.join();
        CK(cudaStreamSynchronize(s1));
        std::printf("  %-55s %6.3f %s\n", a.name, t, t > 0.7 ? "WAITS FOR THE DEVICE" : "");
        std::fflush(stdout);
    }
    return 0;
}

int lat(int n)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *dev = nullptr, *host = nullptr;
    CK(cudaMalloc(&dev, 64));
    CK(cudaHostAlloc(&host, 64, 0));
    std::vector<double> t(n);
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        CK(cudaMemcpyAsync(host, dev, 8, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        t[i] = (now_s() - t0) * 1e6;
    }
    std::sort(t.begin(), t.end());
    std::printf("8-byte copy round trip: median %.1f us, p90 %.1f us, max %.1f us (%d)\n",
                t[n / 2], t[n * 9 / 10], t[n - 1], n);
    return 0;
}

int waiter(double secs, int spin)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    volatile unsigned long long *word = nullptr;
    CK(cudaHostAlloc((void **)&word, 64, cudaHostAllocPortable | cudaHostAllocMapped));
    *word = 0;
    int clk = 0;
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    double end = now_s() + secs;
    unsigned long long v = 0;
    int rounds = 0;
    while (now_s() < end) {
        if (spin) {
            spin_kernel<<<1, 1, 0, s>>>((long long)clk); // clk kHz: 1 ms of cycles
        } else {
            block_stream(s, word, ++v);
            usleep(1000);
            *word = v;
        }
        CK(cudaStreamSynchronize(s));
        rounds++;
    }
    std::printf("%s: %d rounds in %.1f s\n", spin ? "spinner" : "waiter", rounds, secs);
    return 0;
}
// Rank `me` of two: round i, rank 0 writes a = i then waits for b >= i; rank 1 waits for a >= i
// then writes b = i; all on the stream, timed on the host around N rounds.
int pingpong_rank(int me, int n, volatile unsigned long long *words)
{
    using write_fn = wait_fn;
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue64", &fn, 12000, cudaEnableDefault, &q));
    write_fn write64 = reinterpret_cast<write_fn>(fn);
    CK(cudaHostRegister((void *)words, 4096, cudaHostRegisterPortable | cudaHostRegisterMapped));
    find_wait(); /* this mode skips main's set-up: it forks before CUDA starts */
    void *dev = nullptr;
    CK(cudaHostGetDevicePointer(&dev, (void *)words, 0));
    words = (volatile unsigned long long *)dev;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    volatile unsigned long long *a = words, *b = words + 8;
    auto addr = [](volatile unsigned long long *w) { return (unsigned long long)(uintptr_t)w; };
    double t0 = now_s();
    for (int i = 1; i <= n; i++) {
        if (me == 0) {
            write64(s, addr(a), i, 0);
            block_stream(s, b, i);
        } else {
            block_stream(s, a, i);
            write64(s, addr(b), i, 0);
        }
        if (i % 64 == 0) {
            CK(cudaStreamSynchronize(s));
        }
    }
    CK(cudaStreamSynchronize(s));
    double t = now_s() - t0;
    if (me == 0) {
        std::printf("stream ping-pong between two processes: %.1f us per round (%d rounds)\n",
                    t / n * 1e6, n);
    }
    return 0; /* the process exits: its registration ends with it */
}

int pingpong(int n)
{
    void *m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        std::printf("mmap failed\n");
        return 1;
    }
    std::memset(m, 0, 4096);
    pid_t pid = fork();
    if (pid == 0) {
        std::exit(pingpong_rank(1, n, (volatile unsigned long long *)m));
    }
    int rc = pingpong_rank(0, n, (volatile unsigned long long *)m);
    int status = 0;
    waitpid(pid, &status, 0);
    return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::printf("usage: gpu_sync_probe apis | lat N | waiter SECONDS | spinner SECONDS | "
                    "pingpong N\n");
        return 2;
    }
    if (!std::strcmp(argv[1], "pingpong") && argc > 2) {
        return pingpong(std::atoi(argv[2])); /* forks before this process touches CUDA */
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::printf("no GPU: cudaGetDeviceCount found none\n");
        return 77;
    }
    find_wait();
    if (!std::strcmp(argv[1], "apis")) {
        return apis();
    }
    if (!std::strcmp(argv[1], "lat") && argc > 2) {
        return lat(std::atoi(argv[2]));
    }
    if (!std::strcmp(argv[1], "waiter") && argc > 2) {
        return waiter(std::atof(argv[2]), 0);
    }
    if (!std::strcmp(argv[1], "spinner") && argc > 2) {
        return waiter(std::atof(argv[2]), 1);
    }
    std::printf("unknown mode %s\n", argv[1]);
    return 2;
}
