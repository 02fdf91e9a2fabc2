/*
 * reduce_generic.c - the element loops of reduce_loops.h compiled for the build's baseline
 * instruction set (SSE2 on x86-64): the path for CPUs without AVX2/F16C and for other
 * architectures, and the reference that the tests compare the SIMD tables with.
 */
#define KERN_ATTR
#define KERN_TABLE tutti__kern_generic
#define KERN_NAME  "generic"
#define KERN_VEC16 0
#include "kernels/reduce_loops.h"
