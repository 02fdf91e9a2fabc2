/*
 * pmix.h - the launcher's private channel (PMIx) for an env launch: rank 0 hands the others what
 * must not be public (pmix.c).
 */
#ifndef TUTTI_COMM_PMIX_H
#define TUTTI_COMM_PMIX_H

#include "tutti/status.h"

#include <stddef.h>
#include <stdint.h>

struct tutti_pmix;

/**
 * Connect to the launcher's PMIx server, if this process was started by one and its PMIx rank
 * and job size are this rank and nranks. 1 with *p_p set; else 0 with the reason in why.
 */
int tutti__pmix_open(int rank, int nranks, struct tutti_pmix **p_p, char *why, size_t len);

/** The PMIx namespace (the launcher's job name), for messages. */
const char *tutti__pmix_namespace(const struct tutti_pmix *p);

/**
 * Rank 0's len bytes of buf under key, to every rank's buf, through one fence of the whole job
 * (every rank calls it) that gives up after timeout_ns. An error names the PMIx call and why.
 */
tutti_status_t tutti__pmix_bcast(struct tutti_pmix *p, const char *key, void *buf, size_t len,
                                 int64_t timeout_ns);

/** Disconnect (PMIx_Finalize) and free. NULL: nothing. */
void tutti__pmix_close(struct tutti_pmix *p);

#endif /* TUTTI_COMM_PMIX_H */
