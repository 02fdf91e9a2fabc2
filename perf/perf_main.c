/*
 * perf_main.c - main() of each <coll>_perf tool. meson builds it once per tool with
 * -DPERF_COLL=perf_<coll>, the collective defined in perf_<coll>.c.
 */
#include "tutti_perf.h"

int main(int argc, char **argv)
{
    return tutti_perf_main(&PERF_COLL, argc, argv);
}
