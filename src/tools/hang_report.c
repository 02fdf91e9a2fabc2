/*
 * hang_report.c - `tutti-info --hang LOGFILE...`: reads the `tutti: hang ...` records every
 * rank writes to its log when an operation fails (src/exec/engine.c), and says which ranks are
 * behind: those with no record (they never started the operation the others failed in, or
 * their log is missing) or whose record is for an earlier operation. When every rank is in
 * the same operation it follows who waits on whom from the ranks that timed out and names
 * where that chain ends. Records of several communicators are reported one after the other.
 * A `tutti: mismatch ...` record (src/exec/fp.c: a rank received data of another call than its own)
 * is printed first: calls that differ between ranks, not a hang, ended those operations.
 */
#include "hang_report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS      (1 << 24) /* a rank number above this is not a record */
#define MAX_COMMS      16
#define MAX_MISMATCHES 4 /* mismatch records printed per communicator */

struct hang_rec {
    int present;
    char status[32];
    char coll[32];
    unsigned long long seq, posted, done;
    int waiting_on;
    char step[32];
};

struct mismatch_rec {
    int rank, peer, leftover;
    char mine[96], theirs[96];
};

struct hang_comm {
    char id[24];
    int nranks;
    struct hang_rec *recs; /* [cap], by rank */
    int cap;
    struct mismatch_rec mis[MAX_MISMATCHES]; /* the first ranks' mismatch records */
    int nmis;
};

