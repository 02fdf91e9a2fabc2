/*
 * expect.h - EXPECT(cond, fmt, ...): a check for code that runs in a forked rank, where
 * Criterion's asserts do not reach the parent: print the file, line and message to stderr and
 * return the line number (non-zero) from the enclosing function.
 */
#ifndef TUTTI_TEST_EXPECT_H
#define TUTTI_TEST_EXPECT_H

#include <stdio.h>

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: rank check failed: ", __FILE__, __LINE__);                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            return __LINE__;                                                                       \
        }                                                                                          \
    } while (0)

#endif
