/*
 * api232.h - the checks of NCCL 2.32's API on the shim (api232_*.c), a program built against
 * tutti's own nccl.h (src/nccl/: CI has no NVIDIA 2.32 header; nccl_abi_layout proves the two
 * agree) and linked to the shim: grow, suspend and resume, memory statistics, timeouts, configs
 * (api232_comm.c); the parameter API (api232_params.c); the collectives' config forms, gather,
 * scatter and all-to-all (api232_coll.c); what tutti refuses and the device API's truthful
 * answers (api232_unsupported.c). Each check runs on forked ranks (shim_ranks.h).
 */
#ifndef TUTTI_TESTS_NCCL_API232_H
#define TUTTI_TESTS_NCCL_API232_H

#include <nccl.h>
#include "nccl_device_host.h"
#include "shim_check.h"
#include "shim_ranks.h"

#include <string.h>

#define NCCLOK(call) NCCLOK_ON(comm, call)
/* The call fails with `res` and ncclGetLastError(on) contains `text`. */
#define REFUSED(on, call, res, text)                                                               \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        CHECK(r_ == (res), "%s -> %d, want %d (%s)", #call, (int)r_, (int)(res),                   \
              ncclGetLastError(on));                                                               \
        CHECK(strstr(ncclGetLastError(on), (text)) != NULL, "%s: message '%s' lacks '%s'", #call,  \
              ncclGetLastError(on), (text));                                                       \
    } while (0)

/* api232_comm.c */
int api232_grow(int nold, int nnew);
int t_suspend_resume(ncclComm_t comm, int rank, int n);
int t_mem_stats(ncclComm_t comm, int rank, int n);
int t_timeout(ncclComm_t comm, int rank, int n);
int t_comm_config(ncclComm_t comm, int rank, int n);
/* api232_params.c */
int t_params(ncclComm_t comm, int rank, int n);
/* api232_coll.c */
int t_coll_config(ncclComm_t comm, int rank, int n);
int t_rooted_native(ncclComm_t comm, int rank, int n);
/* api232_unsupported.c */
int t_unsupported(ncclComm_t comm, int rank, int n);
int t_device_truthful(ncclComm_t comm, int rank, int n);

#endif /* TUTTI_TESTS_NCCL_API232_H */
