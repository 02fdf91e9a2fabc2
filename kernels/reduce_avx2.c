/*
 * reduce_avx2.c - the element loops of reduce_loops.h compiled for AVX2, with F16C intrinsics for
 * float16. Only reduce_cpu.c's CPU detection (AVX2 and F16C present, YMM state enabled by the OS)
 * lets these run. Empty on other architectures.
 */
#if defined(__x86_64__)
#define KERN_ATTR __attribute__((target("avx2,f16c")))
#define KERN_TABLE tutti__kern_avx2
#define KERN_NAME "avx2"
#define KERN_F16C 1
#include "kernels/reduce_loops.h"
#endif
