/*
 * registry.c - the transports built into this library, in order of preference, and the stub
 * that stands for operations a transport does not provide. One explicit list: no constructor
 * registration, no plugins yet (a later dlopen of libtutti-net-<name>.so slots in here).
 */
#include "transports/transport.h"
#include "transports/shm/shm.h"
#include "transports/tcp/tcp.h"
#include "transports/ibverbs/ib.h"

static const struct tutti_transport_ops *const transports[TUTTI_TRANSPORT_COUNT] = {
    [TUTTI_TRANSPORT_SHM] = &tutti__shm_ops,
    [TUTTI_TRANSPORT_TCP] = &tutti__tcp_ops,
    [TUTTI_TRANSPORT_IB] = &tutti__ib_ops,
};

const struct tutti_transport_ops *tutti__transport_get(tutti_transport_id_t id)
{
    return ((unsigned)id < TUTTI_TRANSPORT_COUNT) ? transports[id] : NULL;
}

const char *tutti__transport_name(tutti_transport_id_t id)
{
    const struct tutti_transport_ops *ops = tutti__transport_get(id);
    return ops != NULL ? ops->name : "none";
}

tutti_status_t tutti__op_unsupported(void)
{
    return TUTTI_ERR_UNSUPPORTED;
}
