/*
 * registry.c - the transports built into this library and their order of preference. One
 * explicit list: no constructor registration, no plugins yet (a later dlopen of
 * libtutti-net-<name>.so slots in here). It lives with its user, the executor, above the
 * transports, so that no transport depends on a file that depends on every transport.
 */
#include "exec/registry.h"
#include "base/check.h"
#include "transports/shm/shm.h"
#include "transports/tcp/tcp.h"
#include "transports/ibverbs/ib.h"

static const struct tutti_transport_ops *const transports[TUTTI_TRANSPORT_COUNT] = {
    [TUTTI_TRANSPORT_SHM] = &tutti__shm_ops,
    [TUTTI_TRANSPORT_TCP] = &tutti__tcp_ops,
    [TUTTI_TRANSPORT_IB] = &tutti__ib_ops,
};

/* The order in which a pair of ranks is offered to the transports (can_connect): shared memory
 * within a host, then verbs where both ranks have a port of one link layer, then TCP, which
 * reaches everyone. */
static const tutti_transport_id_t order[TUTTI_TRANSPORT_COUNT] = {
    TUTTI_TRANSPORT_SHM,
    TUTTI_TRANSPORT_IB,
    TUTTI_TRANSPORT_TCP,
};

tutti_status_t tutti__transport_pick(const struct tutti_transport_ops *const ops[],
                                     void *const tctx[], int a, int b, tutti_transport_id_t *id_p)
{
    for (int i = 0; i < TUTTI_TRANSPORT_COUNT; i++) {
        tutti_transport_id_t id = order[i];
        int score = 0;
        if (ops[id] != NULL) {
            TUTTI_CHECK(ops[id]->can_connect(tctx[id], a, b, &score));
        }
        if (score > 0) {
            *id_p = id;
            return TUTTI_OK;
        }
    }
    return TUTTI_ERR_UNSUPPORTED;
}

const struct tutti_transport_ops *tutti__transport_get(tutti_transport_id_t id)
{
    return ((unsigned)id < TUTTI_TRANSPORT_COUNT) ? transports[id] : NULL;
}

const char *tutti__transport_name(tutti_transport_id_t id)
{
    const struct tutti_transport_ops *ops = tutti__transport_get(id);
    return ops != NULL ? ops->name : "none";
}
