/*
 * split.c - tutti_comm_split. Every rank of the parent all-gathers (color, key); each color's
 * members, ordered by (key, parent rank), build a child communicator whose bootstrap runs over
 * the parent's own collectives (an all-gather of peer records, an all-reduce for the syncs), so
 * no root and no extra port are needed. The child's id and secret are derived from the
 * parent's secret with HMAC, so they are fresh per split yet known only to the members.
 * Ranks passing TUTTI_SPLIT_NOCOLOR take part in the same collectives and get NULL.
 */
#include "comm/bootstrap.h"
#include "base/check.h"
#include "comm/comm.h"
#include "base/global.h"
#include "comm/init.h"
#include "run/service.h"

#include <stdlib.h>
#include <string.h>

struct split_boot {
    struct tutti_boot base;
    struct tutti_comm *parent;
    int *members; /* parent ranks of the child, in child rank order */
    int nmembers;
};

static tutti_status_t parent_allgather(struct tutti_boot *b, const void *mine, void *all,
                                       size_t size)
{
    struct split_boot *sb = (struct split_boot *)b;
    struct tutti_comm *p = sb->parent;
    char *every = malloc(size * (size_t)p->fab.nranks);
    if (every == NULL) {
        return tutti__set_error(tutti__comm_err(p), TUTTI_ERR_NO_MEMORY,
                                "split: no memory for the all-gather");
    }
    tutti_status_t st = tutti__svc_allgather(&p->run, mine, every, size, TUTTI_UINT8);
    for (int i = 0; st == TUTTI_OK && i < sb->nmembers; i++) {
        memcpy((char *)all + (size_t)i * size, every + (size_t)sb->members[i] * size, size);
    }
    free(every);
    return st;
}

/* Worst status first, then the lowest rank: MIN over (status << 32 | parent rank). */
static tutti_status_t parent_sync(struct tutti_boot *b, tutti_status_t mine,
                                  tutti_status_t *agreed_p, int *culprit_p)
{
    struct split_boot *sb = (struct split_boot *)b;
    int64_t v = (int64_t)(((uint64_t)(int64_t)mine << 32) | (uint32_t)sb->parent->fab.rank);
    int64_t worst = 0;
    TUTTI_CHECK(tutti__svc_allreduce(&sb->parent->run, &v, &worst, 1, TUTTI_INT64, TUTTI_MIN));
    *agreed_p = (tutti_status_t)(int32_t)(worst >> 32);
    *culprit_p = (int)(uint32_t)worst;
    return TUTTI_OK;
}

static void parent_close(struct tutti_boot *b, int ok)
{
    (void)b;
    (void)ok;
}

static const struct tutti_boot_ops split_boot_ops = {
    .allgather = parent_allgather,
    .sync = parent_sync,
    .close = parent_close,
};

struct split_rec {
    int32_t color;
    int32_t key;
};

/* Members of my color in child order: by key, then parent rank. */
static int members_of(const struct split_rec *recs, int n, int color, int *out)
{
    int m = 0;
    for (int r = 0; r < n; r++) {
        if (recs[r].color != color) {
            continue;
        }
        int i = m++;
        while (i > 0 && (recs[out[i - 1]].key > recs[r].key)) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = r;
    }
    return m;
}

/* tutti_comm_split on a communicator it has entered (or NULL: the error says so). */
static tutti_status_t split_entered(tutti_comm_t *comm, int color, int key,
                                    tutti_comm_t **newcomm_p)
{
    if (comm == NULL || newcomm_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "split: %s is NULL",
                                comm == NULL ? "comm" : "newcomm_p");
    }
    if (color < TUTTI_SPLIT_NOCOLOR) {
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_INVALID_ARG,
                                "split: color %d is negative (use >= 0 or TUTTI_SPLIT_NOCOLOR)",
                                color);
    }
    struct split_rec me = {color, key};
    struct split_rec *recs = calloc((size_t)comm->fab.nranks, sizeof(*recs));
    int *members = calloc((size_t)comm->fab.nranks, sizeof(*members));
    if (recs == NULL || members == NULL) {
        free(recs);
        free(members);
        return tutti__set_error(tutti__comm_err(comm), TUTTI_ERR_NO_MEMORY, "split: no memory");
    }
    tutti_status_t st = tutti__svc_allgather(&comm->run, &me, recs, sizeof(me), TUTTI_UINT8);
    struct tutti_comm *child = NULL;
    if (st == TUTTI_OK) {
        struct split_boot sb = {{&split_boot_ops, 0, 0, 1}, comm, members, 0};
        sb.nmembers = members_of(recs, comm->fab.nranks, color, members);
        int child_rank = 0;
        while (members[child_rank] != comm->fab.rank) {
            child_rank++;
        }
        /* Child identity: HMAC of the parent secret over (split number, color). */
        uint32_t nth = comm->nsplits++;
        uint8_t mac[32];
        const void *parts[3] = {"tutti-split", &nth, &color};
        const size_t lens[3] = {11, sizeof(nth), sizeof(color)};
        tutti__hmac(comm->fab.secret, parts, lens, 3, mac);
        uint64_t child_id;
        memcpy(&child_id, mac + TUTTI_SECRET_BYTES, sizeof(child_id));
        st = tutti__comm_create(sb.nmembers, child_rank, child_id, mac, &comm->fab.root_hint, NULL,
                                &sb.base, &child);
        if (st == TUTTI_OK) {
            child->fab.cfg.timeout_ns = comm->fab.cfg.timeout_ns;
        }
    }
    free(recs);
    free(members);
    tutti__tls.rank = comm->fab.rank;
    if (st != TUTTI_OK) {
        return st;
    }
    if (color == TUTTI_SPLIT_NOCOLOR) {
        tutti_comm_destroy(child); /* built only to keep the parent's collectives in step */
        child = NULL;
    }
    *newcomm_p = child;
    return TUTTI_OK;
}

tutti_status_t tutti_comm_split(tutti_comm_t *comm, int color, int key, tutti_comm_t **newcomm_p)
{
    /* A destroyed or aborted handle is refused before anything reads it. */
    if (comm != NULL && tutti__comm_enter(comm, 0) != 0) {
        return tutti__comm_not_live(comm, "tutti_comm_split");
    }
    tutti_status_t st = split_entered(comm, color, key, newcomm_p);
    if (comm != NULL) {
        tutti__comm_leave(comm);
    }
    return st;
}
