/*
 * shm_blob.c - what each rank publishes for the shared-memory transport before the all-gather:
 * the salt that keys its segments' names (shm_name.c) and the version of the segments' layout,
 * which every rank checks against its own for the ranks on its host at attach phase 0.
 *
 * Ranks that load different builds of tutti may lay out a FIFO or a control page differently.
 * Without the check, a rank that does not know the other's FIFO magic takes the FIFO as not yet
 * ready and waits for the connection's timeout; with it, the set-up fails at once on every rank
 * (the attach's agreement, src/exec/connect.c), naming both layouts. A build from before the
 * layout was published leaves those bytes zero: layout 0. A rank without the transport publishes
 * nothing (its blob stays zero, salt included: 16 random bytes are never all zero): it is not
 * judged here, and the attach's sync takes every pair to TCP as before.
 */
#include "shm.h"
#include "base/check.h"

#include <string.h>

_Static_assert(TUTTI_SHM_SALT_BYTES + sizeof(uint32_t) <= TUTTI_TRANSPORT_BLOB,
               "the salt and the layout fit the blob");

void tutti__shm_publish(const struct shm_ctx *ctx, uint8_t *blob)
{
    uint32_t layout = TUTTI_SHM_LAYOUT;
    memcpy(blob, ctx->mine, TUTTI_SHM_SALT_BYTES);
    memcpy(blob + TUTTI_SHM_SALT_BYTES, &layout, sizeof(layout)); /* one host: one byte order */
}

tutti_status_t tutti__shm_check_layouts(const struct shm_ctx *ctx)
{
    const struct tutti_tctx_args *a = &ctx->args;
    int host = a->peers[a->rank].host;
    for (int r = 0; r < a->nranks; r++) {
        if (a->peers[r].host != host) {
            continue; /* shared memory is only between ranks of one host */
        }
        static const uint8_t none[TUTTI_SHM_SALT_BYTES];
        if (memcmp(a->peers[r].blob[TUTTI_TRANSPORT_SHM], none, sizeof(none)) == 0) {
            continue; /* no shm context there (TUTTI_TRANSPORT=tcp): the attach's sync decides */
        }
        uint32_t theirs;
        memcpy(&theirs, a->peers[r].blob[TUTTI_TRANSPORT_SHM] + TUTTI_SHM_SALT_BYTES,
               sizeof(theirs));
        if (theirs != TUTTI_SHM_LAYOUT) {
            char who[160];
            return tutti__set_error(
                a->err, TUTTI_ERR_INVALID_USAGE,
                "%s lays out shared memory as version %u%s, this rank (%d) as version %u: the "
                "ranks of one host load different builds of tutti; every rank of a job must load "
                "the same libtutti",
                tutti__tpeer_name(a->peers, r, who, sizeof(who)), (unsigned)theirs,
                theirs == 0 ? " (a build that does not publish it)" : "", a->rank,
                (unsigned)TUTTI_SHM_LAYOUT);
        }
    }
    return TUTTI_OK;
}
