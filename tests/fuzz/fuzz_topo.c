/*
 * fuzz_topo.c - the topology parsers: an hwloc XML topology (TUTTI_TOPO_FILE; hwloc parses it,
 * topology/detect.c walks what hwloc built) and a rank's view as it arrives from a peer
 * (tutti__topo_rank_validate). Invariants: a rejected file or record leaves a reason; a loaded
 * machine stays within its bounds (device counts, NIC indices, NVLink masks, terminated
 * names); every view made from it passes the same check a peer's view must pass; the ring of
 * its ranks over two hosts is a permutation.
 */
#include "fuzz.h"
#include "topology/topo.h"

static int terminated(const char *s, size_t len)
{
    return memchr(s, '\0', len) != NULL;
}

static void check_dev(const struct tutti_topo *t, const struct tutti_topo_dev *d, int gpu)
{
    FUZZ_CHECK(terminated(d->name, sizeof(d->name)) && terminated(d->alias, sizeof(d->alias)) &&
                   terminated(d->busid, sizeof(d->busid)),
               "unterminated device name");
    if (gpu) {
        FUZZ_CHECK(d->nic >= -1 && d->nic < t->nnics, "gpu's NIC %d of %d", d->nic, t->nnics);
        FUZZ_CHECK((d->nvlink >> t->ngpus) == 0, "NVLink mask 0x%x, %d GPUs", d->nvlink, t->ngpus);
    }
}

static void check_machine(const struct tutti_topo *t)
{
    FUZZ_CHECK(t->ngpus >= 0 && t->ngpus <= TUTTI_TOPO_MAX_GPUS && t->ngpus <= t->gpus_seen,
               "%d GPUs kept of %d", t->ngpus, t->gpus_seen);
    FUZZ_CHECK(t->nnics >= 0 && t->nnics <= TUTTI_TOPO_MAX_NICS && t->nnics <= t->nics_seen,
               "%d NICs kept of %d", t->nnics, t->nics_seen);
    for (int g = 0; g < t->ngpus; g++) {
        check_dev(t, &t->gpu[g], 1);
    }
    for (int n = 0; n < t->nnics; n++) {
        check_dev(t, &t->nic[n], 0);
    }
    enum { N = 6 };
    struct tutti_topo_rank v[N];
    int host[N] = {0, 0, 0, 3, 3, 3}, order[N], seen[N] = {0};
    for (int r = 0; r < N; r++) {
        char why[64];
        tutti__topo_rank_view(t, r % 3, &v[r]);
        FUZZ_CHECK(tutti__topo_rank_validate(&v[r], why, sizeof(why)) == TUTTI_OK,
                   "our own view fails the peers' check: %s", why);
    }
    tutti__topo_ring(v, host, N, order);
    for (int i = 0; i < N; i++) {
        FUZZ_CHECK(order[i] >= 0 && order[i] < N && !seen[order[i]]++, "ring is no permutation");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tutti_topo_rank rec;
    char why[64] = "";
    if (size >= sizeof(rec)) { /* the first bytes as a peer's record */
        memcpy(&rec, data, sizeof(rec));
        if (tutti__topo_rank_validate(&rec, why, sizeof(why)) != TUTTI_OK) {
            FUZZ_CHECK(why[0] != '\0', "a rejected record without a reason");
        } else {
            int host[2] = {0, 0}, order[2];
            struct tutti_topo_rank two[2] = {rec, rec};
            tutti__topo_ring(two, host, 2, order);
            FUZZ_CHECK(order[0] + order[1] == 1, "ring of two accepted records");
        }
    }
    char *xml = fuzz_cstr(data, size);
    struct tutti_topo *t = malloc(sizeof(*t));
    FUZZ_CHECK(t != NULL, "no memory");
    if (tutti__topo_load_buffer(xml, size + 1, t) != TUTTI_OK) {
        FUZZ_CHECK(t->error[0] != '\0' && !t->ok, "a rejected topology without a reason");
    } else {
        check_machine(t);
    }
    free(t);
    free(xml);
    return 0;
}
