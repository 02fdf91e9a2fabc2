/*
 * pmix.c - the launcher's private channel (PMIx), for what rank 0 of an env launch must hand to
 * the others without a public place: the job's secret, and on one host its root address (issue
 * 36: without TUTTI_SECRET a multi-host job ran on a key anyone could compute).
 *
 * Open MPI's mpirun (4.x: its PMIx server) and Slurm's srun --mpi=pmix start every rank as a
 * PMIx client (PMIX_NAMESPACE in the environment). The server keeps a job's data to the job's
 * processes: a client connects over a Unix socket the server checks the uid of. Rank 0 puts a
 * value under its own name (PMIx_Put, PMIX_GLOBAL), every rank takes part in one fence that
 * collects the data (PMIx_Fence, PMIX_COLLECT_DATA, PMIX_TIMEOUT), and the others get it
 * (PMIx_Get of rank 0's key).
 *
 * libpmix is opened with dlopen, so that libtutti needs it only where a launcher provides it;
 * its types come from the header at build time (TUTTI_HAVE_PMIX, libpmix-dev). Without either,
 * tutti__pmix_open says why and the launch goes on as before.
 */
#include "comm/pmix.h"
#include "base/check.h"
#include "base/env.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TUTTI_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>

struct tutti_pmix {
    void *lib;
    pmix_proc_t me;
    pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
    pmix_status_t (*finalize)(const pmix_info_t *, size_t);
    pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
    pmix_status_t (*commit)(void);
    pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
    pmix_status_t (*get)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t,
                         pmix_value_t **);
    const char *(*error_string)(pmix_status_t);
};

static int resolve(struct tutti_pmix *p)
{
#define SYM(field, name) (*(void **)&p->field = dlsym(p->lib, name)) != NULL
    return SYM(init, "PMIx_Init") && SYM(finalize, "PMIx_Finalize") && SYM(put, "PMIx_Put") &&
           SYM(commit, "PMIx_Commit") && SYM(fence, "PMIx_Fence") && SYM(get, "PMIx_Get") &&
           SYM(error_string, "PMIx_Error_string");
#undef SYM
}

/* A job-wide value of rank 0 (rank: PMIx's) as a proc name. */
static pmix_proc_t rank0_of(const struct tutti_pmix *p)
{
    pmix_proc_t r;
    memset(&r, 0, sizeof(r));
    memcpy(r.nspace, p->me.nspace, sizeof(r.nspace));
    r.rank = 0;
    return r;
}

/* How many processes the job has, as PMIx says; 0 if it does not. */
static uint32_t job_size(struct tutti_pmix *p)
{
    pmix_proc_t wild = p->me;
    wild.rank = PMIX_RANK_WILDCARD;
    pmix_value_t *v = NULL;
    uint32_t n = 0;
    if (p->get(&wild, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS && v != NULL) {
        n = v->type == PMIX_UINT32 ? v->data.uint32 : 0;
    }
    free(v);
    return n;
}

int tutti__pmix_open(int rank, int nranks, struct tutti_pmix **p_p, char *why, size_t len)
{
    *p_p = NULL;
    if (tutti__env_foreign("PMIX_NAMESPACE") == NULL) {
        snprintf(why, len, "not started by a PMIx launcher (no PMIX_NAMESPACE)");
        return 0;
    }
    struct tutti_pmix *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        snprintf(why, len, "no memory");
        return 0;
    }
    p->lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
    if (p->lib == NULL || !resolve(p)) {
        snprintf(why, len, "libpmix.so.2 cannot be used: %s",
                 p->lib ? "a symbol is missing" : dlerror());
        if (p->lib != NULL) {
            dlclose(p->lib);
        }
        free(p);
        return 0;
    }
    pmix_status_t rc = p->init(&p->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        snprintf(why, len, "PMIx_Init: %s", p->error_string(rc));
        free(p); /* the library stays loaded: a failed init may leave threads of it behind */
        return 0;
    }
    uint32_t size = job_size(p);
    if ((int64_t)p->me.rank != rank || (int64_t)size != nranks) {
        snprintf(why, len,
                 "this rank is %d of %d, but PMIx rank %u of %u in %s: the communicator is not "
                 "the PMIx job",
                 rank, nranks, p->me.rank, size, p->me.nspace);
        tutti__pmix_close(p);
        return 0;
    }
    *p_p = p;
    return 1;
}

