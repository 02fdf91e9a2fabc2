/*
 * reduce_avx512.c - the element loops of reduce_loops.h compiled for AVX-512 (F, BW and VL, so
 * that 8- and 16-bit lanes vectorise too), with the 256-bit AVX2/F16C loops of reduce_x86.h for
 * float16 and bfloat16. Only reduce_cpu.c's CPU detection lets these run. Empty on other
 * architectures.
 */
#if defined(__x86_64__)
#define KERN_ATTR  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))
#define KERN_TABLE tutti__kern_avx512
#define KERN_NAME  "avx512"
#define KERN_VEC16 1
#include "kernels/reduce_loops.h"
#endif
