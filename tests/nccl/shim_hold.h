/*
 * shim_hold.h - the shim's checks of a call that enters its communicator by the thread's hold
 * (shim_hold.c; run by shim_test.c).
 */
#ifndef TUTTI_TESTS_NCCL_SHIM_HOLD_H
#define TUTTI_TESTS_NCCL_SHIM_HOLD_H

#include <nccl.h>

/** Rounds of: a 1-rank communicator, a thread calling all-reduce on it as fast as it can, and an
 * abort from this thread once that thread's calls are held (comm_less check). */
int t_abort_races_held_calls(ncclComm_t comm, int rank, int n);

#endif /* TUTTI_TESTS_NCCL_SHIM_HOLD_H */
