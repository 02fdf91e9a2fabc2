/*
 * fill.c - the clock that decides how a connection's send slots are written (fill.h).
 *
 * On the AMD EPYC VM of issue 38 the two vCPUs share a cache in some seconds and not in
 * others (a cache line's round trip between them: 100-120 ns, then about 500 ns). When they do
 * not, a cached write of a slot that the receiver read runs at 2-4.5 GB/s against 25-30: every
 * line must first be taken back from the other core. Streamed (non-temporal) stores need no such
 * read and ran at 23-26 GB/s in both kinds of seconds, but then the receiver reads the slot from
 * memory, not from a cache (17-24 GB/s against 40-44 when the cache is shared). So a timed clock
 * writes through the caches, and streams while cached writes run at under a quarter of the
 * streamed ones' rate (back above 40%: cached again). Where the cache is shared, cached writes
 * of 32 KiB frames that the peer had just read ran at 7-10 GB/s against 25-34 streamed, a
 * third of it, and streaming them made the receiver slower than that saved: a third was too
 * close. Where it is not, cached writes ran at a fifth to a tenth of streamed ones.
 *
 * A cached write into a slot last streamed finds its lines in memory, not in the other core's
 * cache, and runs at about 9 GB/s in either kind of second: such writes (the `warm` frames after
 * a streamed one) are not timed. While cached, one streamed frame is timed every `gap` frames;
 * while streaming, a burst of warm + BURST_TIMED cached frames, of which the last BURST_TIMED
 * are timed. gap is GAP_MIN after the choice changed, and doubles, up to GAP_MAX, each time a
 * probe leaves it as it was (a cached burst in the slow seconds costs several frames).
 */
#include "exec/fill.h"

#define GAP_MIN     16
#define GAP_MAX     1024
#define BURST_TIMED 2

int tutti__fill_pick(struct tutti_fill_clock *c)
{
    if (c->mode != TUTTI_FILL_TIMED) {
        return (int)c->stream;
    }
    c->frames++;
    if (c->burst > 0) {
        return 0;
    }
    if (c->rate[0] == 0) {
        return 0; /* cached first, until warm writes are timed */
    }
    if (c->rate[1] == 0 || (c->frames >= c->next_probe && !c->stream)) {
        return 1;
    }
    if (c->frames >= c->next_probe) { /* streaming: a cached burst */
        c->burst = c->warm + BURST_TIMED;
        c->cold = c->warm;
        c->rate[0] = 0;
        return 0;
    }
    return (int)c->stream;
}

/* After a probe or a change: when the next probe comes. */
static void schedule(struct tutti_fill_clock *c, int changed)
{
    c->gap = changed || c->gap < GAP_MIN ? GAP_MIN : (c->gap < GAP_MAX ? 2 * c->gap : GAP_MAX);
    c->next_probe = c->frames + c->gap;
}

void tutti__fill_note(struct tutti_fill_clock *c, int streamed, size_t bytes, int64_t ns)
{
    if (c->mode != TUTTI_FILL_TIMED) {
        return;
    }
    double r = (double)bytes / (double)(ns > 0 ? ns : 1);
    int probe = c->burst > 0 || (streamed && !c->stream);
    if (streamed) {
        c->cold = c->warm;
        c->rate[1] = probe || c->rate[1] == 0 ? r : 0.75 * c->rate[1] + 0.25 * r;
    } else if (c->cold > 0) {
        c->cold--;
    } else {
        c->rate[0] = c->rate[0] == 0 ? r : 0.75 * c->rate[0] + 0.25 * r;
    }
    if (c->burst > 0 && --c->burst > 0) {
        return; /* the burst goes on */
    }
    if (c->rate[0] == 0 || c->rate[1] == 0) {
        return;
    }
    uint32_t was = c->stream;
    c->stream = was ? 2.5 * c->rate[0] < c->rate[1] : 4 * c->rate[0] < c->rate[1];
    if (probe || c->stream != was) {
        schedule(c, c->stream != was);
    }
}
