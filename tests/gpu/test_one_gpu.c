/*
 * test_one_gpu.c - libtutti-one-gpu.so over a fake one-device CUDA runtime (fake_cudart.c):
 * run with LD_PRELOAD of the interposer and ONE_GPU_RANKS=2 (tests/gpu/meson.build), two
 * devices are reported and device 1 reaches the runtime as device 0; run without it, the fake's
 * own answers come through (so the test would fail if the interposer did nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudaGetDeviceCount(int *count);
int cudaSetDevice(int device);
int cudaGetDeviceProperties_v2(void *prop, int device);
int cudaDeviceGetAttribute(int *value, int attr, int device);
extern int fake_last_device;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "test_one_gpu: failed: %s\n", #cond);                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int interposed = argc > 1 && strcmp(argv[1], "interposed") == 0;
    int count = 0, value = 0;
    char prop[64];
    EXPECT(cudaGetDeviceCount(&count) == 0);
    EXPECT(count == (interposed ? 2 : 1));
    EXPECT(cudaSetDevice(1) == (interposed ? 0 : 101));
    EXPECT(fake_last_device == (interposed ? 0 : 1));
    EXPECT(cudaGetDeviceProperties_v2(prop, 1) == (interposed ? 0 : 101));
    EXPECT(cudaDeviceGetAttribute(&value, 75, 3) == (interposed ? 0 : 101));
    EXPECT(fake_last_device == (interposed ? 0 : 3) && value == 75);
    EXPECT(cudaSetDevice(0) == 0 && fake_last_device == 0);
    printf("test_one_gpu: %s: 1 passed, 0 failed\n", interposed ? "interposed" : "plain");
    return 0;
}
