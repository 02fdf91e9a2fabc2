/*
 * shm_notice.c - what a local peer's failure says: an abort notice on this rank's board, or a
 * peer that closed or ended without one.
 */
#include "shm.h"
#include "base/check.h"

#include <stdatomic.h>
#include <string.h>

/*
 * An abort notice a peer posted on this rank's board: TUTTI_ERR_REMOTE naming the peer, or
 * TUTTI_OK when there is none. The peer's own status (TIMEOUT, ABORTED...) is its business: here
 * it is a peer that reported a failure, which tutti/coll.h calls REMOTE (as TCP's notices are);
 * only calls that differ between ranks stay MISMATCH everywhere (tutti__notice_status).
 */
tutti_status_t tutti__shm_board_notice(struct shm_ctx *ctx)
{
    if (atomic_load_explicit(&ctx->ctl->abort_flag, memory_order_acquire) != 2) {
        return TUTTI_OK;
    }
    const struct tutti_abort_info *ai = &ctx->ctl->abort_info;
    char reason[sizeof(ai->reason) + 1];
    memcpy(reason, ai->reason, sizeof(ai->reason));
    reason[sizeof(ai->reason)] = '\0';
    tutti_status_t st = tutti__notice_status(ai);
    if (ai->culprit >= 0 && ai->culprit != ai->origin) {
        return tutti__set_error(ctx->args.err, st, "rank %d reports that rank %d failed: %s",
                                ai->origin, ai->culprit, reason);
    }
    return tutti__set_error(ctx->args.err, st, "rank %d reports: %s", ai->origin, reason);
}

tutti_status_t tutti__shm_peer_gone(struct shm_ctx *ctx, int rank)
{
    /* A peer that failed posts its notice before it closes or exits: the notice says why. */
    tutti_status_t st = tutti__shm_board_notice(ctx);
    if (st != TUTTI_OK) {
        return st;
    }
    const struct shm_peer *p = &ctx->peers[rank];
    char who[128];
    tutti__tpeer_name(ctx->args.peers, rank, who, sizeof(who));
    if (atomic_load(&p->ctl->closed)) {
        return tutti__set_error(ctx->args.err, TUTTI_ERR_REMOTE,
                                "%s destroyed its communicator while this rank still needed it",
                                who);
    }
    return tutti__set_error(ctx->args.err, TUTTI_ERR_REMOTE, "%s died (its process ended)", who);
}
