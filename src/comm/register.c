/*
 * register.c - tutti_comm_register / tutti_comm_deregister: user memory registered with every
 * transport of the communicator that can use it (the verbs transport: sends from registered
 * memory go without a copy; ib_mr.c says why it does not register on its own). Registrations
 * hold the communicator's turn, so no operation of it runs meanwhile; those left at destroy are
 * undone there.
 */
#include "comm/register.h"
#include "base/check.h"
#include "comm/comm.h"
#include "exec/connect.h"
#include "gpu/devops.h"
#include "exec/fail.h"
#include "run/turn.h"

#include <stdlib.h>

struct tutti_reg {
    struct tutti_reg *next;
    void *buf;
    size_t len;
    void *th[TUTTI_TRANSPORT_COUNT]; /* each transport's handle, NULL where it has none */
};

/* Undo the transports' registrations of r (those made so far). */
static void undo(struct tutti_comm *comm, struct tutti_reg *r)
{
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        if (r->th[id] != NULL && comm->fab.net.ops[id] != NULL) {
            (void)comm->fab.net.ops[id]->dereg_mem(comm->fab.net.tctx[id], r->th[id]);
            r->th[id] = NULL;
        }
    }
}

static tutti_status_t reg_all(struct tutti_comm *comm, struct tutti_reg *r)
{
    /* Device memory reaches the transports staged through pinned host memory (stream.c):
     * nothing of it is registered (GPUDirect RDMA would register it here). */
    const struct tutti_devops *dops = tutti__devops();
    int dev = 0;
    if (dops != NULL && dops->is_device(r->buf, &dev) == 0 && dev) {
        return TUTTI_OK;
    }
    for (int id = 0; id < TUTTI_TRANSPORT_COUNT; id++) {
        const struct tutti_transport_ops *ops = comm->fab.net.ops[id];
        if (ops == NULL || ops->reg_mem == NULL) {
            continue;
        }
        tutti_status_t st = ops->reg_mem(comm->fab.net.tctx[id], r->buf, r->len, &r->th[id]);
        if (st == TUTTI_ERR_UNSUPPORTED) {
            r->th[id] = NULL;
        } else if (st != TUTTI_OK) {
            undo(comm, r);
            return st;
        }
    }
    return TUTTI_OK;
}

/* tutti_comm_register on a communicator it has entered (or NULL: the error says so). */
static tutti_status_t register_entered(tutti_comm_t *comm, void *buf, size_t bytes, void **handle_p)
{
    if (comm == NULL || buf == NULL || handle_p == NULL || bytes == 0) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_register: %s",
                                comm == NULL       ? "comm is NULL"
                                : buf == NULL      ? "buf is NULL"
                                : handle_p == NULL ? "handle_p is NULL"
                                                   : "bytes is 0");
    }
    TUTTI_CHECK(tutti__fabric_health(&comm->fab));
    struct tutti_reg *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY,
                                "no memory for a registration");
    }
    r->buf = buf;
    r->len = bytes;
    tutti__turn_take(&comm->run);
    tutti_status_t st = reg_all(comm, r);
    if (st == TUTTI_OK) {
        r->next = comm->regs;
        comm->regs = r;
    }
    tutti__turn_give(&comm->run);
    if (st != TUTTI_OK) {
        free(r);
        return st;
    }
    *handle_p = r;
    return TUTTI_OK;
}

/* tutti_comm_deregister on a communicator it has entered (or NULL: the error says so). */
static tutti_status_t deregister_entered(tutti_comm_t *comm, void *handle)
{
    if (comm == NULL || handle == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "tutti_comm_deregister: %s is NULL",
                                comm == NULL ? "comm" : "handle");
    }
    tutti_status_t st = TUTTI_ERR_INVALID_ARG;
    tutti__turn_take(&comm->run);
    for (struct tutti_reg **pp = &comm->regs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == handle) {
            struct tutti_reg *r = *pp;
            *pp = r->next;
            undo(comm, r);
            free(r);
            st = TUTTI_OK;
            break;
        }
    }
    tutti__turn_give(&comm->run);
    if (st != TUTTI_OK) {
        return tutti__set_error(tutti__comm_err(comm), st,
                                "tutti_comm_deregister: %p is not a registration of "
                                "this communicator",
                                handle);
    }
    return TUTTI_OK;
}

void tutti__reg_free_all(struct tutti_comm *comm)
{
    while (comm->regs != NULL) {
        struct tutti_reg *r = comm->regs;
        comm->regs = r->next;
        undo(comm, r);
        free(r);
    }
}

tutti_status_t tutti_comm_register(tutti_comm_t *comm, void *buf, size_t bytes, void **handle_p)
{
    /* A destroyed or aborted handle is refused before anything reads it. */
    if (comm != NULL && tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_register");
    }
    tutti_status_t st = register_entered(comm, buf, bytes, handle_p);
    if (comm != NULL) {
        tutti__comm_leave(comm);
    }
    return st;
}

tutti_status_t tutti_comm_deregister(tutti_comm_t *comm, void *handle)
{
    /* A destroyed or aborted handle is refused before anything reads it. */
    if (comm != NULL && tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_deregister");
    }
    tutti_status_t st = deregister_entered(comm, handle);
    if (comm != NULL) {
        tutti__comm_leave(comm);
    }
    return st;
}
