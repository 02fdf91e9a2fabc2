/*
 * fuzz_fp.c - the operation fingerprints peers send with every slot of data (src/exec/fp.c): in the
 * shm slot header, TCP's frame header and the verbs trailer. The first byte gives the
 * communicator's size (0: unknown, else 1..128); the rest is read as fingerprints, 32 bytes
 * each. Invariants: an accepted fingerprint has every field in range for that size and encodes
 * back to the same 32 bytes, and its descriptions (human and compact, also into a buffer too
 * small) are terminated; a refused one comes with a terminated reason.
 */
#include "fuzz.h"
#include "exec/fp.h"
#include "base/coll_id.h"
#include "tutti/coll.h"

static void check_desc(const struct tutti_fp_desc *d, int nranks)
{
    FUZZ_CHECK(d->coll >= 0 && d->coll < TUTTI_COLL_COUNT && d->coll != TUTTI_COLL_RECV,
               "collective %d", d->coll);
    FUZZ_CHECK(d->dt >= 0 && d->dt < TUTTI_NUM_DATATYPES, "datatype %d", d->dt);
    FUZZ_CHECK(d->op >= -1 && d->op <= TUTTI_OP_PREMUL, "op %d", d->op);
    int64_t lim = nranks > 0 ? nranks : (int64_t)INT32_MAX + 1; /* any rank >= 0 */
#define RANK_OK(x) ((x) >= 0 && (x) < lim)
    if (d->coll == TUTTI_COLL_SEND) {
        FUZZ_CHECK(RANK_OK(d->src) && RANK_OK(d->dst) && d->root == -1 && d->block == -1,
                   "ranks %d %d %d %d", d->root, d->src, d->dst, d->block);
    } else if (d->coll == TUTTI_COLL_ALLTOALLV) { /* a block's sender and receiver, or none */
        int pair = d->src == -1 ? d->dst == -1 : RANK_OK(d->src) && RANK_OK(d->dst);
        FUZZ_CHECK(pair && d->root == -1 && d->block == -1, "ranks %d %d %d %d", d->root, d->src,
                   d->dst, d->block);
    } else {
        FUZZ_CHECK(d->src == -1 && d->dst == -1 && d->root >= -1 && d->root < lim &&
                       d->block >= -1 && d->block < lim,
                   "ranks %d %d %d %d", d->root, d->src, d->dst, d->block);
    }
#undef RANK_OK
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    int nranks = data[0] == 0 ? 0 : 1 + data[0] % 128;
    for (const uint8_t *p = data + 1; (size_t)(data + size - p) >= sizeof(struct tutti_fp);
         p += sizeof(struct tutti_fp)) {
        struct tutti_fp fp, back;
        struct tutti_fp_desc d;
        char why[160], s[96], tiny[7];
        memcpy(&fp, p, sizeof(fp));
        memset(why, 0x5a, sizeof(why));
        if (tutti__fp_decode(&fp, nranks, &d, why, sizeof(why)) != 0) {
            FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0',
                       "a refusal without a terminated reason");
            continue;
        }
        check_desc(&d, nranks);
        tutti__fp_encode(&d, &back);
        FUZZ_CHECK(memcmp(&back, &fp, sizeof(fp)) == 0, "fingerprint does not round-trip");
        FUZZ_CHECK(tutti__fp_eq(&back, &fp), "equal bytes compare unequal");
        for (int compact = 0; compact < 2; compact++) {
            memset(s, 0x5a, sizeof(s));
            tutti__fp_str(&d, compact, s, sizeof(s));
            FUZZ_CHECK(memchr(s, '\0', sizeof(s)) != NULL && s[0] != '\0', "description");
            memset(tiny, 0x5a, sizeof(tiny));
            tutti__fp_str(&d, compact, tiny, sizeof(tiny));
            FUZZ_CHECK(memchr(tiny, '\0', sizeof(tiny)) != NULL, "truncated description");
        }
    }
    return 0;
}
