/*
 * fail.c - owns the fabric's state (fabric.h): the sticky failure status, abort notices to peers
 * and waking the engine. A rank that fails tells every peer it can reach, and peers that fail
 * because of the notice tell theirs, so a failure anywhere reaches every rank instead of leaving
 * them waiting.
 */
#include "exec/fail.h"
#include "base/check.h"
#include "exec/fabric.h"
#include "exec/connect.h"
#include "base/global.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int tutti__status_is_fatal(tutti_status_t st)
{
    return st == TUTTI_ERR_REMOTE || st == TUTTI_ERR_TIMEOUT || st == TUTTI_ERR_ABORTED ||
           st == TUTTI_ERR_SYSTEM || st == TUTTI_ERR_INTERNAL || st == TUTTI_ERR_INVALID_USAGE ||
           st == TUTTI_ERR_AUTH || st == TUTTI_ERR_NO_MEMORY || st == TUTTI_ERR_MISMATCH;
}

tutti_status_t tutti__fabric_health(struct tutti_fabric *fab)
{
    return (tutti_status_t)atomic_load_explicit(&fab->state.status, memory_order_acquire);
}

void tutti__fabric_wake(struct tutti_fabric *fab)
{
    struct tutti_doorbell *db = fab->net.doorbell;
    if (db != NULL) {
        __atomic_fetch_add(&db->seq, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, &db->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
    if (fab->state.wakefd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(fab->state.wakefd, &one, sizeof(one));
        (void)w;
    }
}

tutti_status_t tutti__fabric_fail(struct tutti_fabric *fab, tutti_status_t st, int culprit)
{
    int expect = TUTTI_OK;
    if (!atomic_compare_exchange_strong(&fab->state.status, &expect, (int)st)) {
        return (tutti_status_t)expect; /* failed before: that error stands */
    }
    struct tutti_abort_info info;
    memset(&info, 0, sizeof(info));
    info.origin = fab->rank;
    info.culprit = culprit;
    info.status = st;
    info.seq = (uint32_t)atomic_load(&fab->state.posted);
    pthread_mutex_lock(&fab->err.lock);
    snprintf(info.reason, sizeof(info.reason), "%.*s", (int)sizeof(info.reason) - 1, fab->err.msg);
    pthread_mutex_unlock(&fab->err.lock);
    tutti_debug(TUTTI_SUBSYS_INIT, "communicator failed (%s); telling peers",
                tutti_status_name(st));
    tutti__fabric_abort(fab, &info);
    tutti__fabric_wake(fab);
    return st;
}
