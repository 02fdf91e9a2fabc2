/*
 * reduce_cpu.c - the entry points of the CPU kernels (reduce.h): argument checks, the choice of
 * the loop table for this CPU (generic, AVX2 or AVX-512, see reduce_isa.h), the fused double
 * copy, the pre-multiplied sum's entry points, and the exported scalar conversions, which are
 * thin wrappers around kern_ops.h. Combinations without a loop (a NULL entry of the table) are
 * ignored: the library's validation refuses them before any kernel runs.
 */
#include "kernels/reduce.h"
#include "kernels/kern_ops.h"
#include "kernels/reduce_isa.h"
#include "tutti/coll.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(TUTTI_KERN_HAVE_X86)
#include <cpuid.h>
#endif

/*
 * tutti__copy2 copies this many bytes at a time to both destinations, so that the second copy
 * reads the source from L1 instead of memory.
 */
#define COPY2_CHUNK (16 * 1024)

/*
 * The table in use. File-scope state, on purpose: it is a cache of a fact about the CPU, filled
 * at the first call. Threads racing on the first call all store the same pointer; only the tests
 * change it afterwards (tutti__reduce_force_isa).
 */
static _Atomic(const tutti_kern_table_t *) active_table;

static int cpu_runs(const tutti_kern_table_t *table)
{
#if defined(TUTTI_KERN_HAVE_X86)
    unsigned int eax, ebx, ecx, edx;
    int f16c;

    if (table == &tutti__kern_generic) {
        return 1;
    }
    /* __builtin_cpu_supports checks that the OS saves the YMM/ZMM state; F16C is VEX-encoded. */
    __builtin_cpu_init();
    f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
    if (table == &tutti__kern_avx2) {
        return f16c && __builtin_cpu_supports("avx2");
    }
    if (table == &tutti__kern_avx512) {
        return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    }
    return 0;
#else
    return table == &tutti__kern_generic;
#endif
}

/* Every table, the best first. */
static const tutti_kern_table_t *const all_tables[] = {
#if defined(TUTTI_KERN_HAVE_X86)
    &tutti__kern_avx512,
    &tutti__kern_avx2,
#endif
    &tutti__kern_generic,
};

static const tutti_kern_table_t *detect(void)
{
    size_t i;

    for (i = 0; i < sizeof(all_tables) / sizeof(all_tables[0]); i++) {
        if (cpu_runs(all_tables[i])) {
            return all_tables[i];
        }
    }
    return &tutti__kern_generic;
}

static const tutti_kern_table_t *table(void)
{
    const tutti_kern_table_t *t = atomic_load_explicit(&active_table, memory_order_acquire);

    if (t == NULL) {
        t = detect();
        atomic_store_explicit(&active_table, t, memory_order_release);
    }
    return t;
}

int tutti__reduce_force_isa(const char *name)
{
    size_t i;

    if (strcmp(name, "auto") == 0) {
        atomic_store_explicit(&active_table, detect(), memory_order_release);
        return 0;
    }
    for (i = 0; i < sizeof(all_tables) / sizeof(all_tables[0]); i++) {
        if (strcmp(name, all_tables[i]->name) == 0 && cpu_runs(all_tables[i])) {
            atomic_store_explicit(&active_table, all_tables[i], memory_order_release);
            return 0;
        }
    }
    return -1;
}

const char *tutti__reduce_isa(void)
{
    return table()->name;
}

void tutti__reduce(void *dst0, void *dst1, const void *a, const void *b, size_t n,
                   tutti_datatype_t dt, tutti_op_t op, int divisor)
{
    const tutti_kern_table_t *t = table();

    /* the check comes before AVG turns into SUM, which bool has but its AVG does not */
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES || (unsigned)op >= TUTTI_NUM_OPS || n == 0 ||
        t->reduce[dt][op] == NULL) {
        return;
    }
    if (op == TUTTI_AVG && divisor <= 1) {
        op = TUTTI_SUM;
    }
    t->reduce[dt][op](dst0, dst1, a, b, n, divisor);
}

void tutti__scale(void *dst0, void *dst1, const void *src, size_t n, tutti_datatype_t dt,
                  const void *scalar)
{
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES || n == 0 || table()->scale[dt] == NULL) {
        return;
    }
    table()->scale[dt](dst0, dst1, src, n, scalar);
}

void tutti__reduce_premul(void *dst0, void *dst1, const void *acc, const void *own, size_t n,
                          tutti_datatype_t dt, const void *scalar)
{
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES || n == 0 || table()->premul[dt] == NULL) {
        return;
    }
    table()->premul[dt](dst0, dst1, acc, own, n, scalar);
}

void tutti__reduce_div(void *dst, const void *src, size_t n, tutti_datatype_t dt, int divisor)
{
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES || n == 0 || table()->div[dt] == NULL) {
        return;
    }
    if (divisor <= 1) {
        tutti__copy2(dst, NULL, src, n * tutti_datatype_size(dt));
        return;
    }
    table()->div[dt](dst, src, n, divisor);
}

void tutti__copy2(void *dst0, void *dst1, const void *src, size_t bytes)
{
    unsigned char *d0 = dst0;
    unsigned char *d1 = dst1;
    const unsigned char *s = src;
    size_t off;

    /* A destination equal to the source needs no copy (and memcpy must not see one). */
    d0 = (d0 == s) ? NULL : d0;
    d1 = (d1 == s) ? NULL : d1;
    if (d0 == NULL || d1 == NULL) {
        d0 = (d0 == NULL) ? d1 : d0;
        if (d0 != NULL && bytes > 0) {
            memcpy(d0, s, bytes);
        }
        return;
    }
    for (off = 0; off < bytes; off += COPY2_CHUNK) {
        size_t len = (bytes - off < COPY2_CHUNK) ? bytes - off : COPY2_CHUNK;

        memcpy(d0 + off, s + off, len);
        memcpy(d1 + off, s + off, len);
    }
}

/* ---- exported scalar conversions ---- */

float tutti__half_to_float(uint16_t h)
{
    return kern_half_to_float(h);
}

uint16_t tutti__float_to_half(float f)
{
    return kern_float_to_half(f);
}

float tutti__bf16_to_float(uint16_t h)
{
    return kern_bf16_to_float(h);
}

uint16_t tutti__float_to_bf16(float f)
{
    return kern_float_to_bf16(f);
}

float tutti__e4m3_to_float(uint8_t v)
{
    return kern_e4m3_to_float(v);
}

uint8_t tutti__float_to_e4m3(float f)
{
    return kern_float_to_e4m3(f);
}

float tutti__e5m2_to_float(uint8_t v)
{
    return kern_e5m2_to_float(v);
}

uint8_t tutti__float_to_e5m2(float f)
{
    return kern_float_to_e5m2(f);
}

int tutti__reduce_supported(tutti_datatype_t dt, tutti_op_t op)
{
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES || (unsigned)op >= TUTTI_NUM_OPS) {
        return 0;
    }
    int integer = dt <= TUTTI_UINT64 || dt == TUTTI_BOOL;
    if (op == TUTTI_BAND || op == TUTTI_BOR || op == TUTTI_BXOR) {
        return integer;
    }
    return !(op == TUTTI_AVG && dt == TUTTI_BOOL);
}
