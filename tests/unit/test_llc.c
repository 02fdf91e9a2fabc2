/*
 * test_llc.c - the last-level cache's size read from a CPU's sysfs folder (base/llc.c), on
 * made-up folders: the highest data or unified level wins, gaps and instruction caches are
 * passed over, units parse, and a folder without caches gives 0 (never stream).
 */
#include "base/llc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh folder laid out as /sys/devices/system/cpu/cpuN; its path in buf. */
static void cpu_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/tutti-llc-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
    char path[512];
    snprintf(path, sizeof(path), "%s/cache", buf);
    cr_assert_eq(mkdir(path, 0700), 0);
}

static void put(const char *dir, int index, const char *level, const char *type, const char *size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/cache/index%d", dir, index);
    cr_assert_eq(mkdir(path, 0700), 0);
    const char *names[] = {"level", "type", "size"}, *vals[] = {level, type, size};
    for (int i = 0; i < 3; i++) {
        char file[600];
        snprintf(file, sizeof(file), "%s/%s", path, names[i]);
        FILE *f = fopen(file, "w");
        cr_assert_not_null(f);
        fprintf(f, "%s\n", vals[i]);
        fclose(f);
    }
}

static void rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

struct entry {
    int index;
    const char *level, *type, *size;
};

/* What tutti__llc_bytes_in reads from a folder holding these cache entries. */
static size_t llc_of(const struct entry *e, int n)
{
    char dir[256];
    cpu_dir(dir, sizeof(dir));
    for (int i = 0; i < n; i++) {
        put(dir, e[i].index, e[i].level, e[i].type, e[i].size);
    }
    size_t bytes = tutti__llc_bytes_in(dir);
    rm_tree(dir);
    return bytes;
}

Test(llc, the_highest_data_or_unified_level_wins)
{
    const struct entry epyc[] = {{0, "1", "Data", "32K"},
                                 {1, "1", "Instruction", "32K"},
                                 {2, "2", "Unified", "1024K"},
                                 {3, "3", "Unified", "32768K"}};
    cr_expect_eq(llc_of(epyc, 4), (size_t)32 << 20);
}

Test(llc, gaps_instruction_caches_and_units)
{
    const struct entry odd[] = {{0, "1", "Data", "48K"},
                                {2, "2", "Unified", "2M"}, /* index1 missing */
                                {3, "4", "Instruction", "64M"}};
    cr_expect_eq(llc_of(odd, 3), (size_t)2 << 20);
}

Test(llc, no_caches_listed_is_zero)
{
    char dir[256];
    cpu_dir(dir, sizeof(dir));
    cr_expect_eq(tutti__llc_bytes_in(dir), 0);
    put(dir, 0, "3", "Unified", "lots");
    cr_expect_eq(tutti__llc_bytes_in(dir), 0, "a size that is not a number counts as none");
    rm_tree(dir);
    cr_expect_eq(tutti__llc_bytes_in("/nonexistent/cpu0"), 0);
}

Test(llc, this_machine_agrees_with_cpu0_or_lists_none)
{
    size_t here = tutti__llc_bytes();
    size_t cpu0 = tutti__llc_bytes_in("/sys/devices/system/cpu/cpu0");
    if (cpu0 == 0) {
        cr_skip_test("sysfs lists no caches for cpu0 on this machine");
    }
    cr_expect_gt(here, 0, "cpu0 lists %zu bytes but this CPU none", cpu0);
}
