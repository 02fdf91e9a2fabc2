/*
 * llc.h - the size of the last-level cache a process runs under, from sysfs. Results larger
 * than it go to memory with non-temporal stores by default (TUTTI_STREAM_MIN), since they
 * cannot stay cached for whoever reads them next.
 */
#ifndef TUTTI_LLC_H
#define TUTTI_LLC_H

#include <stddef.h>

/**
 * The largest unified (or data) cache that a CPU's sysfs folder lists.
 * @param cpu_dir a folder laid out as /sys/devices/system/cpu/cpuN (its cache/indexK/ folders
 *        hold level, type and size files: "3", "Unified", "32768K")
 * @return its size in bytes of the highest level found, or 0 where none is readable
 */
size_t tutti__llc_bytes_in(const char *cpu_dir);

/** The last-level cache of the CPU this thread runs on (cpu0's where that is unknown); 0 where
 *  sysfs does not say. */
size_t tutti__llc_bytes(void);

#endif
