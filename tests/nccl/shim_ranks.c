/*
 * shim_ranks.c - the shim tests' harness (shim_ranks.h): forked ranks, each with its own
 * communicator from one unique id, and the report of the checks.
 */
#include "shim_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int g_rank = -1;
int g_comm_gone;
ncclUniqueId g_shared_id;
static int npass, nfail;

int shim_run_ranks(int n, shim_rank_fn fn, int comm_less, unsigned alarm_s)
{
    if (ncclGetUniqueId(&g_shared_id) != ncclSuccess) {
        fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
        return 1;
    }
    pid_t pids[64];
    for (int r = 0; r < n && r < 64; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            ncclComm_t comm = NULL;
            g_rank = r;
            alarm(alarm_s);
            if (!comm_less) {
                ncclResult_t res = ncclCommInitRank(&comm, n, g_shared_id, r);
                if (res != ncclSuccess) {
                    fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", r, ncclGetLastError(NULL));
                    _exit(1);
                }
            }
            int rc = fn(comm, r, n);
            if (comm != NULL && rc == 0 && !g_comm_gone) {
                rc = ncclCommDestroy(comm) == ncclSuccess ? 0 : 1;
            }
            _exit(rc);
        }
    }
    int bad = 0;
    for (int r = 0; r < n && r < 64; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            bad = 1;
            fprintf(stderr, "rank %d ended with status 0x%x\n", r, status);
        }
    }
    return bad;
}

void shim_report(const char *name, int failed)
{
    printf("%s %s\n", name, failed ? "failed" : "ok");
    fflush(stdout);
    if (failed) {
        nfail++;
    } else {
        npass++;
    }
}

int shim_report_end(void)
{
    printf("Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0\n", npass + nfail,
           npass, nfail);
    return nfail == 0 ? 0 : 1;
}
