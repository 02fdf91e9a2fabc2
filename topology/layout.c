/*
 * layout.c - struct tutti_layout from host labels and a ring order (see layout.h).
 */
#include "topology/layout.h"

#include <stdlib.h>

void tutti__layout_free(struct tutti_layout *l)
{
    if (l == NULL) {
        return;
    }
    free(l->host);
    free(l->local);
    free(l->by_local);
    free(l->ring);
    free(l->ring_pos);
    free(l);
}

/* Host indices in order of each host's lowest rank, local indices in rank order. */
static int number_hosts(struct tutti_layout *l, const int *label)
{
    int n = l->nranks;
    int *index = malloc((size_t)n * sizeof(int)); /* label -> host index, or -1 */
    int *count = calloc((size_t)n, sizeof(int));  /* host index -> ranks so far */
    if (index == NULL || count == NULL) {
        free(index);
        free(count);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        index[i] = -1;
    }
    for (int r = 0; r < n; r++) {
        int lab = label[r];
        if (index[lab] < 0) {
            index[lab] = l->nhosts++;
        }
        l->host[r] = index[lab];
        l->local[r] = count[index[lab]]++;
    }
    l->ppn = n / l->nhosts;
    for (int h = 0; h < l->nhosts; h++) {
        if (count[h] != l->ppn) {
            l->ppn = 0;
        }
    }
    free(index);
    free(count);
    return 0;
}

struct tutti_layout *tutti__layout_new(int n, const int *label, const int *order)
{
    struct tutti_layout *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        return NULL;
    }
    l->nranks = n;
    l->host = malloc((size_t)n * sizeof(int));
    l->local = malloc((size_t)n * sizeof(int));
    l->by_local = malloc((size_t)n * sizeof(int));
    l->ring = malloc((size_t)n * sizeof(int));
    l->ring_pos = malloc((size_t)n * sizeof(int));
    if (l->host == NULL || l->local == NULL || l->by_local == NULL || l->ring == NULL ||
        l->ring_pos == NULL) {
        goto fail;
    }
    for (int r = 0; r < n; r++) {
        if (label[r] < 0 || label[r] >= n) {
            goto fail;
        }
        l->ring_pos[r] = -1;
    }
    if (number_hosts(l, label) != 0) {
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        int r = order != NULL ? order[i] : i;
        if (r < 0 || r >= n || l->ring_pos[r] >= 0) {
            goto fail; /* not a permutation */
        }
        l->ring[i] = r;
        l->ring_pos[r] = i;
    }
    for (int r = 0; r < n && l->ppn > 0; r++) {
        l->by_local[l->host[r] * l->ppn + l->local[r]] = r;
    }
    return l;
fail:
    tutti__layout_free(l);
    return NULL;
}