/* The value of " key=" in line, copied into out (up to a space); 0 when absent. */
static int field(const char *line, const char *key, char *out, size_t len)
{
    char pat[40];
    snprintf(pat, sizeof(pat), " %s=", key);
    const char *p = strstr(line, pat);
    if (p == NULL) {
        return 0;
    }
    p += strlen(pat);
    size_t n = strcspn(p, " \n\r");
    if (n >= len) {
        n = len - 1;
    }
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

static struct hang_comm *comm_of(struct hang_comm *comms, int *ncomms, const char *id)
{
    for (int i = 0; i < *ncomms; i++) {
        if (strcmp(comms[i].id, id) == 0) {
            return &comms[i];
        }
    }
    if (*ncomms == MAX_COMMS) {
        return NULL;
    }
    struct hang_comm *c = &comms[(*ncomms)++];
    snprintf(c->id, sizeof(c->id), "%s", id);
    return c;
}

/* Room for ranks 0..n-1 in c->recs (new entries zeroed); 0 on success. */
static int reserve(struct hang_comm *c, int n)
{
    if (n <= c->cap) {
        return 0;
    }
    int cap = n > 2 * c->cap ? n : 2 * c->cap;
    struct hang_rec *r = realloc(c->recs, (size_t)cap * sizeof(*r));
    if (r == NULL) {
        return -1;
    }
    memset(r + c->cap, 0, (size_t)(cap - c->cap) * sizeof(*r));
    c->recs = r;
    c->cap = cap;
    return 0;
}

/* A `tutti: mismatch` record: kept (one per rank, the first MAX_MISMATCHES ranks). */
static void parse_mismatch(const char *line, struct hang_comm *comms, int *ncomms)
{
    char v[24], id[24];
    struct mismatch_rec m;
    if (!field(line, "comm", id, sizeof(id)) || !field(line, "rank", v, sizeof(v))) {
        return;
    }
    m.rank = atoi(v);
    m.peer = field(line, "peer", v, sizeof(v)) ? atoi(v) : -1;
    m.leftover = field(line, "leftover", v, sizeof(v)) && atoi(v) != 0;
    if (!field(line, "mine", m.mine, sizeof(m.mine)) ||
        !field(line, "theirs", m.theirs, sizeof(m.theirs))) {
        return;
    }
    struct hang_comm *c = comm_of(comms, ncomms, id);
    for (int i = 0; c != NULL && i < c->nmis; i++) {
        if (c->mis[i].rank == m.rank) {
            return;
        }
    }
    if (c != NULL && c->nmis < MAX_MISMATCHES) {
        c->mis[c->nmis++] = m;
    }
}

/* Parse one record line into its communicator's table (a later record of a rank wins). */
static void parse_line(const char *text, struct hang_comm *comms, int *ncomms)
{
    const char *mis = strstr(text, "tutti: mismatch ");
    if (mis != NULL) {
        parse_mismatch(mis + strlen("tutti: mismatch") - 1, comms, ncomms);
        return;
    }
    const char *line = strstr(text, "tutti: hang ");
    if (line == NULL) {
        return;
    }
    line += strlen("tutti: hang") - 1; /* keep a space before the first key */
    char v[64], id[24];
    if (!field(line, "comm", id, sizeof(id)) || !field(line, "rank", v, sizeof(v))) {
        return;
    }
    int rank = atoi(v);
    int nranks = field(line, "nranks", v, sizeof(v)) ? atoi(v) : 0;
    nranks = nranks > rank && nranks <= MAX_RANKS ? nranks : rank + 1;
    if (rank < 0 || rank >= MAX_RANKS) {
        return;
    }
    struct hang_comm *c = comm_of(comms, ncomms, id);
    if (c == NULL || reserve(c, nranks) != 0) {
        return;
    }
    struct hang_rec *r = &c->recs[rank];
    r->present = 1;
    c->nranks = nranks > c->nranks ? nranks : c->nranks;
    field(line, "status", r->status, sizeof(r->status));
    field(line, "coll", r->coll, sizeof(r->coll));
    field(line, "step", r->step, sizeof(r->step));
    r->seq = field(line, "seq", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
    r->posted = field(line, "seq_posted", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
    r->done = field(line, "seq_done", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
    r->waiting_on = field(line, "waiting_on", v, sizeof(v)) ? atoi(v) : -1;
}

/* Follow waiting_on from rank `from` until a rank without a record, a repeat, or -1. */
static void print_chain(FILE *out, const struct hang_comm *c, int from)
{
    char *seen = calloc((size_t)c->nranks, 1);
    int r = from;
    fprintf(out, "wait-for chain: %d", r);
    while (seen != NULL && r >= 0 && r < c->nranks && c->recs[r].present && !seen[r]) {
        seen[r] = 1;
        r = c->recs[r].waiting_on;
        if (r >= 0) {
            fprintf(out, " -> %d", r);
        }
    }
    if (r >= 0 && r < c->nranks && seen != NULL && seen[r]) {
        fprintf(out, " (a cycle: these ranks wait on each other)\n");
    } else {
        fprintf(out, "\n");
    }
    free(seen);
}

/* Report one communicator; returns the number of ranks behind. */
static int report_comm(FILE *out, const struct hang_comm *c)
{
    unsigned long long top = 0;
    int top_rank = -1, timed_out = -1;
    for (int r = 0; r < c->nranks; r++) {
        const struct hang_rec *x = &c->recs[r];
        if (x->present && (top_rank < 0 || x->seq > top)) {
            top = x->seq;
            top_rank = r;
        }
        if (x->present && timed_out < 0 && strstr(x->status, "TIMEOUT") != NULL) {
            timed_out = r;
        }
    }
    for (int i = 0; i < c->nmis; i++) {
        const struct mismatch_rec *m = &c->mis[i];
        fprintf(out,
                "communicator %s: mismatched calls: rank %d's %s received %sdata of rank "
                "%d's %s\n",
                c->id, m->rank, m->mine, m->leftover ? "leftover " : "", m->peer, m->theirs);
    }
    if (top_rank < 0) {
        return 0; /* no record could be stored */
    }
    fprintf(out, "communicator %s, %d ranks; the latest failed operation: %s #%llu\n", c->id,
            c->nranks, c->recs[top_rank].coll, top);
    int behind = 0;
    for (int r = 0; r < c->nranks; r++) {
        const struct hang_rec *x = &c->recs[r];
        if (!x->present) {
            fprintf(out, "  rank %d: no record (never started %s #%llu, or its log is missing)\n",
                    r, c->recs[top_rank].coll, top);
        } else {
            fprintf(out,
                    "  rank %d: %s #%llu %s, posted %llu, completed %llu, waiting on %d at "
                    "step %s\n",
                    r, x->coll, x->seq, x->status, x->posted, x->done, x->waiting_on, x->step);
        }
    }
    fprintf(out, "behind:");
    for (int r = 0; r < c->nranks; r++) {
        if (!c->recs[r].present || c->recs[r].seq < top) {
            fprintf(out, " %d", r);
            behind++;
        }
    }
    fprintf(out, behind == 0 ? " none (every rank is in the same operation)\n" : "\n");
    if (timed_out >= 0) {
        print_chain(out, c, timed_out);
    }
    return behind;
}

int tutti__hang_report(FILE *out, int nfiles, char **files)
{
    struct hang_comm comms[MAX_COMMS];
    int ncomms = 0, readable = 0;
    memset(comms, 0, sizeof(comms));
    for (int i = 0; i < nfiles; i++) {
        FILE *f = fopen(files[i], "r");
        if (f == NULL) {
            fprintf(stderr, "tutti-info: cannot read %s\n", files[i]);
            continue;
        }
        readable++;
        char line[2048];
        while (fgets(line, sizeof(line), f) != NULL) {
            parse_line(line, comms, &ncomms);
        }
        fclose(f);
    }
    if (ncomms == 0) {
        fprintf(out, "no 'tutti: hang' records in %d readable file(s)\n", readable);
    }
    for (int i = 0; i < ncomms; i++) {
        report_comm(out, &comms[i]);
        free(comms[i].recs);
    }
    return ncomms == 0 ? 1 : 0;
}
