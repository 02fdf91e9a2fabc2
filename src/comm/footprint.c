/*
 * footprint.c - a communicator's footprint (footprint.h): the executor counts connections and
 * asks each transport what it holds; the stream path says what it pinned.
 */
#include "comm/footprint.h"
#include "comm/comm.h"
#include "exec/connect.h"
#include "gpu/stream.h"
#include "base/log.h"

#include <stdio.h>
#include <string.h>

void tutti__comm_footprint(const struct tutti_comm *comm, struct tutti_footprint *fp)
{
    memset(fp, 0, sizeof(*fp));
    tutti__fabric_footprint(&comm->fab, fp);
    fp->pinned += tutti__stream_pinned(&comm->gpu);
}

/* "12.0 MiB", "640 B" */
static void bytes_str(size_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
    if (b < 1024) {
        snprintf(buf, len, "%zu B", b);
        return;
    }
    double v = (double)b / 1024;
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, unit[u]);
}

void tutti__footprint_str(const struct tutti_footprint *fp, char *buf, size_t len)
{
    char shared[24], reg[24], pinned[24];
    bytes_str(fp->shared, shared, sizeof(shared));
    bytes_str(fp->registered, reg, sizeof(reg));
    bytes_str(fp->pinned, pinned, sizeof(pinned));
    snprintf(buf, len, "connections shm %d, tcp %d, ib %d; shared %s, registered %s, pinned %s",
             fp->conns[TUTTI_TRANSPORT_SHM], fp->conns[TUTTI_TRANSPORT_TCP],
             fp->conns[TUTTI_TRANSPORT_IB], shared, reg, pinned);
}

void tutti__comm_footprint_log(const struct tutti_comm *comm)
{
    if (!tutti__log_on(TUTTI_LOG_INFO, TUTTI_SUBSYS_INIT)) {
        return;
    }
    struct tutti_footprint fp;
    tutti__comm_footprint(comm, &fp);
    char line[200], budget[24];
    tutti__footprint_str(&fp, line, sizeof(line));
    if (comm->fab.cfg.mem_budget > 0) {
        bytes_str(comm->fab.cfg.mem_budget, budget, sizeof(budget));
    } else {
        snprintf(budget, sizeof(budget), "none");
    }
    tutti_info(TUTTI_SUBSYS_INIT, "rank %d of %d footprint: %s (connection budget %s)",
               comm->fab.rank, comm->fab.nranks, line, budget);
}
