/*
 * fail.h - what happens when a communicator fails: the first error is stored (sticky, later
 * operations return it at once), the peers are told through every transport, and waiting
 * threads are woken.
 */
#ifndef TUTTI_FAIL_H
#define TUTTI_FAIL_H

#include "tutti/status.h"

struct tutti_fabric;

/**
 * Fail comm with st (its message is already recorded). The first failure wins; peers are told
 * who failed (culprit, or -1 when unknown). Returns the stored status.
 */
tutti_status_t tutti__fabric_fail(struct tutti_fabric *fab, tutti_status_t st, int culprit);

/** TUTTI_OK, or the stored error of a failed or aborted communicator. */
tutti_status_t tutti__fabric_health(struct tutti_fabric *fab);

/** Wake a thread sleeping in the engine on comm (doorbell and eventfd). */
void tutti__fabric_wake(struct tutti_fabric *fab);

/** Does this error poison the communicator (lost data or peers), or only fail one call? */
int tutti__status_is_fatal(tutti_status_t st);

#endif /* TUTTI_FAIL_H */
