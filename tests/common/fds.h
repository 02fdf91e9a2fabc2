/*
 * fds.h - test_count_fds(): the open file descriptors of this process (the directory stream's
 * own not counted), for tests that check nothing leaks across a communicator's life.
 */
#ifndef TUTTI_TEST_FDS_H
#define TUTTI_TEST_FDS_H

#include <dirent.h>

static inline int test_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    return n - 1;
}

#endif /* TUTTI_TEST_FDS_H */
