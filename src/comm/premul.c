/*
 * premul.c - owns comm->premul: the pre-multiplied sums made on a communicator. A handle is
 * TUTTI_OP_DYNAMIC_FIRST + its slot; a slot is reused once destroyed. A call naming a handle
 * takes the handle's scalar with it when it is validated (tutti__premul_resolve), so a handle
 * destroyed while the call is queued, on a stream or in a group changes nothing for it.
 */
#include "comm/premul.h"
#include "base/check.h"
#include "comm/comm.h"
#include "exec/op.h"
#include "kernels/reduce.h"
#include "tutti/coll.h"

#include <stdlib.h>
#include <string.h>

struct premul_op {
    int live;
    tutti_datatype_t dt;
    tutti_scalar_residence_t residence;
    uint64_t value;    /* TUTTI_SCALAR_HOST_IMMEDIATE: the scalar's bytes */
    const void *where; /* TUTTI_SCALAR_DEVICE: read by each call */
};

struct tutti_premul_ops {
    struct premul_op *e;
    int n, cap;
};

tutti_status_t tutti_op_create_premul_sum(const void *scalar, tutti_datatype_t dt,
                                          tutti_scalar_residence_t residence, tutti_comm_t *comm,
                                          tutti_op_t *op_p)
{
    const char *fn = "tutti_op_create_premul_sum";
    if (comm == NULL || scalar == NULL || op_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                                comm == NULL     ? "comm"
                                : scalar == NULL ? "scalar"
                                                 : "op_p");
    }
    if ((unsigned)dt >= TUTTI_NUM_DATATYPES || dt == TUTTI_BOOL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: datatype %d is not a numeric tutti_datatype_t", fn, (int)dt);
    }
    if (residence != TUTTI_SCALAR_DEVICE && residence != TUTTI_SCALAR_HOST_IMMEDIATE) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: residence %d is neither TUTTI_SCALAR_DEVICE nor "
                                "TUTTI_SCALAR_HOST_IMMEDIATE",
                                fn, (int)residence);
    }
    struct tutti_premul_ops *t = comm->premul;
    if (t == NULL) {
        t = calloc(1, sizeof(*t));
        if (t == NULL) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY, "%s: no memory",
                                    fn);
        }
        comm->premul = t;
    }
    int slot = 0;
    while (slot < t->n && t->e[slot].live) {
        slot++;
    }
    if (slot == t->cap) {
        int cap = t->cap == 0 ? 4 : t->cap * 2;
        struct premul_op *e = realloc(t->e, (size_t)cap * sizeof(*e));
        if (e == NULL) {
            return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY, "%s: no memory",
                                    fn);
        }
        t->e = e;
        t->cap = cap;
    }
    struct premul_op *p = &t->e[slot];
    memset(p, 0, sizeof(*p));
    p->live = 1;
    p->dt = dt;
    p->residence = residence;
    if (residence == TUTTI_SCALAR_HOST_IMMEDIATE) {
        memcpy(&p->value, scalar, tutti_datatype_size(dt));
    } else {
        p->where = scalar;
    }
    t->n = slot == t->n ? t->n + 1 : t->n;
    *op_p = (tutti_op_t)(TUTTI_OP_DYNAMIC_FIRST + slot);
    return TUTTI_OK;
}

/* The live entry of handle op on comm, or NULL. */
static struct premul_op *entry(struct tutti_comm *comm, int op)
{
    struct tutti_premul_ops *t = comm->premul;
    long slot = (long)op - TUTTI_OP_DYNAMIC_FIRST;
    if (t == NULL || slot < 0 || slot >= t->n || !t->e[slot].live) {
        return NULL;
    }
    return &t->e[slot];
}

tutti_status_t tutti_op_destroy(tutti_op_t op, tutti_comm_t *comm)
{
    if (comm == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "tutti_op_destroy: comm is NULL");
    }
    struct premul_op *p = entry(comm, (int)op);
    if (p == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "tutti_op_destroy: op %d is not an op made on this communicator "
                                "(destroyed already?)",
                                (int)op);
    }
    p->live = 0;
    return TUTTI_OK;
}

tutti_status_t tutti__premul_resolve(struct tutti_comm *comm, struct tutti_op_desc *op)
{
    if ((int)op->op < TUTTI_OP_DYNAMIC_FIRST || !tutti__coll_reduces(op->coll)) {
        return TUTTI_OK;
    }
    const char *name = tutti__coll_name(op->coll);
    struct premul_op *p = entry(comm, (int)op->op);
    if (p == NULL) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: op %d is not a tutti_op_t nor an op made on this "
                                "communicator (destroyed already?)",
                                name, (int)op->op);
    }
    if (p->dt != op->dt) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "%s: the pre-multiplied sum %d was made for %s, the call's "
                                "datatype is %s",
                                name, (int)op->op, tutti_datatype_name(p->dt),
                                tutti_datatype_name(op->dt));
    }
    op->op = (tutti_op_t)TUTTI_OP_PREMUL;
    op->scalar = p->value;
    op->scalar_ptr = p->where;
    return TUTTI_OK;
}

void tutti__premul_free(struct tutti_comm *comm)
{
    if (comm->premul != NULL) {
        free(comm->premul->e);
        free(comm->premul);
        comm->premul = NULL;
    }
}
