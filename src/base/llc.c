/*
 * llc.c - the last-level cache's size from /sys/devices/system/cpu/cpuN/cache (llc.h). Not
 * sysconf(_SC_LEVEL3_CACHE_SIZE): in a VM glibc reports what the host's CPUID says for the
 * whole package (320 MiB on a 2-vCPU AMD EPYC VM whose sysfs lists 32 MiB).
 */
#include "base/llc.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* The first line of dir/name into buf; 0, or -1 where it cannot be read. */
static int read_line(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char *got = fgets(buf, (int)cap, f);
    fclose(f);
    if (got == NULL) {
        return -1;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* "32768K", "2M", "512" as bytes; 0 where it is not such a number. */
static size_t parse_size(const char *s)
{
    unsigned long long v = 0;
    char unit = '\0';
    int n = sscanf(s, "%llu%c", &v, &unit);
    if (n < 1) {
        return 0;
    }
    switch (n == 2 ? unit : 'B') {
    case 'B':
        return (size_t)v;
    case 'K':
        return (size_t)v << 10;
    case 'M':
        return (size_t)v << 20;
    case 'G':
        return (size_t)v << 30;
    default:
        return 0;
    }
}

size_t tutti__llc_bytes_in(const char *cpu_dir)
{
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; i++) {
        char dir[512], level[32], type[32], size[32];
        snprintf(dir, sizeof(dir), "%s/cache/index%d", cpu_dir, i);
        if (read_line(dir, "level", level, sizeof(level)) != 0 ||
            read_line(dir, "type", type, sizeof(type)) != 0 ||
            read_line(dir, "size", size, sizeof(size)) != 0) {
            continue; /* the index folders may have gaps */
        }
        int lv = 0;
        if (sscanf(level, "%d", &lv) != 1 || strcmp(type, "Instruction") == 0) {
            continue;
        }
        size_t bytes = parse_size(size);
        if (bytes > 0 && lv > best_level) {
            best_level = lv;
            best = bytes;
        }
    }
    return best;
}

size_t tutti__llc_bytes(void)
{
    int cpu = sched_getcpu();
    char dir[128];
    snprintf(dir, sizeof(dir), "/sys/devices/system/cpu/cpu%d", cpu < 0 ? 0 : cpu);
    return tutti__llc_bytes_in(dir);
}
