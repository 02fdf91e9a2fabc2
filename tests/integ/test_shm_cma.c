/*
 * test_shm_cma.c - shared-memory frames sent by reference (transports/shm/shm_cma.c: the
 * receiver reads the sender's memory with process_vm_readv), checked element by element like
 * test_collectives.c (colls.c: in place and out of place, guard zones, untouched inputs).
 *
 * TUTTI_SHM_CMA_MIN=1k and TUTTI_SHM_CMA_MAX=1t send every frame of 1 KiB or more by reference
 * whatever the call's size; 4 KiB slots and 2 channels make the counts cross chunk, channel and
 * FIFO-wrap boundaries, so frames land in the user's buffer (placed) or in slots (frames beyond
 * the placement window, lanes that receive from several peers) and are peeked again after a
 * full send FIFO (TUTTI_SHM_CMA=1: whatever the kernel's copy costs here). Then the defaults
 * (128 KiB slots, 8 KiB frames and up where the kernel's copy pays), and a cap below every
 * call (TUTTI_SHM_CMA_MAX=1k: everything through the FIFO). Reductions never send by reference.
 * A point-to-point call that only sends stays eager (both_ranks_may_send_before_they_receive).
 * A receiver that refuses references is tests/unit/test_shm.c's (the environment is read once,
 * before the ranks fork, so it cannot differ between ranks here).
 */
#include "colls.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>

static const size_t counts[] = {1, 300, 4099, 70001};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

enum setting { EVERY_FRAME, DEFAULTS, CAPPED, NSETTINGS };
static const char *const setting_name[] = {"every frame by reference", "the defaults",
                                           "every call over TUTTI_SHM_CMA_MAX"};

struct config {
    int nranks;
    enum setting setting;
};

#define NCONFIGS (3 * NSETTINGS)
static struct config configs[NCONFIGS];

static int cma_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int bad = 0;
    size_t ncalls = 0;
    for (int k = 0; k < COLL_BARRIER; k++) {
        enum coll_kind coll = (enum coll_kind)k;
        for (size_t ci = 0; ci < NCOUNTS; ci++) {
            for (int ip = 0; ip < (coll_has_inplace(coll) ? 2 : 1); ip++) {
                struct coll_case c = {.coll = coll,
                                      .dt = ncalls % 2 ? TUTTI_FLOAT64 : TUTTI_INT32,
                                      .op = TUTTI_SUM,
                                      .inplace = ip,
                                      .count = counts[ci]};
                int rc = coll_check_nth(comm, ctx->nranks, c, &ncalls, 0xc3aull);
                if (rc < 0) {
                    return 1;
                }
                bad |= rc;
            }
        }
    }
    coll_free_buffers();
    ICHECK_OK(tutti_comm_destroy(comm));
    return bad;
}

ParameterizedTestParameters(shm_cma, matrix)
{
    size_t i = 0;
    for (int n = 2; n <= 4; n++) {
        for (int s = 0; s < NSETTINGS; s++) {
            configs[i++] = (struct config){n, (enum setting)s};
        }
    }
    return cr_make_param_array(struct config, configs, NCONFIGS);
}

ParameterizedTest(struct config *cfg, shm_cma, matrix, .timeout = 120)
{
    cr_log_info("%d ranks over shm, %s", cfg->nranks, setting_name[cfg->setting]);
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "60s");
    integ_setenv("TUTTI_NCHANNELS", "2");
    if (cfg->setting != DEFAULTS) {
        integ_setenv("TUTTI_SHM_SLOT_SIZE", "4k");
        integ_setenv("TUTTI_SHM_CMA", "1"); /* whatever the copies cost on this machine */
        integ_setenv("TUTTI_SHM_CMA_MIN", "1k");
        integ_setenv("TUTTI_SHM_CMA_MAX", cfg->setting == CAPPED ? "1k" : "1t");
    }
    struct integ_opts o = {.nranks = cfg->nranks, .deadline_s = 100, .make_id = 1, .arg = cfg};
    integ_run(&o, cma_rank);
}

/*
 * Both ranks send first, then receive: MPI calls it unsafe, but the FIFO buffers it up to its
 * capacity, and a send alone stays eager (a send by reference would wait for the peer's
 * receive, which comes only after the peer's own send). 8 KiB to 512 KiB, all by reference
 * were references allowed there.
 */
static int sends_first_rank(const struct integ_ctx *ctx)
{
    tutti_comm_t *comm = NULL;
    if (integ_comm_init(ctx, NULL, &comm) != 0) {
        return 1;
    }
    int peer = 1 - ctx->rank;
    for (size_t n = 2048; n <= 131072; n *= 4) {
        int32_t *out = malloc(n * sizeof(int32_t)), *in = malloc(n * sizeof(int32_t));
        ICHECK(out != NULL && in != NULL, "no memory");
        for (size_t k = 0; k < n; k++) {
            out[k] = (int32_t)(k * 7 + (size_t)ctx->rank);
        }
        ICHECK_OK(tutti_send(out, n, TUTTI_INT32, peer, comm, NULL));
        ICHECK_OK(tutti_recv(in, n, TUTTI_INT32, peer, comm, NULL));
        for (size_t k = 0; k < n; k++) {
            ICHECK(in[k] == (int32_t)(k * 7 + (size_t)peer), "element %zu of %zu", k, n);
        }
        free(out);
        free(in);
    }
    ICHECK_OK(tutti_comm_destroy(comm));
    return 0;
}

Test(shm_cma, both_ranks_may_send_before_they_receive, .timeout = 60)
{
    integ_setenv("TUTTI_TRANSPORT", "shm");
    integ_setenv("TUTTI_TIMEOUT", "20s");
    integ_setenv("TUTTI_SHM_CMA", "1");
    integ_setenv("TUTTI_SHM_CMA_MIN", "1k");
    struct integ_opts o = {.nranks = 2, .deadline_s = 40, .make_id = 1};
    integ_run(&o, sends_first_rank);
}
