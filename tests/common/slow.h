/*
 * slow.h - TEST_SLOW, the factor by which a sanitizer build (scripts/sanitize.sh, gcc) runs
 * slower: deadlines of heavy tests are multiplied by it, so that they measure hangs, not the
 * sanitizer's overhead.
 */
#ifndef TUTTI_TEST_SLOW_H
#define TUTTI_TEST_SLOW_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SLOW 5
#else
#define TEST_SLOW 1
#endif

#endif /* TUTTI_TEST_SLOW_H */
