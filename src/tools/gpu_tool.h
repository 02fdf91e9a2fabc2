/* gpu_tool.h - `tutti-info --gpu`: whether the GPU module is there and how many GPUs it sees. */
#ifndef TUTTI_GPU_TOOL_H
#define TUTTI_GPU_TOOL_H

#include <stdio.h>

/**
 * Print "gpu module: ..." (where it was loaded from and what it carries, or why there is none)
 * and "gpus: N visible" with the CUDA status when the count is not known to be right.
 * Returns 0 when the module loaded (whatever the count), 1 when it did not.
 */
int tutti__gpu_info(FILE *out);

#endif /* TUTTI_GPU_TOOL_H */
