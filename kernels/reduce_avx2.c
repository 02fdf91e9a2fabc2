/*
 * reduce_avx2.c - the element loops of reduce_loops.h compiled for AVX2, with the hand-written
 * AVX2/F16C loops of reduce_x86.h for float16 and bfloat16. Only reduce_cpu.c's CPU detection
 * (AVX2 and F16C present, YMM state enabled by the OS) lets these run. Empty on other
 * architectures.
 */
#if defined(__x86_64__)
#define KERN_ATTR  __attribute__((target("avx2,f16c")))
#define KERN_TABLE tutti__kern_avx2
#define KERN_NAME  "avx2"
#define KERN_VEC16 1
#include "kernels/reduce_loops.h"
#endif
