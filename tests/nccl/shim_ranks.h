/*
 * shim_ranks.h - the harness of the shim's test programs (shim_test.c, the api232_*.c checks):
 * ranks as forked processes that make a communicator from one unique id, and the report lines
 * ("name ok|failed", then a Criterion-style Synthesis line that scripts/test-summary.py counts).
 * Built with whichever nccl.h the program uses (NVIDIA's or tutti's): it needs only the calls
 * every version has.
 */
#ifndef TUTTI_TESTS_NCCL_SHIM_RANKS_H
#define TUTTI_TESTS_NCCL_SHIM_RANKS_H

#include <nccl.h>

/* The rank this process runs (shim_check.h's messages), -1 in the parent. */
extern int g_rank;
/* Set by a check that aborted or destroyed its rank's communicator: nothing left to destroy. */
extern int g_comm_gone;
/* The unique id of the ranks of the running check (made by the parent before the fork): a
 * check that makes its own communicators uses it for the first one. */
extern ncclUniqueId g_shared_id;

/** A check run by every rank: 0 when it passed. comm is NULL for a check that makes its own. */
typedef int (*shim_rank_fn)(ncclComm_t comm, int rank, int n);

/**
 * Fork n ranks that each make a communicator from a new unique id, g_shared_id (unless
 * comm_less), and run fn, each with an alarm of `alarm_s` seconds; then destroy the
 * communicator. 0 if all passed.
 */
int shim_run_ranks(int n, shim_rank_fn fn, int comm_less, unsigned alarm_s);

/** Print "name ok|failed" and count it. */
void shim_report(const char *name, int failed);

/** Print the Synthesis line; the program's exit status (1 if a check failed). */
int shim_report_end(void);

#endif /* TUTTI_TESTS_NCCL_SHIM_RANKS_H */