const char *tutti__pmix_namespace(const struct tutti_pmix *p)
{
    return p->me.nspace;
}

tutti_status_t tutti__pmix_bcast(struct tutti_pmix *p, const char *key, void *buf, size_t len,
                                 int64_t timeout_ns)
{
    pmix_status_t rc;
    if (p->me.rank == 0) {
        pmix_value_t v;
        memset(&v, 0, sizeof(v));
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = buf;
        v.data.bo.size = len;
        if ((rc = p->put(PMIX_GLOBAL, key, &v)) != PMIX_SUCCESS ||
            (rc = p->commit()) != PMIX_SUCCESS) {
            return tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "PMIx_Put of %s in %s: %s", key,
                                    p->me.nspace, p->error_string(rc));
        }
    }
    pmix_info_t info[2];
    memset(info, 0, sizeof(info));
    snprintf(info[0].key, sizeof(info[0].key), "%s", PMIX_COLLECT_DATA);
    info[0].value.type = PMIX_BOOL;
    info[0].value.data.flag = true;
    snprintf(info[1].key, sizeof(info[1].key), "%s", PMIX_TIMEOUT);
    info[1].value.type = PMIX_INT;
    info[1].value.data.integer = (int)((timeout_ns + 999999999) / 1000000000);
    pmix_proc_t all = p->me;
    all.rank = PMIX_RANK_WILDCARD;
    if ((rc = p->fence(&all, 1, info, 2)) != PMIX_SUCCESS) {
        return tutti__set_error(NULL, rc == PMIX_ERR_TIMEOUT ? TUTTI_ERR_TIMEOUT : TUTTI_ERR_SYSTEM,
                                "PMIx_Fence of job %s (rank 0 hands out the job's secret): %s "
                                "(every rank of the job must call tutti_comm_init_env)",
                                p->me.nspace, p->error_string(rc));
    }
    if (p->me.rank == 0) {
        return TUTTI_OK;
    }
    pmix_proc_t r0 = rank0_of(p);
    pmix_value_t *v = NULL;
    rc = p->get(&r0, key, NULL, 0, &v);
    tutti_status_t st = TUTTI_OK;
    if (rc != PMIX_SUCCESS || v == NULL) {
        st = tutti__set_error(NULL, TUTTI_ERR_SYSTEM, "PMIx_Get of rank 0's %s in %s: %s", key,
                              p->me.nspace, p->error_string(rc));
    } else if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size != len) {
        st = tutti__set_error(NULL, TUTTI_ERR_SYSTEM,
                              "PMIx_Get of rank 0's %s in %s: %zu bytes of type %u, not %zu", key,
                              p->me.nspace, (size_t)v->data.bo.size, (unsigned)v->type, len);
    } else {
        memcpy(buf, v->data.bo.bytes, len);
    }
    if (v != NULL) {
        if (v->type == PMIX_BYTE_OBJECT && v->data.bo.bytes != NULL) {
            explicit_bzero(v->data.bo.bytes, v->data.bo.size);
            free(v->data.bo.bytes);
        }
        free(v);
    }
    return st;
}

void tutti__pmix_close(struct tutti_pmix *p)
{
    if (p != NULL) {
        p->finalize(NULL, 0);
        free(p); /* libpmix stays loaded: MPI in this process may use it still */
    }
}

#else /* !TUTTI_HAVE_PMIX */

int tutti__pmix_open(int rank, int nranks, struct tutti_pmix **p_p, char *why, size_t len)
{
    (void)rank;
    (void)nranks;
    *p_p = NULL;
    snprintf(why, len, "%s",
             tutti__env_foreign("PMIX_NAMESPACE") == NULL
                 ? "not started by a PMIx launcher (no PMIX_NAMESPACE)"
                 : "this libtutti was built without PMIx's header (libpmix-dev)");
    return 0;
}

const char *tutti__pmix_namespace(const struct tutti_pmix *p)
{
    (void)p;
    return "";
}

tutti_status_t tutti__pmix_bcast(struct tutti_pmix *p, const char *key, void *buf, size_t len,
                                 int64_t timeout_ns)
{
    (void)p;
    (void)key;
    (void)buf;
    (void)len;
    (void)timeout_ns;
    return tutti__set_error(NULL, TUTTI_ERR_INTERNAL, "PMIx is not built in");
}

void tutti__pmix_close(struct tutti_pmix *p)
{
    (void)p;
}

#endif
